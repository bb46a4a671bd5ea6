package snap

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Sentinel errors of the engine, the storage layers' included: a
// front-end matches every error it may get against these (errors.Is), and
// the CLI maps them to exit codes in one place.
var (
	// ErrNoStore: no .snap store was found for the project (a front-end
	// advises DoInit).
	ErrNoStore = errors.New("no snap store found")
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

// Advice is what would resolve an error, or what to do next: an operation
// of the engine's API and what it applies to. The engine never names a
// command or a flag (TestEngineSpeaksNoCLI): each front-end words advice
// in its own vocabulary, the CLI as commands (cmd/snap/advice.go), the MCP
// server as tools (mcp/advice.go).
type Advice struct {
	Do  Action `json:"do"`
	Arg string `json:"arg,omitempty"` // the checkpoint, session, pending change or count it applies to
}

// Action is an operation advice names.
type Action string

// The actions advice names.
const (
	DoInit          Action = "init"           // make this project's store
	DoInitOwnStore  Action = "init-own-store" // give this project a store of its own (not another project's)
	DoUndo          Action = "undo"           // undo session Arg's last operation
	DoRewind        Action = "rewind"         // rewind to checkpoint Arg (none: to a checkpoint both histories have)
	DoRemoveSession Action = "remove-session" // remove (archived) session Arg
	DoStateOut      Action = "state-out"      // write the state documents to a directory of one's choice
	DoTaskBegin     Action = "task-begin"     // begin a task
	DoTaskParent    Action = "task-parent"    // begin the task higher up the stack
	DoEditWrite     Action = "edit-write"     // stage a whole file (creates one)
	DoEditReplace   Action = "edit-replace"   // stage a change
	DoEditDelete    Action = "edit-delete"    // stage a deletion
	DoEditDrop      Action = "edit-drop"      // drop pending change Arg (none: the one in the way)
	DoEditRevert    Action = "edit-revert"    // drop every pending change
	DoEditStatus    Action = "edit-status"    // list the pending changes
	DoEditPreview   Action = "edit-preview"   // show the pending changes
	DoEditCommit    Action = "edit-commit"    // write the pending changes
	DoEditMatch     Action = "edit-match"     // repeat the replace naming one candidate (Arg: the one recommended)
	DoEditMore      Action = "edit-more"      // Arg more candidates exist: list them all, or narrow with an anchor
)

// AdvisedError is an error and what would resolve it.
type AdvisedError struct {
	Err    error
	Advice []Advice
}

func (e *AdvisedError) Error() string { return e.Err.Error() }
func (e *AdvisedError) Unwrap() error { return e.Err }

// Advise attaches advice to err (see AdviceOf).
func Advise(err error, a ...Advice) error { return &AdvisedError{Err: err, Advice: a} }

// AdviceWords is "; " and each advice as a front-end words it (text),
// each sentence once ("" for no advice): what a front-end appends to a
// message or a hint.
func AdviceWords(advice []Advice, text func(Advice) string) string {
	var parts []string
	for _, a := range advice {
		if t := text(a); !slices.Contains(parts, t) {
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// AdviceOf is the advice err carries, outermost first (nil for none).
func AdviceOf(err error) []Advice {
	var out []Advice
	for err != nil {
		if ae, ok := err.(*AdvisedError); ok {
			out = append(out, ae.Advice...)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				out = append(out, AdviceOf(e)...)
			}
			return out
		default:
			return out
		}
	}
	return out
}
