// Package fsys is the file-system seam of snap: the one place where the
// layers' file operations can be intercepted, so that tests inject I/O
// faults through it instead of monkey-patching.
//
// # The seam
//
// Two small interfaces cover what snap does to files:
//
//   - FS, path-based, for the store side: objects (packs and their
//     temporary files), refs (ref files, their lock files, the op log, the
//     expired list) and index (the stat cache). OS is package os.
//   - Sys, descriptor-relative, for the working tree: worktree's capture
//     and restore reach every path from the project root with openat and
//     O_NOFOLLOW, which is their security boundary, so the seam is at the
//     system call itself and passes flags through untouched. RealSys is
//     package unix.
//
// Consumers take the seam explicitly and treat nil as the real thing:
// objects.OpenFS(dir, fs), refs.OpenFS(dir, fs), index.LoadFS(fs, path) and
// Cache.SaveFS(fs, path), worktree.Options.Sys and RestoreOptions.Sys.
// Open, Load and Save without FS are the same calls with OS. With OS and
// RealSys the behaviour is exactly the one before the seam existed.
//
// Not routed through the seam: flock(2) and the files that carry locks
// (refs.lock, oplog.lock, gc.lock, move.lock: locks are not data), dup of
// the root descriptor, listing directories, fstat, readlinkat and the
// reading of ignore files during capture.
//
// # Contract of an implementation
//
// An FS behaves as package os: errors are *fs.PathError (an *os.LinkError
// for Rename) wrapping the errno, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.ENOSPC) hold; a Rename is atomic; SyncDir makes
// the directory's entries durable; File.Sync makes a file's data durable.
// A Sys behaves as package unix: same flags, same semantics, an errno (or
// an error wrapping one) on failure, and real kernel descriptors, since its
// callers mix them with direct calls. A descriptor opened for writing
// through a Sys is written and closed through it; read-only descriptors may
// be used and closed directly. Both must be safe for concurrent use.
//
// # Fault injection
//
// Faulty implements FS and Sys over others and fails the At-th counted
// operation with an errno (syscall.ENOSPC, EIO, EACCES, ...), once
// (transient) or from then on (Persistent). It counts the Write class by
// default (everything that changes the file system or makes a change
// durable: creating and opening for writing, write, truncate, fsync,
// close of a written file, rename, remove, mkdir, directory fsync,
// symlink); Count adds the Read class, and Match narrows counting to the
// operations of one kind or one directory. A failed operation has no effect
// (a failing Close still releases the file, as close(2) does; ShortWrite
// makes a failing Write write half its bytes first, as a full disk does).
// The injected error is an *InjectedError, which unwraps to the errno; the
// path-based operations return it inside an *fs.PathError naming the
// operation ("createtemp", "write", "sync", "close", "rename", "remove",
// "mkdir", "syncdir", ...), the descriptor-relative ones bare, as unix
// returns errnos, so their callers must name the call themselves.
//
// Every operation is logged (Ops) with its name and path, counted or not,
// so a test can print which operation failed. Counting is deterministic
// when one goroutine does the I/O: run capture with worktree.Options
// Workers set to 1. The usual test is: a run with At 0 counts the K
// operations of a call, then a run per At in 1..K injects the fault there
// (package faults does exactly this for every layer).
package fsys
