package objects

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/snapcore-dev/snap/fsys"
)

// TestUnreadablePackIsUnavailableNotAbsent: a pack that cannot be read (an
// I/O error, not damage) when the store is opened is not taken for absent:
// reading one of its objects returns the I/O error, not ErrNotFound, and once
// the fault clears the next read finds it.
func TestUnreadablePackIsUnavailableNotAbsent(t *testing.T) {
	s, dir := openStoreForTest(t)
	w := s.NewWriter()
	id, err := w.Put(TypeBlob, []byte("in a pack that will not read"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	f := fsys.NewFaulty(nil, nil)
	f.Set(fsys.Fault{At: 1, Err: syscall.EIO, Count: fsys.Read, Persistent: true,
		Match: func(o fsys.Op) bool { return strings.HasSuffix(o.Path, packFileSuffix) }})
	s, err = OpenFS(dir, f)
	if err != nil {
		t.Fatalf("a pack that cannot be read must not make Open fail: %v", err)
	}
	defer s.Close()
	_, _, err = s.Read(id)
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrNotFound) {
		t.Fatalf("Read with the pack unreadable = %v, want EIO and not ErrNotFound", err)
	}
	if lerrs := s.LoadErrors(); len(lerrs) != 1 {
		t.Fatalf("LoadErrors = %v, want the unreadable pack", lerrs)
	}
	for name := range s.LoadErrors() {
		if _, err := s.PackObjects(name); errors.Is(err, ErrCorrupt) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("PackObjects of an unreadable pack = %v, want EIO, not ErrCorrupt", err)
		}
	}
	f.Clear()
	if _, data, err := s.Read(id); err != nil || string(data) != "in a pack that will not read" {
		t.Fatalf("Read once the fault cleared = %q, %v", data, err)
	}
	if lerrs := s.LoadErrors(); len(lerrs) != 0 {
		t.Fatalf("LoadErrors once read = %v", lerrs)
	}
}
