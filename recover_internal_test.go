package snap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/refs"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
)

// A rewind killed after its safety checkpoint and journal, with some files
// already restored, is completed by the next command, and undo then returns
// to the state from before it.
func TestInterruptedRewindIsCompleted(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r, _, err := Init(Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	write := func(files map[string]string) {
		for p, c := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(root, p))
		return string(b)
	}
	write(map[string]string{"a": "a1", "b": "b1"})
	c1, err := r.Checkpoint(ctx, CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(map[string]string{"a": "a2", "b": "b2", "c": "c2"})
	c2, err := r.Checkpoint(ctx, CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What a rewind to c1 leaves when killed mid-restore: its journal, and
	// "a" already restored.
	m := &move{Kind: "rewind", Session: DefaultSession, Target: c1.ID, NewHead: c1.ID,
		Scope:   rewindScope{Files: true, State: true, Txn: "killed-txn"},
		OldHead: c2.ID, Safety: c2.ID, Current: c2.ID}
	if err := r.writeJournal(m); err != nil {
		t.Fatal(err)
	}
	write(map[string]string{"a": "a1"})

	// The next writing command completes it.
	if _, err := r.Label(ctx, "", "@", "after"); err != nil {
		t.Fatal(err)
	}
	if read("a") != "a1" || read("b") != "b1" || read("c") != "" {
		t.Fatalf("tree after recovery: a=%q b=%q c=%q", read("a"), read("b"), read("c"))
	}
	if head, _ := r.Resolve(ctx, "", "@"); head != c1.ID {
		t.Fatalf("head %s, want %s", head.Short(), c1.ID.Short())
	}
	if _, err := os.Stat(filepath.Join(r.StoreDir, refs.JournalName)); !os.IsNotExist(err) {
		t.Fatalf("journal left: %v", err)
	}
	if done, _ := r.history().recorded("killed-txn"); !done {
		t.Fatal("the completed rewind is not in the op log")
	}
	// Undo the label, then the completed rewind: back to c2's files.
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if read("a") != "a2" || read("b") != "b2" || read("c") != "c2" {
		t.Fatalf("tree after undo: a=%q b=%q c=%q", read("a"), read("b"), read("c"))
	}
}

// F15: a rewind interrupted part way (Ctrl-C: its context cancelled) says
// so and what to run; Interrupted reports it to read-only commands once its
// process is gone; the next writer completes it.
func TestInterruptedRewindIsReported(t *testing.T) {
	root := t.TempDir()
	sys := &cancelOnWrite{Sys: fsys.RealSys}
	r, _, err := Init(Options{Dir: root, Sys: sys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 200 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), []byte("v1"), 0o644)
	}
	c1, err := r.Checkpoint(context.Background(), CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), []byte("v2"), 0o644)
	}
	if _, err := r.Checkpoint(context.Background(), CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sys.cancel = cancel // Ctrl-C as the restore writes its first file
	_, err = r.Rewind(ctx, RewindOptions{Target: c1.ID.String()})
	sys.cancel = nil
	if a := AdviceOf(err); !errors.Is(err, context.Canceled) || len(a) != 1 || a[0].Do != DoRewind || a[0].Arg == "" {
		t.Fatalf("interrupted rewind: %v (advice %v, want a rewind to the safety checkpoint)", err, a)
	}
	m, err := r.Interrupted(ctx)
	if err != nil || m == nil || m.Target != c1.ID || m.Kind != "rewind" {
		t.Fatalf("Interrupted: %+v %v", m, err)
	}
	if _, err := r.Checkpoint(context.Background(), CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := r.Interrupted(ctx); m != nil {
		t.Fatalf("still interrupted after a writer: %+v", m)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "f199")); string(data) != "v1" {
		t.Fatalf("the rewind was not completed: %q", data)
	}
}

// cancelOnWrite calls cancel when a file is first created in the tree.
type cancelOnWrite struct {
	fsys.Sys
	cancel func()
}

func (c *cancelOnWrite) Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	if flags&unix.O_CREAT != 0 && c.cancel != nil {
		c.cancel()
	}
	return c.Sys.Openat(dirfd, path, flags, mode)
}

// G1 (second adversarial pass): work done after an interrupted rewind is
// recorded before the next writer completes the rewind, never lost.
func TestRecoveryRecordsWorkDoneSince(t *testing.T) {
	root := t.TempDir()
	sys := &cancelOnWrite{Sys: fsys.RealSys}
	r, _, err := Init(Options{Dir: root, Sys: sys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for i := range 50 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d", i)), []byte("v1"), 0o644)
	}
	c1, err := r.Checkpoint(ctx, CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d", i)), []byte("v2"), 0o644)
	}
	if _, err := r.Checkpoint(ctx, CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	sys.cancel = cancel
	if _, err := r.Rewind(cctx, RewindOptions{Target: c1.ID.String()}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted rewind: %v", err)
	}
	sys.cancel = nil
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("written after the interruption"), 0o644)
	if _, err := r.Checkpoint(ctx, CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	log, err := r.Log(ctx, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		var buf strings.Builder
		if r.Cat(ctx, e.ID, "notes.txt", &buf) == nil && buf.String() == "written after the interruption" {
			return
		}
	}
	t.Fatal("notes.txt, written after the interruption, is in no checkpoint")
}
