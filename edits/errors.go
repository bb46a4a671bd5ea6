package edits

import "errors"

// Errors of the edit model; the engine maps them to usage errors.
var (
	ErrNoMatch  = errors.New("no match")
	ErrNoAnchor = errors.New("anchor not found")
	ErrOverlap  = errors.New("overlaps a pending change")
	ErrFull     = errors.New("too many pending changes")
	ErrNoChange = errors.New("no such pending change")
	ErrStale    = errors.New("changed since it was staged")
)
