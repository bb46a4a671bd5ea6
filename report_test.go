package snap_test

// Regression tests for the adversarial report of 2026-11-27
// (../shared/reports/2026-11-27-adversarial/FINDINGS.md) that concern the
// engine; the CLI's are testscripts in cmd/snap/testdata/script/.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/workflow"
)

// N10: a revert has a dry run, which merges a file changed since the
// checkpoint (content no checkpoint holds yet) and changes nothing; a
// revert with nothing to do says so and is no error.
func TestRevertDryRunAndNothingToRevert(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	a := filepath.Join(root, "a.txt")
	writeFile(t, a, "1\n2\n3\n4\n5\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, a, "1\n2 changed\n3\n4\n5\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, a, "1\n2 changed\n3\n4\n5 mine\n") // not checkpointed
	res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || len(res.Reverted) != 1 || res.Checkpoint != nil {
		t.Fatalf("dry run: %+v", res)
	}
	if b, _ := os.ReadFile(a); string(b) != "1\n2 changed\n3\n4\n5 mine\n" {
		t.Fatalf("the dry run changed a.txt: %q", b)
	}
	log, err := r.Log(ctx, snap.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("the dry run recorded a checkpoint: %d", len(log))
	}
	if _, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(a); string(b) != "1\n2\n3\n4\n5 mine\n" {
		t.Fatalf("after the revert a.txt is %q", b)
	}
	res, err = workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "#2"})
	if err != nil || !res.Nothing || res.Checkpoint != nil {
		t.Fatalf("reverting #2 again: %+v, %v; want nothing to revert and no error", res, err)
	}
}

// Model finding M32: a revert of a change to a file snap cannot read now
// (over capture.max-file-size) is a conflict, left untouched and reported;
// it was reported reverted and recorded as reverted while the restore left
// the file as it was.
func TestRevertOfAFileThatCannotBeReadNow(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	if err := r.ConfigSet(ctx, "capture.max-file-size", "100"); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(root, "f.txt")
	writeFile(t, f, "a\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, f, "b\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	big := string(make([]byte, 300))
	writeFile(t, f, big)
	for _, dry := range []bool{true, false} {
		res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@", DryRun: dry})
		if err != nil && !errors.Is(err, snap.ErrPartial) {
			t.Fatalf("revert (dry %v): %v", dry, err)
		}
		if res == nil || len(res.Reverted) != 0 || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "f.txt" || res.Checkpoint != nil {
			t.Fatalf("revert (dry %v): %+v, %v", dry, res, err)
		}
	}
	if b, _ := os.ReadFile(f); string(b) != big {
		t.Fatalf("f.txt changed: %q", b)
	}
}

// Model finding M33: a revert that would restore a file beneath a file (an
// ignored one) standing where its directory must be makes it a conflict,
// known before anything is written; it was restored, failed, and recorded.
func TestRevertBeneathAFileIsAConflict(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "d", "x"), "1\n")
	writeFile(t, filepath.Join(root, "y"), "1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "y"), "2\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "d"), "file\n")
	writeFile(t, filepath.Join(root, ".gitignore"), "d\n")
	res, err := workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@", All: true})
	if !errors.Is(err, snap.ErrPartial) || res == nil {
		t.Fatalf("revert: %+v, %v", res, err)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "d/x" || len(res.Reverted) != 1 || res.Reverted[0] != "y" || res.Checkpoint == nil {
		t.Fatalf("revert: reverted %v, conflicts %+v, checkpoint %v", res.Reverted, res.Conflicts, res.Checkpoint)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "d")); string(b) != "file\n" {
		t.Fatalf("d: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "y")); string(b) != "1\n" {
		t.Fatalf("y: %q", b)
	}
}
