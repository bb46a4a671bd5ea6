package snap_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

// Files lists a checkpoint's files, symlinks and empty directories with
// mode and size, in path order, for the whole tree, a directory or a file.
func TestFiles(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{
		"main.go":      "package main\n",
		"bin/run.sh*":  "#!/bin/sh\n",
		"link":         "->main.go",
		"src/a/b.go":   "package a\n",
		"src/c.go":     "package src\n",
		"src/e/.x":     "",
		"notes/old.md": "gone later",
	})
	os.Remove(filepath.Join(root, "src/e/.x"))
	first := checkpoint(t, r, snap.CheckpointOptions{})
	os.RemoveAll(filepath.Join(root, "notes"))
	checkpoint(t, r, snap.CheckpointOptions{})

	list := func(ref, dir string) string {
		t.Helper()
		fs, err := r.Files(ctx, mustResolve(t, r, "", ref), dir)
		if err != nil {
			t.Fatalf("Files(%q, %q): %v", ref, dir, err)
		}
		var out string
		for _, f := range fs {
			if f.ID.IsZero() {
				t.Errorf("%s: no id", f.Path)
			}
			out += fmt.Sprintf("%s %s %d\n", f.Mode, f.Path, f.Size)
		}
		return out
	}
	whole := "exec bin/run.sh 10\nsymlink link 7\nfile main.go 13\nfile src/a/b.go 10\nfile src/c.go 12\ndir src/e/ 0\n"
	if got := list("@", ""); got != whole {
		t.Errorf("the head's files:\n%s\nwant:\n%s", got, whole)
	}
	if got := list("@", "."); got != whole {
		t.Errorf(`dir ".":\n%s`, got)
	}
	if got, want := list("#1", ""), "exec bin/run.sh 10\nsymlink link 7\nfile main.go 13\nfile notes/old.md 10\nfile src/a/b.go 10\nfile src/c.go 12\ndir src/e/ 0\n"; got != want {
		t.Errorf("#1's files:\n%s\nwant:\n%s", got, want)
	}
	if got, want := list(first.ID.String(), "src/"), "file src/a/b.go 10\nfile src/c.go 12\ndir src/e/ 0\n"; got != want {
		t.Errorf("src/:\n%s\nwant:\n%s", got, want)
	}
	if got, want := list("@", "src/c.go"), "file src/c.go 12\n"; got != want {
		t.Errorf("one file: %s", got)
	}
	if got, want := list("@", "src/e"), "dir src/e/ 0\n"; got != want {
		t.Errorf("an empty directory: %s", got)
	}
	if _, err := r.Files(ctx, mustResolve(t, r, "", "@"), "notes"); !errors.Is(err, snap.ErrNoPath) {
		t.Errorf("a path the head lacks: %v", err)
	}
	if _, err := r.Files(ctx, objects.ID{1}, ""); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("a checkpoint that does not exist: %v", err)
	}
}
