//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package refs

import (
	"errors"
	"os"
	"syscall"
)

// flockExclusive opens (creating if needed) path and takes an exclusive
// flock(2) on it, waiting as long as another holder keeps it (tests: a
// holder of a lock of the file-system store, which storage/fsstore
// takes).
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
