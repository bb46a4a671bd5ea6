package snap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/zeebo/blake3"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/internal/bin"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// The session index (cache/sessions/<hash of the name>): what the op log
// says of one session's checkpoints, as of a mark in the log (refs.Mark),
// so that a command reading a session's history (log -n 20, show, #N,
// msg:ID) reads that file and the records appended since the mark, not the
// whole log. It holds the session's checkpoints in the order numbering
// (#N) gives them, with the time each was listed at, the message ids
// unchanged checkpoints recorded (OpMessage), and the checkpoints records
// moved the session's head to (a checkpoint asks whether its head's record
// was lost). It is disposable: a missing, damaged or stale one (the log no
// longer holds the bytes its mark checksums) is derived again from the
// whole log, and what any reader gets is what the whole log says. Readers rewrite it once the records
// past its mark pass sessionIndexSlack bytes, so what a read parses stays
// bounded whatever the length of the history.
//
// Format: "SNAPSIX1", then uvarints: the session name's length and the
// name, the mark (Off, Seq, then Prefix as 4 bytes big-endian), the
// number of checkpoints, each as its 32-byte id and its time (varint Unix
// ns), then the same checkpoints' positions sorted by id (uvarints: a
// reader asks whether a later record's id is listed already by binary
// search), then the number of message records, each as its message id
// (length, bytes), checkpoint id and time; last the CRC-32C of everything
// before it, 4 bytes big-endian.
const (
	sessionIndexMagic = "SNAPSIX1"
	sessionIndexSlack = 16 << 10
	// sessionIndexMax: an index file larger is not read (and is replaced):
	// one of a million checkpoints takes about 80 MB.
	sessionIndexMax = 256 << 20
)

// checkSessionIndex: with SNAP_TEST_CHECK_INDEX set, every index read
// from its file is also derived from the whole log, and a difference is
// an error (as git's GIT_TEST_* variables exercise its caches): the model
// harness runs so, making each of its steps a check of the index.
func checkSessionIndex() bool { return os.Getenv("SNAP_TEST_CHECK_INDEX") != "" }

// sessionIndex is one session's list of checkpoints as the log gives it.
type sessionIndex struct {
	session  string
	mark     refs.Mark
	entries  []indexEntry // in numbering order: by time, then log order
	messages []indexMessage
	// stored is the entries read from the file, byID their positions
	// sorted by id; seen, the ids added since. Together they say whether
	// an id is listed already.
	stored []indexEntry
	byID   []int
	seen   map[objects.ID]bool
	// heads: the checkpoints records moved the session's head to, as
	// read from the file (sorted), and those added since.
	heads    []objects.ID
	newHeads map[objects.ID]bool
}

type indexEntry struct {
	ID   objects.ID
	Time int64 // Unix ns
}

type indexMessage struct {
	MessageID string
	ID        objects.ID
	Time      int64
}

// listed reports whether id is among the entries.
func (x *sessionIndex) listed(id objects.ID) bool {
	if x.seen[id] {
		return true
	}
	i := sort.Search(len(x.byID), func(i int) bool { return compareIDs(x.stored[x.byID[i]].ID, id) >= 0 })
	return i < len(x.byID) && x.stored[x.byID[i]].ID == id
}

// movedHeadTo reports whether a record moved the session's head to id.
func (x *sessionIndex) movedHeadTo(id objects.ID) bool {
	if x.newHeads[id] {
		return true
	}
	_, found := slices.BinarySearchFunc(x.heads, id, compareIDs)
	return found
}

func compareIDs(a, b objects.ID) int { return bytes.Compare(a[:], b[:]) }

// add lists what ops (in log order, after those already added) record of
// the session: this is the one definition of a session's checkpoints in
// numbering order, which reading the whole log and reading an index and
// the records after it share.
func (x *sessionIndex) add(ops []refs.Op) {
	n := len(x.entries)
	list := func(id objects.ID, when int64) {
		if id.IsZero() || x.listed(id) {
			return
		}
		if x.seen == nil {
			x.seen = map[objects.ID]bool{}
		}
		x.seen[id] = true
		x.entries = append(x.entries, indexEntry{id, when})
	}
	headRef := refs.SessionHead(x.session)
	for _, op := range ops {
		for _, c := range op.Refs { // (whatever the op's session)
			if c.Name == headRef && !c.New.IsZero() && !x.movedHeadTo(c.New) {
				if x.newHeads == nil {
					x.newHeads = map[objects.ID]bool{}
				}
				x.newHeads[c.New] = true
			}
		}
		if op.Session != x.session {
			continue
		}
		when := op.Time.UnixNano()
		switch {
		case op.Kind == string(OpImport):
			// Checkpoints taken elsewhere, listed at their own times.
			var d importDetail
			if json.Unmarshal(op.Detail, &d) == nil && len(d.Times) == len(op.Checkpoints) {
				for i, id := range op.Checkpoints {
					list(id, d.Times[i])
				}
			}
			if x.listed(op.Checkpoint) {
				continue
			}
		case op.Kind == string(OpMessage):
			var d messageDetail
			if json.Unmarshal(op.Detail, &d) == nil {
				x.messages = append(x.messages, indexMessage{d.MessageID, op.Checkpoint, when})
			}
		}
		list(op.Checkpoint, when)
		list(op.Safety, when)
		if builds(op.Kind) {
			list(op.Target, when)
		}
		if op.Kind != string(OpImport) {
			for _, id := range op.Checkpoints { // the end an actor-scoped move recorded
				list(id, when)
			}
		}
	}
	// Numbering is by time, then log order: an entry older than those
	// before it (an import's) moves back among them.
	less := func(i, j int) bool { return x.entries[i].Time < x.entries[j].Time }
	if !sort.SliceIsSorted(x.entries[max(n-1, 0):], func(i, j int) bool { return less(i+max(n-1, 0), j+max(n-1, 0)) }) {
		sort.SliceStable(x.entries, less)
	}
}

// message is the checkpoint the latest OpMessage record gives message id
// msg, and when (zero when none does).
func (x *sessionIndex) message(msg string) (objects.ID, int64) {
	for i := len(x.messages) - 1; i >= 0; i-- {
		if m := x.messages[i]; m.MessageID == msg {
			return m.ID, m.Time
		}
	}
	return objects.ID{}, 0
}

func (r *Repo) sessionIndexPath(session string) string {
	sum := blake3.Sum256([]byte(session))
	return filepath.Join(r.StoreDir, "cache", "sessions", hex.EncodeToString(sum[:16]))
}

// sessionIndex returns the session's index as of the end of the log: from
// the log already read by this command, else from the index file and the
// records after its mark, else from the whole log (and then saved).
func (h *history) sessionIndex(session string) (*sessionIndex, error) {
	if x := h.indexes[session]; x != nil {
		return x, nil
	}
	x, err := h.readSessionIndex(session)
	if err != nil {
		return nil, err
	}
	if h.indexes == nil {
		h.indexes = map[string]*sessionIndex{}
	}
	h.indexes[session] = x
	return x, nil
}

func (h *history) readSessionIndex(session string) (*sessionIndex, error) {
	r := h.r
	looked := !h.opsRead // (else the index file is not read at all)
	if looked {
		if x := r.loadSessionIndex(session); x != nil {
			ops, next, err := r.refs.OpsAfter(x.mark)
			if err == nil {
				x.add(ops)
				if checkSessionIndex() {
					if err := r.checkIndex(x, next); err != nil {
						return nil, err
					}
				}
				if next.Off-x.mark.Off >= sessionIndexSlack {
					x.mark = next
					r.saveSessionIndex(x)
				}
				x.mark = next
				return x, nil
			}
			if !errors.Is(err, refs.ErrStaleMark) {
				return nil, err
			}
		}
	}
	// The whole log: the one this command read, else read now (and kept
	// for the command's other readers).
	if err := h.loadOps(); err != nil {
		return nil, err
	}
	x := &sessionIndex{session: session, mark: h.mark}
	x.add(h.ops)
	// Saved when the file was missing, damaged or stale; a command that
	// read the log for its own reasons (an undo's stacks) leaves a file
	// it did not read as it is.
	if h.mark != (refs.Mark{}) && len(x.entries) > 0 {
		if _, err := r.fs.Stat(r.sessionIndexPath(session)); looked || err != nil {
			r.saveSessionIndex(x)
		}
	}
	return x, nil
}

// checkIndex derives x's session's index from the whole log, which must
// end at next, and reports a difference (checkSessionIndex).
func (r *Repo) checkIndex(x *sessionIndex, next refs.Mark) error {
	ops, m, err := r.refs.OpsMarked()
	if err != nil || m != next {
		return nil // (the log is damaged or grew since: nothing to compare with)
	}
	full := &sessionIndex{session: x.session}
	full.add(ops)
	if !slices.Equal(full.entries, x.entries) || !slices.Equal(full.messages, x.messages) || !maps.Equal(full.headSet(), x.headSet()) {
		return fmt.Errorf("SNAP_TEST_CHECK_INDEX: the index of session %s (as of seq %d, %d checkpoints) differs from the op log's (%d checkpoints)",
			x.session, x.mark.Seq, len(x.entries), len(full.entries))
	}
	return nil
}

// headSet is every checkpoint records moved the head to.
func (x *sessionIndex) headSet() map[objects.ID]bool {
	set := maps.Clone(x.newHeads)
	if set == nil {
		set = map[objects.ID]bool{}
	}
	for _, id := range x.heads {
		set[id] = true
	}
	return set
}

// loadSessionIndex reads the session's index file: nil when it is
// missing, damaged or another session's.
func (r *Repo) loadSessionIndex(session string) *sessionIndex {
	data, err := fsys.ReadRegularMax(r.fs, r.sessionIndexPath(session), sessionIndexMax)
	if err != nil || len(data) < len(sessionIndexMagic)+4 || string(data[:len(sessionIndexMagic)]) != sessionIndexMagic {
		return nil
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return nil
	}
	d := &indexDecoder{bin.Reader{B: body[len(sessionIndexMagic):]}}
	x := &sessionIndex{session: d.string()}
	x.mark = refs.Mark{Off: d.Varint(), Seq: d.Varint(), Prefix: d.Uint32()}
	n := d.Count(objects.IDSize + 1)
	x.entries = make([]indexEntry, 0, n)
	for range n {
		x.entries = append(x.entries, indexEntry{d.id(), d.Varint()})
	}
	x.byID = make([]int, 0, n)
	for range n {
		if i := d.Uvarint(); i < uint64(n) {
			x.byID = append(x.byID, int(i))
		} else {
			d.Fail()
		}
	}
	for range d.Count(objects.IDSize + 2) {
		x.messages = append(x.messages, indexMessage{d.string(), d.id(), d.Varint()})
	}
	n = d.Count(objects.IDSize)
	x.heads = make([]objects.ID, 0, n)
	for range n {
		x.heads = append(x.heads, d.id())
	}
	if d.Failed || len(d.B) != 0 || x.session != session || x.mark == (refs.Mark{}) {
		return nil
	}
	x.stored = x.entries
	// (byID is trusted to be sorted only as far as it is: a forged file
	// can make listed answer wrongly, as it can forge the entries.)
	return x
}

// saveSessionIndex writes x, best effort: an index that cannot be written
// costs the next reader a longer read, nothing else.
func (r *Repo) saveSessionIndex(x *sessionIndex) {
	b := append([]byte(nil), sessionIndexMagic...)
	b = appendIndexString(b, x.session)
	b = binary.AppendVarint(b, x.mark.Off)
	b = binary.AppendVarint(b, x.mark.Seq)
	b = binary.BigEndian.AppendUint32(b, x.mark.Prefix)
	b = binary.AppendUvarint(b, uint64(len(x.entries)))
	for _, e := range x.entries {
		b = append(b, e.ID[:]...)
		b = binary.AppendVarint(b, e.Time)
	}
	byID := make([]int, len(x.entries))
	for i := range byID {
		byID[i] = i
	}
	sort.Slice(byID, func(i, j int) bool { return compareIDs(x.entries[byID[i]].ID, x.entries[byID[j]].ID) < 0 })
	for _, i := range byID {
		b = binary.AppendUvarint(b, uint64(i))
	}
	b = binary.AppendUvarint(b, uint64(len(x.messages)))
	for _, m := range x.messages {
		b = appendIndexString(b, m.MessageID)
		b = append(b, m.ID[:]...)
		b = binary.AppendVarint(b, m.Time)
	}
	heads := slices.Concat(x.heads, slices.Collect(maps.Keys(x.newHeads)))
	slices.SortFunc(heads, compareIDs)
	b = binary.AppendUvarint(b, uint64(len(heads)))
	for _, id := range heads {
		b = append(b, id[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	_ = fsys.ReplaceFile(r.fs, r.sessionIndexPath(x.session), b)
}

func appendIndexString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// indexDecoder reads saveSessionIndex's forms.
type indexDecoder struct{ bin.Reader }

func (d *indexDecoder) string() string { return string(d.Bytes(d.Uvarint())) }

func (d *indexDecoder) id() objects.ID {
	var id objects.ID
	copy(id[:], d.Bytes(objects.IDSize))
	return id
}
