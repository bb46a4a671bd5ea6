package refs

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/snapcore-dev/snap/internal/bin"
)

// A Mark is a place in the op log: just past one verified record, with the
// checksum of every byte before it, so that a reader that derived
// something from the log up to the mark (an index) can later parse only
// the records after it, and still know that the log holds what it held
// then. A log that is shorter, holds other bytes before the mark (another
// store's log, a record damaged in place) or a record after it that fails
// verification makes the mark stale: the reader reads the whole log, and
// what it derives is what a reader without the mark derives.
type Mark struct {
	Off    int64  // where the record ends, just past its LF
	Seq    int64  // its seq
	Prefix uint32 // the CRC-32C of the log's bytes before Off
}

// OpsMarked is Ops, with the mark just past the last record it returns
// (zero when there is none, or when a record failed verification: a
// damaged log is read whole, every time).
func (s *Store) OpsMarked() ([]Op, Mark, error) {
	ops, m, err := s.ops(true)
	return ops, m, err
}

// markBuf is what OpsAfter reads the bytes before a mark in.
const markBuf = 64 << 10

// RememberMarks makes OpsAfter checksum the bytes before a mark once for
// the life of this Store, not at every call: for a process that lives for
// one command, in which a session's index is often read twice (resolving
// msg:ID, then showing the checkpoint). A record damaged in place before
// a mark after it was checked is then noticed by the next process, not by
// this one. Appended records are always read.
func (s *Store) RememberMarks() {
	s.checkedMu.Lock()
	defer s.checkedMu.Unlock()
	if s.checked == nil {
		s.checked = map[Mark]bool{}
	}
}

// wasChecked reports whether m's prefix was checksummed (RememberMarks).
func (s *Store) wasChecked(m Mark) bool {
	s.checkedMu.Lock()
	defer s.checkedMu.Unlock()
	return s.checked[m]
}

// noteChecked records marks whose prefix checked (after RememberMarks).
func (s *Store) noteChecked(ms ...Mark) {
	s.checkedMu.Lock()
	defer s.checkedMu.Unlock()
	if s.checked != nil {
		for _, m := range ms {
			s.checked[m] = true
		}
	}
}

// OpsAfter returns the verified records after m (every record for a zero
// Mark), in order, and the mark past the last of them (m itself when there
// are none). A torn tail is ignored, as Ops ignores it. The error wraps
// ErrStaleMark when the log no longer holds what it held before m, or a
// record after m fails verification. It checksums the bytes before m in
// pieces and parses only those after.
func (s *Store) OpsAfter(m Mark) ([]Op, Mark, error) {
	var ops []Op
	next := m
	err := s.be.ReadFileAt(logName, func(r io.ReaderAt, size int64) error {
		if m.Off > size || m.Off < 0 {
			return fmt.Errorf("%w: the log is shorter than the mark", ErrStaleMark)
		}
		if !s.wasChecked(m) {
			sum, buf := uint32(0), make([]byte, min(m.Off, markBuf))
			for off := int64(0); off < m.Off; {
				n := min(int64(len(buf)), m.Off-off)
				if _, err := r.ReadAt(buf[:n], off); err != nil {
					return err
				}
				sum = crc32.Update(sum, bin.Castagnoli, buf[:n])
				off += n
			}
			if sum != m.Prefix {
				return fmt.Errorf("%w: the log's bytes before record %d are not those marked", ErrStaleMark, m.Seq)
			}
		}
		end, err := lineEnd(r, size) // (a torn tail is not read: see scanTail)
		if err != nil {
			return err
		}
		tail := make([]byte, max(end, m.Off)-m.Off)
		if _, err := r.ReadAt(tail, m.Off); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		scan := parseLogFrom(tail, 0, 0, m.Seq)
		if len(scan.corrupt) > 0 {
			return fmt.Errorf("%w: %w", ErrStaleMark, scan.corrupt[0])
		}
		if len(scan.ops) > 0 {
			ops = scan.ops
			next = Mark{Off: m.Off + scan.tailOff, Seq: ops[len(ops)-1].Seq,
				Prefix: crc32.Update(m.Prefix, bin.Castagnoli, tail[:scan.tailOff])}
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist) && m.Off == 0:
		return nil, m, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, Mark{}, fmt.Errorf("%w: the log is gone", ErrStaleMark)
	case err != nil && !errors.Is(err, ErrStaleMark):
		return nil, Mark{}, fmt.Errorf("refs: ops: %w", err)
	case err != nil:
		return nil, Mark{}, err
	}
	s.noteChecked(m, next)
	return ops, next, nil
}

// markAt is the mark just past the record of seq that ends at offset end
// of data, the log from its start.
func markAt(data []byte, end int64, seq int64) Mark {
	return Mark{Off: end, Seq: seq, Prefix: crc32.Checksum(data[:end], bin.Castagnoli)}
}
