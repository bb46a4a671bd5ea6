// Package snaptest holds helpers for tests of snap and of code built on it:
// temporary projects with a store that is checked for corruption when the
// test ends, and tree builders and comparers.
package snaptest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
)

// NewRepo creates a project in a temporary directory, initialises its
// store and registers a cleanup that fails the test if `fsck --full`
// finds any corruption.
func NewRepo(t testing.TB) (*snap.Repo, string) {
	t.Helper()
	root := t.TempDir()
	r, _, err := snap.Init(snap.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		Fsck(t, r)
		r.Close()
	})
	return r, root
}

// Fsck fails the test if a full fsck of the repo's store finds corruption.
func Fsck(t testing.TB, r *snap.Repo) {
	t.Helper()
	rep, err := gc.Fsck(context.Background(), r.Objects(), r.Refs(), true)
	if err != nil {
		t.Errorf("fsck: %v", err)
		return
	}
	if rep.Corrupt() {
		t.Errorf("fsck found corruption: %+v", rep.Problems)
	}
}

// WriteFiles creates files under root: path → content. A content starting
// with "->" makes a symlink to the rest; a path ending in "*" is made
// executable (the star is dropped).
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "*") {
			p, mode = strings.TrimSuffix(p, "*"), 0o755
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(full)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(full, mode)
	}
}

// Snapshot reads the tree under root into path → description: file content
// (with a trailing " *" for executables), "-> target" for symlinks. Paths
// for which skip returns true (and their contents) are left out.
func Snapshot(t testing.TB, root string, skip func(rel string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			s := string(data)
			if fi.Mode()&0o100 != 0 {
				s += " *"
			}
			out[rel] = s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SkipStore skips the store and .git directories in Snapshot.
func SkipStore(rel string) bool {
	return rel == ".snap" || rel == ".git" || strings.HasSuffix(rel, "/.git")
}

// Diff describes how two snapshots differ ("" when equal).
func Diff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "only in first: "+k)
		} else if v != w {
			out = append(out, "differs: "+k+": "+quote(v)+" vs "+quote(w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "only in second: "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func quote(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return "\"" + s + "\""
}
