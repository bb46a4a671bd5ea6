package snap

import (
	"context"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// The one write path. Every operation that changes the store (a
// checkpoint, a rewind, undo or redo, a label, a session archived or
// removed, a task or edit operation, a revert, an import, the completion
// of an interrupted move) is a transaction, a tx:
//
//  1. begin: the locks the operation needs are taken, in one order
//     (locks.go); the object index is reloaded and a move a
//     killed process left is completed first.
//  2. objects are written (tx.objects), as many as it needs;
//  3. a move journals itself (writeJournal) once everything it will write
//     is stored, then changes the working tree;
//  4. write: the pack is made durable, then the refs are moved by
//     compare-and-swap and the operation's one op-log record appended
//     (refs.Store.Commit: all or none). A move writes twice: its safety
//     checkpoint's head first (no record: the move's record names it),
//     then its end with its record (finishMove).
//  5. end: what was not written is discarded and the locks released.
//
// The locks step 1 takes, and their order, are in locks.go.
type tx struct {
	r *Repo
	w *objects.Writer
	// unlock releases the locks, the last taken first.
	unlock []func()
	moves  bool // move.lock is held (lockMoves)
}

// objects is the writer of the transaction's objects.
func (t *tx) objects() *objects.Writer { return t.w }

// write makes the objects written so far durable, then moves changes
// (compare-and-swap, all or none) and appends op (stamped with the Repo's
// clock; nil: none), under the op-log lock. A wait for that lock ends with
// ctx: nothing is then moved or recorded.
func (t *tx) write(ctx context.Context, changes []refs.RefChange, op *refs.Op) error {
	if _, err := t.w.Commit(); err != nil {
		return err
	}
	if len(changes) == 0 && op == nil {
		return nil
	}
	if op != nil {
		op.Time = t.r.clock().UTC()
	}
	return t.r.refs.Commit(ctx, changes, op)
}

// commit is write of op's own ref changes and op.
func (t *tx) commit(ctx context.Context, op *refs.Op) error { return t.write(ctx, op.Refs, op) }

// end discards what was not written and releases the locks.
func (t *tx) end() {
	if t.w != nil { // (nil: begin failed before it made one)
		t.w.Abort()
	}
	for i := len(t.unlock) - 1; i >= 0; i-- {
		t.unlock[i]()
	}
	t.unlock = nil
}
