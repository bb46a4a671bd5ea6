package snap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/snapcore-dev/snap/internal/flock"
	"github.com/snapcore-dev/snap/storage"
)

// Locks are taken here and only here (a tx's begin, a move's lockMoves,
// a session's lockEdits), in one order; a lock is only ever taken while
// holding those above it:
//
//	edits/<s>.lock     a session's staged edits (lockEdits; the workflow's
//	                   edit verbs, a task revert, an undo that re-stages)
//	gc.turnstile,      the writers' lock, shared: gc's sweep waits for the
//	gc.lock            writers and holds new ones off (storage.LockWriter)
//	move.lock          exclusive for a move, shared for a checkpoint (none
//	                   captures a tree half moved)
//	refs.lock,         inside refs.Store.Commit: the refs' compare-and-swap
//	oplog.lock         and the op-log append
//
// gc (package gc) takes gc.lock exclusively (storage.LockSweep); fsck and
// the read-only commands take no writer's lock.

// locking says which locks a tx takes.
type locking int

const (
	// dry: none, and nothing it writes is stored (a dry run).
	dry locking = iota
	// writer: the writers' lock only (a label, an undo of a ref move, an
	// import).
	writer
	// capturing: the writers' lock and move.lock shared (a checkpoint).
	capturing
)

// begin starts a transaction holding the locks of l (bounded by the lock
// timeout, then ErrBusy; a wait ends with ctx).
func (r *Repo) begin(ctx context.Context, l locking) (*tx, error) {
	t := &tx{r: r}
	if l == dry {
		t.w = r.objects.NewDryWriter()
		return t, nil
	}
	release, err := storage.LockWriter(ctx, r.refs.Locks(), r.lockTimeout)
	if err != nil {
		return nil, err
	}
	t.unlock = append(t.unlock, release)
	// Nothing is deduplicated against a pack a gc has just removed.
	if err := r.objects.Reload(); err != nil {
		t.end()
		return nil, err
	}
	t.w = r.objects.NewWriter()
	// A move a killed process left is completed first, unless its own
	// process still runs (it holds move.lock).
	if r.refs.JournalPending() {
		if unlock, ok := r.tryMoveLock(ctx, true); ok {
			err := r.recoverMove(ctx, t)
			unlock()
			if err != nil {
				t.end()
				return nil, err
			}
		}
	}
	if l == capturing {
		f, err := r.refs.Locks().Lock(ctx, moveLockName, storage.Shared, r.lockTimeout)
		if err != nil {
			t.end()
			return nil, fmt.Errorf("waiting for a rewind in progress: %w", err)
		}
		t.unlock = append(t.unlock, func() { f.Close() })
	}
	return t, nil
}

// lockMoves takes move.lock exclusively for a move of the working tree
// (a tx of writer locking; a dry one takes nothing).
func (t *tx) lockMoves(ctx context.Context) error {
	if len(t.unlock) == 0 || t.moves {
		return nil
	}
	f, err := t.r.refs.Locks().Lock(ctx, moveLockName, storage.Exclusive, t.r.lockTimeout)
	if err != nil {
		return err
	}
	t.unlock = append(t.unlock, func() { f.Close() })
	t.moves = true
	return nil
}

// lockEdits takes session's edits lock, the first in the lock order: the
// edit verbs of one session run one at a time.
func (r *Repo) lockEdits(ctx context.Context, session string) (func(), error) {
	if err := os.MkdirAll(filepath.Join(r.StoreDir, "edits"), 0o755); err != nil {
		return nil, err
	}
	f, err := flock.Lock{Path: filepath.Join(r.StoreDir, "edits", session+".lock"), Timeout: r.lockTimeout,
		Busy: ErrBusy, Holder: "another edit of session " + session}.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// tryMoveLock takes move.lock (exclusively when exclusive) without
// waiting: false when a live process holds it, a move under way.
func (r *Repo) tryMoveLock(ctx context.Context, exclusive bool) (func(), bool) {
	mode := storage.Shared
	if exclusive {
		mode = storage.Exclusive
	}
	f, err := r.refs.Locks().Lock(ctx, moveLockName, mode, 0)
	if err != nil {
		return nil, false
	}
	return func() { f.Close() }, true
}
