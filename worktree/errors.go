package worktree

import "errors"

// Errors of a refused or failed restore path (RestoreResult.Errors).
var (
	ErrCollision = errors.New("name collides with another entry on this case-insensitive or normalising file system")
	ErrNotDir    = errors.New("a path component is not a directory (or is a symlink)")
	ErrUntracked = errors.New("exists on disk but was not captured (ignored or skipped); left untouched")
	ErrStorePath = errors.New("path lies inside the store")
	ErrBadPath   = errors.New("illegal path")
	// ErrChanged: the file was written to while the restore prepared its
	// replacement; the restore left it as it is.
	ErrChanged = errors.New("changed during the restore")
)

// ErrOutsideRoot: a path given to CapturePaths is not inside the project.
var ErrOutsideRoot = errors.New("path is outside the project")
