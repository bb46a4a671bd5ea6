package workflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/tasks"
)

// TaskOptions describe a task operation.
type TaskOptions struct {
	Session string
	// Text is the goal (begin), the summary (commit) or the reason
	// (revert).
	Text string
	// Parent (begin): the open task the new one belongs to, as a user
	// gives it (nil: the current task, or the top level when none is
	// open; 0: the top level; N: open task N). A negative number is
	// refused (ErrUsage); every front-end passes it through unchecked.
	Parent *int
	// KeepOpen (commit): record the summary, keep the task current.
	KeepOpen bool
	// State: documents given explicitly (--conversation, --state); the
	// session's others are re-read from the paths they were last recorded
	// from, as every checkpoint does.
	State []snap.StateDoc
	// All (revert): restore every path as it was when the task began,
	// whoever changed it since; without it, a path another actor changed
	// since (another session, the user) is kept (TaskResult's Kept).
	All bool
}

// TaskInfo is one task as every front-end reports it.
type TaskInfo struct {
	tasks.Task
	Current bool     `json:"current"`
	Begin   *snap.ID `json:"begin"` // its task-begin checkpoint; null when retention expired it or it is unknown
	End     *snap.ID `json:"end"`   // its task-commit or task-revert checkpoint; null while open
}

// TaskTree is a session's task stack and tree at a checkpoint.
type TaskTree struct {
	Session    string     `json:"session"`
	Checkpoint *snap.ID   `json:"checkpoint"` // where it was read; null: the session has no checkpoint
	Current    *int       `json:"current"`    // the current task; null when none is open
	Stack      []int      `json:"stack"`      // the open tasks, outermost first
	Tasks      []TaskInfo `json:"tasks"`      // every task, by id
	state      *tasks.State
}

// Text renders the tree for people (✅ committed, ❌ reverted, 📝 current,
// ⏳ open); Prompt the compact plain text meant for an agent's next prompt.
func (t *TaskTree) Text() string   { return t.state.Tree() }
func (t *TaskTree) Prompt() string { return t.state.Prompt() }

// TaskResult reports a task operation.
type TaskResult struct {
	Task       TaskInfo           `json:"task"`
	Checkpoint snap.ID            `json:"checkpoint"` // the task-begin, task-commit or task-revert checkpoint
	Stack      []int              `json:"stack"`      // the open tasks after it
	Rewind     *snap.RewindResult `json:"rewind,omitempty"`
	// Edits: the staged edits a task commit applied with it.
	Edits *EditCommitResult `json:"edits,omitempty"`
}

// step is a task operation as the engine applies it to the task document
// of the checkpoint it builds on (again on each retry): the engine's Step,
// and what the last application left.
type step struct {
	snap.Step
	done  *tasks.Task  // the task as the last application left it
	after *tasks.State // the document after it
}

// newStep makes the engine's Step of a task operation: apply changes the
// parsed document; a refusal of the model is ErrUsage with its advice.
func newStep(op snap.OpKind, kind string, apply func(s *tasks.State, messages int) (*tasks.Task, error)) *step {
	st := &step{}
	st.Op, st.Kind = op, kind
	st.Apply = func(doc []byte, messages int) ([]byte, int, error) {
		s, err := parseTasks(doc, "")
		if err != nil {
			return nil, 0, err
		}
		t, err := apply(s, messages)
		if err != nil {
			if errors.Is(err, snap.ErrConflict) || errors.Is(err, snap.ErrUsage) {
				return nil, 0, err
			}
			return nil, 0, modelAdvice(fmt.Errorf("%w: %w", snap.ErrUsage, err))
		}
		st.done, st.after = t, s
		return s.Marshal(), t.ID, nil
	}
	return st
}

// parseTasks parses a task document (nil: none yet); session names where
// it was read, for the error.
func parseTasks(doc []byte, session string) (*tasks.State, error) {
	s, err := tasks.Parse(doc)
	if err != nil {
		// Not damage: most likely a document of the caller's named "tasks"
		// by a snap from before the task stack.
		return nil, fmt.Errorf("%w: the state document %q of session %s is not snap's task stack (%v); "+
			"it was recorded by hand or by an older snap: start the tasks in another session", snap.ErrUsage, snap.TaskDoc, session, err)
	}
	return s, nil
}

// taskState reads the task document of checkpoint id (zero: none yet).
func (f *Flow) taskState(ctx context.Context, id snap.ID, ck *snap.Node) (*tasks.State, error) {
	if ck == nil {
		return tasks.Parse(nil)
	}
	doc, err := f.r.ReadState(ctx, id, snap.TaskDoc)
	if errors.Is(err, snap.ErrNoPath) {
		doc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseTasks(doc, ck.Session)
}

// TaskBegin pushes a new task (the current one's child unless o.Parent
// says otherwise) and records a task-begin checkpoint. Deeper than
// tasks.max-depth is refused (ErrUsage) with advice to split the work.
func (f *Flow) TaskBegin(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	parent := 0
	if o.Parent != nil {
		var err error
		if parent, err = tasks.ParentArg(*o.Parent); err != nil {
			return nil, fmt.Errorf("%w: parent: %w", snap.ErrUsage, err)
		}
	}
	v, _ := f.r.ConfigGet("tasks.max-depth")
	depth, _ := strconv.Atoi(v) // "": the default
	marks, err := f.s.TaskMarks(ctx, o.Session)
	if err != nil {
		return nil, err
	}
	next, err := marks.Next()
	if err != nil {
		return nil, err
	}
	st := newStep(snap.OpTaskBegin, snap.KindTaskBegin, func(s *tasks.State, messages int) (*tasks.Task, error) {
		return s.Begin(o.Text, parent, depth, next, messages)
	})
	return f.taskCheckpoint(ctx, o, st)
}

// TaskCommit completes the current task with a summary and records a
// task-commit checkpoint (with o.KeepOpen the task stays current). With no
// open task it is ErrUsage.
//
// Staged edits pending in the session are committed with it, atomically:
// the task-commit checkpoint then holds them, and undo puts the files back.
func (f *Flow) TaskCommit(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	st := newStep(snap.OpTaskCommit, snap.KindTaskCommit, func(s *tasks.State, messages int) (*tasks.Task, error) {
		return s.Commit(o.Text, o.KeepOpen, messages)
	})
	p, err := f.s.PeekEdits(ctx, o.Session) // (editCommit reads them again, under the edits lock)
	if err != nil {
		return nil, err
	}
	if len(p.Changes) == 0 {
		return f.taskCheckpoint(ctx, o, st)
	}
	if len(o.State) > 0 {
		return nil, fmt.Errorf("%w: a task commit with staged edits re-reads the state documents; state documents given are not taken", snap.ErrUsage)
	}
	// Refuse a commit with nothing open before anything is written.
	headID, head, err := f.r.Head(ctx, o.Session)
	if err != nil {
		return nil, err
	}
	s, err := f.taskState(ctx, headID, head)
	if err != nil {
		return nil, err
	}
	if _, err := s.Commit(o.Text, o.KeepOpen, 0); err != nil {
		return nil, modelAdvice(fmt.Errorf("%w: %w", snap.ErrUsage, err))
	}
	ec, err := f.editCommit(ctx, o.Session, o.Text, st)
	if err != nil {
		return nil, err
	}
	res := f.taskResult(ctx, o.Session, st, *ec.Checkpoint, ec.Rewind)
	res.Edits = ec
	return res, nil
}

// taskCheckpoint records a task operation that moves no file.
func (f *Flow) taskCheckpoint(ctx context.Context, o TaskOptions, st *step) (*TaskResult, error) {
	res, err := f.s.Record(ctx, snap.CheckpointOptions{Session: o.Session, Summary: o.Text, State: o.State, AllowEmpty: true}, &st.Step)
	if err != nil {
		return nil, err
	}
	return f.taskResult(ctx, res.Session, st, res.ID, nil), nil
}

// TaskRevert abandons the current task (dropping staged edits): it rewinds
// the working tree to the task's task-begin checkpoint (after the usual
// safety checkpoint, so undo brings the attempt back), keeps the
// conversation and other state documents as they are, and records a
// task-revert checkpoint holding the begin's files and the task marked
// reverted with the reason. With no open task it is ErrUsage; when
// retention expired the begin checkpoint, ErrExpired.
func (f *Flow) TaskRevert(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	if len(o.State) > 0 {
		return nil, fmt.Errorf("%w: a task revert leaves the state documents as they are; it takes no state documents", snap.ErrUsage)
	}
	// The session's staged edits are read, recorded for undo and dropped
	// under the edits lock, held throughout: a change staged meanwhile by
	// another process waits and lands after the revert, never lost.
	e, err := f.s.OpenEdits(ctx, o.Session)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	headID, head, err := f.r.Head(ctx, e.Session)
	if err != nil {
		return nil, err
	}
	s, err := f.taskState(ctx, headID, head)
	if err != nil {
		return nil, err
	}
	cur := s.Current()
	if cur == nil {
		return nil, snap.Advise(fmt.Errorf("%w: %w to revert in session %q", snap.ErrUsage, tasks.ErrNoOpenTask, e.Session), snap.Advice{Do: snap.DoTaskBegin})
	}
	begin, err := f.taskBegin(ctx, headID, cur)
	if err != nil {
		return nil, err
	}
	st := newStep(snap.OpTaskRevert, snap.KindTaskRevert, func(s *tasks.State, messages int) (*tasks.Task, error) {
		t := s.Current()
		if t == nil || t.ID != cur.ID {
			return nil, fmt.Errorf("%w: the current task changed meanwhile", snap.ErrConflict)
		}
		return s.Revert(o.Text, messages)
	})
	if _, err := s.Clone().Revert(o.Text, 0); err != nil { // refuse a bad reason before anything is recorded
		return nil, modelAdvice(fmt.Errorf("%w: %w", snap.ErrUsage, err))
	}
	rr, end, err := f.s.Move(ctx, snap.MoveSpec{Session: e.Session, Summary: o.Text, Step: &st.Step, Files: begin, Edits: e, All: o.All})
	if end.IsZero() {
		return nil, err
	}
	return f.taskResult(ctx, e.Session, st, end, rr), err
}

// taskBegin finds the task-begin checkpoint of open task t: the nearest
// ancestor of the head (first parents) of kind task-begin whose task
// document makes t current. The stack travels with the head, so the
// checkpoint t began at is always one of its ancestors, whatever session
// recorded it and whether or not its op-log record survived.
func (f *Flow) taskBegin(ctx context.Context, head snap.ID, t *tasks.Task) (snap.ID, error) {
	for id := head; !id.IsZero(); {
		ck, _, err := f.r.ReadNode(ctx, id)
		if err != nil {
			return snap.ID{}, fmt.Errorf("looking for the task-begin checkpoint of task %d: %w", t.ID, err)
		}
		if ck.Kind == snap.KindTaskBegin {
			if s, err := f.taskState(ctx, id, ck); err == nil && s.Current() != nil && s.Current().ID == t.ID {
				return id, nil
			}
		}
		if len(ck.Parents) == 0 {
			break
		}
		id = ck.Parents[0]
	}
	return snap.ID{}, fmt.Errorf("%w: no ancestor of the session head is task %d's task-begin checkpoint", snap.ErrNoCheckpoint, t.ID)
}

// taskResult builds a task operation's answer from the step's outcome.
func (f *Flow) taskResult(ctx context.Context, session string, st *step, ck snap.ID, rr *snap.RewindResult) *TaskResult {
	res := &TaskResult{Checkpoint: ck, Stack: append([]int{}, st.after.Stack...), Rewind: rr}
	marks, _ := f.s.TaskMarks(ctx, session) // (the session's name was checked)
	res.Task = taskInfo(marks, st.after, st.done)
	return res
}

// taskInfo reports task t of document s; marks give its checkpoints.
func taskInfo(marks *snap.TaskMarks, s *tasks.State, t *tasks.Task) TaskInfo {
	info := TaskInfo{Task: *t, Current: s.Current() != nil && s.Current().ID == t.ID}
	begin, end := marks.Checkpoints(t.ID)
	if !begin.IsZero() && !marks.Expired(begin) {
		info.Begin = &begin
	}
	if !end.IsZero() && t.Status != tasks.Open && !marks.Expired(end) {
		info.End = &end
	}
	return info
}

// Tasks returns the session's task stack and tree as recorded at
// checkpoint at (nil: the session head).
func (f *Flow) Tasks(ctx context.Context, session string, at *snap.ID) (*TaskTree, error) {
	if session == "" {
		session = snap.DefaultSession
	}
	marks, err := f.s.TaskMarks(ctx, session)
	if err != nil {
		return nil, err
	}
	var id snap.ID
	var ck *snap.Node
	if at != nil {
		if ck, _, err = f.r.ReadNode(ctx, *at); err != nil {
			return nil, err
		}
		id = *at
	} else if id, ck, err = f.r.Head(ctx, session); err != nil {
		return nil, err
	}
	s, err := f.taskState(ctx, id, ck)
	if err != nil {
		return nil, err
	}
	tree := &TaskTree{Session: session, Stack: append([]int{}, s.Stack...), Tasks: []TaskInfo{}, state: s}
	if ck != nil {
		tree.Checkpoint = &id
	}
	if cur := s.Current(); cur != nil {
		n := cur.ID
		tree.Current = &n
	}
	for i := range s.Tasks {
		tree.Tasks = append(tree.Tasks, taskInfo(marks, s, &s.Tasks[i]))
	}
	return tree, nil
}
