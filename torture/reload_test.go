package torture

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// TestReadAfterRepackByAnotherProcess is what TestConcurrentGC showed as
// checkpoints failing with exit 12 "session sN head X: object not found"
// while X was intact in the store: a Store (a snap process) indexes pack A;
// another process's gc rewrites A into B (same object, A removed); the first
// Store's Read of the object then fails with ErrNotFound. Read sees A gone
// and calls Reload, which indexes B but skips its entries as duplicates of
// A's (still indexed), then drops A and with it the object.
func TestReadAfterRepackByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	gcProc, err := objects.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer gcProc.Close()
	w := gcProc.NewWriter()
	keep, err := w.PutBytes([]byte("a checkpoint's content, reachable\n"))
	if err != nil {
		t.Fatal(err)
	}
	drop, err := w.PutBytes([]byte("unreachable\n"))
	if err != nil {
		t.Fatal(err)
	}
	packA, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}

	writer, err := objects.Open(dir) // another process, started before the gc
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	packB, _, err := gcProc.Repack([]string{packA}, func(id objects.ID) bool { return id != drop })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, objects.PacksDir, packA)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("repack kept %s: %v", packA, err)
	}
	t.Logf("pack %s rewritten as %s", packA[:12], packB[:12])

	if _, _, err := writer.Read(keep); err != nil {
		t.Errorf("BUG: Read of %s, intact in pack %s, after another process repacked %s: %v", keep.Short(), packB[:12], packA[:12], err)
	}
	if !writer.Has(keep) {
		t.Errorf("BUG: after that Read, the Store no longer has %s at all", keep.Short())
	}
	fresh, err := objects.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, _, err := fresh.Read(keep); err != nil {
		t.Errorf("a freshly opened store cannot read %s either: %v", keep.Short(), err)
	}
}
