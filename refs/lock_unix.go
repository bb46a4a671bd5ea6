//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package refs

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/snapcore-dev/snap/internal/flock"
)

// oNoFollow makes opening a ref fail on a symlink at the leaf.
const oNoFollow = syscall.O_NOFOLLOW

// flockExclusive opens (creating if needed) path and takes an exclusive
// flock(2) on it, waiting as long as another holder keeps it. The kernel
// drops the lock when the returned file is closed or the process dies, so a
// crashed holder never blocks later ones.
func flockExclusive(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

func isSymlinkLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// flockWithin is flockExclusive that gives up after timeout with ErrBusy,
// or when ctx is done.
func flockWithin(ctx context.Context, path string, timeout time.Duration) (*os.File, error) {
	return flock.Lock{Path: path, Timeout: timeout, Busy: ErrBusy}.Acquire(ctx)
}
