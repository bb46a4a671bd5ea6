package workflow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
)

var ctx = context.Background()

func checkpoint(t *testing.T, r *snap.Repo, o snap.CheckpointOptions) *snap.CheckpointResult {
	t.Helper()
	res, err := r.Checkpoint(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
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

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func convDoc(t *testing.T, path string) []snap.StateDoc {
	t.Helper()
	d, err := snap.ReadStateDoc(snap.ConversationDoc, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []snap.StateDoc{d}
}

// listTree renders the project's files (not the store) as "path content; ".
func listTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if rel == ".snap" {
			return filepath.SkipDir
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %q; ", rel, data)
		return nil
	})
	return b.String()
}
