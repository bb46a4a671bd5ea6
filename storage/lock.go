package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snapcore-dev/snap/internal/flock"
)

// LockMode is how a lock is held.
type LockMode int

const (
	Exclusive LockMode = iota
	Shared
)

// Forever, as a timeout, waits until the lock is free or ctx is done.
const Forever time.Duration = -1

// Locker is a store's table of named locks, shared between every process
// that uses the store: a file-system store's are flock(2)s on files in the
// store directory, which the kernel releases when their holder dies, so a
// crash never leaves the store locked; an in-memory store's are held in
// the process.
type Locker interface {
	// Lock takes lock name in mode. With timeout 0 it tries once; with
	// Forever it waits until ctx is done; otherwise at most timeout. A
	// lock not obtained in time is an error wrapping ErrBusy that says who
	// holds it; one abandoned because ctx is done wraps ctx.Err(). Close
	// the returned Lock to release it.
	Lock(ctx context.Context, name string, mode LockMode, timeout time.Duration) (Lock, error)
}

// Lock is a held lock; Close releases it.
type Lock interface {
	Close() error
}

// The store's locks, with their order: a writer takes the turnstile, then
// gc.lock shared, then (a move) move.lock, then (recording) oplog.lock,
// then, inside each ref update, refs.lock.
//
//	gc.run.lock   held exclusively by the one running gc
//	gc.turnstile  taken exclusively by a writer for an instant on entry, and
//	              by gc for its whole sweep: writers queue behind a waiting
//	              gc instead of starving it
//	gc.lock       held shared by every writer (from its first dedup decision
//	              to its last ref update) and by fsck, exclusively by gc's
//	              sweep: gc never runs while a writer may reference an object
//	              it is about to delete
//	move.lock     exclusive by a rewind, undo or redo; shared by a checkpoint
//	oplog.lock    exclusive by each op-log append (refs.Store.Commit)
//	refs.lock     exclusive by each ref update (inside UpdateRef)
const (
	GCLock      = "gc.lock"
	GCRunLock   = "gc.run.lock"
	GCTurnstile = "gc.turnstile"
	MoveLock    = "move.lock"
	OplogLock   = "oplog.lock"
	RefsLock    = "refs.lock"
)

// DefaultLockTimeout bounds how long a writer waits for a running gc
// sweep, and gc for running writers, before failing with ErrBusy, unless
// the caller gives its own bound.
const DefaultLockTimeout = 60 * time.Second

// LockWriter is taken by every writer of the store (checkpoint, rewind,
// label, session changes): it waits while a gc sweep runs (up to timeout,
// then ErrBusy). Writers do not exclude one another. The returned function
// releases it.
func LockWriter(ctx context.Context, l Locker, timeout time.Duration) (func(), error) {
	turn, err := l.Lock(ctx, GCTurnstile, Exclusive, timeout)
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	f, err := l.Lock(ctx, GCLock, Shared, timeout)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// LockSweep takes the locks of a gc: gc.run.lock without waiting (another
// gc running is ErrBusy), then the turnstile and gc.lock exclusively,
// waiting for running writers.
func LockSweep(ctx context.Context, l Locker, timeout time.Duration) (func(), error) {
	run, err := l.Lock(ctx, GCRunLock, Exclusive, 0)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("gc: %w: another gc is running", ErrBusy)
		}
		return nil, err
	}
	turn, err := l.Lock(ctx, GCTurnstile, Exclusive, timeout)
	if err != nil {
		run.Close()
		return nil, err
	}
	f, err := l.Lock(ctx, GCLock, Exclusive, timeout)
	if err != nil {
		turn.Close()
		run.Close()
		return nil, err
	}
	return func() { f.Close(); turn.Close(); run.Close() }, nil
}

// LockReader takes gc.lock shared for a reader that must not run beside a
// gc (fsck), waiting while a gc holds it, until ctx is done (then an error
// wrapping ctx.Err()). Where the lock cannot be taken at all (a read-only
// store) it returns a nil Lock and no error: the reader runs unlocked.
func LockReader(ctx context.Context, l Locker) (Lock, error) {
	lk, err := l.Lock(ctx, GCLock, Shared, Forever)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gc: waiting for a running gc: %w", ctx.Err())
		}
		return nil, nil
	}
	return lk, nil
}

// WithWaitNotice returns a context under which a lock wait longer than a
// second calls notice once, with the lock's path (or name) and the longest
// it will wait (the CLI says so on a terminal). The file-system Locker
// honours it.
func WithWaitNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return flock.WithWaitNotice(ctx, notice)
}
