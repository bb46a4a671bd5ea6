// Package worktree moves content between a project's working tree and the
// object store: Capture (and CapturePaths, its edit-set form) records the
// tree, Restore changes it to a stored tree. It is the one security
// boundary between stored names and the filesystem.
//
// # Capture
//
// A parallel walk that honours .gitignore at every depth, .snapignore,
// .git/info/exclude and git's global excludes file (core.excludesFile from
// the system, user or project git configuration, else
// $XDG_CONFIG_HOME/git/ignore or ~/.config/git/ignore; lowest precedence,
// as in git), matched as git matches them (wildmatch.go), never enters
// .git at any depth (a nested repository is captured as plain files) or the store,
// never follows a symlink (its target is stored as a blob), skips FIFOs,
// sockets and devices without opening them and files over the size limit,
// and reports everything it skips with a reason. The stat cache (package
// index) spares reading unchanged files; a file whose stat changes while it
// is read is read again, never stored torn.
//
// # Restore
//
// Only paths that differ between the captured current tree and the target
// are touched. Every path is reached from the project root one component at
// a time with openat(O_NOFOLLOW|O_DIRECTORY), so no write goes through a
// symlink; each file is written to a temporary file in its directory and
// renamed into place — exchanged atomically with the file it replaces
// (RENAME_EXCHANGE), whose old content then goes to a trash directory for
// EmptyTrash to delete later (so do deleted files), since freeing blocks is
// the slowest step on many file systems; many files are written by several workers; a file on disk that the current capture did not
// include (an ignored file) is never overwritten or removed. Names are
// checked again (objects.ValidName); entries of one directory that differ
// only in case or only in Unicode normalisation (xt_CONNMARK.h and
// xt_connmark.h; NFC and NFD "café") are refused where the file system
// written to would take them for one name — found out by probing the
// directory (or its nearest existing ancestor) with a temporary file once
// per restore, and only when the target has such names there — and
// restored as they are where it keeps them apart (ext4, tmpfs); nothing is
// written into the store. Per-path failures are reported and do not stop
// the rest.
//
// # System calls and I/O errors
//
// The directory-relative calls that read and change the tree go through an
// fsys.Sys (Options.Sys, RestoreOptions.Sys; nil is the kernel), with their
// flags untouched: the O_NOFOLLOW walk is the same whatever the Sys.
// Capture reports a path it cannot stat, open or read as Skipped, with the
// reason, and goes on; it fails only when the object store fails. Restore
// reports a failed call per path as "<call> <path>: <errno>" (PathError.Err
// keeps the error for errors.Is); the file keeps its old content, whole,
// since the new one is only ever renamed into place. A temporary file whose
// removal fails too is never captured, and is removed by the next Restore
// of the tree in this process, or by a Capture once the process is gone.
// Removing a directory a restore emptied is best effort. Options.Workers =
// 1 makes a capture single-threaded, so its calls come in a fixed order.
package worktree
