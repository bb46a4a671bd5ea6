package snap

import (
	"errors"
	"fmt"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Sentinel errors of the engine, the storage layers' included: a
// front-end matches every error it may get against these (errors.Is), and
// the CLI maps them to exit codes in one place.
var (
	// ErrNoStore: no .snap store was found for the project.
	ErrNoStore = errors.New("no snap store found (run 'snap init')")
	// ErrOtherProject: the store belongs to another project root (an
	// external store shared by two projects, or a command run outside the
	// project). Nothing is read or written.
	ErrOtherProject = errors.New("the store belongs to another project")
	// ErrNoSession: a session named does not exist (exit 4, as an unknown
	// ref).
	ErrNoSession = errors.New("no such session")
	// ErrNoCheckpoint: a REF does not name a checkpoint.
	ErrNoCheckpoint = errors.New("no such checkpoint")
	// ErrUsage: arguments are malformed (bad REF syntax, bad state name...).
	ErrUsage = errors.New("invalid usage")
	// ErrNothingToUndo / ErrNothingToRedo: the op stacks are empty.
	ErrNothingToUndo = errors.New("nothing to undo")
	ErrNothingToRedo = errors.New("nothing to redo")
	// ErrExpired: a REF names a checkpoint that retention removed. It
	// wraps ErrNoCheckpoint (exit 4): not damage, unlike an object a kept
	// checkpoint needs that is missing (objects.ErrNotFound, exit 12).
	ErrExpired = fmt.Errorf("%w: expired by retention", ErrNoCheckpoint)
	// ErrNoPath: a path or state document is not in the checkpoint.
	ErrNoPath = errors.New("no such path in checkpoint")
	// ErrPartial: some paths failed; the result lists them.
	ErrPartial = errors.New("some paths could not be restored")

	// ErrBusy: a lock stayed held by another snap process past its bound.
	ErrBusy = refs.ErrBusy
	// ErrCorrupt: an object, a ref or the op log failed verification
	// (damage; fsck names it). ErrRefsCorrupt is the refs' and op log's.
	ErrCorrupt     = objects.ErrCorrupt
	ErrRefsCorrupt = refs.ErrCorrupt
	// ErrObjectMissing: an object a kept checkpoint needs is not in the
	// store (damage; an unknown id a user gives is ErrNoCheckpoint).
	ErrObjectMissing = objects.ErrNotFound
	// ErrAmbiguous: an id prefix names more than one object.
	ErrAmbiguous = objects.ErrAmbiguous
	// ErrBadName: a session or label name is not a legal ref name.
	ErrBadName = refs.ErrBadName
	// ErrConflict: a ref moved under a compare-and-swap (another process).
	ErrConflict = refs.ErrConflict
)
