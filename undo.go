package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// UndoResult reports an undo or redo.
type UndoResult struct {
	Op     refs.Op       `json:"op"`     // the operation reversed or re-applied
	Rewind *RewindResult `json:"rewind"` // for a rewind: what the files and state did
	// restage: the staged edits the operation committed or dropped, to
	// stage again (undo) or drop again (redo) once the tx has ended (the
	// edits lock comes before the writers' in the lock order).
	restage json.RawMessage
}

// Undo reverses the session's last operation: a checkpoint moves the head
// back, a label is removed or moved back, a rewind puts the working tree and
// state documents back exactly as they were before it (after a safety
// checkpoint of whatever changed since).
//
// An undo or redo that moves files changes only what the session's own
// actors changed since its target, as a rewind does (RewindResult.Kept),
// unless o says All.
func (r *Repo) Undo(ctx context.Context, session string, o ...UndoOptions) (*UndoResult, error) {
	return r.undoRedo(ctx, session, true, o)
}

// Redo re-applies the last undone operation of the session.
func (r *Repo) Redo(ctx context.Context, session string, o ...UndoOptions) (*UndoResult, error) {
	return r.undoRedo(ctx, session, false, o)
}

// Undoable returns the operations Undo and Redo of session would reverse
// now (nil: nothing to undo, to redo), for a front-end to say so before it
// asks. Another process may change them before an undo runs.
func (r *Repo) Undoable(ctx context.Context, session string) (undo, redo *Op, err error) {
	session, err = sessionName(session)
	if err != nil {
		return nil, nil, err
	}
	us, rs, err := r.history().stacks(session)
	if err != nil {
		return nil, nil, err
	}
	if len(us) > 0 {
		undo = &us[len(us)-1]
	}
	if len(rs) > 0 {
		redo = &rs[len(rs)-1]
	}
	return undo, redo, nil
}

// UndoOptions modify an undo or redo.
type UndoOptions struct {
	// All: a move back changes every path, whoever changed it since.
	All bool
}

func (r *Repo) undoRedo(ctx context.Context, session string, undo bool, o []UndoOptions) (*UndoResult, error) {
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	all := false
	for _, x := range o {
		all = all || x.All
	}
	res, err := r.reverse(ctx, session, undo, all)
	if err == nil && len(res.restage) > 0 {
		err = r.restageEdits(ctx, session, res.restage, undo)
	}
	return res, err
}

// reverse undoes or redoes the session's last operation, one tx.
func (r *Repo) reverse(ctx context.Context, session string, undo, all bool) (*UndoResult, error) {
	t, err := r.begin(ctx, writer)
	if err != nil {
		return nil, err
	}
	defer t.end()
	// The operation to reverse is read under the move lock, which the
	// reversal holds until it is recorded: two undos at once (two requests
	// to one snap ui, two processes) reverse two operations, never the
	// same one twice (adversarial U6).
	if err := t.lockMoves(ctx); err != nil {
		return nil, err
	}
	us, rs, err := r.history().stacks(session)
	if err != nil {
		return nil, err
	}
	stack, empty := us, ErrNothingToUndo
	if !undo {
		stack, empty = rs, ErrNothingToRedo
	}
	if len(stack) == 0 {
		return nil, fmt.Errorf("%w in session %q", empty, session)
	}
	op := stack[len(stack)-1]
	res := &UndoResult{Op: op}
	k, ok := opKinds[OpKind(op.Kind)]
	if !ok { // not undoable: stacks never holds one
		return nil, fmt.Errorf("%w in session %q", empty, session)
	}
	reverse := k.undo
	if !undo {
		reverse = k.redo
	}
	return res, reverse(r, ctx, t, session, op, undo, all, res)
}

// opName is what an undo or redo is called in messages and the op log.
func opName(undo bool) OpKind {
	if undo {
		return OpUndo
	}
	return OpRedo
}

// moveTree undoes a rewind (back to its safety checkpoint's content, the
// head where it was, and what the rewind created though the rules ignored
// it removed) or redoes it (to its target again).
func moveTree(r *Repo, ctx context.Context, t *tx, session string, op refs.Op, undo, all bool, res *UndoResult) error {
	kind := opName(undo)
	var detail moveDetail
	if err := json.Unmarshal(op.Detail, &detail); err != nil {
		return fmt.Errorf("%w: op %d: %v", objects.ErrCorrupt, op.Seq, err)
	}
	scope := detail.rewindScope
	scope.UndoCreated, scope.UndoCreatedState, scope.UndoFrom = nil, nil, nil
	scope.Excludes, scope.TargetExcludes = nil, nil
	if undo {
		// Back to the safety checkpoint, under the exclude rules it was
		// taken under: what they ignored then was no part of it (A14).
		scope.TargetExcludes = detail.Excludes
		scope.RulesFrom = nil // back to the safety checkpoint, under its own rules
	}
	scope.FromPresent = false  // a move to an older checkpoint, under its rules
	scope.SpareIgnored = false // (its safety capture leaves out what they ignore)
	scope.Txn = ""             // the undo or redo is an operation of its own
	scope.All = all
	target, newHead, known := op.Safety, op.Refs[0].Old, objects.ID{}
	if undo && (len(detail.Created) > 0 || len(detail.CreatedState) > 0) {
		from := op.Target
		scope.UndoCreated, scope.UndoCreatedState, scope.UndoFrom = detail.Created, detail.CreatedState, &from
	}
	if !undo {
		target, newHead, known = op.Target, op.Target, op.Safety
	}
	if target.IsZero() {
		return fmt.Errorf("%w: op %d has no checkpoint to return to", objects.ErrCorrupt, op.Seq)
	}
	// The head goes back to a checkpoint retention may have removed
	// since: refused, as for a checkpoint's undo, rather than a head
	// naming nothing.
	if !newHead.IsZero() && !r.objects.Has(newHead) {
		return fmt.Errorf("%w: cannot %s op %d: the head it returns to, %s, was expired by retention", ErrNoCheckpoint, kind, op.Seq, newHead.Short())
	}
	// The redo of a move that kept what other actors changed reads the
	// ignore rules of the target the move was asked for (M27): when
	// retention removed that checkpoint since, what those rules protected
	// is unknown, and its end's rules may protect less (M27's data loss):
	// refused, as for a target gone (M36).
	if !undo && scope.RulesFrom != nil && !r.objects.Has(*scope.RulesFrom) {
		return fmt.Errorf("%w: cannot %s op %d: the checkpoint whose ignore rules it read, %s, was expired by retention", ErrNoCheckpoint, kind, op.Seq, scope.RulesFrom.Short())
	}
	rr, err := r.run(ctx, t, &move{Kind: string(kind), Session: session, Target: target, NewHead: newHead, Known: known,
		Undoes: op.Seq, Scope: scope}, false)
	res.Rewind = rr
	if err == nil {
		res.restage = scope.Edits
	}
	return err
}

// moveRefsBack undoes an operation that only moved refs (a checkpoint, a
// label, archiving or removing a session) by moving each back, or redoes
// it, compare-and-swap.
func moveRefsBack(r *Repo, ctx context.Context, t *tx, session string, op refs.Op, undo, all bool, res *UndoResult) error {
	kind := opName(undo)
	for _, c := range op.Refs {
		if !c.Old.IsZero() && !r.objects.Has(c.Old) || !c.New.IsZero() && !r.objects.Has(c.New) {
			return fmt.Errorf("%w: cannot %s op %d: a checkpoint it moves %s between was expired by retention", ErrNoCheckpoint, kind, op.Seq, c.Name)
		}
	}
	changes := make([]refs.RefChange, 0, len(op.Refs))
	for i := range op.Refs {
		c := op.Refs[i]
		if undo {
			c = op.Refs[len(op.Refs)-1-i]
			c.Old, c.New = c.New, c.Old
		}
		changes = append(changes, c)
	}
	// All or none: a refused undo or redo moves nothing (M9).
	err := t.commit(ctx, &refs.Op{Kind: string(kind), Session: session, Undoes: op.Seq, Refs: changes})
	var ce *refs.ConflictError
	if errors.As(err, &ce) {
		return fmt.Errorf("cannot %s op %d: %s has moved since: %w", kind, op.Seq, ce.Name, err)
	}
	return err
}
