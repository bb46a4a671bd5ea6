package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/internal/flock"
	"github.com/snapcore-dev/snap/storage"
)

// Locker is a storage.Locker of flock(2)s on files of a store directory
// (created when missing, never removed). The kernel releases a flock when
// its holder dies, so a crash never leaves the store locked. It is taken
// directly, never through fsys: locks are not data.
type Locker struct {
	dir string
}

var _ storage.Locker = (*Locker)(nil)

// NewLocker returns the locks of the store directory dir.
func NewLocker(dir string) *Locker { return &Locker{dir: dir} }

// holders says who holds each lock, for the ErrBusy message.
var holders = map[string]string{
	storage.GCLock:      "another snap process (a gc or a writer)",
	storage.GCRunLock:   "another snap process (a gc or a writer)",
	storage.GCTurnstile: "another snap process (a gc or a writer)",
	storage.MoveLock:    "another snap process (a gc or a writer)",
	storage.OplogLock:   "another snap process recording an operation",
}

// Lock flocks dir/name. Shared with Forever (a reader, see
// storage.LockReader) also works in a store it cannot write, through a
// read-only descriptor of an existing lock file.
func (l *Locker) Lock(ctx context.Context, name string, mode storage.LockMode, timeout time.Duration) (storage.Lock, error) {
	if err := storage.ValidName(name); err != nil {
		return nil, err
	}
	f, err := l.lockFile(ctx, name, mode, timeout)
	if err != nil {
		return nil, err
	}
	return f, nil // not a typed nil
}

func (l *Locker) lockFile(ctx context.Context, name string, mode storage.LockMode, timeout time.Duration) (*os.File, error) {
	path := filepath.Join(l.dir, name)
	if timeout == storage.Forever {
		return waitShared(ctx, path, mode)
	}
	return flock.Lock{Path: path, Shared: mode == storage.Shared, Timeout: timeout, Busy: storage.ErrBusy,
		Holder: holders[name]}.Acquire(ctx)
}

// waitShared waits for the lock until ctx is done, polling. A lock file
// that cannot be opened, or a file system without flock(2), is an error
// that is not ErrBusy (storage.LockReader then runs unlocked).
func waitShared(ctx context.Context, path string, mode storage.LockMode) (*os.File, error) {
	how := unix.LOCK_EX
	if mode == storage.Shared {
		how = unix.LOCK_SH
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
