package refs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// The journal of a move: written whole, read back with the checkpoints it
// names (Found included), damage detected, removed or set aside.
func TestJournal(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if data, j, err := s.ReadJournal(); data != nil || j != nil || err != nil || s.JournalPending() {
		t.Fatalf("no journal: %q %v %v", data, j, err)
	}
	found := objects.Hash(objects.TypeBlob, []byte("found"))
	rec := []byte(`{"kind":"rewind","session":"s","found":"` + found.String() + `","scope":{"files":true}}`)
	if err := s.WriteJournal(rec); err != nil {
		t.Fatal(err)
	}
	data, j, err := s.ReadJournal()
	if err != nil || string(data) != string(rec) || j.Kind != "rewind" || j.IDs()[6] != found || !s.JournalPending() {
		t.Fatalf("read back: %q %+v %v", data, j, err)
	}
	if err := s.WriteJournal([]byte("not json")); err == nil {
		t.Fatal("a record that is no journal was written")
	}
	os.WriteFile(filepath.Join(dir, JournalName), []byte("{torn"), 0o644)
	if _, _, err := s.ReadJournal(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged journal: %v", err)
	}
	if err := s.AbandonJournal(); err != nil || s.JournalPending() {
		t.Fatalf("abandon: %v", err)
	}
	if err := s.RemoveJournal(); err != nil {
		t.Fatalf("remove when none: %v", err)
	}
}
