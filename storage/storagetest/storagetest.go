// Package storagetest is the conformance suite of package storage: every
// implementation of storage.Blobs, storage.Refs and storage.Locker passes
// it (storage/fsstore and storage/memstore do, in their tests). A new
// backend (a team store on object storage) adds one test that calls
// RunBlobs, RunRefs and RunLocker with its constructor.
//
// It checks the contracts of package storage, not an implementation's
// internals: put/get/range/list/delete of blobs, that nothing of a failed
// or aborted put is visible, that a reader keeps what it opened, that a
// re-put of a name replaces it whole, parallel puts and reads, names with
// odd characters refused; compare-and-swap of refs (creation, a stale old
// value refused, deletion, directories of refs, name collisions, parallel
// increments losing nothing), the log append (records in order, a torn
// tail cut, a failed append leaving nothing), the small files; and the
// locks (exclusive against shared, timeouts as ErrBusy, ctx ends a wait).
// Crash safety of the file-system store is checked with fsys.Faulty in
// its own tests, which reuse the suite's checks after each fault.
package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"github.com/snapcore-dev/snap/storage"
)

// oddNames are names every store refuses.
var oddNames = []string{"", ".", "..", ".hidden", "a/b", "a\\b", "a b", "a\x00b", "a\nb", "é", "a:b", "a*", string(make([]byte, 256))}

// RunBlobs runs the blob-store conformance tests on stores made by
// newStore (each call a new, empty store).
func RunBlobs(t *testing.T, newStore func(t *testing.T) storage.Blobs) {
	t.Run("PutGetRangeListDelete", func(t *testing.T) {
		b := newStore(t)
		put(t, b, "b1.pack", []byte("hello, world"))
		put(t, b, "a0.pack", nil)
		put(t, b, "c2.other", bytes.Repeat([]byte("x"), 1<<20+7))
		if got := get(t, b, "b1.pack"); string(got) != "hello, world" {
			t.Fatalf("get: %q", got)
		}
		if got := get(t, b, "a0.pack"); len(got) != 0 {
			t.Fatalf("empty blob reads %d bytes", len(got))
		}
		r, err := b.Open("b1.pack")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := r.ReadAt(buf, 7); err != nil || string(buf) != "world" {
			t.Fatalf("ReadAt: %q, %v", buf, err)
		}
		if n, err := r.ReadAt(make([]byte, 10), 7); n != 5 || !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt past the end: %d, %v; want 5, EOF", n, err)
		}
		if size, err := r.Size(); size != 12 || err != nil {
			t.Fatalf("Size: %d, %v", size, err)
		}
		r.Close()
		if info, err := b.Stat("c2.other"); err != nil || info.Size != 1<<20+7 || info.Name != "c2.other" || info.ModTime.IsZero() {
			t.Fatalf("Stat: %+v, %v", info, err)
		}
		list(t, b, "", "a0.pack", "b1.pack", "c2.other")
		list(t, b, "b", "b1.pack")
		list(t, b, "zz")
		removed, err := b.Delete("b1.pack", "missing.pack")
		if err != nil || !slices.Equal(removed, []string{"b1.pack"}) {
			t.Fatalf("Delete: %v, %v", removed, err)
		}
		list(t, b, "", "a0.pack", "c2.other")
		if _, err := b.Open("b1.pack"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a deleted blob: %v", err)
		}
		if _, err := b.Stat("b1.pack"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a deleted blob: %v", err)
		}
	})
	t.Run("NothingVisibleBeforeCommit", func(t *testing.T) {
		b := newStore(t)
		w, err := b.Create("")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("half a pack"))
		list(t, b, "")
		w.Abort()
		list(t, b, "")
		w.Abort() // twice is harmless
		w2, _ := b.Create("repack-")
		w2.Write([]byte("whole"))
		if err := w2.Commit("x.pack"); err != nil {
			t.Fatal(err)
		}
		w2.Abort() // after Commit: nothing
		list(t, b, "", "x.pack")
		if err := w2.Commit("y.pack"); err == nil {
			t.Fatal("a writer committed twice")
		}
		list(t, b, "", "x.pack")
	})
	t.Run("ReplaceAndReaderKeepsContent", func(t *testing.T) {
		b := newStore(t)
		put(t, b, "p.pack", []byte("first"))
		r, err := b.Open("p.pack")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		put(t, b, "p.pack", []byte("second!")) // replaced whole
		if got := get(t, b, "p.pack"); string(got) != "second!" {
			t.Fatalf("after replace: %q", got)
		}
		if _, err := b.Delete("p.pack"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "first" {
			t.Fatalf("an open reader reads %q, %v after replace and delete; want the content it opened", buf, err)
		}
	})
	t.Run("OddNamesRefused", func(t *testing.T) {
		b := newStore(t)
		for _, name := range oddNames {
			w, err := b.Create("")
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("x"))
			if err := w.Commit(name); !errors.Is(err, storage.ErrBadName) {
				t.Errorf("Commit(%q): %v, want ErrBadName", name, err)
			}
			if _, err := b.Open(name); err == nil {
				t.Errorf("Open(%q) succeeded", name)
			}
			if _, err := b.Delete(name); !errors.Is(err, storage.ErrBadName) {
				t.Errorf("Delete(%q): %v, want ErrBadName", name, err)
			}
		}
		if _, err := b.Create("../x"); !errors.Is(err, storage.ErrBadName) {
			t.Errorf("Create with kind ../x: %v", err)
		}
		list(t, b, "")
	})
	t.Run("Concurrent", func(t *testing.T) {
		b := newStore(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := bytes.Repeat([]byte{byte(i)}, 1000+i)
				name := fmt.Sprintf("p%02d.pack", i)
				w, err := b.Create("")
				if err != nil {
					errs <- err
					return
				}
				for j := 0; j < len(data); j += 100 {
					w.Write(data[j:min(j+100, len(data))])
				}
				if err := w.Commit(name); err != nil {
					errs <- err
					return
				}
				for range 20 { // read every blob listed while others commit
					names, err := b.List("p")
					if err != nil {
						errs <- err
						return
					}
					for _, name := range names {
						var k int
						fmt.Sscanf(name, "p%02d.pack", &k)
						got, err := storage.ReadAll(b, name)
						if err != nil {
							errs <- err
							return
						}
						if want := bytes.Repeat([]byte{byte(k)}, 1000+k); !bytes.Equal(got, want) {
							errs <- fmt.Errorf("blob %d: %d bytes, not its content", k, len(got))
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		names, _ := b.List("p")
		if len(names) != 16 {
			t.Fatalf("%d blobs listed, want 16", len(names))
		}
	})
}

func put(t *testing.T, b storage.Blobs, name string, data []byte) {
	t.Helper()
	w, err := b.Create("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(name); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, b storage.Blobs, name string) []byte {
	t.Helper()
	data, err := storage.ReadAll(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func list(t *testing.T, b storage.Blobs, prefix string, want ...string) {
	t.Helper()
	got, err := b.List(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
}
