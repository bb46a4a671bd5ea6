package snap_test

// Regression tests for the adversarial report of 2026-11-23
// (../shared/reports/2026-11-23-adversarial/FINDINGS.md): one test per
// finding, each failing before its fix.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

// F1: diffing the working tree against the head read new content of a file
// below the root through a restorer without a Sys, and panicked.
func TestDiffUncheckpointedEditInSubdirectory(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"src/main.go": "v1\n", "top.txt": "v1\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"src/main.go": "v2\n", "src/deep/new.go": "new\n"})
	for _, paths := range [][]string{nil, {"src/main.go"}} {
		res, err := r.Diff(ctx, "", "", "", paths)
		if err != nil {
			t.Fatal(err)
		}
		var patch string
		for _, f := range res.Files {
			if f.Path == "src/main.go" {
				patch = f.Patch
			}
		}
		if !strings.Contains(patch, "+v2") {
			t.Fatalf("diff %v: %+v", paths, res.Files)
		}
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// After retention expires a checkpoint's parent, showing the checkpoint
// works (its stats are stored in it) and naming the expired parent is
// "no such checkpoint" (exit 4), never "object missing" (12, damage).
func TestExpiredParentIsNotDamage(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	var ids []objects.ID
	for i := range 3 {
		writeFile(t, filepath.Join(root, "f"), strings.Repeat("x", i+1))
		ids = append(ids, checkpoint(t, r, snap.CheckpointOptions{}).ID)
	}
	if _, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 1}}); err != nil {
		t.Fatal(err)
	}
	show, err := r.Show("", "@")
	if err != nil {
		t.Fatalf("show @: %v", err)
	}
	if !show.ParentExpired || show.Stats.Modified != 1 {
		t.Fatalf("show @: parent_expired %v, stats %+v", show.ParentExpired, show.Stats)
	}
	for _, ref := range []string{"@~1", "@~2", "#1", ids[1].String(), ids[0].String()} {
		_, err := r.Diff(ctx, "", ref, "", nil)
		if !errors.Is(err, snap.ErrExpired) || !errors.Is(err, snap.ErrNoCheckpoint) || errors.Is(err, objects.ErrNotFound) {
			t.Errorf("diff %s: %v, want ErrExpired", ref, err)
		}
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); !errors.Is(err, snap.ErrExpired) {
		t.Errorf("rewind @~1: %v, want ErrExpired", err)
	}
}

// F3: an external store belongs to the project root recorded at init:
// commands from a subdirectory capture the whole project, and a second
// project pointing at the same store, or a directory outside the root, is
// refused without reading or writing anything.
func TestExternalStoreBelongsToItsRoot(t *testing.T) {
	base := t.TempDir()
	a, b, store := filepath.Join(base, "A"), filepath.Join(base, "B"), filepath.Join(base, "store")
	writeFile(t, filepath.Join(a, "main.go"), "main")
	writeFile(t, filepath.Join(a, "src/lib.go"), "lib")
	writeFile(t, filepath.Join(b, "b.txt"), "B")
	r, _, err := snap.Init(snap.Options{Dir: a, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	r.Close()

	sub, err := snap.Open(snap.Options{Dir: filepath.Join(a, "src"), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if sub.Root != a {
		t.Fatalf("root from src/: %s, want %s", sub.Root, a)
	}
	writeFile(t, filepath.Join(a, "src/lib.go"), "lib2")
	res := checkpoint(t, sub, snap.CheckpointOptions{})
	if len(res.Files.Deleted) != 0 || strings.Join(res.Files.Modified, ",") != "src/lib.go" {
		t.Fatalf("checkpoint from src/: %+v", res.Files)
	}
	for _, dir := range []string{b, base} {
		if _, err := snap.Open(snap.Options{Dir: dir, Store: store}); !errors.Is(err, snap.ErrOtherProject) {
			t.Errorf("open from %s: %v, want ErrOtherProject", dir, err)
		}
	}
	if _, _, err := snap.Init(snap.Options{Dir: b, Store: store}); !errors.Is(err, snap.ErrOtherProject) {
		t.Errorf("init of another project with the same store: %v, want ErrOtherProject", err)
	}
	if got, _ := os.ReadFile(filepath.Join(b, "b.txt")); string(got) != "B" {
		t.Fatal("project B changed")
	}
}
