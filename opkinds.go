package snap

import (
	"context"

	"github.com/snapcore-dev/snap/refs"
)

// OpKind names an operation in the op log (refs.Op.Kind).
type OpKind string

// The kinds of operation the engine records.
const (
	OpCheckpoint     OpKind = "checkpoint"
	OpRewind         OpKind = "rewind"
	OpLabel          OpKind = "label"
	OpSessionArchive OpKind = "session-archive"
	OpSessionRemove  OpKind = "session-rm"
	OpUndo           OpKind = "undo"    // undoes op Undoes
	OpRedo           OpKind = "redo"    // re-applies op Undoes
	OpMessage        OpKind = "message" // names the checkpoint of msg:ID; changes nothing
	OpGC             OpKind = "gc"      // recorded by gc; not undone
	OpTaskBegin      OpKind = "task-begin"
	OpTaskCommit     OpKind = "task-commit"
	OpTaskRevert     OpKind = "task-revert"
	OpEditCommit     OpKind = "edit-commit"
	OpRevert         OpKind = "revert" // the inverse of a checkpoint's change
	OpImport         OpKind = "import" // checkpoints brought from elsewhere (Importer)
)

// reverser undoes (undo) or re-applies (!undo) op in session, filling
// res; it appends its own op-log record.
type reverser func(r *Repo, ctx context.Context, t *tx, session string, op refs.Op, undo, all bool, res *UndoResult) error

// opKind says what undo and redo do with an operation of a kind, and
// whether its record's Target is a checkpoint the operation itself recorded
// (a move that builds its end: the session's history lists it).
type opKind struct {
	undo, redo reverser
	builds     bool
}

// opKinds is the one table of undoable kinds. A kind not in it is never on
// the undo stack. A new kind of operation is one entry here, with its two
// functions.
var opKinds map[OpKind]opKind

// (Set in init: the reversers reach back to the table through the moves
// they make.)
func init() { opKinds = opKindTable() }

func opKindTable() map[OpKind]opKind {
	return map[OpKind]opKind{
		OpCheckpoint:     {moveRefsBack, moveRefsBack, false},
		OpLabel:          {moveRefsBack, moveRefsBack, false},
		OpSessionArchive: {moveRefsBack, moveRefsBack, false},
		OpSessionRemove:  {moveRefsBack, moveRefsBack, false},
		OpImport:         {moveRefsBack, moveRefsBack, false},
		OpRewind:         {moveTree, moveTree, false},
		// The task stack travels with the head: moving the head back undoes a
		// begin or a commit (a commit that applied staged edits is a move). A
		// revert rewound the files: it is a move.
		OpTaskBegin:  {moveRefsBack, moveRefsBack, false},
		OpTaskCommit: {commitBack, commitBack, true},
		OpTaskRevert: {moveTree, moveTree, true},
		// An edit commit and a revert are moves limited to their paths
		// (MovesHead).
		OpEditCommit: {moveTree, moveTree, true},
		OpRevert:     {moveTree, moveTree, true},
	}
}

// builds reports whether an operation of kind records the checkpoint its
// record names as Target.
func builds(kind string) bool { return opKinds[OpKind(kind)].builds }

// commitBack undoes or redoes a task commit: a move when it applied staged
// edits (its record then names a safety checkpoint), else a head move.
func commitBack(r *Repo, ctx context.Context, t *tx, session string, op refs.Op, undo, all bool, res *UndoResult) error {
	if !op.Safety.IsZero() {
		return moveTree(r, ctx, t, session, op, undo, all, res)
	}
	return moveRefsBack(r, ctx, t, session, op, undo, all, res)
}

// undoable reports whether operations of kind go on the undo stack.
func undoable(kind string) bool {
	_, ok := opKinds[OpKind(kind)]
	return ok
}
