package gc

import (
	"context"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// The store's locks live with the store (package storage: the lock table
// of refs.Store.Locks, and the protocol storage.LockWriter,
// storage.LockSweep, storage.LockReader). Collect takes the sweep's locks,
// Fsck gc.lock shared.

// LockName is the lock file every writer holds shared and a gc sweep
// exclusively (storage.GCLock).
const LockName = storage.GCLock

// DefaultLockTimeout bounds how long gc waits for running writers, and a
// writer for a running gc sweep, before failing with ErrBusy, unless the
// caller gives its own bound (storage.DefaultLockTimeout).
const DefaultLockTimeout = storage.DefaultLockTimeout

// WithWaitNotice returns a context under which a lock wait longer than a
// second calls notice once (see storage.WithWaitNotice).
func WithWaitNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return storage.WithWaitNotice(ctx, notice)
}
