package snap_test

// Regression tests for the adversarial report of 2026-11-23
// (../shared/reports/2026-11-23-adversarial/FINDINGS.md): one test per
// finding, each failing before its fix.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
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
