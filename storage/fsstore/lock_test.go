package fsstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// F14: a lock wait longer than NoticeAfter is announced once through the
// context's notice (the CLI prints it on a terminal), and Ctrl-C (the
// context cancelled) ends it. (Moved from gc/lock_test.go with the locks.)
func TestLockWaitNoticeAndCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	l := NewLocker(dir)
	held, err := l.Lock(context.Background(), "x.lock", storage.Exclusive, 0)
	if err != nil {
		t.Fatal(err)
	}
	notices := make(chan string, 2)
	ctx, cancel := context.WithCancel(storage.WithWaitNotice(context.Background(), func(p string, _ time.Duration) { notices <- p }))
	done := make(chan error)
	go func() {
		_, err := l.Lock(ctx, "x.lock", storage.Exclusive, time.Minute)
		done <- err
	}()
	if p := <-notices; p != path {
		t.Fatalf("notice for %q", p)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("cancelled wait: %v", err)
	}
	held.Close()
	if len(notices) != 0 {
		t.Fatal("announced twice")
	}
}
