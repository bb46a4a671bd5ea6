package snap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Journal of the move in progress; moves in one store run one at a time.
const (
	moveLockName = "move.lock"
)

// moveDetail is the op-log detail of a move: its scope, what its restore
// created though the ignore rules ignored it (RewindResult.Created) and
// the state documents it created (StateRestored.Created).
type moveDetail struct {
	rewindScope
	Created      []string        `json:"created,omitempty"`
	CreatedState []StateRestored `json:"created_state,omitempty"`
}

// move describes one rewind, undo or redo of a rewind: what to restore,
// where the head goes and how the operation is recorded. It is also the
// journal written before the working tree is touched, so a move killed half
// way is completed by the next command (see recoverMove).
type move struct {
	Kind    string      `json:"kind"` // op kind: rewind, undo, redo
	Session string      `json:"session"`
	Target  objects.ID  `json:"target"`   // checkpoint whose content is restored
	NewHead objects.ID  `json:"new_head"` // where the head ends
	Known   objects.ID  `json:"known"`    // a checkpoint that may already hold the current state (redo)
	Undoes  int64       `json:"undoes,omitempty"`
	Scope   rewindScope `json:"scope"`
	// Set once the safety checkpoint is taken:
	OldHead objects.ID `json:"old_head"` // the head before the move
	Safety  objects.ID `json:"safety"`   // the checkpoint holding the state from before
	Current objects.ID `json:"current"`  // the head once the safety checkpoint is taken
	// Found: the state a recovery found, recorded before it completed the
	// move (work done after the interruption); zero when there was none.
	Found objects.ID `json:"found,omitempty"`
	// build, when set, records the checkpoint the move ends on (a task
	// revert's, an edit commit's) once the safety checkpoint is taken; it
	// becomes Target and NewHead. summary is that checkpoint's.
	build   func(t *tx, m *move, safety objects.ID, now *captured, tck *objects.Checkpoint) (objects.ID, error)
	summary string
	// scoped: build is recordScopedEnd (the move kept what other actors
	// changed); Built is the checkpoint it recorded, which the op log
	// lists (Op.Checkpoints) so that the session's history has it.
	scoped bool
	Built  objects.ID `json:"built,omitzero"`
	// Created, CreatedState: set from the restore, for the op log.
	Created      []string        `json:"created,omitempty"`
	CreatedState []StateRestored `json:"created_state,omitempty"`
}

// op is the op-log record of a completed move.
func (m *move) op() *refs.Op {
	detail, _ := json.Marshal(moveDetail{m.Scope, m.Created, m.CreatedState})
	op := &refs.Op{Kind: m.Kind, Session: m.Session, Target: m.Target, Safety: m.Safety, Checkpoint: m.Found, Undoes: m.Undoes,
		Refs: []refs.RefChange{{Name: refs.SessionHead(m.Session), Old: m.OldHead, New: m.NewHead}}, Detail: detail}
	if !m.Built.IsZero() {
		op.Checkpoints = []objects.ID{m.Built}
	}
	return op
}

func newTxn() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeJournal durably records m before the working tree is touched.
func (r *Repo) writeJournal(m *move) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return r.refs.WriteJournal(data)
}

// finishMove moves the head to m.NewHead, records the operation and removes
// the journal. It is idempotent, so a recovery may repeat what a killed
// move already did.
func (r *Repo) finishMove(t *tx, m *move, recovering bool) error {
	head, err := r.refs.Get(refs.SessionHead(m.Session))
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return err
	}
	var changes []refs.RefChange
	if head != m.NewHead { // (a zero NewHead: undoing a rewind made before the session's first checkpoint)
		changes = []refs.RefChange{{Name: refs.SessionHead(m.Session), Old: m.Current, New: m.NewHead}}
	}
	// Only a move completed after its process died can have been
	// recorded already: one that runs now records itself here, once. (The
	// search reads the whole log: a rewind's cost grew with the history.)
	done := false
	if recovering {
		var err error
		if done, err = r.history().recorded(m.Scope.Txn); err != nil {
			return err
		}
	}
	var op *refs.Op
	if !done {
		op = m.op()
	}
	// The tree has moved: the head and the record follow, whatever
	// happens to the caller's context now.
	if err := t.write(context.Background(), changes, op); err != nil {
		return err
	}
	return r.refs.RemoveJournal()
}

// InterruptedMove is a rewind, undo or redo that was killed or interrupted
// after it began to change the working tree: the tree is part way between
// the state before (Safety) and Target. The next command that changes the
// store completes it (after which 'snap undo' returns to Safety).
type InterruptedMove struct {
	Kind    string     `json:"kind"` // rewind, undo, redo
	Session string     `json:"session"`
	Target  objects.ID `json:"target"`
	Safety  objects.ID `json:"safety"`
	// Found (Options.OnComplete only): the checkpoint of what was on disk
	// when the move was completed, recorded first because it was neither
	// where the move began nor where it went (work done since the
	// interruption, which the completion overwrote); zero when none.
	Found objects.ID `json:"found,omitzero"`
}

// Interrupted reports the move a killed or interrupted process left
// unfinished (nil when there is none, or when its process still runs).
// Read-only commands use it to say so; they never complete it.
func (r *Repo) Interrupted(ctx context.Context) (*InterruptedMove, error) {
	_, j, err := r.refs.ReadJournal()
	if err != nil || j == nil {
		return nil, err
	}
	unlock, ok := r.tryMoveLock(ctx, false)
	if !ok {
		return nil, nil // its process still runs: a move in progress, not an interrupted one
	}
	unlock()
	return &InterruptedMove{Kind: j.Kind, Session: j.Session, Target: j.Target, Safety: j.Safety}, nil
}

// recoverMove completes a rewind, undo or redo that was killed after its
// safety checkpoint: the journal says where it was going, so the working
// tree (which may hold a mix of old and new files, never a torn one) is
// brought to the target, the head moved and the operation recorded, and
// 'snap undo' then returns to the safety checkpoint. It does nothing when
// there is no journal. It is part of transaction t's begin, which holds
// the writers' lock and move.lock (so the move's own process is gone).
func (r *Repo) recoverMove(ctx context.Context, t *tx) error {
	data, j, err := r.refs.ReadJournal()
	if err != nil || j == nil {
		return err
	}
	var m move
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%w: %s: %v", objects.ErrCorrupt, refs.JournalName, err)
	}
	tck, err := r.objects.ReadCheckpoint(m.Target)
	var head *objects.Checkpoint
	if err == nil && !m.Current.IsZero() {
		head, err = r.objects.ReadCheckpoint(m.Current)
	}
	if err != nil && !errors.Is(err, objects.ErrNotFound) && !errors.Is(err, objects.ErrCorrupt) {
		// Unreadable for now (I/O): the journal stays, a gc root, and the
		// next command tries again.
		return fmt.Errorf("completing an interrupted %s: %w", m.Kind, err)
	}
	if err != nil {
		// Its checkpoints are gone (damage): completing it is impossible,
		// and retrying at every command would block the store. Set the
		// journal aside for inspection; fsck reports the damage.
		r.refs.AbandonJournal()
		return nil
	}
	w := t.objects()
	cache := r.loadCache()
	now, err := r.capture(ctx, w, cache, r.safetySpec(head, tck, m.Scope, r.isForeign(m.NewHead))) // as when it began (M11)
	if err != nil {
		return err
	}
	// What is there now may hold work done since the interruption: unless
	// it is what the move started from or where it was going, it is
	// recorded first (listed by log, kept by gc through the op log), so
	// completing the move loses nothing.
	// (The head is where the move left it: its safety checkpoint, or
	// already the target when it was killed while recording itself.)
	curID, cur, err := r.head(m.Session)
	if err != nil {
		return err
	}
	if cur != nil && !now.same(cur) && !now.same(tck) && (head == nil || !now.same(head)) {
		found, _, err := r.buildCheckpoint(w, m.Session, curID, cur, now, CheckpointOptions{Kind: kindPreRewind,
			Summary: "found when completing the interrupted " + m.Kind + " to " + m.Target.Short()})
		if err != nil {
			return err
		}
		if err := t.write(ctx, []refs.RefChange{{Name: refs.SessionHead(m.Session), Old: curID, New: found.ID}}, nil); err != nil {
			return fmt.Errorf("completing an interrupted %s: %w", m.Kind, err)
		}
		m.Current, m.Found = found.ID, found.ID
		if err := r.writeJournal(&m); err != nil {
			return err
		}
	}
	res := &RewindResult{}
	scope := m.Scope
	scope.recovering = true
	if err := r.restore(ctx, w, cache, tck, now, scope, false, res); err != nil {
		return err
	}
	// (What the interrupted run created is there now, so not listed:
	// its undo leaves it.)
	m.Created, m.CreatedState = res.Created, res.createdState()
	cache.SaveFS(r.fs, r.cachePath())
	if err := r.finishMove(t, &m, true); err != nil {
		return err
	}
	if r.onComplete != nil {
		r.onComplete(InterruptedMove{Kind: m.Kind, Session: m.Session, Target: m.Target, Safety: m.Safety, Found: m.Found})
	}
	return nil
}
