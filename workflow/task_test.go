package workflow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/tasks"
	"github.com/snapcore-dev/snap/workflow"
)

func begin(t *testing.T, r *snap.Repo, session, goal string) *workflow.TaskResult {
	t.Helper()
	res, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Session: session, Text: goal})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Task checkpoints re-read the transcript from its recorded path and
// record how many messages there were when each task began and ended.
func TestTaskMessagesAndTranscript(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "chat.jsonl")
	writeFile(t, conv, `{"role":"user","content":"one"}`+"\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	appendFile(t, conv, `{"role":"assistant","content":"two"}`+"\n")
	b := begin(t, r, "", "goal")
	if b.Task.BeginMessages != 2 || b.Task.ID != 1 || !b.Task.Current || b.Task.Begin == nil || *b.Task.Begin != b.Checkpoint {
		t.Fatalf("begin: %+v", b.Task)
	}
	appendFile(t, conv, `{"role":"user","content":"three"}`+"\n")
	c, err := workflow.New(r).TaskCommit(ctx, workflow.TaskOptions{Text: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Task.EndMessages != 3 || c.Task.Status != tasks.Committed || c.Task.End == nil || *c.Task.End != c.Checkpoint || len(c.Stack) != 0 {
		t.Fatalf("commit: %+v", c)
	}
	show, err := r.Show(ctx, c.Checkpoint)
	if err != nil || show.Kind != "task-commit" || show.Stats.Messages != 3 {
		t.Fatalf("the task-commit checkpoint: %+v %v", show, err)
	}
}

// A revert puts the files back as at the task's begin (files created in
// the task go, edited ones come back), leaves the transcript, and is undone
// and redone exactly; later checkpoints inherit the stack.
func TestTaskRevertUndoRedo(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "chat.jsonl")
	writeFile(t, conv, `{"role":"user","content":"one"}`+"\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	begin(t, r, "", "try")
	writeFile(t, filepath.Join(root, "a"), "2")
	writeFile(t, filepath.Join(root, "new"), "n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "a"), "3") // not checkpointed: the safety checkpoint holds it
	appendFile(t, conv, `{"role":"assistant","content":"two"}`+"\n")
	before := listTree(t, root)
	res, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "wrong approach"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != tasks.Reverted || res.Task.Reason != "wrong approach" || res.Rewind == nil || res.Rewind.SafetyCheckpoint == nil {
		t.Fatalf("revert: %+v", res)
	}
	if got := listTree(t, root); got != `. ""; a "1"; ` {
		t.Fatalf("files after the revert: %s", got)
	}
	if b, _ := os.ReadFile(conv); len(b) == 0 || string(b) == `{"role":"user","content":"one"}`+"\n" {
		t.Fatalf("the revert rewound the transcript: %q", b)
	}
	tree, err := workflow.New(r).Tasks(ctx, "", nil)
	if err != nil || tree.Current != nil || tree.Tasks[0].End == nil || *tree.Tasks[0].End != res.Checkpoint {
		t.Fatalf("tree after the revert: %+v %v", tree, err)
	}
	// A hook's checkpoint after it inherits the stack.
	checkpoint(t, r, snap.CheckpointOptions{AllowEmpty: true})
	if tree, _ := workflow.New(r).Tasks(ctx, "", nil); tree.Tasks[0].Status != tasks.Reverted {
		t.Fatalf("a later checkpoint lost the stack: %+v", tree.Tasks)
	}
	if _, err := r.Undo(ctx, ""); err != nil { // the plain checkpoint
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil { // the revert
		t.Fatal(err)
	}
	if got := listTree(t, root); got != before {
		t.Fatalf("undo of the revert:\n got %s\nwant %s", got, before)
	}
	if tree, _ := workflow.New(r).Tasks(ctx, "", nil); tree.Current == nil || *tree.Current != 1 {
		t.Fatalf("undo of the revert: the task is not current again: %+v", tree)
	}
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := listTree(t, root); got != `. ""; a "1"; ` {
		t.Fatalf("redo of the revert: %s", got)
	}
}

// Commit and revert with nothing open are usage errors that record
// nothing; a bad parent, an empty goal and a too deep task likewise.
func TestTaskErrors(t *testing.T) {
	r, _ := snaptest.NewRepo(t)
	for name, f := range map[string]func() error{
		"commit":     func() error { _, err := workflow.New(r).TaskCommit(ctx, workflow.TaskOptions{Text: "x"}); return err },
		"revert":     func() error { _, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "x"}); return err },
		"empty goal": func() error { _, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: " "}); return err },
		"bad parent": func() error {
			_, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "x", Parent: ptr(5)})
			return err
		},
	} {
		if err := f(); !errors.Is(err, snap.ErrUsage) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
	if ops, _ := r.Ops(ctx, 0); len(ops) != 0 {
		t.Fatalf("refused task operations recorded %d operations", len(ops))
	}
	for i := range 3 {
		begin(t, r, "", string(rune('a'+i)))
	}
	if _, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "d"}); !errors.Is(err, snap.ErrUsage) || !errors.Is(err, tasks.ErrTooDeep) {
		t.Fatalf("a fourth level: %v", err)
	}
	if _, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: ""}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("a revert without a reason: %v", err)
	}
}

// Concurrent begins in one session all land, with distinct ids, chained.
func TestTaskConcurrentBegins(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := r.ConfigSet(ctx, "tasks.max-depth", "20"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]int, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "t", Parent: ptr(0)})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.Task.ID
		}()
	}
	wg.Wait()
	tree, err := workflow.New(r).Tasks(ctx, "", nil)
	if err != nil || len(tree.Tasks) != 8 || len(tree.Stack) != 8 {
		t.Fatalf("after 8 concurrent begins: %+v %v", tree, err)
	}
	seen := map[int]bool{}
	for _, id := range ids {
		if seen[id] || id < 1 || id > 8 {
			t.Fatalf("ids %v", ids)
		}
		seen[id] = true
	}
}

// A task commit with staged edits applies them atomically in its
// task-commit checkpoint; undo puts the files back and reopens the task; a
// revert drops staged edits.
func TestTaskCommitWithStagedEdits(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "timeout: 30\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	begin(t, r, "", "raise the timeout")
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "30", New: "60"}); err != nil {
		t.Fatal(err)
	}
	res, err := workflow.New(r).TaskCommit(ctx, workflow.TaskOptions{Text: "raised"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "timeout: 60\n" {
		t.Fatalf("after the task commit: %q", b)
	}
	if res.Edits == nil || res.Edits.AppliedChanges != 1 || res.Task.Status != tasks.Committed || res.Task.End == nil || *res.Task.End != res.Checkpoint {
		t.Fatalf("task commit with edits: %+v %+v", res, res.Edits)
	}
	if show, err := r.Show(ctx, res.Checkpoint); err != nil || show.Kind != "task-commit" {
		t.Fatalf("the checkpoint: %+v %v", show, err)
	}
	if st, _ := workflow.New(r).EditStatus(ctx, ""); st.Status != "idle" {
		t.Fatalf("edits still pending: %+v", st)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "timeout: 30\n" {
		t.Fatalf("after the undo: %q", b)
	}
	if tree, _ := workflow.New(r).Tasks(ctx, "", nil); tree.Current == nil {
		t.Fatalf("the undo did not reopen the task: %+v", tree)
	}
	// ... and stages the edit again (adversarial F12).
	if st, _ := workflow.New(r).EditStatus(ctx, ""); len(st.Pending) != 1 {
		t.Fatalf("the undo of the commit did not stage its edit again: %+v", st)
	}
	if _, err := workflow.New(r).EditRevert(ctx, "", "start over"); err != nil {
		t.Fatal(err)
	}
	// A revert drops what is staged; its undo stages it again.
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "30", New: "90"}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "no"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := workflow.New(r).EditStatus(ctx, ""); st.Status != "idle" {
		t.Fatalf("a revert kept the staged edits: %+v", st)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if st, _ := workflow.New(r).EditStatus(ctx, ""); len(st.Pending) != 1 || st.Pending[0].Preview != "30 -> 90" {
		t.Fatalf("the undo of the revert did not stage the edit again: %+v", st)
	}
}

// The checkpoints moves build (an edit commit's, a task revert's) stay in
// the session's history once later checkpoints follow (log left them out).
func TestBuiltCheckpointsInLog(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "1", New: "2"}); err != nil {
		t.Fatal(err)
	}
	ec, err := workflow.New(r).EditCommit(ctx, "", "two")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "b.txt"), "b\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	log, err := r.Log(ctx, snap.LogOptions{Kind: "edit-commit"})
	if err != nil || len(log) != 1 || log[0].ID != *ec.Checkpoint {
		t.Fatalf("log --kind edit-commit after a later checkpoint: %+v %v", log, err)
	}
}

// Adversarial F1: text that is not valid UTF-8 (a goal cut mid-character)
// is stored with U+FFFD and leaves every checkpoint readable; a message id
// that is not valid UTF-8 is refused.
func TestInvalidUTF8Text(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{Summary: "cut \xe2\x80"})
	begin(t, r, "", "refactor \xe2\x80")
	writeFile(t, filepath.Join(root, "a.txt"), "2\n")
	if _, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "breaks \xe2\x80"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "2\n" {
		t.Fatalf("undo of the revert: %q", b)
	}
	if log, err := r.Log(ctx, snap.LogOptions{}); err != nil || len(log) < 3 {
		t.Fatalf("log: %d entries, %v", len(log), err)
	}
	if rep, err := r.Fsck(ctx, true); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("fsck: %+v %v", rep, err)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{MessageID: "m\xff", AllowEmpty: true}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("a message id that is not UTF-8: %v", err)
	}
}

// Adversarial F2: a plain checkpoint racing a task begin in the same
// session keeps the task on the stack (the retry inherits the new head's).
func TestCheckpointRacingTaskBegin(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := r.ConfigSet(ctx, "tasks.max-depth", "100"); err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{AllowEmpty: true}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "t"}); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if tree, err := workflow.New(r).Tasks(ctx, "", nil); err != nil || len(tree.Stack) != i+1 {
			t.Fatalf("round %d: the stack holds %d tasks (%v)", i, len(tree.Stack), err)
		}
	}
}

// Adversarial F3: after a rewind to another session's checkpoint, a revert
// returns to the begin of the task that stack holds (found in the head's
// ancestry), not to this session's task of the same number.
func TestTaskRevertAfterCrossSessionRewind(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "base\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "a"})
	begin(t, r, "a", "a's task")
	writeFile(t, filepath.Join(root, "a.txt"), "a's work\n")
	aWork := checkpoint(t, r, snap.CheckpointOptions{Session: "a"})
	writeFile(t, filepath.Join(root, "a.txt"), "b's base\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "b"})
	begin(t, r, "b", "b's task")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "b", Target: aWork.ID.String()}); err != nil {
		t.Fatal(err)
	}
	// (All: a.txt's content is session a's work, which b's revert would
	// otherwise keep; this test is about which begin it goes to.)
	res, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Session: "b", Text: "no", All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Goal != "a's task" {
		t.Fatalf("reverted %+v", res.Task)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "base\n" {
		t.Fatalf("the revert went to the wrong begin: a.txt = %q", b)
	}
}

// Two sessions staging and committing in one store at once keep their own
// pending changes and both commits land.
func TestConcurrentSessionsStaging(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	for _, s := range []string{"s1", "s2"} {
		writeFile(t, filepath.Join(root, s+".txt"), strings.Repeat("x = 1\n", 10))
	}
	checkpoint(t, r, snap.CheckpointOptions{Session: "s1"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "s2", AllowEmpty: true})
	var wg sync.WaitGroup
	for _, s := range []string{"s1", "s2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, l := range []string{"A", "B", "C", "D"} {
				if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Session: s, Path: s + ".txt", Old: "x = 1", New: "x = " + s, Match: l}); err != nil {
					t.Error(err)
					return
				}
			}
			if _, err := workflow.New(r).EditCommit(ctx, s, "four lines"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, s := range []string{"s1", "s2"} {
		b, _ := os.ReadFile(filepath.Join(root, s+".txt"))
		if n := strings.Count(string(b), "x = "+s); n != 4 {
			t.Errorf("%s: %d lines changed, want 4:\n%s", s, n, b)
		}
	}
}

// Adversarial pass 2 (A1, A5, A10, A14): what a staged edit refuses, with a
// clear usage error and nothing staged: non-UTF-8 text (it would be
// re-encoded), paths through a symlink (it would read or write outside the
// project), names snap cannot record, a file used as a directory.
func TestEditRefusals(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "SECRET\n")
	writeFile(t, filepath.Join(root, "a.txt"), "text\n")
	writeFile(t, filepath.Join(root, "latin1.txt"), "caf\xe9\n")
	if err := os.Symlink(outside, filepath.Join(root, "ext")); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	for _, c := range []struct {
		name string
		q    workflow.EditRequest
		want string
	}{
		{"binary write", workflow.EditRequest{Path: "logo.png", Kind: "write", New: "\x89PNG\xff\xfe"}, "not valid UTF-8"},
		{"non-UTF-8 old", workflow.EditRequest{Path: "a.txt", Old: "t\xff", New: "x"}, "not valid UTF-8"},
		{"replace in a Latin-1 file", workflow.EditRequest{Path: "latin1.txt", Old: "caf", New: "tea"}, "not valid UTF-8"},
		{"through a symlinked directory", workflow.EditRequest{Path: "ext/secret", Old: "SECRET", New: "x"}, "goes through the symlink ext"},
		{"write through a symlinked directory", workflow.EditRequest{Path: "ext/new", Kind: "write", New: "x"}, "goes through the symlink ext"},
		{"backslash in a name", workflow.EditRequest{Path: `bad\name`, Kind: "write", New: "x"}, "cannot record such a name"},
		{"control character in a name", workflow.EditRequest{Path: "bad\x01name", Kind: "write", New: "x"}, "cannot record such a name"},
		{"a file as a directory", workflow.EditRequest{Path: "a.txt/x", Kind: "write", New: "x"}, "a.txt is a file, not a directory"},
		{"too large", workflow.EditRequest{Path: "big.txt", Kind: "write", New: strings.Repeat("x", workflow.MaxEditBytes+1)}, "at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := workflow.New(r).EditStage(ctx, c.q)
			if !errors.Is(err, snap.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("EditStage: %v, want a usage error saying %q", err, c.want)
			}
			if st, _ := workflow.New(r).EditStatus(ctx, ""); len(st.Pending) != 0 {
				t.Fatalf("staged although refused: %+v", st.Pending)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "SECRET\n" {
		t.Fatalf("the file outside the project changed: %q", b)
	}
}

// A3: a change staged by another process while a task revert runs is not
// dropped with the task's edits: the revert holds the edits lock, so the
// stage waits and lands after it.
func TestTaskRevertKeepsConcurrentStage(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "cfg.txt"), "x = 1\n")
	for i := range 30 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%02d", i)), strings.Repeat("data\n", 20000))
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	for round := range 5 {
		begin(t, r, "", fmt.Sprintf("attempt %d", round))
		for i := range 30 {
			writeFile(t, filepath.Join(root, fmt.Sprintf("f%02d", i)), strings.Repeat(fmt.Sprintf("changed %d\n", round), 20000))
		}
		r2, err := snap.Open(snap.Options{Dir: root})
		if err != nil {
			t.Fatal(err)
		}
		staged := make(chan error, 1)
		go func() {
			time.Sleep(time.Duration(round) * 5 * time.Millisecond)
			_, err := workflow.New(r2).EditStage(ctx, workflow.EditRequest{Path: "cfg.txt", Old: "x = 1", New: "x = 2"})
			staged <- err
		}()
		if _, err := workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "abandon"}); err != nil {
			t.Fatal(err)
		}
		if err := <-staged; err != nil {
			t.Fatal(err)
		}
		r2.Close()
		// Staged before the revert began: dropped with it and recorded, so
		// undo stages it again; after: still pending. Never lost.
		st, _ := workflow.New(r).EditStatus(ctx, "")
		if len(st.Pending) == 0 {
			if _, err := r.Undo(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if st, _ = workflow.New(r).EditStatus(ctx, ""); len(st.Pending) != 1 {
				t.Fatalf("round %d: the staged change is gone (undo did not bring it back): %+v", round, st.Pending)
			}
			if _, err := r.Redo(ctx, ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := workflow.New(r).EditRevert(ctx, "", "next round"); err != nil {
			t.Fatal(err)
		}
	}
}

// A replace that leaves a file empty (or a write of nothing) commits an
// empty file; it does not delete it (model harness M10).
func TestEditToEmptyKeepsTheFile(t *testing.T) {
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "only\n")
	writeFile(t, filepath.Join(root, "b.txt"), "b\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "only\n", New: ""}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "b.txt", Kind: "write", New: ""}); err != nil {
		t.Fatal(err)
	}
	res, err := workflow.New(r).EditCommit(ctx, "", "emptied")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", "b.txt"} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil || fi.Size() != 0 {
			t.Fatalf("%s after the commit: %v %v", p, fi, err)
		}
		var buf bytes.Buffer
		if err := r.Cat(ctx, *res.Checkpoint, p, &buf); err != nil || buf.Len() != 0 {
			t.Fatalf("%s in the edit-commit checkpoint: %v %q", p, err, buf.String())
		}
	}
}

// A staged path whose directory became a symlink (or a file) since is
// refused at commit before anything is recorded; the change stays
// pending (model harness M15).
func TestEditCommitRefusesASymlinkMadeSince(t *testing.T) {
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "x"), "x1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a/x", Kind: "write", New: "hi\n"}); err != nil {
		t.Fatal(err)
	}
	ext := t.TempDir()
	if err := os.Symlink(ext, filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	before, _ := r.Log(ctx, snap.LogOptions{Session: snap.DefaultSession})
	if _, err := workflow.New(r).EditCommit(ctx, "", "through a link"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("commit: %v", err)
	}
	if after, _ := r.Log(ctx, snap.LogOptions{Session: snap.DefaultSession}); len(before) == 0 || len(after) != len(before) {
		t.Fatalf("a checkpoint was recorded: %d, %d before", len(after), len(before))
	}
	if st, err := workflow.New(r).EditStatus(ctx, ""); err != nil || len(st.Pending) != 1 {
		t.Fatalf("pending after the refusal: %v %v", st, err)
	}
	if entries, _ := os.ReadDir(ext); len(entries) != 0 {
		t.Fatal("something was written through the link")
	}
}

func ptr[T any](v T) *T { return &v }

// The lock order (tx.go): a session's edits lock comes before the
// writers' and the move's. An undo that stages dropped edits again does so
// after its transaction has ended, so while another holder keeps the edits
// lock, a rewind is not held off by the undo's move lock.
func TestUndoRestagesAfterItsLocks(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	f := workflow.New(r)
	writeFile(t, filepath.Join(root, "a.txt"), "one\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	begin(t, r, "", "goal")
	if _, err := f.EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "one", New: "two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TaskRevert(ctx, workflow.TaskOptions{Text: "dropped"}); err != nil {
		t.Fatal(err)
	}
	// Another holder of the session's edits lock (another process's edit verb).
	other, err := snap.Open(snap.Options{Dir: root, LockTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.Steps().OpenEdits(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Undo(ctx, "")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the undo's move is done; it waits for the edits lock
	if _, err := other.Rewind(ctx, snap.RewindOptions{Target: "HEAD", DryRun: false}); err != nil {
		t.Fatalf("a rewind while the undo waits to re-stage: %v", err)
	}
	held.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, err := f.EditStatus(ctx, "")
	if err != nil || len(st.Pending) != 1 {
		t.Fatalf("after the undo: %+v, %v; want the dropped edit staged again", st, err)
	}
}
