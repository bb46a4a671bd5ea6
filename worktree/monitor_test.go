package worktree

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
)

// diskState is every path under root (but .snap) with what a capture
// compares: kind, mode, content or link target.
func diskState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == ".snap" {
			return filepath.SkipDir
		}
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "l " + l
		case fi.IsDir():
			out[rel] = "d"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("f %o %s", fi.Mode().Perm()&0o100, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// monitorOf answers what a correct monitor would for the change from
// before to after: the directory of every path that changed, and, beneath
// a directory that appeared or replaced something, or one whose ignore
// files changed, everything. Extra directories are named at random (a
// monitor may say more than what changed, never less).
func monitorOf(before, after map[string]string, rng *rand.Rand) ([]string, []string) {
	dirs, trees := map[string]bool{}, map[string]bool{}
	for _, m := range []map[string]string{before, after} {
		for p := range m {
			if before[p] == after[p] {
				continue
			}
			dirs[parentOf(p)] = true
			base := path.Base(p)
			if after[p] == "d" && before[p] != "d" {
				trees[p] = true
			}
			if base == ".gitignore" || base == ".snapignore" {
				trees[parentOf(p)] = true
			}
		}
	}
	for p, k := range after {
		if k == "d" && rng.IntN(10) == 0 {
			dirs[p] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
			for d := range dirs {
				if !yield(d) {
					return
				}
			}
		}), slices.Sorted(func(yield func(string) bool) {
			for d := range trees {
				if !yield(d) {
					return
				}
			}
		})
}

// A capture under a monitor records exactly the tree a full scan does,
// whatever changes between the two (files written, removed, renamed,
// chmod'ed, symlinks swapped, directories made, moved, replaced by files,
// ignore rules edited), and reads far less when little changed.
func TestCaptureWithMonitorEqualsFullScan(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { monitorRounds(t, seed) })
	}
}

func monitorRounds(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	root := t.TempDir()
	store := filepath.Join(root, ".snap")
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	names := []string{"a", "b", "c", "build", "node_modules", "x.txt", "y.go", ".gitignore", ".snapignore", "keep.log"}
	randPath := func() string {
		n := 1 + rng.IntN(4)
		var parts []string
		for range n {
			parts = append(parts, names[rng.IntN(len(names))])
		}
		return strings.Join(parts, "/")
	}
	clear := func(p string) { os.RemoveAll(filepath.Join(root, p)) }
	mkparent := func(p string) bool {
		d := filepath.Dir(filepath.Join(root, p))
		for a := d; a != root; a = filepath.Dir(a) {
			if fi, err := os.Lstat(a); err == nil && !fi.IsDir() {
				os.Remove(a)
			}
		}
		return os.MkdirAll(d, 0o755) == nil
	}
	change := func() {
		p := randPath()
		full := filepath.Join(root, p)
		switch k := rng.IntN(10); {
		case k < 4:
			if !mkparent(p) {
				return
			}
			if fi, err := os.Lstat(full); err == nil && (fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0) {
				clear(p)
			}
			data := fmt.Sprintf("v%d\n", rng.IntN(5))
			switch path.Base(p) {
			case ".gitignore", ".snapignore":
				// (.gitignore ignores itself: its rules apply, it is not
				// recorded, so the tree's are not the capture's.)
				data = []string{"*.log\n", "build/\n", "!keep.log\n", "a\n", "node_modules\n", "", ".gitignore\n*.txt\n"}[rng.IntN(7)]
			}
			os.WriteFile(full, []byte(data), 0o644)
		case k == 4:
			clear(p)
		case k == 5:
			os.Chmod(full, fs.FileMode([]int{0o644, 0o755}[rng.IntN(2)]))
		case k == 6:
			if mkparent(p) {
				clear(p)
				os.Symlink([]string{"x.txt", "a", "../b"}[rng.IntN(3)], full)
			}
		case k == 7:
			if mkparent(p) {
				if fi, err := os.Lstat(full); err == nil && !fi.IsDir() {
					clear(p)
				}
				os.MkdirAll(full, 0o755)
			}
		default: // rename, files or directories
			q := randPath()
			if strings.HasPrefix(q+"/", p+"/") || strings.HasPrefix(p+"/", q+"/") || !mkparent(q) {
				return
			}
			clear(q)
			os.Rename(full, filepath.Join(root, q))
		}
	}
	for range 40 {
		change()
	}
	capture := func(cache *index.Cache, mon *Monitor) (*Snapshot, objects.ID) {
		t.Helper()
		w := st.NewWriter()
		snap, err := Capture(context.Background(), w, Options{Root: root, StoreDir: store, Cache: cache, Monitor: mon, Workers: 1 + rng.IntN(4)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		return snap, snap.Tree
	}
	cache := index.New()
	prev, base := capture(cache, nil)
	before := diskState(t, root)
	for round := range 25 {
		for range rng.IntN(6) {
			change()
		}
		after := diskState(t, root)
		dirs, trees := monitorOf(before, after, rng)
		// Where the base's rules are not its tree's, the directory is
		// read again (as package snap's monitor does).
		mon := &Monitor{Base: base, Dirs: slices.Concat(dirs, prev.UnrecordedRules), Trees: trees}
		got, gotTree := capture(cache, mon)
		want, wantTree := capture(index.New(), nil)
		if gotTree != wantTree {
			var diff []string
			objects.DiffTrees(st, wantTree, gotTree, func(c objects.Change) error {
				diff = append(diff, fmt.Sprintf("%s: full %v, monitored %v", c.Path, c.Old.Mode, c.New.Mode))
				return nil
			})
			t.Fatalf("round %d: the capture under the monitor (dirs %q, trees %q) differs from a full scan:\n  %s",
				round, dirs, trees, strings.Join(diff, "\n  "))
		}
		if got.Bytes != want.Bytes {
			t.Fatalf("round %d: bytes %d under the monitor, %d by a full scan", round, got.Bytes, want.Bytes)
		}
		if got.Files != -1 {
			t.Fatalf("round %d: a monitored capture counted %d files; it cannot know (-1)", round, got.Files)
		}
		slices.SortFunc(got.Skipped, func(a, b Skipped) int { return strings.Compare(a.Path, b.Path) })
		prev, base, before = got, gotTree, after
	}
}

// Under a monitor that names nothing, nothing is read; a change in one
// directory reads that directory only.
func TestCaptureWithMonitorReadsOnlyWhatChanged(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, ".snap")
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 20 {
		for j := range 5 {
			p := filepath.Join(root, fmt.Sprintf("d%d/e%d/f.txt", i, j))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("x"), 0o644)
		}
	}
	w := st.NewWriter()
	base, err := Capture(context.Background(), w, Options{Root: root, StoreDir: store})
	if err != nil {
		t.Fatal(err)
	}
	w.Commit()
	w = st.NewWriter()
	defer w.Abort()
	same, err := Capture(context.Background(), w, Options{Root: root, StoreDir: store, Monitor: &Monitor{Base: base.Tree}})
	if err != nil || same.Tree != base.Tree || same.Read != 0 || same.Listed != 0 {
		t.Fatalf("nothing changed: %+v, %v", same, err)
	}
	os.WriteFile(filepath.Join(root, "d3/e2/f.txt"), []byte("changed"), 0o644)
	one, err := Capture(context.Background(), w, Options{Root: root, StoreDir: store, Monitor: &Monitor{Base: base.Tree, Dirs: []string{"d3/e2"}}})
	if err != nil || one.Tree == base.Tree || one.Read != 1 || one.Listed != 1 {
		t.Fatalf("one file changed: read %d, listed %d (want 1, 1), %v", one.Read, one.Listed, err)
	}
}
