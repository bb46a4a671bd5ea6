// Package workflow is how an agent works through snap: a task stack
// (TaskBegin, TaskCommit, TaskRevert, Tasks), staged edits with letter ids
// (EditStage, EditPreview, EditCommit, ...), the revert of one checkpoint's
// change (Revert), and conversation compaction (CompactConversation).
//
// It decides what each operation does; the engine (package snap) records
// it, through the explicit API Repo.Steps returns: Record (a checkpoint
// whose task document a Step derives), Move (a move of the working tree to
// an end computed from the present), Plan, OpenEdits and TaskMarks. Every front-end (the CLI, the MCP server, a web UI) calls this
// package, so each rule lives once: Commit chooses between a task commit and
// an edit commit, TaskOptions.Parent is checked here.
package workflow

import (
	"context"
	"errors"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/tasks"
)

// Flow is the agent workflow over one open Repo. It holds no state of its
// own: any number may exist at once, in any number of processes.
type Flow struct {
	r *snap.Repo
	s *snap.Steps // the engine API the workflow is built on
}

// New returns the workflow of r.
func New(r *snap.Repo) *Flow { return &Flow{r: r, s: r.Steps()} }

// Committed is what Commit did: a task commit (Task) or an edit commit
// (Edits).
type Committed struct {
	Task  *TaskResult       `json:"task,omitempty"`
	Edits *EditCommitResult `json:"edits,omitempty"`
}

// Commit writes the session's staged edits with summary: as a task commit
// when a task is open (and autoPop is true), which completes it, else as an
// edit commit.
func (f *Flow) Commit(ctx context.Context, session, summary string, autoPop bool) (*Committed, error) {
	if tree, err := f.Tasks(ctx, session, nil); err == nil && tree.Current != nil && autoPop {
		res, err := f.TaskCommit(ctx, TaskOptions{Session: session, Text: summary})
		return &Committed{Task: res}, err
	}
	res, err := f.EditCommit(ctx, session, summary)
	return &Committed{Edits: res}, err
}

// modelAdvice attaches to an error of the task stack or the staged edits
// (the pure tasks and edits packages) the advice that resolves it.
func modelAdvice(err error) error {
	var oe *edits.OverlapError
	switch {
	case errors.Is(err, tasks.ErrNoOpenTask):
		return snap.Advise(err, snap.Advice{Do: snap.DoTaskBegin})
	case errors.Is(err, tasks.ErrTooDeep):
		return snap.Advise(err, snap.Advice{Do: snap.DoTaskParent})
	case errors.As(err, &oe):
		return snap.Advise(err, snap.Advice{Do: snap.DoEditDrop, Arg: oe.Change})
	}
	return err
}
