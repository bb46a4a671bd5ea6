package refs

import (
	"errors"
	"fmt"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/storage"
)

// Sentinel errors of the refs layer. Every error returned by this package
// that falls in one of these classes wraps the sentinel; test with errors.Is.
var (
	// ErrNotFound: no ref with that name exists.
	ErrNotFound = errors.New("ref not found")
	// ErrConflict: a compare-and-swap found a value other than the expected
	// one. The error is a *ConflictError carrying both values.
	ErrConflict = errors.New("conflict")
	// ErrBusy: a ref's lock file stayed in place for the whole lock timeout:
	// another writer holds it, or a crashed writer left it behind.
	ErrBusy = storage.ErrBusy
	// ErrStaleMark: the op log no longer holds a Mark's record at its
	// place, or a record after it fails verification (OpsAfter). The
	// caller reads Ops instead.
	ErrStaleMark = errors.New("refs: op log mark is stale")
	// ErrBadName: a ref name, name component, op kind or session name is not
	// legal (see ValidComponent and ValidName), or collides with existing refs.
	ErrBadName = errors.New("invalid ref name")
	// ErrCorrupt: a ref file or op-log record is damaged. The error is (or
	// joins) *CorruptError values.
	ErrCorrupt = errors.New("store corrupt")
	// ErrNotDurable: an Update or Delete failed after its change was made
	// (an I/O error fsyncing a directory or removing the lock file):
	// readers see the new value, which a crash may still undo. The error
	// also wraps the I/O error.
	ErrNotDurable = storage.ErrNotDurable
)

// ConflictError is returned when a compare-and-swap fails. It matches
// ErrConflict, and also ErrNotFound when the ref does not exist.
type ConflictError struct {
	Name     string     // ref name
	Expected objects.ID // the caller's old value; zero means "must not exist"
	Actual   objects.ID // the value found; zero means the ref does not exist
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: ref %q moved: expected %s, found %s", ErrConflict, e.Name, idOrAbsent(e.Expected), idOrAbsent(e.Actual))
}

// Is reports whether target is ErrConflict, or ErrNotFound for a missing ref.
func (e *ConflictError) Is(target error) bool {
	return target == ErrConflict || (target == ErrNotFound && e.Actual.IsZero())
}

func idOrAbsent(id objects.ID) string {
	if id.IsZero() {
		return "no ref"
	}
	return id.String()
}

// CorruptError describes one piece of damage: a ref file that is not a valid
// ref, or an op-log record that fails verification or breaks the seq order.
// It matches ErrCorrupt.
type CorruptError struct {
	Path   string // slash-separated, relative to the store directory: "oplog", "refs/labels/x"
	Line   int    // op-log line number, 1-based; 0 for refs
	Offset int64  // op-log byte offset of the line; 0 for refs
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%v: %s:%d (offset %d): %s", ErrCorrupt, e.Path, e.Line, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", ErrCorrupt, e.Path, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Warning describes a condition Check found that is not damage: a lock file
// (a writer in progress, or one that crashed), or a torn op-log tail (a crash
// during Append; the next Append removes it). A Warning matches no sentinel.
type Warning struct {
	Path   string // slash-separated, relative to the store directory
	Reason string
}

func (w *Warning) Error() string { return "warning: " + w.Path + ": " + w.Reason }
