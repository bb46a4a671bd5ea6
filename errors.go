package snap

import "errors"

// Sentinel errors of the engine. The CLI maps them (and those of the layers
// below: objects.ErrCorrupt, refs.ErrBusy, ...) to exit codes in one place.
var (
	// ErrNoStore: no .snap store was found for the project.
	ErrNoStore = errors.New("no snap store found (run 'snap init')")
	// ErrNoCheckpoint: a REF does not name a checkpoint.
	ErrNoCheckpoint = errors.New("no such checkpoint")
	// ErrUsage: arguments are malformed (bad REF syntax, bad state name...).
	ErrUsage = errors.New("invalid usage")
	// ErrNothingToUndo / ErrNothingToRedo: the op stacks are empty.
	ErrNothingToUndo = errors.New("nothing to undo")
	ErrNothingToRedo = errors.New("nothing to redo")
	// ErrPartial: some paths failed; the result lists them.
	ErrPartial = errors.New("some paths could not be restored")
)
