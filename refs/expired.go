package refs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/snapcore-dev/snap/objects"
)

// expiredName is the file listing checkpoints removed by retention;
// foreignName the one listing checkpoints brought in from another store.
const (
	expiredName = "expired"
	foreignName = "foreign"
)

// Expired returns the checkpoints that retention removed (see AddExpired).
// The op log may still name them, and kept checkpoints may name them as
// parents: readers treat them as gone on purpose, not as damage.
func (s *Store) Expired() (map[objects.ID]bool, error) { return s.idList(expiredName) }

// AddExpired durably records checkpoints as expired (appended, fsync'd)
// before gc removes their objects. Callers serialise it (gc holds its
// lock).
func (s *Store) AddExpired(ids []objects.ID) error { return s.addIDs(expiredName, ids) }

// Foreign returns the checkpoints recorded as taken in another store (see
// AddForeign): what they say of the machine they were taken on (paths) is
// not this machine's.
func (s *Store) Foreign() (map[objects.ID]bool, error) { return s.idList(foreignName) }

// AddForeign durably records checkpoints as taken elsewhere, in the same
// format as the expired list.
func (s *Store) AddForeign(ids []objects.ID) error { return s.addIDs(foreignName, ids) }

// idList reads a list of ids, one per line; a torn last line (a crash
// mid-append) is ignored.
func (s *Store) idList(name string) (map[objects.ID]bool, error) {
	data, err := s.be.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return map[objects.ID]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[objects.ID]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		id, err := objects.ParseID(text)
		if err != nil {
			if len(text) < 2*objects.IDSize && isLowerHex([]byte(text)) {
				continue // torn by a crash mid-append: that gc never removed anything
			}
			return out, &CorruptError{Path: name, Line: line, Reason: err.Error()}
		}
		out[id] = true
	}
	return out, nil
}

// addIDs appends ids to the list name durably (fsync'd).
func (s *Store) addIDs(name string, ids []objects.ID) error {
	if len(ids) == 0 {
		return nil
	}
	sorted := append([]objects.ID(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i][:], sorted[j][:]) < 0 })
	var buf bytes.Buffer
	for _, id := range sorted {
		fmt.Fprintln(&buf, id.String())
	}
	// A torn line left by a crash is completed with a newline first, so
	// the new ids start on a line of their own.
	return s.be.AppendLines(name, buf.Bytes())
}
