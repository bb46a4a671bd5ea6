package gitbridge

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/tasks"
	"github.com/snapcore-dev/snap/workflow"
)

// Trailers of task-branch commits.
const (
	TrailerTask   = "Snap-Task"    // the task the commit belongs to
	TrailerTaskOf = "Snap-Task-Of" // the checkpoint it stands for
)

// taskBranches returns the refs of the session's task branches (see the
// package doc), built over the checkpoints already exported, in the
// session's order (entries, oldest first). Each task's branch has one
// commit per checkpoint taken while it was the current task (its
// task-begin first, its task-commit or task-revert last), with that
// checkpoint's tree, subject and time; its first commit's parent is the
// parent task's tip (a subtask forks from its parent) or, for a top-level
// task, the commit of the checkpoint it began on. A committed subtask is
// merged into its parent's branch: a commit whose parents are the parent's
// tip and the subtask's last commit, with the subtask's goal and summary.
// Tasks are those of the head's task tree.
func (ex *exporter) taskBranches(session string, entries []snap.LogEntry) (map[string]plumbing.Hash, error) {
	tt, err := workflow.New(ex.b.snap).Tasks(ex.ctx, session, nil)
	if err != nil || len(tt.Tasks) == 0 {
		return nil, err
	}
	info := map[int]workflow.TaskInfo{}
	begins, ends := map[snap.ID]int{}, map[snap.ID]int{}
	for _, t := range tt.Tasks {
		info[t.ID] = t
		if t.Begin != nil {
			begins[*t.Begin] = t.ID
		}
		if t.End != nil {
			ends[*t.End] = t.ID
		}
	}
	tips := map[int]plumbing.Hash{}
	for _, e := range entries {
		x := ex.done[e.ID]
		if x == nil {
			continue
		}
		if t, ok := begins[e.ID]; ok {
			var parents []plumbing.Hash
			if p := info[t].Parent; p != 0 && !tips[p].IsZero() {
				parents = append(parents, tips[p])
			} else if len(x.node.Parents) > 0 {
				if px := ex.done[x.node.Parents[0]]; px != nil {
					parents = append(parents, px.commit)
				}
			}
			if tips[t], err = ex.taskCommit(x, t, parents); err != nil {
				return nil, err
			}
			continue
		}
		if t, ok := ends[e.ID]; ok && !tips[t].IsZero() {
			if tips[t], err = ex.taskCommit(x, t, []plumbing.Hash{tips[t]}); err != nil {
				return nil, err
			}
			ti := info[t]
			if p := ti.Parent; ti.Status == tasks.Committed && p != 0 && !tips[p].IsZero() {
				sig := ex.b.signature(x.node.When())
				goal, err := ex.sec.text(ti.Goal, fmt.Sprintf("task %d:goal", t))
				if err != nil {
					return nil, err
				}
				summary, err := ex.sec.text(ti.Summary, fmt.Sprintf("task %d:summary", t))
				if err != nil {
					return nil, err
				}
				msg := fmt.Sprintf("%s\n\n%s\n\n%s: %d\n", oneLine(goal), summary, TrailerTask, t)
				m := &object.Commit{Author: sig, Committer: sig, TreeHash: x.tree, ParentHashes: []plumbing.Hash{tips[p], tips[t]}, Message: msg}
				if tips[p], err = ex.putCommit(m); err != nil {
					return nil, err
				}
			}
			continue
		}
		if cur := ex.currentTask(e.ID); cur != 0 && !tips[cur].IsZero() {
			if tips[cur], err = ex.taskCommit(x, cur, []plumbing.Hash{tips[cur]}); err != nil {
				return nil, err
			}
		}
	}
	out := map[string]plumbing.Hash{}
	for t, h := range tips {
		out[TaskRefs+session+"/"+strconv.Itoa(t)] = h
	}
	return out, nil
}

// taskCommit writes the task-branch commit standing for checkpoint x (its
// subject and id as exported).
func (ex *exporter) taskCommit(x *exported, task int, parents []plumbing.Hash) (plumbing.Hash, error) {
	sig := ex.b.signature(x.node.When())
	msg := fmt.Sprintf("%s\n\n%s: %d\n%s: %s\n", x.subject, TrailerTask, task, TrailerTaskOf, x.id)
	return ex.putCommit(&object.Commit{Author: sig, Committer: sig, TreeHash: x.tree, ParentHashes: parents, Message: msg})
}

// currentTask is the task on top of the stack at checkpoint id (0: none).
func (ex *exporter) currentTask(id snap.ID) int {
	var buf bytes.Buffer
	if err := ex.b.snap.CatState(ex.ctx, id, snap.TaskDoc, &buf); err != nil {
		return 0
	}
	st, err := tasks.Parse(buf.Bytes())
	if err != nil || st.Current() == nil {
		return 0
	}
	return st.Current().ID
}
