package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/tasks"
	"github.com/snapcore-dev/snap/worktree"
)

// TaskDoc is the state document holding the session's task stack and task
// tree (package tasks). snap writes it, never a caller; it has no source
// path: it travels with the session head. Every checkpoint inherits it, and
// a rewind, undo or redo that moves the head moves the stack with it
// (--path restores, which leave the head, leave it too).
const TaskDoc = "tasks"

// Checkpoint kinds of task operations; like pre-rewind, snap's own.
const (
	kindTaskBegin  = "task-begin"
	kindTaskCommit = "task-commit"
	kindTaskRevert = "task-revert"
)

// TaskOptions describe a task operation.
type TaskOptions struct {
	Session string
	// Text is the goal (begin), the summary (commit) or the reason
	// (revert).
	Text string
	// Parent (begin): the task the new one belongs to, which must be open;
	// 0 is the current task (top level when none is open), -1 top level.
	Parent int
	// KeepOpen (commit): record the summary, keep the task current.
	KeepOpen bool
	// State: documents given explicitly (--conversation, --state); the
	// session's others are re-read from the paths they were last recorded
	// from, as every checkpoint does.
	State []StateDoc
}

// checkTaskDocs refuses the task stack given as a state document.
func checkTaskDocs(docs []StateDoc) error {
	for _, d := range docs {
		if d.Name == TaskDoc {
			return fmt.Errorf("%w: state document %q is snap's task stack; give yours another name", ErrUsage, TaskDoc)
		}
	}
	return nil
}

// TaskInfo is one task as every front-end reports it.
type TaskInfo struct {
	tasks.Task
	Current bool        `json:"current"`
	Begin   *objects.ID `json:"begin"` // its task-begin checkpoint; null when retention expired it or it is unknown
	End     *objects.ID `json:"end"`   // its task-commit or task-revert checkpoint; null while open
}

// TaskTree is a session's task stack and tree at a checkpoint.
type TaskTree struct {
	Session    string      `json:"session"`
	Checkpoint *objects.ID `json:"checkpoint"` // where it was read; null: the session has no checkpoint
	Current    *int        `json:"current"`    // the current task; null when none is open
	Stack      []int       `json:"stack"`      // the open tasks, outermost first
	Tasks      []TaskInfo  `json:"tasks"`      // every task, by id
	state      *tasks.State
}

// Text renders the tree for people (✅ committed, ❌ reverted, 📝 current,
// ⏳ open); Prompt the compact plain text meant for an agent's next prompt.
func (t *TaskTree) Text() string   { return t.state.Tree() }
func (t *TaskTree) Prompt() string { return t.state.Prompt() }

// TaskResult reports a task operation.
type TaskResult struct {
	Task       TaskInfo      `json:"task"`
	Checkpoint objects.ID    `json:"checkpoint"` // the task-begin, task-commit or task-revert checkpoint
	Stack      []int         `json:"stack"`      // the open tasks after it
	Rewind     *RewindResult `json:"rewind,omitempty"`
	// Edits: the staged edits a task commit applied with it.
	Edits *EditCommitResult `json:"edits,omitempty"`
}

// taskDetail is the op-log detail of a task operation.
type taskDetail struct {
	Task int `json:"task"`
}

// taskStep is a task operation as a checkpoint applies it to the task
// document of the head it is built on (again on each retry).
type taskStep struct {
	kind  OpKind
	floor int // the least id a new task may take (one past every id the history has seen)
	apply func(s *tasks.State, messages int) (*tasks.Task, error)
	done  *tasks.Task  // the task as the last application left it
	after *tasks.State // the document after it
}

// TaskBegin pushes a new task (the current one's child unless o.Parent
// says otherwise) and records a task-begin checkpoint. Deeper than
// tasks.max-depth is refused (ErrUsage) with advice to split the work.
func (r *Repo) TaskBegin(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	depth := r.config.TasksMaxDepth
	return r.taskCheckpoint(ctx, o, OpTaskBegin, kindTaskBegin, func(s *tasks.State, floor, messages int) (*tasks.Task, error) {
		return s.Begin(o.Text, o.Parent, depth, floor, messages)
	})
}

// TaskCommit completes the current task with a summary and records a
// task-commit checkpoint (with o.KeepOpen the task stays current). With no
// open task it is ErrUsage.
//
// Staged edits pending in the session are committed with it, atomically:
// the task-commit checkpoint then holds them, and undo puts the files back.
func (r *Repo) TaskCommit(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	apply := func(s *tasks.State, _, messages int) (*tasks.Task, error) {
		return s.Commit(o.Text, o.KeepOpen, messages)
	}
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	p, err := r.readEdits(session) // (editCommit reads them again, under the edits lock)
	if err != nil {
		return nil, err
	}
	if len(p.Changes) == 0 {
		return r.taskCheckpoint(ctx, o, OpTaskCommit, kindTaskCommit, apply)
	}
	if len(o.State) > 0 {
		return nil, fmt.Errorf("%w: a task commit with staged edits re-reads the state documents; state documents given are not taken", ErrUsage)
	}
	step := &taskStep{kind: OpTaskCommit}
	step.apply = func(s *tasks.State, messages int) (*tasks.Task, error) {
		t, err := apply(s, 0, messages)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return t, err
	}
	// Refuse a commit with nothing open before anything is written.
	_, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	s, err := r.taskState(head)
	if err != nil {
		return nil, err
	}
	if _, err := step.apply(s, 0); err != nil {
		return nil, modelAdvice(err)
	}
	ec, err := r.editCommit(ctx, session, o.Text, step)
	if err != nil {
		return nil, err
	}
	res := r.taskResult(session, step, *ec.Checkpoint, ec.Rewind)
	res.Edits = ec
	return res, nil
}

func (r *Repo) taskCheckpoint(ctx context.Context, o TaskOptions, op OpKind, kind string,
	apply func(s *tasks.State, floor, messages int) (*tasks.Task, error)) (*TaskResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	if err := checkTaskDocs(o.State); err != nil {
		return nil, err
	}
	floor, err := r.history().nextTask(session)
	if err != nil {
		return nil, err
	}
	step := &taskStep{kind: op, floor: floor}
	step.apply = func(s *tasks.State, messages int) (*tasks.Task, error) { return apply(s, step.floor, messages) }
	res, err := r.checkpoint(ctx, CheckpointOptions{Session: session, Kind: kind, Summary: o.Text, State: o.State, AllowEmpty: true}, step)
	if err != nil {
		return nil, err
	}
	return r.taskResult(session, step, res.ID, nil), nil
}

// TaskRevert abandons the current task (dropping staged edits): it rewinds the working tree to the
// task's task-begin checkpoint (after the usual safety checkpoint, so undo
// brings the attempt back), keeps the conversation and other state
// documents as they are, and records a task-revert checkpoint holding the
// begin's files and the task marked reverted with the reason. With no open
// task it is ErrUsage; when retention expired the begin checkpoint,
// ErrExpired.
func (r *Repo) TaskRevert(ctx context.Context, o TaskOptions) (*TaskResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	if len(o.State) > 0 {
		return nil, fmt.Errorf("%w: a task revert leaves the state documents as they are; it takes no state documents", ErrUsage)
	}
	// The session's staged edits are read, recorded for undo and dropped
	// under the edits lock, held throughout: a change staged meanwhile by
	// another process waits and lands after the revert, never lost. (The
	// edits lock is taken before the writer's, never after.)
	unlockEdits, err := r.lockEdits(ctx, session)
	if err != nil {
		return nil, err
	}
	defer unlockEdits()
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	headID, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	s, err := r.taskState(head)
	if err != nil {
		return nil, err
	}
	cur := s.Current()
	if cur == nil {
		return nil, advise(fmt.Errorf("%w: %w to revert in session %q", ErrUsage, tasks.ErrNoOpenTask, session), Advice{Do: DoTaskBegin})
	}
	begin, err := r.taskBegin(headID, cur)
	if err != nil {
		return nil, err
	}
	step := &taskStep{kind: OpTaskRevert, apply: func(s *tasks.State, messages int) (*tasks.Task, error) {
		t := s.Current()
		if t == nil || t.ID != cur.ID {
			return nil, fmt.Errorf("%w: the current task changed meanwhile", ErrConflict)
		}
		return s.Revert(o.Text, messages)
	}}
	if _, err := step.apply(s.Clone(), 0); err != nil { // refuse a bad reason before anything is recorded
		return nil, modelAdvice(fmt.Errorf("%w: %w", ErrUsage, err))
	}
	pending, err := r.loadEdits(session)
	if err != nil {
		return nil, err
	}
	var dropped json.RawMessage // its undo stages them again
	if len(pending.Changes) > 0 {
		dropped, _ = json.Marshal(pending)
	}
	m := &move{Kind: string(OpTaskRevert), Session: session, Target: begin, NewHead: begin,
		Scope: rewindScope{Files: true, Task: cur.ID, Edits: dropped}, summary: o.Text,
		build: func(m *move, safety objects.ID, _ *captured, tck *objects.Checkpoint) (objects.ID, error) {
			return r.buildRevert(m, safety, tck, step)
		}}
	rr, err := r.run(ctx, m, false)
	if err != nil && (rr == nil || step.after == nil) {
		return nil, err
	}
	if err == nil || errors.Is(err, ErrPartial) {
		// The attempt is abandoned: so are its staged edits (those
		// recorded above: nothing was staged since).
		if derr := r.saveEdits(session, edits.New()); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	res := r.taskResult(session, step, m.Target, rr)
	return res, err
}

// taskBegin finds the task-begin checkpoint of open task t: the nearest
// ancestor of the head (first parents) of kind task-begin whose task
// document makes t current. The stack travels with the head, so the
// checkpoint t began at is always one of its ancestors, whatever session
// recorded it and whether or not its op-log record survived.
func (r *Repo) taskBegin(head objects.ID, t *tasks.Task) (objects.ID, error) {
	for id := head; !id.IsZero(); {
		ck, err := r.loadCheckpoint(id)
		if err != nil {
			return objects.ID{}, fmt.Errorf("looking for the task-begin checkpoint of task %d: %w", t.ID, err)
		}
		if ck.Kind == kindTaskBegin {
			if s, err := r.taskState(ck); err == nil && s.Current() != nil && s.Current().ID == t.ID {
				return id, nil
			}
		}
		if len(ck.Parents) == 0 {
			break
		}
		id = ck.Parents[0]
	}
	return objects.ID{}, fmt.Errorf("%w: no ancestor of the session head is task %d's task-begin checkpoint", ErrNoCheckpoint, t.ID)
}

// taskResult builds a task operation's answer from the step's outcome.
func (r *Repo) taskResult(session string, step *taskStep, ck objects.ID, rr *RewindResult) *TaskResult {
	res := &TaskResult{Checkpoint: ck, Stack: append([]int{}, step.after.Stack...), Rewind: rr}
	res.Task = r.taskInfo(r.history(), session, step.after, step.done)
	return res
}

func (r *Repo) taskInfo(h *history, session string, s *tasks.State, t *tasks.Task) TaskInfo {
	info := TaskInfo{Task: *t, Current: s.Current() != nil && s.Current().ID == t.ID}
	begin, end := h.taskCheckpoints(session, t.ID)
	if !begin.IsZero() && !h.isExpired(begin) {
		info.Begin = &begin
	}
	if !end.IsZero() && t.Status != tasks.Open && !h.isExpired(end) {
		info.End = &end
	}
	return info
}

// Tasks returns the session's task stack and tree as recorded at
// checkpoint at (nil: the session head).
func (r *Repo) Tasks(ctx context.Context, session string, at *objects.ID) (*TaskTree, error) {
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	var id objects.ID
	var ck *objects.Checkpoint
	if at != nil {
		if ck, err = r.loadCheckpoint(*at); err != nil {
			return nil, err
		}
		id = *at
	} else if id, ck, err = r.head(session); err != nil {
		return nil, err
	}
	s, err := r.taskState(ck)
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
	h := r.history()
	for i := range s.Tasks {
		tree.Tasks = append(tree.Tasks, r.taskInfo(h, session, s, &s.Tasks[i]))
	}
	return tree, nil
}

// taskState reads the task document of checkpoint ck (nil: none yet).
func (r *Repo) taskState(ck *objects.Checkpoint) (*tasks.State, error) {
	if ck == nil {
		return tasks.Parse(nil)
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, err
	}
	e, ok := st.Find(TaskDoc)
	if !ok {
		return tasks.Parse(nil)
	}
	data, err := r.objects.ReadBlob(e.ID, maxDocSize)
	if err != nil {
		return nil, err
	}
	s, err := tasks.Parse(data)
	if err != nil {
		// Not damage: most likely a document of the caller's named "tasks"
		// by a snap from before the task stack.
		return nil, fmt.Errorf("%w: the state document %q of session %s is not snap's task stack (%v); "+
			"it was recorded by hand or by an older snap: start the tasks in another session (-s)", ErrUsage, TaskDoc, ck.Session, err)
	}
	return s, nil
}

// taskOp is the op-log record of a task checkpoint.
func taskOp(kind OpKind, task int) (string, json.RawMessage) {
	detail, _ := json.Marshal(taskDetail{Task: task})
	return string(kind), detail
}

// taskOf returns the task a task operation's record names (0: none).
func taskOf(op refs.Op) int {
	var d taskDetail
	if len(op.Detail) == 0 || json.Unmarshal(op.Detail, &d) != nil {
		return 0
	}
	return d.Task
}

// isTaskKind reports whether op kind k is a task operation.
func isTaskKind(k string) bool {
	return k == string(OpTaskBegin) || k == string(OpTaskCommit) || k == string(OpTaskRevert)
}

// applyTask applies step to the task document c inherited from parent and
// returns the new document; the conversation's message count (for history
// compaction) is taken as captured.
func (r *Repo) applyTask(step *taskStep, c *captured, parent *objects.Checkpoint) ([]byte, error) {
	s, err := r.taskState(parent)
	if err != nil {
		return nil, err
	}
	messages := 0
	if doc, ok := c.docs[ConversationDoc]; ok {
		messages = max(r.countMessages(doc.ID, c, parent), 0)
	}
	t, err := step.apply(s, messages)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, err
		}
		return nil, modelAdvice(fmt.Errorf("%w: %w", ErrUsage, err))
	}
	step.done, step.after = t, s
	return s.Marshal(), nil
}

// buildRevert records the checkpoint a task revert ends on: the files of
// the task's begin (tck), the state documents of the safety checkpoint,
// and the task document with the current task reverted.
func (r *Repo) buildRevert(m *move, safety objects.ID, tck *objects.Checkpoint, step *taskStep) (objects.ID, error) {
	w := r.objects.NewWriter()
	defer w.Abort()
	snap := &worktree.Snapshot{Files: tck.Stats.Files, Bytes: tck.Stats.Bytes}
	for _, p := range tck.Skipped {
		snap.Skipped = append(snap.Skipped, worktree.Skipped{Path: p, Kept: true})
	}
	return r.recordMoveEnd(w, m, safety, tck.Tree, snap, kindTaskRevert, step)
}

// recordMoveEnd records and commits the checkpoint a built move ends on:
// tree (snap gives its counts and kept paths), the safety checkpoint's
// state documents with, when step is given, the task document it changes;
// its parent is the safety checkpoint.
func (r *Repo) recordMoveEnd(w *objects.Writer, m *move, safety, tree objects.ID, snap *worktree.Snapshot, kind string, step *taskStep) (objects.ID, error) {
	sck, err := r.objects.ReadCheckpoint(safety)
	if err != nil {
		return objects.ID{}, err
	}
	st, err := r.objects.ReadTree(sck.State)
	if err != nil {
		return objects.ID{}, err
	}
	c := &captured{tree: tree, state: sck.State, sources: maps.Clone(sck.StateSources), docs: map[string]objects.TreeEntry{},
		data: map[string][]byte{}, files: map[string]string{}, snap: snap}
	if c.sources == nil {
		c.sources = map[string]string{}
	}
	for _, e := range st.Entries {
		c.docs[e.Name] = e
	}
	if step != nil {
		s, err := r.taskState(sck)
		if err != nil {
			return objects.ID{}, err
		}
		t, err := step.apply(s, max(sck.Stats.Messages, 0))
		if err != nil {
			return objects.ID{}, err
		}
		step.done, step.after = t, s
		data := s.Marshal()
		docID, err := w.PutBytesAppend(data, c.docs[TaskDoc].ID)
		if err != nil {
			return objects.ID{}, err
		}
		c.docs[TaskDoc] = objects.TreeEntry{Name: TaskDoc, Mode: objects.ModeFile, ID: docID, Size: int64(len(data))}
		c.data[TaskDoc] = data
		var nst objects.Tree
		for _, n := range slices.Sorted(maps.Keys(c.docs)) {
			nst.Entries = append(nst.Entries, c.docs[n])
		}
		if c.state, err = w.PutDelta(objects.TypeTree, nst.Encode(), sck.State); err != nil {
			return objects.ID{}, err
		}
	}
	res, _, err := r.buildCheckpoint(w, m.Session, safety, sck, c, CheckpointOptions{Kind: kind, Summary: m.summary})
	if err != nil {
		return objects.ID{}, err
	}
	if _, err := w.Commit(); err != nil {
		return objects.ID{}, err
	}
	return res.ID, nil
}
