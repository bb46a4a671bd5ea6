package fsstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/storage/storagetest"
)

func newBlobs(t *testing.T, vfs fsys.FS) (*Blobs, string) {
	dir := t.TempDir()
	b, err := NewBlobs(vfs, filepath.Join(dir, "packs"), filepath.Join(dir, "tmp"), "pack-")
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func TestBlobsConformance(t *testing.T) {
	storagetest.RunBlobs(t, func(t *testing.T) storage.Blobs { b, _ := newBlobs(t, nil); return b })
}

func TestRefsConformance(t *testing.T) {
	storagetest.RunRefs(t, func(t *testing.T) storage.Refs {
		s, err := OpenRefs(nil, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestLockerConformance(t *testing.T) {
	storagetest.RunLocker(t, func(t *testing.T) storage.Locker { return NewLocker(t.TempDir()) })
}

// tmpFiles lists what is left in tmp/.
func tmpFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// A put that fails at any write step (write, fsync, rename, directory
// fsync) leaves no partial blob visible and no temporary file; one that
// fails only at the directory fsync has the whole blob visible.
func TestBlobPutFaults(t *testing.T) {
	data := bytes.Repeat([]byte("pack"), 4096)
	for at := 1; ; at++ {
		f := fsys.NewFaulty(nil, nil)
		b, dir := newBlobs(t, f)
		f.Set(fsys.Fault{At: at, Err: syscall.EIO})
		w, err := b.Create("")
		if err == nil {
			if _, err = w.Write(data); err == nil {
				err = w.Commit("p.pack")
			} else {
				w.Abort()
			}
		}
		injected := f.Injected()
		if len(injected) == 0 {
			if err != nil {
				t.Fatalf("no fault injected, put failed: %v", err)
			}
			break // past the last write operation
		}
		if err == nil {
			t.Fatalf("fault at %v: put succeeded", injected)
		}
		names, _ := b.List("")
		if injected[0].Name == "syncdir" {
			if got, _ := storage.ReadAll(b, "p.pack"); !bytes.Equal(got, data) {
				t.Fatalf("fault at %v: the renamed blob is not whole", injected)
			}
		} else if len(names) != 0 {
			t.Fatalf("fault at %v: %q visible", injected, names)
		}
		if left := tmpFiles(t, dir); len(left) != 0 {
			t.Fatalf("fault at %v: temporary files left: %q", injected, left)
		}
	}
}

// A ref update that fails before its rename leaves the old value (and no
// lock file); after it, the new value and an error wrapping ErrNotDurable.
func TestRefUpdateFaults(t *testing.T) {
	for at := 1; ; at++ {
		f := fsys.NewFaulty(nil, nil)
		dir := t.TempDir()
		s, err := OpenRefs(f, dir)
		if err != nil {
			t.Fatal(err)
		}
		set := func(old, new string) error {
			return s.UpdateRef(context.Background(), "sessions/s/head", true, time.Second, func(cur []byte, err error) ([]byte, error) {
				if string(cur) != old {
					return nil, errors.New("stale")
				}
				return []byte(new), nil
			})
		}
		if err := set("", "v1"); err != nil {
			t.Fatal(err)
		}
		f.Set(fsys.Fault{At: at, Err: syscall.EIO})
		err = set("v1", "v2")
		injected := f.Injected()
		if len(injected) == 0 {
			break
		}
		got, rerr := s.ReadRef("sessions/s/head")
		if rerr != nil {
			t.Fatalf("fault at %v: %v", injected, rerr)
		}
		switch {
		case err == nil:
			t.Fatalf("fault at %v: update succeeded", injected)
		case errors.Is(err, storage.ErrNotDurable):
			if string(got) != "v2" {
				t.Fatalf("fault at %v: not durable, but reads %q", injected, got)
			}
		default:
			if string(got) != "v1" {
				t.Fatalf("fault at %v: failed (%v), but reads %q", injected, err, got)
			}
			if _, err := os.Stat(filepath.Join(dir, "refs/sessions/s/head.lock")); err == nil {
				t.Fatalf("fault at %v: lock file left", injected)
			}
		}
	}
}

// A log append that fails at any step leaves the log as it was.
func TestLogAppendFaults(t *testing.T) {
	for at := 1; ; at++ {
		f := fsys.NewFaulty(nil, nil)
		s, err := OpenRefs(f, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		app := func(rec string) error {
			return s.AppendLog("oplog", func(_ io.ReaderAt, size int64) (int64, []byte, error) { return size, []byte(rec), nil })
		}
		if err := app("1\n"); err != nil {
			t.Fatal(err)
		}
		f.Set(fsys.Fault{At: at, Err: syscall.EIO})
		err = app("2\n")
		injected := f.Injected()
		if len(injected) == 0 {
			break
		}
		f.Clear()
		got, _ := s.ReadFile("oplog")
		if injected[0].Name == "close" { // after the fsync: the record is durable
			if string(got) != "1\n2\n" {
				t.Fatalf("fault at %v: %v, log %q", injected, err, got)
			}
			continue
		}
		if err == nil || string(got) != "1\n" {
			t.Fatalf("fault at %v: %v, log %q", injected, err, got)
		}
	}
}

// ReadFile of a name that is no regular file returns at once with a
// *BadEntryError: a FIFO with no writer (opening it would block forever),
// a symlink to a device that never ends, a directory
// (torture/history-findings 01).
func TestReadFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenRefs(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "zero", "dir"} {
		done := make(chan error, 1)
		go func() { _, err := s.ReadFile(name); done <- err }()
		select {
		case err := <-done:
			var bad *storage.BadEntryError
			if !errors.As(err, &bad) {
				t.Errorf("ReadFile(%s): %v, want a *storage.BadEntryError", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) has not returned after 5 s", name)
		}
	}
	if data, err := s.ReadFile("plain"); err != nil || string(data) != "x\n" {
		t.Fatalf("ReadFile(plain) = %q, %v", data, err)
	}
}

// A FIFO in a ref's place is a *BadEntryError at once, not an open that
// waits for a writer for ever (torture/index2-findings/02: every command
// reading the session head hung, and caught SIGTERM).
func TestReadRefRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenRefs(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "refs", "sessions", "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "refs", "sessions", "s", "head"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.ReadRef("sessions/s/head"); done <- err }()
	select {
	case err := <-done:
		var bad *storage.BadEntryError
		if !errors.As(err, &bad) {
			t.Fatalf("ReadRef of a FIFO: %v, want a *storage.BadEntryError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadRef of a FIFO has not returned after 5 s")
	}
}
