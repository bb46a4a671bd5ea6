package gc

import (
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Errors of this package are those of the layers below, so the CLI maps them
// to exit codes in one place; test with errors.Is.
var (
	// ErrBusy: another gc holds <store>/gc.lock. It is refs.ErrBusy.
	ErrBusy = refs.ErrBusy
	// ErrCorrupt: Collect refused to delete anything because reachability
	// could not be established (see doc.go). It is objects.ErrCorrupt.
	ErrCorrupt = objects.ErrCorrupt
)
