// Package flock is the one file-locking helper of the store: advisory
// flock(2) locks on files that are never removed. The kernel drops a lock
// when its holder closes the file or dies, so a crash never leaves the
// store locked.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock describes one lock to take.
type Lock struct {
	Path   string // created if missing
	Shared bool   // LOCK_SH; else LOCK_EX
	// Timeout bounds the wait: 0 tries once. Waiting happens in the kernel,
	// so the lock is taken as soon as its holder lets go.
	Timeout time.Duration
	// Busy is wrapped by the error of a lock not obtained in time (the
	// caller's ErrBusy); Holder says who holds it, for the message.
	Busy   error
	Holder string
}

// NoticeAfter is how long a wait lasts before the function set with
// WithWaitNotice is told about it.
const NoticeAfter = time.Second

type waitNoticeKey struct{}

// WithWaitNotice returns a context under which a wait for a lock longer
// than NoticeAfter calls notice once, with the lock file and the longest it
// will wait (the CLI says so on a terminal).
func WithWaitNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return context.WithValue(ctx, waitNoticeKey{}, notice)
}

// Acquire takes the lock, waiting up to l.Timeout or until ctx is done;
// the caller closes the returned file to release it.
func (l Lock) Acquire(ctx context.Context) (*os.File, error) {
	how := unix.LOCK_EX
	if l.Shared {
		how = unix.LOCK_SH
	}
	f, err := os.OpenFile(l.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Path, err)
	}
	err = flock(f, how|unix.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", l.Path, err)
	}
	holder := l.Holder
	if holder == "" {
		holder = "another snap process"
	}
	busy := fmt.Errorf("%w: %s is held by %s", l.Busy, l.Path, holder)
	if l.Timeout == 0 {
		f.Close()
		return nil, busy
	}
	got := make(chan error, 1)
	go func() { got <- flock(f, how) }() // blocks in the kernel
	timer := time.NewTimer(l.Timeout)
	defer timer.Stop()
	var notice <-chan time.Time
	say, _ := ctx.Value(waitNoticeKey{}).(func(string, time.Duration))
	if say != nil {
		nt := time.NewTimer(NoticeAfter)
		defer nt.Stop()
		notice = nt.C
	}
	for err == nil || errors.Is(err, unix.EWOULDBLOCK) {
		select {
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", l.Path, err)
			}
			return f, nil
		case <-notice:
			say(l.Path, l.Timeout)
			notice = nil
		case <-timer.C:
			err = fmt.Errorf("%w (waited %v)", busy, l.Timeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	// Give up: when the kernel grants the lock later, drop it at once.
	go func() {
		<-got
		f.Close()
	}()
	return nil, err
}

// flock is flock(2), retried on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
