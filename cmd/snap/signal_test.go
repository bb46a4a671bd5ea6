package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// N9 (2026-11-27 report): Ctrl-C while a command waits for a lock another
// snap process holds stops it: exit 130, nothing recorded, no lock left
// behind. Each store lock a checkpoint can wait on is held by this test in
// turn (flock, as another snap process would), and the real binary gets a
// SIGINT while it waits.
func TestInterruptDuringLockWait(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		lock, cmd string
		sig       syscall.Signal
	}{{"oplog.lock", "checkpoint", syscall.SIGINT}, {"refs.lock", "checkpoint", syscall.SIGINT}, {"gc.lock", "checkpoint", syscall.SIGINT},
		{"refs.lock", "rewind", syscall.SIGINT}, // a rewind's safety checkpoint waits too (adversarial A1)
		// A hang-up (the terminal or ssh session closed) stops it as
		// cleanly: it killed the process, and an export left its whole
		// temporary pack in the repository (torture/pack-findings 02).
		{"oplog.lock", "checkpoint", syscall.SIGHUP}} {
		lock := c.lock
		t.Run(c.lock+"/"+c.cmd+"/"+unix.SignalName(c.sig), func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) (string, string, error) {
				cmd := exec.Command(bin, args...)
				cmd.Dir = dir
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				return out.String(), errb.String(), err
			}
			if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"init"}, {"checkpoint"}} {
				if _, e, err := run(args...); err != nil {
					t.Fatalf("%v: %v %s", args, err, e)
				}
			}
			logBefore, _, _ := run("log", "--json")
			if err := os.WriteFile(filepath.Join(dir, "a"), []byte("b\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, ".snap", lock), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			args := []string{"checkpoint", "-m", "x"}
			if c.cmd == "rewind" {
				args = []string{"rewind", "@"}
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // waiting by now (the wait lasts up to 60 s)
			cmd.Process.Signal(c.sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 10 s after SIGINT (stderr %q)", errb.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130 (stderr %q)", err, errb.String())
			}
			if !strings.Contains(errb.String(), "interrupted") && !strings.Contains(errb.String(), "canceled") {
				t.Errorf("stderr %q does not say it was interrupted", errb.String())
			}
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			if logAfter, _, _ := run("log", "--json"); logAfter != logBefore {
				t.Errorf("the interrupted checkpoint recorded something:\nbefore %s\nafter %s", logBefore, logAfter)
			}
			if _, err := os.Stat(filepath.Join(dir, ".snap", "move-journal")); err == nil {
				t.Errorf("the interrupted %s left a move journal: the next command would carry it out", c.cmd)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "b\n" {
				t.Errorf("the interrupted %s changed a: %q", c.cmd, b)
			}
			leftover, _ := filepath.Glob(filepath.Join(dir, ".snap", "refs", "*", "*", "*.lock"))
			if len(leftover) > 0 {
				t.Errorf("lock files left behind: %v", leftover)
			}
			if _, e, err := run("checkpoint"); err != nil {
				t.Fatalf("a checkpoint after the interrupted one: %v %s", err, e)
			}
		})
	}
}
