package storage

import (
	"errors"
	"fmt"
)

// Errors of storage implementations; test with errors.Is.
var (
	// ErrBusy: a lock was not obtained in time. refs.ErrBusy is this
	// error.
	ErrBusy = errors.New("store busy")
	// ErrNotDurable: a ref change failed after it became visible (an I/O
	// error making it durable). refs.ErrNotDurable is this error.
	ErrNotDurable = errors.New("ref changed but not durable")
	// ErrBadName: a blob or file name that ValidName refuses.
	ErrBadName = errors.New("invalid storage name")
	// ErrRefDir: a ref name that is a directory of other refs.
	ErrRefDir = errors.New("name is a ref directory")
	// ErrNotDir: the root of a ref walk is not a directory.
	ErrNotDir = errors.New("not a directory")
)

// BadEntryError is an entry under a ref name that cannot be a ref.
type BadEntryError struct {
	Name   string
	Reason string // "ref is a symlink", "ref is not a regular file"
}

func (e *BadEntryError) Error() string { return fmt.Sprintf("%s: %s", e.Name, e.Reason) }

// CollisionError is a ref name whose ancestor With is a ref.
type CollisionError struct {
	Name, With string
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("%q: collides with ref %q", e.Name, e.With)
}
