package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// cas is a compare-and-swap built on UpdateRef as package refs builds it:
// old nil means absent, new nil deletes.
var errStale = errors.New("stale")

func cas(s storage.Refs, name string, old, new []byte) error {
	return s.UpdateRef(context.Background(), name, new != nil, time.Second, func(cur []byte, err error) ([]byte, error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if !bytes.Equal(cur, old) {
			return nil, fmt.Errorf("%w: %q, expected %q", errStale, cur, old)
		}
		return new, nil
	})
}

func readRef(t *testing.T, s storage.Refs, name string) []byte {
	t.Helper()
	v, err := s.ReadRef(name)
	if err != nil {
		t.Fatalf("ReadRef(%q): %v", name, err)
	}
	return v
}

func walk(t *testing.T, s storage.Refs, base string) []string {
	t.Helper()
	var out []string
	err := s.WalkRefs(base, func(name string, isDir bool, err error) error {
		if err != nil {
			return err
		}
		if isDir {
			name += "/"
		}
		out = append(out, name)
		return nil
	})
	if err != nil {
		t.Fatalf("WalkRefs(%q): %v", base, err)
	}
	return out
}

// RunRefs runs the ref-store conformance tests on stores made by newStore
// (each call a new, empty store). Walks are compared after dropping what
// is not a ref or a directory of refs (a file-system store's lock files).
func RunRefs(t *testing.T, newStore func(t *testing.T) storage.Refs) {
	t.Run("CompareAndSwap", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.ReadRef("sessions/a/head"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("absent ref: %v", err)
		}
		if err := cas(s, "sessions/a/head", nil, []byte("v1\n")); err != nil {
			t.Fatalf("create: %v", err)
		}
		if err := cas(s, "sessions/a/head", nil, []byte("v9\n")); !errors.Is(err, errStale) {
			t.Fatalf("create over an existing ref: %v", err)
		}
		if err := cas(s, "sessions/a/head", []byte("v0\n"), []byte("v2\n")); !errors.Is(err, errStale) {
			t.Fatalf("stale old value accepted: %v", err)
		}
		if got := readRef(t, s, "sessions/a/head"); string(got) != "v1\n" {
			t.Fatalf("after refused swaps: %q", got)
		}
		if err := cas(s, "sessions/a/head", []byte("v1\n"), []byte("v2\n")); err != nil {
			t.Fatalf("swap: %v", err)
		}
		if got := readRef(t, s, "sessions/a/head"); string(got) != "v2\n" {
			t.Fatalf("after swap: %q", got)
		}
		if _, err := s.ReadRef("sessions/a"); !errors.Is(err, storage.ErrRefDir) {
			t.Fatalf("a directory of refs read as a ref: %v", err)
		}
		if err := cas(s, "sessions/a/head/x", nil, []byte("v\n")); !errors.As(err, new(*storage.CollisionError)) {
			t.Fatalf("ref under a ref: %v, want a *CollisionError", err)
		}
		if err := cas(s, "labels/l", []byte("v\n"), nil); !errors.Is(err, errStale) {
			t.Fatalf("delete of a missing ref (no directory): %v", err)
		}
		if err := cas(s, "sessions/a/head", []byte("v1\n"), nil); !errors.Is(err, errStale) {
			t.Fatalf("delete with a stale value: %v", err)
		}
		if err := cas(s, "sessions/a/head", []byte("v2\n"), nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := s.ReadRef("sessions/a/head"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("deleted ref: %v", err)
		}
		if err := cas(s, "sessions/a/head", nil, []byte("v3\n")); err != nil {
			t.Fatalf("re-create: %v", err)
		}
		// An error from fn changes nothing.
		boom := errors.New("boom")
		err := s.UpdateRef(context.Background(), "sessions/a/head", true, time.Second, func([]byte, error) ([]byte, error) { return nil, boom })
		if err != boom {
			t.Fatalf("fn's error: %v", err)
		}
		if got := readRef(t, s, "sessions/a/head"); string(got) != "v3\n" {
			t.Fatalf("after a refused update: %q", got)
		}
	})
	t.Run("Walk", func(t *testing.T) {
		s := newStore(t)
		for _, n := range []string{"labels/b", "labels/a", "sessions/s1/head", "sessions/s0/head", "top"} {
			if err := cas(s, n, nil, []byte(n)); err != nil {
				t.Fatal(err)
			}
		}
		got := refsOnly(walk(t, s, ""))
		want := []string{"labels/", "labels/a", "labels/b", "sessions/", "sessions/s0/", "sessions/s0/head", "sessions/s1/", "sessions/s1/head", "top"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("walk: %q\nwant %q", got, want)
		}
		if got := refsOnly(walk(t, s, "sessions/")); fmt.Sprint(got) != fmt.Sprint(want[4:8]) {
			t.Fatalf("walk sessions/: %q", got)
		}
		var seen []string
		s.WalkRefs("", func(name string, isDir bool, err error) error {
			seen = append(seen, name)
			if isDir && name == "sessions" {
				return fs.SkipDir
			}
			return nil
		})
		for _, n := range seen {
			if len(n) > 9 && n[:9] == "sessions/" {
				t.Fatalf("SkipDir did not skip: %q", seen)
			}
		}
		if err := s.WalkRefs("nothing/", func(string, bool, error) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("walk of a missing directory: %v", err)
		}
	})
	t.Run("ConcurrentIncrements", func(t *testing.T) {
		s := newStore(t)
		const workers, each = 8, 10
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					for {
						cur, err := s.ReadRef("counter")
						n := 0
						if err == nil {
							n, _ = strconv.Atoi(string(cur))
						} else {
							cur = nil
						}
						if cas(s, "counter", cur, []byte(strconv.Itoa(n+1))) == nil {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
		if got := readRef(t, s, "counter"); string(got) != strconv.Itoa(workers*each) {
			t.Fatalf("counter %s after %d increments: an update was lost", got, workers*each)
		}
	})
	t.Run("Files", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.ReadFile("move-journal"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing file: %v", err)
		}
		if s.Exists("move-journal") {
			t.Fatal("a missing file exists")
		}
		for _, data := range []string{"{\"a\":1}", "{\"a\":2}"} {
			if err := s.WriteFile("move-journal", []byte(data)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.ReadFile("move-journal"); err != nil || string(got) != data {
				t.Fatalf("ReadFile: %q, %v", got, err)
			}
		}
		if err := s.Rename("move-journal", "move-journal.abandoned"); err != nil {
			t.Fatal(err)
		}
		if s.Exists("move-journal") || !s.Exists("move-journal.abandoned") {
			t.Fatal("rename")
		}
		if err := s.Remove("move-journal.abandoned"); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove("move-journal.abandoned"); err != nil {
			t.Fatalf("remove of a missing file: %v", err)
		}
		if err := s.AppendLines("expired", []byte("a\nb\n")); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendLines("expired", []byte("c\n")); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadFile("expired"); string(got) != "a\nb\nc\n" {
			t.Fatalf("appended lines: %q", got)
		}
		for off, want := range map[int64]string{0: "a\nb\nc\n", 2: "b\nc\n", 5: "\n"} {
			err := s.ReadFileAt("expired", func(r io.ReaderAt, size int64) error {
				buf := make([]byte, size-off)
				if _, err := r.ReadAt(buf, off); err != nil {
					return err
				}
				if string(buf) != want || size != 6 {
					return fmt.Errorf("%q, size %d", buf, size)
				}
				return nil
			})
			if err != nil {
				t.Errorf("ReadFileAt, at %d: %v; want %q, size 6", off, err, want)
			}
		}
		if err := s.ReadFileAt("nosuch", func(io.ReaderAt, int64) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFileAt of a missing file: %v", err)
		}
		for _, name := range oddNames {
			if err := s.WriteFile(name, []byte("x")); !errors.Is(err, storage.ErrBadName) {
				t.Errorf("WriteFile(%q): %v, want ErrBadName", name, err)
			}
		}
	})
	t.Run("LogAppend", func(t *testing.T) {
		s := newStore(t)
		lk, err := s.Locks().Lock(context.Background(), storage.OplogLock, storage.Exclusive, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Close()
		appendRec := func(rec string, cut func(size int64) int64) error {
			return s.AppendLog("oplog", func(r io.ReaderAt, size int64) (int64, []byte, error) {
				buf := make([]byte, size)
				if _, err := r.ReadAt(buf, 0); err != nil { // the whole log, even an empty one: no error
					return 0, nil, err
				}
				seq := bytes.Count(buf, []byte("\n")) + 1
				return cut(size), []byte(fmt.Sprintf("%d %s\n", seq, rec)), nil
			})
		}
		keep := func(size int64) int64 { return size }
		for _, r := range []string{"a", "b", "c"} {
			if err := appendRec(r, keep); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.ReadFile("oplog"); string(got) != "1 a\n2 b\n3 c\n" {
			t.Fatalf("log: %q", got)
		}
		// A torn tail is cut where fn says.
		if err := appendRec("d", func(size int64) int64 { return size - 4 }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadFile("oplog"); string(got) != "1 a\n2 b\n4 d\n" {
			t.Fatalf("log after cutting the tail: %q", got)
		}
		boom := errors.New("boom")
		if err := s.AppendLog("oplog", func(io.ReaderAt, int64) (int64, []byte, error) { return 0, nil, boom }); err != boom {
			t.Fatalf("fn's error: %v", err)
		}
		if got, _ := s.ReadFile("oplog"); string(got) != "1 a\n2 b\n4 d\n" {
			t.Fatalf("log after a refused append: %q", got)
		}
	})
	t.Run("ConcurrentAppends", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					lk, err := s.Locks().Lock(context.Background(), storage.OplogLock, storage.Exclusive, 10*time.Second)
					if err != nil {
						t.Error(err)
						return
					}
					err = s.AppendLog("oplog", func(r io.ReaderAt, size int64) (int64, []byte, error) {
						buf := make([]byte, size)
						r.ReadAt(buf, 0)
						return size, []byte(strconv.Itoa(bytes.Count(buf, []byte("\n"))+1) + "\n"), nil
					})
					lk.Close()
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		got, _ := s.ReadFile("oplog")
		var want bytes.Buffer
		for i := 1; i <= 40; i++ {
			fmt.Fprintln(&want, i)
		}
		if string(got) != want.String() {
			t.Fatalf("sequence numbers under concurrent appends:\n%s", got)
		}
	})
}

// refsOnly drops entries whose names end in ".lock".
func refsOnly(names []string) []string {
	var out []string
	for _, n := range names {
		if len(n) < 5 || n[len(n)-5:] != ".lock" {
			out = append(out, n)
		}
	}
	return out
}

// RunLocker runs the lock conformance tests on lock tables made by
// newLocker (each call a new table of one new store; two Lockers from one
// call are the same table).
func RunLocker(t *testing.T, newLocker func(t *testing.T) storage.Locker) {
	ctx := context.Background()
	l := newLocker(t)
	ex, err := l.Lock(ctx, storage.GCLock, storage.Exclusive, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(ctx, storage.GCLock, storage.Shared, 0); !errors.Is(err, storage.ErrBusy) {
		t.Fatalf("shared beside exclusive: %v, want ErrBusy", err)
	}
	start := time.Now()
	if _, err := l.Lock(ctx, storage.GCLock, storage.Exclusive, 100*time.Millisecond); !errors.Is(err, storage.ErrBusy) || time.Since(start) < 90*time.Millisecond {
		t.Fatalf("timed wait: %v after %v", err, time.Since(start))
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := l.Lock(cctx, storage.GCLock, storage.Shared, storage.Forever); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait ended by ctx: %v", err)
	}
	cancel()
	other, err := l.Lock(ctx, storage.MoveLock, storage.Exclusive, 0)
	if err != nil {
		t.Fatalf("another lock name: %v", err)
	}
	other.Close()
	got := make(chan error, 1)
	go func() {
		lk, err := l.Lock(ctx, storage.GCLock, storage.Shared, 5*time.Second)
		if err == nil {
			defer lk.Close()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ex.Close()
	if err := <-got; err != nil {
		t.Fatalf("a waiter did not get the lock released: %v", err)
	}
	s1, err := l.Lock(ctx, storage.GCLock, storage.Shared, 0)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l.Lock(ctx, storage.GCLock, storage.Shared, 0)
	if err != nil {
		t.Fatalf("two shared holders: %v", err)
	}
	if _, err := l.Lock(ctx, storage.GCLock, storage.Exclusive, 0); !errors.Is(err, storage.ErrBusy) {
		t.Fatalf("exclusive beside shared: %v", err)
	}
	s1.Close()
	s2.Close()
	// The protocol: a writer waits for a sweep, a sweep for writers.
	unlock, err := storage.LockSweep(ctx, l, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.LockSweep(ctx, l, time.Second); !errors.Is(err, storage.ErrBusy) {
		t.Fatalf("second gc: %v", err)
	}
	if _, err := storage.LockWriter(ctx, l, 50*time.Millisecond); !errors.Is(err, storage.ErrBusy) {
		t.Fatalf("writer during a sweep: %v", err)
	}
	unlock()
	w1, err := storage.LockWriter(ctx, l, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := storage.LockWriter(ctx, l, time.Second)
	if err != nil {
		t.Fatalf("writers exclude each other: %v", err)
	}
	w1()
	w2()
	if _, err := l.Lock(ctx, "../x", storage.Exclusive, 0); !errors.Is(err, storage.ErrBadName) {
		t.Fatalf("odd lock name: %v", err)
	}
}
