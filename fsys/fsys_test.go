package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWalkDirMatchesFilepath(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a/b/c.txt", "a/d.txt", "e/f/g/h.txt", "skip/x.txt", "z.txt"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	walk := func(w func(string, fs.WalkDirFunc) error) []string {
		var seen []string
		err := w(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			seen = append(seen, strings.TrimPrefix(p, root)+" "+d.Type().String())
			if d.Name() == "skip" {
				return fs.SkipDir
			}
			if d.Name() == "g" {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	want := walk(filepath.WalkDir)
	got := walk(func(r string, fn fs.WalkDirFunc) error { return WalkDir(OS, r, fn) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WalkDir visited\n%q\nfilepath.WalkDir\n%q", got, want)
	}
	// A missing root is reported to fn, as filepath.WalkDir does.
	err := WalkDir(OS, filepath.Join(root, "missing"), func(p string, d fs.DirEntry, err error) error { return err })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing root: %v", err)
	}
}

// writeThrough writes, syncs, renames and syncs the directory: 6 write-class
// operations (createtemp, write, sync, close, rename, syncdir), one read.
func writeThrough(f *Faulty, dir string) error {
	file, err := f.CreateTemp(dir, "x-*")
	if err != nil {
		return err
	}
	if _, err := file.Write([]byte("hello world")); err != nil {
		file.Close()
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	if _, err := f.Stat(file.Name()); err != nil {
		return err
	}
	if err := f.Rename(file.Name(), filepath.Join(dir, "final")); err != nil {
		return err
	}
	return f.SyncDir(dir)
}

func TestFaultyCountsAndFails(t *testing.T) {
	names := []string{"createtemp", "write", "sync", "close", "rename", "syncdir"}
	f := NewFaulty(nil, nil)
	if err := writeThrough(f, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if f.Count() != len(names) || len(f.Ops()) != len(names)+1 {
		t.Fatalf("counted %d of %d ops, want %d of %d: %v", f.Count(), len(f.Ops()), len(names), len(names)+1, f.Ops())
	}
	for i, name := range names {
		for _, persistent := range []bool{false, true} {
			f.Set(Fault{At: i + 1, Err: syscall.ENOSPC, Persistent: persistent})
			err := writeThrough(f, t.TempDir())
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("at %d: %v, want ENOSPC", i+1, err)
			}
			var inj *InjectedError
			if !errors.As(err, &inj) || inj.Op.Seq != i+1 || inj.Op.Name != name {
				t.Fatalf("at %d: %v is not the injected error of %s", i+1, err, name)
			}
			if !strings.Contains(err.Error(), name+" ") {
				t.Fatalf("at %d: %q does not name %s", i+1, err, name)
			}
			failed := f.Injected()
			if len(failed) == 0 || failed[0].Seq != i+1 {
				t.Fatalf("at %d: injected %v", i+1, failed)
			}
			if !persistent && len(failed) != 1 {
				t.Fatalf("transient fault at %d failed %d ops", i+1, len(failed))
			}
		}
	}
	// Persistent: every counted op from At on fails.
	f.Set(Fault{At: 1, Err: syscall.EIO, Persistent: true})
	dir := t.TempDir()
	f.Mkdir(filepath.Join(dir, "a"), 0o755)
	f.Remove(filepath.Join(dir, "a"))
	if n := len(f.Injected()); n != 2 {
		t.Fatalf("persistent: %d failures, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a failed Mkdir made the directory")
	}
	// Reads count only when asked to.
	f.Set(Fault{At: 1, Err: syscall.EIO, Count: Read})
	if _, err := f.ReadDir(dir); !errors.Is(err, syscall.EIO) {
		t.Fatalf("ReadDir: %v", err)
	}
	f.Set(Fault{At: 1, Err: syscall.EACCES, Match: func(o Op) bool { return o.Name == "rename" }})
	err := writeThrough(f, t.TempDir())
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EACCES) || f.Count() != 1 {
		t.Fatalf("match rename: %v, %d counted", err, f.Count())
	}
	f.Clear()
	if err := writeThrough(f, t.TempDir()); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
}

func TestFaultySys(t *testing.T) {
	dir := t.TempDir()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	write := func(f *Faulty, name, data string) error {
		fd, err := f.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		_, werr := io.WriteString(FdWriter(f, fd), data)
		if cerr := f.Close(fd); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
		return f.Renameat(dfd, name, dfd, name+".done")
	}
	f := NewFaulty(nil, nil)
	if err := write(f, "a", "0123456789"); err != nil {
		t.Fatal(err)
	}
	if f.Count() != 4 { // openat, write, close, renameat
		t.Fatalf("counted %d: %v", f.Count(), f.Ops())
	}
	if !strings.HasSuffix(f.Ops()[0].Path, "/a") {
		t.Fatalf("openat path %q", f.Ops()[0].Path)
	}
	f.Set(Fault{At: 2, Err: syscall.ENOSPC, ShortWrite: true})
	err = write(f, "b", "0123456789")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "b")); string(data) != "01234" {
		t.Fatalf("short write left %q", data)
	}
	// A failing close still closes.
	f.Set(Fault{At: 3, Err: syscall.EIO})
	if err := write(f, "c", "x"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("close: %v", err)
	}
	// Reads through FdReader.
	fd, err := RealSys.Openat(dfd, "a.done", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	f.Set(Fault{At: 2, Err: syscall.EIO, Count: Read})
	r := FdReader(f, fd)
	buf := make([]byte, 4)
	if n, err := r.Read(buf); n != 4 || err != nil {
		t.Fatalf("first read %d %v", n, err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, syscall.EIO) {
		t.Fatalf("second read: %v", err)
	}
}

func TestReadRegularReadsWholeFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 1 << 20} {
		want := bytes.Repeat([]byte{byte(n), 'x'}, n)[:n]
		p := filepath.Join(dir, fmt.Sprint(n))
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadRegular(nil, p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: read %d bytes, %v", n, len(got), err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(nil, filepath.Join(dir, "fifo")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a FIFO: %v, want ErrNotRegular", err)
	}
}

// OS opens without the poller (openFile) as package os opens: the same
// errors, modes under the umask, directories that list.
func TestOSOpensAsPackageOS(t *testing.T) {
	dir := t.TempDir()
	_, err := OS.Open(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Fatalf("open of a missing file: %v", err)
	}
	name := filepath.Join(dir, "f")
	f, err := OS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := OS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL of an existing file: %v", err)
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o666&^fs.FileMode(umask) {
		t.Fatalf("mode %v (umask %o), %v", fi.Mode(), umask, err)
	}
	d, err := OS.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if names, err := d.(*os.File).Readdirnames(-1); err != nil || len(names) != 1 || names[0] != "f" {
		t.Fatalf("the directory lists %v, %v", names, err)
	}
}
