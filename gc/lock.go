package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/internal/flock"
)

// Lock files inside the store directory; never removed. The kernel
// releases a flock(2) when its holder dies, so a crash never leaves the
// store locked.
//
//	gc.run.lock   held exclusively by the one running gc
//	gc.turnstile  taken exclusively by a writer for an instant on entry, and
//	              by gc for its whole sweep: writers queue behind a waiting
//	              gc instead of starving it
//	gc.lock       held shared by every writer (from its first dedup decision
//	              to its last ref update) and by fsck, exclusively by gc's
//	              sweep: gc never runs while a writer may reference an object
//	              it is about to delete
const (
	LockName      = "gc.lock"
	runLockName   = "gc.run.lock"
	turnstileName = "gc.turnstile"
)

// DefaultLockTimeout bounds how long a writer waits for a running gc
// sweep, and gc for running writers, before failing with ErrBusy, unless
// the caller gives its own bound.
const DefaultLockTimeout = 60 * time.Second

// LockWriter is taken by every writer of the store (checkpoint, rewind,
// label, session changes): it waits while a gc sweep runs (up to timeout,
// then ErrBusy). Writers do not exclude one another. The returned function
// releases it.
func LockWriter(ctx context.Context, storeDir string, timeout time.Duration) (func(), error) {
	turn, err := LockFile(ctx, filepath.Join(storeDir, turnstileName), unix.LOCK_EX, timeout)
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	f, err := LockFile(ctx, filepath.Join(storeDir, LockName), unix.LOCK_SH, timeout)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// lockSweep takes the locks of a gc: gc.run.lock without waiting (another gc
// running is ErrBusy), then the turnstile and gc.lock exclusively, waiting
// for running writers.
func lockSweep(ctx context.Context, storeDir string, timeout time.Duration) (func(), error) {
	run, err := LockFile(ctx, filepath.Join(storeDir, runLockName), unix.LOCK_EX, 0)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("gc: %w: another gc is running", ErrBusy)
		}
		return nil, err
	}
	turn, err := LockFile(ctx, filepath.Join(storeDir, turnstileName), unix.LOCK_EX, timeout)
	if err != nil {
		run.Close()
		return nil, err
	}
	f, err := LockFile(ctx, filepath.Join(storeDir, LockName), unix.LOCK_EX, timeout)
	if err != nil {
		turn.Close()
		run.Close()
		return nil, err
	}
	return func() { f.Close(); turn.Close(); run.Close() }, nil
}

// LockFile opens (creating) path and flocks it with how (unix.LOCK_SH or
// unix.LOCK_EX); the caller closes the file to unlock. With timeout 0 it
// tries once; otherwise it waits (see flock.Lock) until timeout or ctx is
// done. Failure to get the lock in time is ErrBusy.
func LockFile(ctx context.Context, path string, how int, timeout time.Duration) (*os.File, error) {
	return flock.Lock{Path: path, Shared: how == unix.LOCK_SH, Timeout: timeout, Busy: ErrBusy,
		Holder: "another snap process (a gc or a writer)"}.Acquire(ctx)
}

// WithWaitNotice returns a context under which a lock wait longer than
// flock.NoticeAfter calls notice once (see flock.WithWaitNotice).
func WithWaitNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return flock.WithWaitNotice(ctx, notice)
}

// lockShared takes the gc lock shared, waiting while a gc holds it, until
// ctx is done. When the lock file cannot be created (a read-only store) it
// returns nil and no error: fsck then runs unlocked.
func lockShared(ctx context.Context, storeDir string) (*os.File, error) {
	path := filepath.Join(storeDir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if f, err = os.Open(path); err != nil {
			return nil, nil
		}
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, nil // locking unsupported here: run unlocked
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("gc: waiting for a running gc: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
