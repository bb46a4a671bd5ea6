package snap

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// TaskDoc is the state document holding the session's task stack and task
// tree (package tasks; package workflow changes it through a Step). snap
// writes it, never a caller; it has no source path: it travels with the
// session head. Every checkpoint inherits it, and a rewind, undo or redo
// that moves the head moves the stack with it (--path restores, which
// leave the head, leave it too).
const TaskDoc = "tasks"

// Checkpoint kinds of the workflow's operations; like pre-rewind, snap's
// own: Checkpoint refuses them.
const (
	KindTaskBegin  = "task-begin"
	KindTaskCommit = "task-commit"
	KindTaskRevert = "task-revert"
	KindEditCommit = "edit-commit"
	KindRevert     = "revert"
)

// taskDetail is the op-log detail of a task operation.
type taskDetail struct {
	Task int `json:"task"`
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

// taskDoc reads the task document of checkpoint ck (nil: none).
func (r *Repo) taskDoc(ck *objects.Checkpoint) ([]byte, error) {
	if ck == nil {
		return nil, nil
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, err
	}
	e, ok := st.Find(TaskDoc)
	if !ok {
		return nil, nil
	}
	return r.objects.ReadBlob(e.ID, maxDocSize)
}

// applyStep applies step to the task document c inherits from parent and
// returns the new document; the conversation's message count (for history
// compaction) is taken as captured.
func (r *Repo) applyStep(step *Step, c *captured, parent *objects.Checkpoint) ([]byte, error) {
	doc, err := r.taskDoc(parent)
	if err != nil {
		return nil, err
	}
	messages := 0
	if e, ok := c.docs[ConversationDoc]; ok {
		messages = max(r.countMessages(e.ID, c, parent), 0)
	}
	data, task, err := step.Apply(doc, messages)
	if err != nil {
		return nil, err
	}
	step.task = task
	return data, nil
}

// recordMoveEnd records and commits the checkpoint a workflow move ends
// on: tree (snap gives its counts and kept paths), the safety
// checkpoint's state documents with the task document step changes (when
// it does); its parent is the safety checkpoint.
func (r *Repo) recordMoveEnd(ctx context.Context, t *tx, m *move, safety, tree objects.ID, snap *worktree.Snapshot, step *Step) (objects.ID, error) {
	w := t.objects()
	sck, err := r.objects.ReadCheckpoint(safety)
	if err != nil {
		return objects.ID{}, err
	}
	c, err := r.capturedOf(sck, tree, snap)
	if err != nil {
		return objects.ID{}, err
	}
	if step.Apply != nil {
		doc, err := r.taskDoc(sck)
		if err != nil {
			return objects.ID{}, err
		}
		data, task, err := step.Apply(doc, max(sck.Stats.Messages, 0))
		if err != nil {
			return objects.ID{}, err
		}
		step.task = task
		m.Scope.Task = task // the op log names the task
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
	res, _, err := r.buildCheckpoint(w, m.Session, safety, sck, c, CheckpointOptions{Kind: step.Kind, Summary: m.summary})
	if err != nil {
		return objects.ID{}, err
	}
	// Durable now: the journal, written next, names it.
	return res.ID, t.write(ctx, nil, nil)
}
