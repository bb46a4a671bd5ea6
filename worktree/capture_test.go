package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
)

// The listing cache: an unchanged directory is not listed again, and every
// change that a listing depends on is still seen — an entry added (even
// with the directory's mtime put back), one removed, a directory removed,
// an ignore file rewritten in place (which does not touch its directory).
func TestCaptureListingCache(t *testing.T) {
	root := t.TempDir()
	st, err := objects.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := func(p, data string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	age := func(dirs ...string) {
		t.Helper()
		for _, d := range dirs {
			if err := os.Chtimes(filepath.Join(root, d), past, past); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("top.txt", "top")
	write("a/.gitignore", "*.log\n")
	write("a/keep.log", "ignored")
	write("a/b/c.txt", "c")
	// A listing is trusted once it was read past the racy margin after the
	// directory's last change (its ctime).
	time.Sleep(100 * time.Millisecond)

	cache := index.New()
	capture := func(wantListed int) map[string]bool {
		t.Helper()
		w := st.NewWriter()
		defer w.Abort()
		snap, err := Capture(context.Background(), w, Options{Root: root, StoreDir: filepath.Join(root, ".snap"), Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Listed != wantListed {
			t.Errorf("listed %d directories, want %d", snap.Listed, wantListed)
		}
		paths := map[string]bool{}
		if err := objects.WalkTree(w, snap.Tree, func(p string, e objects.TreeEntry) error {
			if e.Mode != objects.ModeDir {
				paths[p] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return paths
	}
	keys := func(m map[string]bool) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	want := func(got map[string]bool, paths ...string) {
		t.Helper()
		if !slices.Equal(keys(got), paths) {
			t.Fatalf("captured %v, want %v", keys(got), paths)
		}
	}

	want(capture(3), "a/.gitignore", "a/b/c.txt", "top.txt")
	want(capture(0), "a/.gitignore", "a/b/c.txt", "top.txt")

	// An entry added, the directory's mtime put back: its ctime moved.
	// (Listed again next time too: read within the margin of that change.)
	write("a/b/new.txt", "new")
	age("a/b")
	want(capture(1), "a/.gitignore", "a/b/c.txt", "a/b/new.txt", "top.txt")

	// The ignore file rewritten in place: "a" keeps its listing, and the
	// new rules apply to it.
	f, err := os.OpenFile(filepath.Join(root, "a/.gitignore"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("*.txt\n")
	f.Close()
	want(capture(1), "a/.gitignore", "a/keep.log", "top.txt") // a/b is re-listed: racy since the add

	// A directory removed: gone from the tree and from the cache.
	bst, err := os.Lstat(filepath.Join(root, "a/b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "a/b")); err != nil {
		t.Fatal(err)
	}
	want(capture(1), "a/.gitignore", "a/keep.log", "top.txt")
	if _, ok := cache.Listing("a/b", index.StatOf(bst)); ok {
		t.Fatal("the listing of a removed directory is still cached")
	}
}

// A directory whose tree the store does not hold has each stat-cache hit
// checked against the store: content the store lost (here: a fresh store
// under the same cache) is read again, what it still holds is not, and the
// tree comes out as it was. (An unchanged directory whose tree is stored
// costs no check per file: gc keeps what a kept tree names.)
func TestCaptureRereadsContentTheStoreLost(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"a.txt": "a", "d/b.txt": "b", "d/e/c.txt": "c", "d/e/f.txt": "f"}
	past := time.Now().Add(-time.Hour)
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(full, past, past)
	}
	time.Sleep(100 * time.Millisecond) // past the racy margin of the files' ctimes
	cache := index.New()
	capture := func(st *objects.Store) *Snapshot {
		t.Helper()
		w := st.NewWriter()
		snap, err := Capture(context.Background(), w, Options{Root: root, StoreDir: filepath.Join(root, ".snap"), Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	open := func() *objects.Store {
		st, err := objects.Open(filepath.Join(t.TempDir(), "store"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	first := capture(open())
	if first.Read != 4 {
		t.Fatalf("first capture read %d files, want 4", first.Read)
	}
	fresh := open()
	w := fresh.NewWriter() // the store already holds one of the files
	if _, err := w.PutBytes([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	again := capture(fresh)
	if again.Tree != first.Tree || again.Read != 3 || again.Files != 4 {
		t.Fatalf("capture into a store without the content: tree %s (want %s), read %d (want 3), files %d",
			again.Tree.Short(), first.Tree.Short(), again.Read, again.Files)
	}
	if err := objects.WalkTree(fresh, again.Tree, func(p string, e objects.TreeEntry) error {
		if e.Mode == objects.ModeDir {
			return nil
		}
		_, data, err := fresh.Read(e.ID)
		if err != nil || string(data) != files[p] {
			t.Errorf("%s: %q, %v", p, data, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if third := capture(fresh); third.Read != 0 || third.Tree != first.Tree {
		t.Fatalf("third capture read %d files, tree %s", third.Read, third.Tree.Short())
	}
}
