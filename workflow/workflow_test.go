package workflow_test

import (
	"errors"
	"path/filepath"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/workflow"
)

// Commit is the one rule front-ends share: the staged edits are a task
// commit while a task is open (unless autoPop is false), else an edit
// commit.
func TestCommitChoosesTaskOrEditCommit(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	f := workflow.New(r)
	writeFile(t, filepath.Join(root, "a.txt"), "one\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	stage := func(old, new string) {
		t.Helper()
		if _, err := f.EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: old, New: new}); err != nil {
			t.Fatal(err)
		}
	}

	stage("one", "two")
	c, err := f.Commit(ctx, "", "no task open", true)
	if err != nil || c.Edits == nil || c.Task != nil || c.Edits.AppliedChanges != 1 {
		t.Fatalf("no task open: %+v, %v; want an edit commit", c, err)
	}

	if _, err := f.TaskBegin(ctx, workflow.TaskOptions{Text: "goal"}); err != nil {
		t.Fatal(err)
	}
	stage("two", "three")
	c, err = f.Commit(ctx, "", "kept open", false)
	if err != nil || c.Edits == nil || c.Task != nil {
		t.Fatalf("autoPop false: %+v, %v; want an edit commit", c, err)
	}
	if tree, _ := f.Tasks(ctx, "", nil); tree.Current == nil {
		t.Fatal("an edit commit closed the task")
	}
	stage("three", "four")
	c, err = f.Commit(ctx, "", "done", true)
	if err != nil || c.Task == nil || c.Task.Edits == nil || c.Task.Task.Status != "committed" {
		t.Fatalf("task open: %+v, %v; want a task commit with the edits", c, err)
	}
	if tree, _ := f.Tasks(ctx, "", nil); tree.Current != nil {
		t.Fatalf("the task is still open after its commit: %+v", tree)
	}
}

// TaskOptions.Parent is checked once, here, for every front-end: nil is
// the current task, 0 the top level, a negative id is refused.
func TestTaskBeginParent(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	f := workflow.New(r)
	writeFile(t, filepath.Join(root, "a.txt"), "one\n")
	outer, err := f.TaskBegin(ctx, workflow.TaskOptions{Text: "outer"})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := f.TaskBegin(ctx, workflow.TaskOptions{Text: "inner"})
	if err != nil || inner.Task.Parent != outer.Task.ID {
		t.Fatalf("no parent: %+v, %v; want a child of task %d", inner, err, outer.Task.ID)
	}
	top, err := f.TaskBegin(ctx, workflow.TaskOptions{Text: "top", Parent: ptr(0)})
	if err != nil || top.Task.Parent != 0 {
		t.Fatalf("parent 0: %+v, %v; want a top-level task", top, err)
	}
	if _, err := f.TaskBegin(ctx, workflow.TaskOptions{Text: "bad", Parent: ptr(-3)}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("parent -3: %v; want ErrUsage", err)
	}
}
