package tasks

import "errors"

// Errors of the operations; the engine maps them to usage errors.
var (
	ErrNoOpenTask = errors.New("no open task")
	ErrTooDeep    = errors.New("tasks nested too deep")
	ErrBadParent  = errors.New("not an open task")
	ErrEmpty      = errors.New("empty text")
	ErrDocument   = errors.New("malformed tasks document")
)
