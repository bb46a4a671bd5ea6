package snap

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// history is the op log and the expired set as one command sees them: read
// in one place, on first use, at most once per command (a command builds
// one value with Repo.history and hands it to every reader it calls).
// Everything derived from the op log (a session's checkpoints, its undo
// and redo stacks, transactions, message ids) is derived here.
//
// A damaged log: each record carries its own checksum, so records that
// fail it are skipped and the rest are used (snap fsck names the damaged
// lines); a log that cannot be read at all is an error. A damaged expired
// set is used up to the damage (a checkpoint listed after it then reads as
// missing, which is damage, never as present).
type history struct {
	r          *Repo
	ops        []refs.Op
	expired    map[objects.ID]bool
	opsErr     error // the log could not be read
	expiredErr error // the expired set could not be read
	opsRead    bool
	expRead    bool
	mark       refs.Mark // just past the last of ops, when they all verified
	// indexes: the sessions' indexes this command read (sessionindex.go).
	indexes map[string]*sessionIndex
}

// history returns the command's history value; nothing is read until it
// is first used, and the log and the expired set are read separately (a
// checkpoint's loader needs only the latter).
func (r *Repo) history() *history { return &history{r: r} }

// load reads the log and the expired set once.
func (h *history) load() error {
	if err := h.loadOps(); err != nil {
		return err
	}
	return h.loadExpired()
}

func (h *history) loadOps() error {
	if !h.opsRead {
		h.opsRead = true
		ops, m, err := h.r.refs.OpsMarked()
		if err != nil && !errors.Is(err, refs.ErrCorrupt) {
			h.opsErr = err
		}
		h.ops, h.mark = ops, m
	}
	return h.opsErr
}

func (h *history) loadExpired() error {
	if !h.expRead {
		h.expRead = true
		expired, err := h.r.refs.Expired()
		if err != nil && !errors.Is(err, refs.ErrCorrupt) {
			h.expiredErr = err
		}
		if expired == nil {
			expired = map[objects.ID]bool{}
		}
		h.expired = expired
	}
	return h.expiredErr
}

// isExpired reports whether retention removed checkpoint id (false when
// the expired set cannot be read: the checkpoint then reads as missing).
func (h *history) isExpired(id objects.ID) bool {
	return h.loadExpired() == nil && h.expired[id]
}

// recent returns the last n operations (all when n <= 0), newest first.
func (h *history) recent(n int) ([]refs.Op, error) {
	if err := h.load(); err != nil {
		return nil, err
	}
	out := []refs.Op{}
	for i := len(h.ops) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		out = append(out, h.ops[i])
	}
	return out, nil
}

// recorded reports whether the log holds the move with this txn.
func (h *history) recorded(txn string) (bool, error) {
	if err := h.load(); err != nil {
		return false, err
	}
	for i := len(h.ops) - 1; i >= 0; i-- {
		var sc rewindScope
		if len(h.ops[i].Detail) > 0 && json.Unmarshal(h.ops[i].Detail, &sc) == nil && sc.Txn == txn {
			return true, nil
		}
	}
	return false, nil
}

// headRecorded reports whether the log records the operation that made id
// the session's head. A checkpoint whose process died between moving the
// head and appending its record has none: an identical checkpoint is then
// recorded after all, so the head is one the log (and undo) knows.
func (h *history) headRecorded(session string, id objects.ID) bool {
	x, err := h.sessionIndex(session)
	return err == nil && x.movedHeadTo(id)
}

// stacks derives the session's undo and redo stacks: every undoable op
// pushes onto undo and clears redo; "undo X" moves X to redo; "redo X"
// moves it back — as the redo left it: undoing a redone rewind returns to
// the state before the redo (its safety checkpoint and head), not to the
// state before the original rewind.
func (h *history) stacks(session string) (undo, redo []refs.Op, err error) {
	if err := h.load(); err != nil {
		return nil, nil, err
	}
	for _, op := range h.ops {
		if op.Session != session {
			continue
		}
		switch {
		case op.Kind == string(OpUndo):
			if n := len(undo); n > 0 && undo[n-1].Seq == op.Undoes {
				redo = append(redo, undo[n-1])
				undo = undo[:n-1]
			}
		case op.Kind == string(OpRedo):
			if n := len(redo); n > 0 && redo[n-1].Seq == op.Undoes {
				x := redo[n-1]
				// A move redone (a rewind, an edit commit, a task commit
				// with edits, a task revert, a revert): undoing it again
				// returns to the state before the redo (M14).
				if !x.Safety.IsZero() && !op.Safety.IsZero() && len(op.Refs) > 0 && len(x.Refs) > 0 {
					x.Safety = op.Safety
					x.Refs = append([]refs.RefChange(nil), x.Refs...)
					x.Refs[0].Old = op.Refs[0].Old
					x.Detail = op.Detail // what the redo created
				}
				undo = append(undo, x)
				redo = redo[:n-1]
			}
		case undoable(op.Kind):
			undo = append(undo, op)
			redo = nil
		}
	}
	return undo, redo, nil
}

// nextTask returns one past the highest task id the session's history has
// seen (1 when none), so that no id is given out twice, even after a
// rewind or an undo took the task out of the stack.
func (h *history) nextTask(session string) (int, error) {
	if err := h.load(); err != nil {
		return 0, err
	}
	next := 1
	for _, op := range h.ops {
		if op.Session == session && isTaskKind(op.Kind) {
			next = max(next, taskOf(op)+1)
		}
	}
	return next, nil
}

// taskCheckpoints returns the checkpoints where task id of the session
// began and where it was last committed or reverted (zero when none).
func (h *history) taskCheckpoints(session string, id int) (begin, end objects.ID) {
	if h.load() != nil {
		return begin, end
	}
	for _, op := range h.ops {
		if op.Session != session || !isTaskKind(op.Kind) || taskOf(op) != id {
			continue
		}
		switch OpKind(op.Kind) {
		case OpTaskBegin:
			begin = op.Checkpoint
		case OpTaskCommit, OpTaskRevert:
			// A move (a revert, a commit with staged edits) names its
			// end as its target; a checkpoint as its checkpoint.
			end = op.Checkpoint
			if !op.Target.IsZero() {
				end = op.Target
			}
		}
	}
	return begin, end
}

// sessionEntry is one checkpoint of a session, in creation order. Its
// checkpoint object is read only when needed (load).
type sessionEntry struct {
	ID      objects.ID
	time    int64 // Unix ns, for ordering
	expired bool  // removed by retention
	ck      *objects.Checkpoint
}

// load reads the entry's checkpoint (nil, nil when it expired).
func (r *Repo) load(e *sessionEntry) (*objects.Checkpoint, error) {
	if e.expired || e.ck != nil {
		return e.ck, nil
	}
	ck, err := r.objects.ReadCheckpoint(e.ID)
	e.ck = ck
	return ck, err
}

// sessionList is a session's checkpoints in numbering order (#1 first):
// every checkpoint ever recorded in the session (from the log, through the
// session's index, plus the head's ancestry for checkpoints whose record
// a crash may have lost). Checkpoints retention expired are listed too,
// marked, so numbering (#N) never shifts. Entries are made from the index
// as they are asked for, so a command that shows the newest 20 costs
// what it shows; a checkpoint is read only when loaded (Repo.load).
type sessionList struct {
	x       *sessionIndex
	expired map[objects.ID]bool
	made    map[int]*sessionEntry
	// merged: the whole list, made when the head's ancestry held
	// checkpoints no record lists (rare: a crash after the head moved).
	merged []sessionEntry
}

// Len is the number of checkpoints.
func (l *sessionList) Len() int {
	if l.merged != nil {
		return len(l.merged)
	}
	return l.x.len()
}

// At is checkpoint #i+1.
func (l *sessionList) At(i int) *sessionEntry {
	if l.merged != nil {
		return &l.merged[i]
	}
	if e := l.made[i]; e != nil {
		return e
	}
	ie := l.x.at(i)
	e := &sessionEntry{ID: ie.ID, time: ie.Time, expired: l.expired[ie.ID]}
	if l.made == nil {
		l.made = map[int]*sessionEntry{}
	}
	l.made[i] = e
	return e
}

// Index is id's index in the list (#Index+1), or -1.
func (l *sessionList) Index(id objects.ID) int {
	if l.merged != nil {
		return slices.IndexFunc(l.merged, func(e sessionEntry) bool { return e.ID == id })
	}
	return l.x.position(id)
}

// sessionCheckpoints returns the session's checkpoints (sessionList).
func (r *Repo) sessionCheckpoints(h *history, session string) (*sessionList, error) {
	x, err := h.sessionIndex(session)
	if err != nil {
		return nil, err
	}
	if err := h.loadExpired(); err != nil {
		return nil, err
	}
	l := &sessionList{x: x, expired: h.expired}
	head, _, err := r.head(session)
	if err != nil {
		return nil, err
	}
	var extra []sessionEntry
	walked := map[objects.ID]bool{}
	for id := head; !id.IsZero() && !x.listed(id) && !walked[id] && !h.expired[id]; {
		walked[id] = true
		ck, err := r.objects.ReadCheckpoint(id)
		if err != nil {
			return nil, err
		}
		extra = append(extra, sessionEntry{ID: id, time: ck.Time, ck: ck})
		if len(ck.Parents) == 0 {
			break
		}
		id = ck.Parents[0]
	}
	if len(extra) > 0 {
		merged := make([]sessionEntry, 0, x.len()+len(extra))
		for i := range x.len() {
			merged = append(merged, *l.At(i))
		}
		merged = append(merged, extra...)
		sort.SliceStable(merged, func(i, j int) bool { return merged[i].time < merged[j].time })
		l.merged = merged
	}
	return l, nil
}

// recordedAt is the index in the log of the op that recorded checkpoint
// id (its checkpoint, safety checkpoint, built end or import); when no op
// names it (a record a crash lost), the first op after time since. The log
// must be loaded.
func (h *history) recordedAt(id objects.ID, since time.Time) int {
	for i, op := range h.ops {
		if op.Checkpoint == id || op.Safety == id || builds(op.Kind) && op.Target == id || slices.Contains(op.Checkpoints, id) {
			return i
		}
	}
	for i, op := range h.ops {
		if op.Time.After(since) {
			return i
		}
	}
	return len(h.ops)
}

// lastHeld is the index in the log of the last op at which the working
// tree was found to hold checkpoint id: the last move whose safety
// checkpoint it was (model finding M28: an undo's target is often a head
// recorded long before and made current again since), else the op that
// recorded it (recordedAt). The log must be loaded.
func (h *history) lastHeld(id objects.ID, since time.Time) int {
	first := h.recordedAt(id, since)
	for i := len(h.ops) - 1; i > first; i-- {
		if h.ops[i].Safety == id {
			return i
		}
	}
	return first
}
