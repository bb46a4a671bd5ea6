package refs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/snapcore-dev/snap/objects"
)

// JournalName is the file in the store directory that journals a change
// of the working tree in progress (the engine's rewind, undo or redo):
// written before the tree is touched, removed once the operation is in the
// op log, so that a killed one can be completed.
const JournalName = "move-journal"

// Journal is what this package reads of the journal: the checkpoints it
// names, which stay gc roots until the journal is removed. The rest of the
// record is the engine's (the data ReadJournal returns).
type Journal struct {
	Kind    string     `json:"kind"`
	Session string     `json:"session"`
	Target  objects.ID `json:"target"`
	NewHead objects.ID `json:"new_head"`
	Known   objects.ID `json:"known"`
	OldHead objects.ID `json:"old_head"`
	Safety  objects.ID `json:"safety"`
	Current objects.ID `json:"current"`
	Found   objects.ID `json:"found,omitempty"`
}

// IDs lists the checkpoints the journal names (zero ones included).
func (j *Journal) IDs() []objects.ID {
	return []objects.ID{j.Target, j.NewHead, j.Known, j.OldHead, j.Safety, j.Current, j.Found}
}

// ReadJournal returns the journal's record (JSON) and what it names; nil
// data and journal when there is none. A record that does not decode is
// ErrCorrupt: WriteJournal replaces the file atomically.
func (s *Store) ReadJournal() ([]byte, *Journal, error) {
	data, err := s.be.ReadFile(JournalName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, JournalName, err)
	}
	return data, &j, nil
}

// WriteJournal durably replaces the journal with record, a JSON object
// holding at least Journal's fields.
func (s *Store) WriteJournal(record []byte) error {
	var j Journal
	if err := json.Unmarshal(record, &j); err != nil {
		return fmt.Errorf("journal record: %w", err)
	}
	return s.be.WriteFile(JournalName, record)
}

// RemoveJournal removes the journal (none is no error).
func (s *Store) RemoveJournal() error {
	return s.be.Remove(JournalName)
}

// JournalPending reports whether a journal exists (fsck warns of it).
func (s *Store) JournalPending() bool {
	return s.be.Exists(JournalName)
}

// AbandonJournal sets the journal aside (JournalName+".abandoned") when the
// operation it records can never be completed (its checkpoints are gone):
// kept for inspection, no longer a pending move.
func (s *Store) AbandonJournal() error {
	return s.be.Rename(JournalName, JournalName+".abandoned")
}
