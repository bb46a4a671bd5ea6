package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
)

// A restore replacing and deleting files moves their old content into the
// trash (a replaced path never goes without content), whether it writes with one worker or
// several, reports every path in order, and EmptyTrash then deletes it.
func TestRestoreMovesReplacedContentToTrash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   int
		workers int
	}{{"sequential", 5, 1}, {"parallel", 2 * parallelWrites, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			store := filepath.Join(root, ".snap")
			st, err := objects.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var old, want []node
			for i := range tc.files {
				name := fmt.Sprintf("f%03d.txt", i)
				old = append(old, file(name, "old "+name))
				want = append(want, file(name, "new "+name))
				os.WriteFile(filepath.Join(root, name), []byte("old "+name), 0o644)
			}
			old = append(old, file("zz-gone.txt", "deleted content")) // not in the target
			os.WriteFile(filepath.Join(root, "zz-gone.txt"), []byte("deleted content"), 0o644)
			w := st.NewWriter()
			cur, target := build(t, w, []node{dir("d", old...)}), build(t, w, []node{dir("d", want...)})
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(root, "d"), 0o755)
			for _, n := range old {
				os.Rename(filepath.Join(root, n.name), filepath.Join(root, "d", n.name))
			}
			trash := filepath.Join(store, "trash")
			res, err := Restore(context.Background(), st, cur, target, RestoreOptions{Root: root, StoreDir: store, Trash: trash, Workers: tc.workers})
			if err != nil || len(res.Errors) > 0 {
				t.Fatalf("restore: %v %v", err, res.Errors)
			}
			if len(res.Deleted) != 1 || len(res.Restored) != tc.files || !sort.StringsAreSorted(res.Restored) {
				t.Fatalf("restored %d paths (sorted: %v), want %d in order", len(res.Restored), sort.StringsAreSorted(res.Restored), tc.files)
			}
			for _, n := range want {
				if got, _ := os.ReadFile(filepath.Join(root, "d", n.name)); string(got) != n.content {
					t.Fatalf("%s holds %q, want %q", n.name, got, n.content)
				}
			}
			if names, _ := os.ReadDir(filepath.Join(root, "d")); len(names) != tc.files {
				t.Fatalf("d holds %d entries, want %d (temporary files left?)", len(names), tc.files)
			}
			moved := map[string]bool{}
			des, _ := os.ReadDir(trash)
			for _, de := range des {
				data, _ := os.ReadFile(filepath.Join(trash, de.Name()))
				moved[string(data)] = true
			}
			for _, n := range old {
				if !moved[n.content] {
					t.Fatalf("trash lacks the old content %q (holds %d files)", n.content, len(des))
				}
			}
			if TrashEmpty(trash) {
				t.Fatal("TrashEmpty is true with files in the trash")
			}
			if n, err := EmptyTrash(trash); err != nil || n != len(old) {
				t.Fatalf("EmptyTrash = %d, %v; want %d", n, err, len(old))
			}
			if !TrashEmpty(trash) {
				t.Fatal("trash not empty after EmptyTrash")
			}
		})
	}
}

// foldsHere tells independently of probeFolding whether the file system of
// dir folds case and normalisation.
func foldsHere(t *testing.T, dir string) folding {
	t.Helper()
	same := func(a, b string) bool {
		p := filepath.Join(dir, a)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		fa, _ := os.Lstat(p)
		fb, err := os.Lstat(filepath.Join(dir, b))
		return err == nil && os.SameFile(fa, fb)
	}
	return folding{caseless: same("Probe", "probe"), normalising: same("caf\u00e9", "cafe\u0301")}
}

// The probe answers what the file system does, and leaves nothing behind.
func TestProbeFolding(t *testing.T) {
	dir := t.TempDir()
	want := foldsHere(t, dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	got, err := probeFolding(fsys.RealSys, fd)
	if err != nil || got != want {
		t.Fatalf("probeFolding = %+v, %v; want %+v", got, err, want)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the probe left %v", names)
	}
}

// Names that differ only in case or normalisation (the Linux kernel has
// include/uapi/linux/netfilter/xt_CONNMARK.h and xt_connmark.h) are
// restored where the file system keeps them apart, as ext4 and tmpfs do.
func TestRestoreCaseAndNormalisationPairs(t *testing.T) {
	root := t.TempDir()
	if f := foldsHere(t, root); f.caseless || f.normalising {
		t.Skipf("the file system of %s folds names (%+v)", root, f)
	}
	store := filepath.Join(root, ".snap")
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	cur := build(t, w, []node{dir("include", file("xt_CONNMARK.h", "upper"), file("xt_connmark.h", "changed"))})
	target := build(t, w, []node{
		dir("include", file("xt_CONNMARK.h", "upper"), file("xt_connmark.h", "lower")),
		dir("new", file("cafe\u0301", "nfd"), file("caf\u00e9", "nfc")),
	})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "include"), 0o755)
	os.WriteFile(filepath.Join(root, "include", "xt_CONNMARK.h"), []byte("upper"), 0o644)
	os.WriteFile(filepath.Join(root, "include", "xt_connmark.h"), []byte("changed"), 0o644)
	res, err := Restore(context.Background(), st, cur, target, RestoreOptions{Root: root, StoreDir: store})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("restore: %v %+v", err, res)
	}
	for p, want := range map[string]string{"include/xt_CONNMARK.h": "upper", "include/xt_connmark.h": "lower",
		"new/cafe\u0301": "nfd", "new/caf\u00e9": "nfc"} {
		if got, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	if names, _ := os.ReadDir(root); len(names) != 3 { // .snap, include, new: no probe left behind
		t.Errorf("root holds %v", names)
	}
}

// A directory is probed only when the target has names there that some
// file system would fold together, once per restore; a directory the
// restore creates is probed as its nearest existing ancestor.
func TestRestoreProbesOnlyWhereNamesCouldCollide(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, ".snap")
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pair := func(n string) []node { return []node{file(n+"A", "1"), file(n+"B", "2"), file(n+"a", "3")} }
	w := st.NewWriter()
	plain := build(t, w, []node{dir("x", file("a", "1"), file("b", "2"))})
	colliding := build(t, w, []node{
		dir("exists", pair("f")...),
		dir("made", dir("deeper", pair("g")...)),
		dir("made2", pair("h")...),
	})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "exists"), 0o755)
	ino := func(p string) uint64 {
		var st unix.Stat_t
		unix.Stat(p, &st)
		return st.Ino
	}
	var probed []uint64
	probe := func(_ fsys.Sys, fd int) (folding, error) {
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		probed = append(probed, st.Ino)
		return folding{caseless: true}, nil
	}
	res, err := Restore(context.Background(), st, objects.ID{}, plain, RestoreOptions{Root: root, StoreDir: store, probe: probe, DryRun: true})
	if err != nil || len(res.Errors) > 0 || len(probed) != 0 {
		t.Fatalf("restore without colliding names: %v %+v, probed %d directories", err, res, len(probed))
	}
	res, err = Restore(context.Background(), st, objects.ID{}, colliding, RestoreOptions{Root: root, StoreDir: store, probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{ino(filepath.Join(root, "exists")), ino(root)}
	if len(probed) != 2 || probed[0] != want[0] || probed[1] != want[1] {
		t.Fatalf("probed directories %v, want %v (exists/, then the root once for made/deeper/ and made2/)", probed, want)
	}
	var failed []string
	for _, e := range res.Errors {
		if !errors.Is(e.Err, ErrCollision) {
			t.Errorf("%s: %v", e.Path, e.Error)
		}
		failed = append(failed, e.Path)
	}
	if want := []string{"exists/fA", "exists/fa", "made/deeper/gA", "made/deeper/ga", "made2/hA", "made2/ha"}; fmt.Sprint(failed) != fmt.Sprint(want) {
		t.Fatalf("refused %v, want %v", failed, want)
	}
	if fmt.Sprint(res.Restored) != "[exists/fB made/deeper/gB made2/hB]" {
		t.Fatalf("restored %v", res.Restored)
	}
}

// A deletion below a path that is a file (or a symlink) on disk now is
// nothing to do, not a failure: the model harness (seed 205) found a kept
// file whose carried entry was a directory, and every rewind exited 3.
func TestRemoveBelowAFileIsNothingToDo(t *testing.T) {
	root := t.TempDir()
	st, err := objects.Open(filepath.Join(root, ".snap"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	defer w.Abort()
	current := build(t, w, []node{dir("a", file("b", "b")), file("c", "c")})
	target := build(t, w, []node{file("c", "c")})
	os.WriteFile(filepath.Join(root, "a"), []byte("a file now"), 0o644)
	os.WriteFile(filepath.Join(root, "c"), []byte("c"), 0o644)
	for _, dry := range []bool{true, false} {
		res, err := Restore(context.Background(), w, current, target, RestoreOptions{Root: root, StoreDir: filepath.Join(root, ".snap"), DryRun: dry})
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("dry run %v: %+v %v", dry, res, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "a")); err != nil || string(b) != "a file now" {
		t.Fatalf("a: %q %v", b, err)
	}
}

// writeOnRename is the working tree's file system with a user writing to
// file f just before the restore renames its replacement into place.
type writeOnRename struct {
	fsys.Sys
	f    string
	done bool
}

func (s *writeOnRename) Renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	if !s.done {
		s.done = true
		fh, err := os.OpenFile(s.f, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			fh.WriteString("the user's write\n")
			fh.Close()
		}
	}
	return s.Sys.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}

// A file written to while the restore prepares its replacement (after the
// capture it compares with), or just before, is left as it is and
// reported (ErrChanged): no write of the user's is lost. (Adversarial pass
// 2, A2: the write went to the trash.) A replaced file keeps its
// permissions (A6: a 0600 file became 0644).
func TestRestoreLeavesAFileWrittenMeanwhile(t *testing.T) {
	for _, when := range []string{"before the restore", "during the restore"} {
		t.Run(when, func(t *testing.T) {
			root := t.TempDir()
			store := filepath.Join(root, ".snap")
			st, err := objects.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			w := st.NewWriter()
			cur := build(t, w, []node{file("a.txt", "old\n"), file("secret", "old secret\n")})
			target := build(t, w, []node{file("a.txt", "new\n"), file("secret", "new secret\n")})
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
			os.WriteFile(filepath.Join(root, "secret"), []byte("old secret\n"), 0o600)
			opts := RestoreOptions{Root: root, StoreDir: store, Trash: filepath.Join(store, "trash"), Workers: 1}
			if when == "before the restore" {
				os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\nthe user's write\n"), 0o644)
			} else {
				opts.Sys = &writeOnRename{Sys: fsys.RealSys, f: filepath.Join(root, "a.txt")}
			}
			res, err := Restore(context.Background(), st, cur, target, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 1 || !errors.Is(res.Errors[0].Err, ErrChanged) || res.Errors[0].Path != "a.txt" {
				t.Fatalf("errors %v, want a.txt: %v", res.Errors, ErrChanged)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "old\nthe user's write\n" {
				t.Fatalf("a.txt holds %q: the user's write is lost", got)
			}
			got, _ := os.ReadFile(filepath.Join(root, "secret"))
			fi, _ := os.Stat(filepath.Join(root, "secret"))
			if string(got) != "new secret\n" || fi.Mode().Perm() != 0o600 {
				t.Fatalf("secret: %q, mode %v; want the new content, mode 0600", got, fi.Mode().Perm())
			}
		})
	}
}

// An edit in place that keeps the file's size and puts its mtime back (cp
// -p, rsync -t, tar x) still moves its ctime: the stat cache does not vouch
// for it, its content is compared, and the edit is left as it is
// (torture/statcache-findings/03).
func TestRestoreLeavesAnEditThatPutItsMtimeBack(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, ".snap")
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	cur := build(t, w, []node{file("a.txt", "old\n")})
	target := build(t, w, []node{file("a.txt", "new\n")})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	cache := index.New()
	cache.Put("a.txt", index.StatOf(fi), objects.Hash(objects.TypeBlob, []byte("old\n")), time.Now())
	for i := 0; ; i++ { // the edit, until the clock has moved the ctime past the recorded one
		time.Sleep(20 * time.Millisecond)
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("OLD\n"), 0)
		f.Close()
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
		now, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := index.StatOf(now); st.Ctime != index.StatOf(fi).Ctime && st.Mtime == index.StatOf(fi).Mtime {
			break
		}
		if i == 100 {
			t.Fatal("the edit never moved the file's ctime")
		}
	}
	res, err := Restore(context.Background(), st, cur, target, RestoreOptions{Root: root, StoreDir: store,
		Trash: filepath.Join(store, "trash"), Workers: 1, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || !errors.Is(res.Errors[0].Err, ErrChanged) {
		t.Fatalf("errors %v, want a.txt: %v", res.Errors, ErrChanged)
	}
	if got, _ := os.ReadFile(p); string(got) != "OLD\n" {
		t.Fatalf("a.txt holds %q: the edit is lost", got)
	}
}

// TrashSize counts files and bytes, looking at no more than it is asked.
func TestTrashSize(t *testing.T) {
	dir := t.TempDir()
	if n, b := TrashSize(filepath.Join(dir, "missing"), 0); n != 0 || b != 0 {
		t.Fatalf("a missing trash: %d files, %d bytes", n, b)
	}
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := TrashSize(dir, 0); n != 5 || b != 500 {
		t.Fatalf("all: %d files, %d bytes", n, b)
	}
	if n, b := TrashSize(dir, 3); n != 3 || b != 300 {
		t.Fatalf("at most 3: %d files, %d bytes", n, b)
	}
}
