package gc

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// F14: a lock wait longer than NoticeAfter is announced once through the
// context's notice (the CLI prints it on a terminal), and Ctrl-C (the
// context cancelled) ends it.
func TestLockWaitNoticeAndCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := LockFile(context.Background(), path, unix.LOCK_EX, 0)
	if err != nil {
		t.Fatal(err)
	}
	notices := make(chan string, 2)
	ctx, cancel := context.WithCancel(WithWaitNotice(context.Background(), func(p string, _ time.Duration) { notices <- p }))
	done := make(chan error)
	go func() {
		_, err := LockFile(ctx, path, unix.LOCK_EX, time.Minute)
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
