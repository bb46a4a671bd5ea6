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
