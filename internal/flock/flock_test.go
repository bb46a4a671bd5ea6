package flock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	ctx := context.Background()
	held, err := Lock{Path: p, Busy: errBusy}.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Held exclusively: another exclusive and a shared one wait, then fail.
	for _, shared := range []bool{false, true} {
		if _, err := (Lock{Path: p, Shared: shared, Timeout: 30 * time.Millisecond, Busy: errBusy}).Acquire(ctx); !errors.Is(err, errBusy) {
			t.Fatalf("shared %v while held: %v", shared, err)
		}
	}
	if _, err := (Lock{Path: p, Busy: errBusy}).Acquire(ctx); !errors.Is(err, errBusy) {
		t.Fatalf("try-once while held: %v", err)
	}
	// A waiter is told after NoticeAfter, and gets the lock once it is let go.
	noticed := make(chan string, 1)
	wctx := WithWaitNotice(ctx, func(path string, max time.Duration) { noticed <- path })
	go func() { time.Sleep(NoticeAfter + 200*time.Millisecond); held.Close() }()
	f, err := Lock{Path: p, Timeout: 10 * time.Second, Busy: errBusy}.Acquire(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-noticed; got != p {
		t.Fatalf("notice for %q", got)
	}
	// Shared locks coexist; a cancelled wait ends with the context's error.
	f.Close()
	a, err := Lock{Path: p, Shared: true}.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Lock{Path: p, Shared: true}.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := (Lock{Path: p, Timeout: 10 * time.Second, Busy: errBusy}).Acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
