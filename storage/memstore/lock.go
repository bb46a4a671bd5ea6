package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// Locker is a storage.Locker held in this process: readers-writer locks by
// name, waited for with the timeout and ctx rules of storage.Locker. A
// waiting exclusive locker does not hold readers off (the gc turnstile does
// that, as in the file-system store).
type Locker struct {
	mu      sync.Mutex
	changed chan struct{}  // closed and replaced whenever a lock is released
	held    map[string]int // -1: exclusive; n > 0: n shared holders
}

var _ storage.Locker = (*Locker)(nil)

// NewLocker returns a lock table with nothing held.
func NewLocker() *Locker { return &Locker{changed: make(chan struct{}), held: map[string]int{}} }

func (l *Locker) Lock(ctx context.Context, name string, mode storage.LockMode, timeout time.Duration) (storage.Lock, error) {
	if err := storage.ValidName(name); err != nil {
		return nil, err
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		l.mu.Lock()
		n := l.held[name]
		if mode == storage.Exclusive && n == 0 || mode == storage.Shared && n >= 0 {
			if mode == storage.Exclusive {
				l.held[name] = -1
			} else {
				l.held[name] = n + 1
			}
			l.mu.Unlock()
			return &lock{l: l, name: name}, nil
		}
		wait := l.changed
		l.mu.Unlock()
		busy := fmt.Errorf("%w: lock %s is held by another user of this store", storage.ErrBusy, name)
		if timeout == 0 {
			return nil, busy
		}
		select {
		case <-wait:
		case <-deadline:
			return nil, fmt.Errorf("%w (waited %v)", busy, timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

type lock struct {
	l    *Locker
	name string
	once sync.Once
}

func (k *lock) Close() error {
	k.once.Do(func() {
		k.l.mu.Lock()
		if k.l.held[k.name] < 0 {
			delete(k.l.held, k.name)
		} else if k.l.held[k.name]--; k.l.held[k.name] == 0 {
			delete(k.l.held, k.name)
		}
		close(k.l.changed)
		k.l.changed = make(chan struct{})
		k.l.mu.Unlock()
	})
	return nil
}
