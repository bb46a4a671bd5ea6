package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LockName is the file, inside the store directory, that gc locks
// exclusively and fsck shared. It is never removed.
const LockName = "gc.lock"

// lockExclusive takes the gc lock without waiting: a second gc fails with
// ErrBusy. The kernel releases it when the file is closed or the process
// dies, so a crashed gc never blocks the next one.
func lockExclusive(storeDir string) (*os.File, error) {
	path := filepath.Join(storeDir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("gc: lock: %w", err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("gc: %w: another gc is running (%s is locked)", ErrBusy, path)
		}
		return nil, fmt.Errorf("gc: lock %s: %w", path, err)
	}
	return f, nil
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
		err := flock(f, unix.LOCK_SH|unix.LOCK_NB)
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

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
