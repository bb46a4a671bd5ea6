package snap_test

// Regression tests for the model harness's findings M11-M16
// (torture/model/FINDINGS-model.md): one test per finding, each failing
// before its fix. The harness's replays in torture/model/testdata/ guard
// the same cases through the model.

import (
	"os"
	"path/filepath"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/snaptest"
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
		if _, err := r.EditStage(ctx, snap.EditRequest{Kind: edits.Write, Path: p, New: content}); err != nil {
			t.Fatal(err)
		}
	}
	stage("b/f", "y\n")
	stage("b/new", "hi\n")
	if _, err := r.EditCommit(ctx, "", "write them"); err != nil {
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
