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

// MoveJournal is the file in which the engine journals a rewind, undo or
// redo while it changes the working tree; fsck warns when one is pending.
const MoveJournal = "move-journal"

// LockTimeout bounds how long a writer waits for a running gc sweep, and
// gc for running writers, before failing with ErrBusy.
var LockTimeout = 60 * time.Second

// LockWriter is taken by every writer of the store (checkpoint, rewind,
// label, session changes): it waits while a gc sweep runs (up to
// LockTimeout, then ErrBusy). Writers do not exclude one another. The
// returned function releases it.
func LockWriter(ctx context.Context, storeDir string) (func(), error) {
	turn, err := LockFile(ctx, filepath.Join(storeDir, turnstileName), unix.LOCK_EX, LockTimeout)
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	f, err := LockFile(ctx, filepath.Join(storeDir, LockName), unix.LOCK_SH, LockTimeout)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// lockSweep takes the locks of a gc: gc.run.lock without waiting (another gc
// running is ErrBusy), then the turnstile and gc.lock exclusively, waiting
// for running writers.
func lockSweep(ctx context.Context, storeDir string) (func(), error) {
	run, err := LockFile(ctx, filepath.Join(storeDir, runLockName), unix.LOCK_EX, 0)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("gc: %w: another gc is running", ErrBusy)
		}
		return nil, err
	}
	turn, err := LockFile(ctx, filepath.Join(storeDir, turnstileName), unix.LOCK_EX, LockTimeout)
	if err != nil {
		run.Close()
		return nil, err
	}
	f, err := LockFile(ctx, filepath.Join(storeDir, LockName), unix.LOCK_EX, LockTimeout)
	if err != nil {
		turn.Close()
		run.Close()
		return nil, err
	}
	return func() { f.Close(); turn.Close(); run.Close() }, nil
}

// LockFile opens (creating) path and flocks it with how (unix.LOCK_SH or
// unix.LOCK_EX); the caller closes the file to unlock. With timeout 0 it
// tries once; otherwise it waits in the kernel (so it is woken as soon as the
// holder lets go, not at the next poll) until timeout or ctx is done.
// Failure to get the lock in time is ErrBusy.
func LockFile(ctx context.Context, path string, how int, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	err = flock(f, how|unix.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	busy := fmt.Errorf("%w: %s is held by another snap process (a gc or a writer)", ErrBusy, path)
	if timeout == 0 {
		f.Close()
		return nil, busy
	}
	got := make(chan error, 1)
	go func() { got <- flock(f, how) }() // blocks in the kernel
	timer := time.NewTimer(timeout)
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
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			return f, nil
		case <-notice:
			say(path, timeout)
			notice = nil
		case <-timer.C:
			err = busy
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

// NoticeAfter is how long a lock wait lasts before the function set with
// WithWaitNotice is told about it.
const NoticeAfter = time.Second

type waitNoticeKey struct{}

// WithWaitNotice returns a context under which a LockFile that waits longer
// than NoticeAfter calls notice once, with the lock file and how long it
// will wait at most (the CLI says so on a terminal).
func WithWaitNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return context.WithValue(ctx, waitNoticeKey{}, notice)
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
