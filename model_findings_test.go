package snap_test

// Regression tests for the model harness's findings M11-M16
// (torture/model/FINDINGS-model.md): one test per finding, each failing
// before its fix. The harness's replays in torture/model/testdata/ guard
// the same cases through the model.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/workflow"
)

// M13 (data loss): the undo of a rewind deleted a file that was there
// before the rewind, ignored by .git/info/exclude then, when the
// .gitignore the rewind restored un-ignores it ('!y'). A stored tree's
// rules are now read beneath the exclude files, as git reads a checkout.
func TestUndoKeepsFileTheRewindUnignored(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".gitignore"), "!y\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".gitignore"), "")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".git", "info", "exclude"), "y\n")
	writeFile(t, filepath.Join(root, "y"), "precious\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "y")); err != nil || string(b) != "precious\n" {
		t.Fatalf("after the rewind y is %q, %v", b, err)
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "y")); err != nil || string(b) != "precious\n" {
		t.Fatalf("the undo of the rewind lost y: %q, %v (deleted %v)", b, err, res.Rewind.Deleted)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".gitignore")); string(b) != "" {
		t.Fatalf(".gitignore after the undo: %q", b)
	}
}

// M11: an edit commit's safety capture honoured the session head's own
// ignore rules. A path only they ignore (the rules on disk do not) was
// refused with a spurious conflict, or, for a new file, recorded but not
// written. The commit's end is made from the present: rules on disk only.
func TestEditCommitOfPathOnlyTheHeadIgnores(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".snapignore"), "b\n")
	writeFile(t, filepath.Join(root, "b", "f"), "x\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	os.Remove(filepath.Join(root, ".snapignore")) // b/ is not ignored any more
	stage := func(p, content string) {
		t.Helper()
		if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Kind: edits.Write, Path: p, New: content}); err != nil {
			t.Fatal(err)
		}
	}
	stage("b/f", "y\n")
	stage("b/new", "hi\n")
	if _, err := workflow.New(r).EditCommit(ctx, "", "write them"); err != nil {
		t.Fatalf("the commit was refused: %v", err)
	}
	for p, want := range map[string]string{"b/f": "y\n", "b/new": "hi\n"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s after the commit: %q, %v; want %q", p, b, err, want)
		}
	}
	st, err := r.Status(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean {
		t.Errorf("the tree differs from the commit's checkpoint: %+v", st)
	}
}

// M12: the undo of an edit commit that created a file in new directories
// removed the file and left the directories, empty. A move limited to
// paths lists the directories it makes above them as created; its undo
// removes them once empty.
func TestUndoOfEditCommitRemovesItsDirectories(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "a\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Kind: edits.Write, Path: "d/e/x", New: "hi\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.New(r).EditCommit(ctx, "", "add x"); err != nil {
		t.Fatal(err)
	}
	// A directory the user made beside it stays through the undo.
	if err := os.MkdirAll(filepath.Join(root, "keep", "me"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "d")); !os.IsNotExist(err) {
		t.Fatalf("the undo of the edit commit left d/: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "keep", "me")); err != nil {
		t.Fatalf("the undo removed keep/me, made since: %v", err)
	}
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "d", "e", "x")); err != nil || string(b) != "hi\n" {
		t.Fatalf("after the redo d/e/x is %q, %v", b, err)
	}
	// A file put in the directory since keeps it through the undo.
	writeFile(t, filepath.Join(root, "d", "mine"), "mine\n")
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "d", "mine")); err != nil || string(b) != "mine\n" {
		t.Fatalf("the undo lost d/mine: %q, %v", b, err)
	}
}

// M16: a rewind that made an ignored directory on the way to the path it
// restored did not list it as created, so its undo left it (and its
// parents), empty.
func TestUndoRemovesIgnoredDirectoryMadeOnTheWay(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "a\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := os.MkdirAll(filepath.Join(root, "build", "src", "nm"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	os.RemoveAll(filepath.Join(root, "build"))
	writeFile(t, filepath.Join(root, ".git", "info", "exclude"), "src/\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@", Paths: []string{"build"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "build", "src", "nm")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "build")); !os.IsNotExist(err) {
		t.Fatalf("the undo left build/: %v", err)
	}
}

// M14: the undo of a redone edit commit returned to the original commit's
// safety checkpoint, so what changed between the undo and the redo left
// the working tree. As for a rewind, undo reverses the last operation: the
// redo.
func TestUndoAfterRedoOfEditCommit(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	x := filepath.Join(root, "x")
	writeFile(t, x, "x1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := workflow.New(r).EditStage(ctx, workflow.EditRequest{Kind: edits.Write, Path: "x", New: "new\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.New(r).EditCommit(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.New(r).EditRevert(ctx, "", "r"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, x, "mine\n")
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(x); string(b) != "new\n" {
		t.Fatalf("after the redo x is %q", b)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(x); string(b) != "mine\n" {
		t.Fatalf("the undo of the redo gave x = %q, want the state just before the redo (mine)", b)
	}
}

// A14 (torture/adversarial/2026-11-27): the undo of a rewind deleted a file
// that was there before the rewind, excluded by .git/info/exclude then and
// not any more. The exclude rules are no part of any tree, so a move
// records those in force when it began, and its undo reads its target's
// rules beneath them.
func TestUndoKeepsFileExcludedWhenTheRewindBegan(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "a"), "2\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	exclude := filepath.Join(root, ".git", "info", "exclude")
	writeFile(t, exclude, "F\n")
	writeFile(t, filepath.Join(root, "F"), "precious\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, exclude, "") // the user stops excluding F
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "F")); err != nil || string(b) != "precious\n" {
		t.Fatalf("the undo of the rewind lost F: %q, %v (deleted %v)", b, err, res.Rewind.Deleted)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a")); string(b) != "2\n" {
		t.Fatalf("a after the undo: %q", b)
	}
}

// M18 (seed 507): the undo of a rewind left src/main.go as the rewind
// wrote it. The safety checkpoint's .gitignore had grown past
// max-file-size, so its capture skipped it and carried its previous
// version ('src/*.go'), and the undo read its target's rules from that
// stale copy: src/main.go counted as ignored by the target and was left
// alone. A stored tree's ignore file that its capture skipped is not read
// (the restore keeps it as it is on disk, whose rules apply anyway).
func TestUndoIgnoresStaleCopyOfSkippedIgnoreFile(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	if err := r.ConfigSet(ctx, "capture.max-file-size", "100"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".gitignore"), "src/*.go\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	big := "# " + strings.Repeat("x", 200) + "\n"
	writeFile(t, filepath.Join(root, ".gitignore"), big) // skipped from now on: its previous version is kept
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\nalpha\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "src", "main.go")); string(b) != "package main\nalpha\n" {
		t.Fatalf("src/main.go after the undo: %q (restored %v, skipped %v)", b, res.Rewind.Restored, res.Rewind.Skipped)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".gitignore")); string(b) != big {
		t.Fatalf(".gitignore after the undo: %q", b)
	}
}

// M23 (seed 613): the undo of a rewind left node_modules missing. Before
// the rewind it was a symlink (not ignored by 'node_modules/', which names
// directories); the rewind made it the target's directory, listed as
// created since the rules then ignored it. The undo's capture kept that
// directory (the safety checkpoint's rules ignore it), removed what the
// rewind created, and so never wrote the symlink back: a path kept only
// because the restore being undone created it is written once that is
// removed.
func TestUndoRestoresSymlinkWhereRewindMadeIgnoredDir(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "node_modules", "x"), "x\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	os.RemoveAll(filepath.Join(root, "node_modules"))
	if err := os.Symlink("nowhere", filepath.Join(root, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".gitignore"), "node_modules/\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "node_modules")); err != nil || !fi.IsDir() {
		t.Fatalf("after the rewind node_modules is %v, %v; want the target's directory", fi, err)
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(root, "node_modules")); err != nil || l != "nowhere" {
		t.Fatalf("after the undo node_modules reads %q, %v; want the symlink back (restored %v, deleted %v)", l, err, res.Rewind.Restored, res.Rewind.Deleted)
	}
}

// M31: ChangedPaths from a checkpoint to the working tree (what the git
// bridge checks before a task commit with --git-commit) lists a file the
// checkpoint holds at a path that the session head now names as a state
// document's source (the transcript moved into the project since): the
// next checkpoint does not record it as a file, so the commit drops it.
func TestChangedPathsListsAFileTheHeadNowNamesAsASource(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a.txt"), "a\n")
	writeFile(t, filepath.Join(root, "chat.jsonl"), `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n")
	begin := checkpoint(t, r, snap.CheckpointOptions{})
	d, err := snap.ReadStateDoc(snap.ConversationDoc, filepath.Join(root, "chat.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{d}, AllowEmpty: true})
	got, err := r.ChangedPaths(ctx, begin.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "chat.jsonl" {
		t.Fatalf("ChangedPaths(begin, the working tree) = %v, want [chat.jsonl] (the next checkpoint records no file there)", got)
	}
}

// M34: a revert that writes something re-plans against its safety capture
// (the move's End); that plan must know, as the dry plan does (M32), which
// files the capture could not read: an oversized f.txt was a conflict in
// the plan and reverted (reported, recorded, left on disk) in the move.
func TestRevertThatMovesLeavesAFileThatCannotBeReadNow(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	if err := r.ConfigSet(ctx, "capture.max-file-size", "100"); err != nil {
		t.Fatal(err)
	}
	f, g := filepath.Join(root, "f.txt"), filepath.Join(root, "g.txt")
	writeFile(t, f, "a\n")
	writeFile(t, g, "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, f, "b\n")
	writeFile(t, g, "2\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	big := strings.Repeat("x", 300)
	writeFile(t, f, big)
	res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@"})
	if !errors.Is(err, snap.ErrPartial) || res == nil || strings.Join(res.Reverted, " ") != "g.txt" || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "f.txt" {
		t.Fatalf("revert: %+v, %v; want g.txt reverted, f.txt a conflict", res, err)
	}
	if b, _ := os.ReadFile(g); string(b) != "1\n" {
		t.Fatalf("g.txt is %q", b)
	}
}

// Seed 905 (model, issue 22): the undo of a task revert deleted chat.jsonl,
// an ordinary file of the session that its task's first checkpoint had
// recorded as the conversation's source. The move's safety capture left
// every path the target keeps a document at out of its tree, so the
// safety checkpoint said the file did not exist and the undo, restoring
// it, deleted the file. Such a path is left alone by the move (the target
// says nothing of it as a file), but the present records it as it is.
func TestUndoOfATaskRevertKeepsAFileTheTaskBeganWithAsADocument(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	in, out := filepath.Join(root, "chat.jsonl"), filepath.Join(t.TempDir(), "t.jsonl")
	conv := func(src string) []snap.StateDoc { return []snap.StateDoc{{Name: snap.ConversationDoc, Source: src}} }
	writeFile(t, in, `{"type":"user","message":{"role":"user","content":"one"}}`+"\n")
	checkpoint(t, r, snap.CheckpointOptions{State: conv(in)})
	flow := workflow.New(r)
	if _, err := flow.TaskBegin(ctx, workflow.TaskOptions{Text: "goal"}); err != nil {
		t.Fatal(err)
	}
	// The transcript moves out of the project; chat.jsonl is a file now.
	if err := os.Rename(in, out); err != nil {
		t.Fatal(err)
	}
	writeFile(t, in, "an ordinary file\n")
	checkpoint(t, r, snap.CheckpointOptions{State: conv(out)})
	if _, err := flow.TaskRevert(ctx, workflow.TaskOptions{Text: "why"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "an ordinary file\n" {
		t.Fatalf("after the task revert chat.jsonl is %q, %v", b, err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "an ordinary file\n" {
		t.Fatalf("the undo of the task revert gave chat.jsonl = %q, %v; want it as it was", b, err)
	}
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "an ordinary file\n" {
		t.Fatalf("the redo of the task revert gave chat.jsonl = %q, %v; want it as it was", b, err)
	}
}

// M37 (seed 908): the undo of a rewind left a directory where a symlink
// was. src was a symlink; .gitignore un-ignored main.go, which
// .git/info/exclude ignored as src/*.go. The rewind wrote the target's
// src/main.go (not ignored when it began) and deleted .gitignore (the
// target had none): from then on the rules ignored src/main.go, the undo's
// capture did not record it, and the undo could not put the symlink back
// ("a directory is in the way"). What the target's own rules ignore is
// listed as created too, so the undo removes it as the rewind wrote it.
func TestUndoRemovesWhatTheRewindWroteThatItsRulesIgnore(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n")
	begin := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".git", "info", "exclude"), "src/*.go\n")
	os.RemoveAll(filepath.Join(root, "src"))
	if err := os.Symlink(".", filepath.Join(root, "src")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".gitignore"), "!main.go\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: begin.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "src")); err != nil || !fi.IsDir() {
		t.Fatalf("after the rewind src is %v, %v; want the target's directory", fi, err)
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(root, "src")); err != nil || l != "." {
		t.Fatalf("after the undo src reads %q, %v; want the symlink back (restored %v, deleted %v)", l, err, res.Rewind.Restored, res.Rewind.Deleted)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".gitignore")); string(b) != "!main.go\n" {
		t.Fatalf(".gitignore after the undo: %q", b)
	}
}

// M41 (model, seed 918): the revert of a change that made a directory a
// file, after the file was edited, is a conflict on that path; the
// three-way merge read the directory's tree as content ("object corrupt: …
// is a tree, not content") and the revert, its dry run too, failed whole.
func TestRevertOfAChangeOfKindEditedSinceIsAConflict(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "d", "x"), "1\n")
	writeFile(t, filepath.Join(root, "y"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "d"), "a\nb\nc\n")
	writeFile(t, filepath.Join(root, "y"), "2\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "d"), "a\nb changed since\nc\n")
	for _, dry := range []bool{true, false} {
		res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@", DryRun: dry})
		if err != nil && !errors.Is(err, snap.ErrPartial) || res == nil {
			t.Fatalf("revert (dry run %v): %+v, %v", dry, res, err)
		}
		found := false
		for _, c := range res.Conflicts {
			found = found || c.Path == "d"
		}
		if !found || !slices.Contains(res.Reverted, "y") {
			t.Fatalf("revert (dry run %v): reverted %v, conflicts %+v; want y reverted and d a conflict", dry, res.Reverted, res.Conflicts)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "d")); string(b) != "a\nb changed since\nc\n" {
		t.Fatalf("d after the revert: %q, want the edit kept", b)
	}
}

// M40 (seed 917): a revert that takes a file out of the record, where the
// revert's own end ignores it (the change reverted had stopped ignoring
// it), leaves it on disk: a move to the end (the revert's redo) reads the
// end's rules and leaves it, so the revert must too. The revert deleted it.
func TestRevertKeepsWhatItsEndIgnores(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".snapignore"), "main.go\n")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".snapignore"), "alpha\n")
	checkpoint(t, r, snap.CheckpointOptions{}) // holds src/main.go: to the record, the change added it
	main := filepath.Join(root, "src", "main.go")
	for _, dry := range []bool{true, false} {
		res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@", DryRun: dry})
		if err != nil || res.Rewind == nil && !dry {
			t.Fatalf("revert (dry run %v): %+v, %v", dry, res, err)
		}
		if res.Rewind != nil && slices.Contains(res.Rewind.Deleted, "src/main.go") {
			t.Errorf("revert (dry run %v) deleted src/main.go, which its end's .snapignore ignores", dry)
		}
	}
	check := func(when, ignore string, onDisk bool) {
		t.Helper()
		if b, _ := os.ReadFile(filepath.Join(root, ".snapignore")); string(b) != ignore {
			t.Errorf("%s: .snapignore %q, want %q", when, b, ignore)
		}
		if b, err := os.ReadFile(main); onDisk && string(b) != "package main\n" || !onDisk && err == nil {
			t.Errorf("%s: src/main.go %q, %v (on disk: want %v)", when, b, err, onDisk)
		}
	}
	check("after the revert", "main.go\n", true)
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	check("after its undo", "alpha\n", true)
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	check("after its redo", "main.go\n", true)
}
