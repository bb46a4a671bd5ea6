package objects

import "errors"

// Sentinel errors of the object layer. Callers test them with errors.Is.
var (
	// ErrNotFound: no object with that id is in the store.
	ErrNotFound = errors.New("object not found")
	// ErrCorrupt: stored bytes do not decode, or decode to something whose id
	// is not the one asked for. Wrong bytes are never returned.
	ErrCorrupt = errors.New("object corrupt")
	// ErrBadID: a string is not a valid object id.
	ErrBadID = errors.New("invalid object id")
	// ErrBadName: a tree entry name is not legal (see ValidName).
	ErrBadName = errors.New("illegal entry name")
	// ErrAmbiguous: an id prefix matches more than one object.
	ErrAmbiguous = errors.New("ambiguous id prefix")
	// ErrTooLarge: an object exceeds the size the format allows.
	ErrTooLarge = errors.New("object too large")
)
