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
// Format: "SNAPSIX2"; the session name (uvarint length, bytes); the mark
// (Off, Seq as varints, Prefix as 4 bytes); four counts as 4-byte
// integers: checkpoints n, heads h, message records m, and the bytes of
// the message ids; then fixed-width sections a reader uses where they lie,
// never decoding the whole: the n checkpoints in numbering order (32-byte
// id, 8-byte Unix ns time), their positions sorted by id (4 bytes each: is
// an id listed, and where, by binary search), the h checkpoints records
// moved the head to (sorted ids), the m message records (checkpoint id,
// time, then the offset and length of the message id in what follows, 4
// bytes each), the message ids; last the CRC-32C of everything before it.
// Integers are big-endian.
const (
	sessionIndexMagic = "SNAPSIX2"
	sessionIndexSlack = 16 << 10
	// sessionIndexMax: an index file larger is not read (and is replaced):
	// one of a million checkpoints takes about 80 MB.
	sessionIndexMax = 256 << 20

	sixEntry   = objects.IDSize + 8
	sixPos     = 4
	sixMessage = objects.IDSize + 8 + 4 + 4
)

// checkSessionIndex: with SNAP_TEST_CHECK_INDEX set, every index read
// from its file is also derived from the whole log, and a difference is
// an error (as git's GIT_TEST_* variables exercise its caches): the model
// harness runs so, making each of its steps a check of the index.
func checkSessionIndex() bool { return os.Getenv("SNAP_TEST_CHECK_INDEX") != "" }

// sessionIndex is one session's list of checkpoints as the log gives it:
// the file's sections as read (views of its bytes, decoded an entry at a
// time as asked for), then what add appended.
type sessionIndex struct {
	session string
	mark    refs.Mark
	// The file's sections (see the format): entries, their positions by
	// id, heads, message records and message ids.
	file struct{ entries, byID, heads, messages, strings []byte }
	// entries: those after the file's; seen, their ids.
	entries []indexEntry
	seen    map[objects.ID]bool
	// newHeads: checkpoints records moved the head to, added since.
	newHeads map[objects.ID]bool
	messages []indexMessage // added since
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

// fileLen is the number of the file's entries.
func (x *sessionIndex) fileLen() int { return len(x.file.entries) / sixEntry }

// len is the number of checkpoints listed.
func (x *sessionIndex) len() int { return x.fileLen() + len(x.entries) }

// at is the checkpoint numbered i+1.
func (x *sessionIndex) at(i int) indexEntry {
	if n := x.fileLen(); i >= n {
		return x.entries[i-n]
	}
	b := x.file.entries[i*sixEntry:]
	return indexEntry{objects.ID(b[:objects.IDSize]), int64(binary.BigEndian.Uint64(b[objects.IDSize:]))}
}

// all lists every entry (tests and checks).
func (x *sessionIndex) all() []indexEntry {
	out := make([]indexEntry, x.len())
	for i := range out {
		out[i] = x.at(i)
	}
	return out
}

// position is id's index among the entries, or -1: a binary search of
// the file's, then a look at those added.
func (x *sessionIndex) position(id objects.ID) int {
	n := x.fileLen()
	pos := func(k int) int { return int(binary.BigEndian.Uint32(x.file.byID[k*sixPos:])) }
	k := sort.Search(len(x.file.byID)/sixPos, func(k int) bool {
		p := pos(k)
		return p >= n || bytes.Compare(x.file.entries[p*sixEntry:p*sixEntry+objects.IDSize], id[:]) >= 0
	})
	if k < len(x.file.byID)/sixPos {
		// (A position out of range, which only damage past the checksum
		// or a forged file makes, lists nothing.)
		if p := pos(k); p < n && objects.ID(x.file.entries[p*sixEntry:p*sixEntry+objects.IDSize]) == id {
			return p
		}
	}
	if x.seen[id] {
		for i, e := range x.entries {
			if e.ID == id {
				return n + i
			}
		}
	}
	return -1
}

// listed reports whether id is among the entries.
func (x *sessionIndex) listed(id objects.ID) bool { return x.seen[id] || x.position(id) >= 0 }

// movedHeadTo reports whether a record moved the session's head to id.
func (x *sessionIndex) movedHeadTo(id objects.ID) bool {
	if x.newHeads[id] {
		return true
	}
	h := x.file.heads
	k := sort.Search(len(h)/objects.IDSize, func(k int) bool { return bytes.Compare(h[k*objects.IDSize:(k+1)*objects.IDSize], id[:]) >= 0 })
	return (k+1)*objects.IDSize <= len(h) && objects.ID(h[k*objects.IDSize:(k+1)*objects.IDSize]) == id
}

func compareIDs(a, b objects.ID) int { return bytes.Compare(a[:], b[:]) }

// materialize moves the file's entries into entries, so that add can
// sort them all (an import listing checkpoints older than the last).
func (x *sessionIndex) materialize() {
	if x.fileLen() == 0 {
		return
	}
	all := x.all()
	x.file.entries, x.file.byID = nil, nil
	x.entries = all
	if x.seen == nil {
		x.seen = make(map[objects.ID]bool, len(all))
	}
	for _, e := range all {
		x.seen[e.ID] = true
	}
}

// add lists what ops (in log order, after those already added) record of
// the session: this is the one definition of a session's checkpoints in
// numbering order, which reading the whole log and reading an index and
// the records after it share.
func (x *sessionIndex) add(ops []refs.Op) {
	n := x.len()
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
	for i := max(n, 1); i < x.len(); i++ {
		if x.at(i).Time < x.at(i-1).Time {
			x.materialize()
			sort.SliceStable(x.entries, func(i, j int) bool { return x.entries[i].Time < x.entries[j].Time })
			break
		}
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
	for i := len(x.file.messages)/sixMessage - 1; i >= 0; i-- {
		if m, ok := x.fileMessage(i); ok && m.MessageID == msg {
			return m.ID, m.Time
		}
	}
	return objects.ID{}, 0
}

// fileMessage is the file's message record i (false: its id lies outside
// the file's, which only a forged file makes).
func (x *sessionIndex) fileMessage(i int) (indexMessage, bool) {
	b := x.file.messages[i*sixMessage:]
	off, n := binary.BigEndian.Uint32(b[objects.IDSize+8:]), binary.BigEndian.Uint32(b[objects.IDSize+12:])
	if uint64(off)+uint64(n) > uint64(len(x.file.strings)) {
		return indexMessage{}, false
	}
	return indexMessage{string(x.file.strings[off : off+n]), objects.ID(b[:objects.IDSize]), int64(binary.BigEndian.Uint64(b[objects.IDSize:]))}, true
}

// allMessages lists every message record in log order (checks).
func (x *sessionIndex) allMessages() []indexMessage {
	var out []indexMessage
	for i := range len(x.file.messages) / sixMessage {
		if m, ok := x.fileMessage(i); ok {
			out = append(out, m)
		}
	}
	return append(out, x.messages...)
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
		x := r.keptIndex(session)
		if x == nil {
			x = r.loadSessionIndex(session)
		}
		if x != nil {
			ops, next, err := r.refs.OpsAfter(x.mark)
			if err == nil {
				x.add(ops)
				if checkSessionIndex() {
					if err := r.checkIndex(x, next); err != nil {
						return nil, err
					}
				}
				slack := next.Off - x.mark.Off
				x.mark = next
				if slack >= sessionIndexSlack {
					r.saveSessionIndex(x)
				}
				r.keepIndex(x)
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
	if h.mark != (refs.Mark{}) && x.len() > 0 {
		if _, err := r.fs.Stat(r.sessionIndexPath(session)); looked || err != nil {
			r.saveSessionIndex(x)
		}
		r.keepIndex(x)
	}
	return x, nil
}

// keepIndex keeps x, which nothing changes from now on, for the Repo's
// next reader of its session (Repo.kept).
func (r *Repo) keepIndex(x *sessionIndex) {
	r.keptMu.Lock()
	defer r.keptMu.Unlock()
	if r.kept != nil {
		r.kept[x.session] = x
	}
}

// keptIndex is a copy of the session's kept index (nil: none), to which
// the records past its mark are added.
func (r *Repo) keptIndex(session string) *sessionIndex {
	r.keptMu.Lock()
	x := r.kept[session]
	r.keptMu.Unlock()
	if x == nil {
		return nil
	}
	c := *x
	c.entries, c.messages = slices.Clone(x.entries), slices.Clone(x.messages)
	c.seen, c.newHeads = maps.Clone(x.seen), maps.Clone(x.newHeads)
	return &c
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
	if !slices.Equal(full.all(), x.all()) || !slices.Equal(full.allMessages(), x.allMessages()) || !maps.Equal(full.headSet(), x.headSet()) {
		return fmt.Errorf("SNAP_TEST_CHECK_INDEX: the index of session %s (as of seq %d, %d checkpoints) differs from the op log's (%d checkpoints)",
			x.session, x.mark.Seq, x.len(), full.len())
	}
	return nil
}

// headSet is every checkpoint records moved the head to.
func (x *sessionIndex) headSet() map[objects.ID]bool {
	set := maps.Clone(x.newHeads)
	if set == nil {
		set = map[objects.ID]bool{}
	}
	for k := 0; (k+1)*objects.IDSize <= len(x.file.heads); k++ {
		set[objects.ID(x.file.heads[k*objects.IDSize:(k+1)*objects.IDSize])] = true
	}
	return set
}

// loadSessionIndex reads the session's index file: nil when it is
// missing, damaged or another session's. Only its header is decoded: the
// sections are used where they lie.
func (r *Repo) loadSessionIndex(session string) *sessionIndex {
	data, err := fsys.ReadRegularMax(r.fs, r.sessionIndexPath(session), sessionIndexMax)
	if err != nil || len(data) < len(sessionIndexMagic)+4 || string(data[:len(sessionIndexMagic)]) != sessionIndexMagic {
		return nil
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, bin.Castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return nil
	}
	d := &bin.Reader{B: body[len(sessionIndexMagic):]}
	x := &sessionIndex{session: string(d.Bytes(d.Uvarint()))}
	x.mark = refs.Mark{Off: d.Varint(), Seq: d.Varint(), Prefix: d.Uint32()}
	n, h, m, strs := uint64(d.Uint32()), uint64(d.Uint32()), uint64(d.Uint32()), uint64(d.Uint32())
	if d.Failed || x.session != session || x.mark == (refs.Mark{}) ||
		n*(sixEntry+sixPos)+h*objects.IDSize+m*sixMessage+strs != uint64(len(d.B)) {
		return nil
	}
	rest := d.B
	cut := func(size uint64) []byte {
		b := rest[:size:size]
		rest = rest[size:]
		return b
	}
	x.file.entries, x.file.byID = cut(n*sixEntry), cut(n*sixPos)
	x.file.heads, x.file.messages, x.file.strings = cut(h*objects.IDSize), cut(m*sixMessage), cut(strs)
	// (byID is trusted to be sorted only as far as it is: a forged file
	// can make position answer wrongly, as it can forge the entries.)
	return x
}

// saveSessionIndex writes x, best effort: an index that cannot be written
// costs the next reader a longer read, nothing else.
func (r *Repo) saveSessionIndex(x *sessionIndex) {
	entries := x.all()
	messages := x.allMessages()
	heads := slices.Collect(maps.Keys(x.headSet()))
	slices.SortFunc(heads, compareIDs)
	strs := 0
	for _, m := range messages {
		strs += len(m.MessageID)
	}
	b := append([]byte(nil), sessionIndexMagic...)
	b = binary.AppendUvarint(b, uint64(len(x.session)))
	b = append(b, x.session...)
	b = binary.AppendVarint(b, x.mark.Off)
	b = binary.AppendVarint(b, x.mark.Seq)
	b = binary.BigEndian.AppendUint32(b, x.mark.Prefix)
	for _, c := range []int{len(entries), len(heads), len(messages), strs} {
		b = binary.BigEndian.AppendUint32(b, uint32(c))
	}
	for _, e := range entries {
		b = append(b, e.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Time))
	}
	byID := make([]int, len(entries))
	for i := range byID {
		byID[i] = i
	}
	sort.Slice(byID, func(i, j int) bool { return compareIDs(entries[byID[i]].ID, entries[byID[j]].ID) < 0 })
	for _, i := range byID {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
	}
	for _, id := range heads {
		b = append(b, id[:]...)
	}
	off := 0
	for _, m := range messages {
		b = append(b, m.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Time))
		b = binary.BigEndian.AppendUint32(b, uint32(off))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.MessageID)))
		off += len(m.MessageID)
	}
	for _, m := range messages {
		b = append(b, m.MessageID...)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, bin.Castagnoli))
	_ = fsys.ReplaceFile(r.fs, r.sessionIndexPath(x.session), b)
}
