package snap_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/snaptest"
)

// openFaulty opens the store of root on a Faulty file system (store and
// working tree alike) that counts every operation.
func openFaulty(t *testing.T, root string) (*snap.Repo, *fsys.Faulty) {
	t.Helper()
	f := fsys.NewFaulty(nil, nil)
	r, err := snap.Open(snap.Options{Dir: root, FS: f, Sys: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, f
}

// Issue 20 §3: a rewind (and its undo) records itself in the op log only
// after what it wrote to the working tree is durable: every file it wrote
// fsynced before its rename (or one syncfs for many), then the
// directories that name them, and only then the op log's write.
func TestRestoreDurableBeforeOpLog(t *testing.T) {
	for _, n := range []int{3, 200} { // fsync each file; syncfs past 64
		r0, root := snaptest.NewRepo(t)
		for i := range n {
			writeFile(t, filepath.Join(root, "d", "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), "v1\n")
		}
		checkpoint(t, r0, snap.CheckpointOptions{})
		r0.Close()
		for i := range n {
			writeFile(t, filepath.Join(root, "d", "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), "v2\n")
		}
		r, f := openFaulty(t, root)
		f.Set(fsys.Fault{Count: fsys.All})
		if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
			t.Fatal(err)
		}
		ops := f.Ops()
		lastSync, lastRename, firstLog := -1, -1, -1
		fsyncs := 0
		for i, o := range ops {
			switch {
			case o.Name == "fsync" || o.Name == "syncfs":
				lastSync = i
				if o.Name == "fsync" {
					fsyncs++
				}
			case strings.HasPrefix(o.Name, "renameat") && !strings.Contains(o.Path[strings.Index(o.Path, " -> "):], "/.snap/"):
				// A file renamed into place in the tree (not into the trash).
				lastRename = i
			case strings.HasSuffix(o.Path, "oplog") && o.Class == fsys.Write && firstLog < 0 && lastRename >= 0:
				firstLog = i
			}
		}
		if lastRename < 0 || lastSync < lastRename || firstLog < 0 || firstLog < lastSync {
			t.Fatalf("%d files: last rename into the tree at op %d, last fsync/syncfs at %d, op-log write at %d: want rename < sync < op log",
				n, lastRename, lastSync, firstLog)
		}
		if n <= 64 && fsyncs < n {
			t.Errorf("%d files: %d fsyncs, want one per file written and more for the directories", n, fsyncs)
		}
	}
}

// A failed fsync of a directory fails the move before it is recorded; the
// next command completes it (and makes it durable). A failed fsync of a
// file written is that path's failure (ErrPartial): it keeps its content.
func TestRestoreFsyncFailure(t *testing.T) {
	for _, dir := range []bool{true, false} {
		r0, root := snaptest.NewRepo(t)
		writeFile(t, filepath.Join(root, "a"), "v1\n")
		writeFile(t, filepath.Join(root, "b"), "v1\n")
		checkpoint(t, r0, snap.CheckpointOptions{})
		r0.Close()
		writeFile(t, filepath.Join(root, "a"), "v2\n")
		writeFile(t, filepath.Join(root, "b"), "v2\n")
		r, f := openFaulty(t, root)
		f.Set(fsys.Fault{At: 1, Err: syscall.EIO, Count: fsys.Write, Persistent: true,
			Match: func(o fsys.Op) bool {
				return o.Name == "fsync" && !strings.Contains(o.Path, "/.snap/") && strings.Contains(o.Path, ".snap-tmp") != dir
			}})
		_, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"})
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("dir %v: rewind with a failing fsync: %v", dir, err)
		}
		f.Clear()
		ops, _ := r.Ops(ctx, 0)
		recorded := false
		for _, o := range ops {
			recorded = recorded || o.Kind == string(snap.OpRewind)
		}
		if !dir {
			if !errors.Is(err, snap.ErrPartial) || !recorded {
				t.Fatalf("a file's fsync failed: %v (recorded %v); want ErrPartial, recorded", err, recorded)
			}
			if a, _ := os.ReadFile(filepath.Join(root, "a")); string(a) != "v2\n" {
				t.Fatalf("a, whose fsync failed: %q; want its content from before", a)
			}
			continue
		}
		if recorded {
			t.Fatal("the rewind was recorded although its directories are not durable")
		}
		st, err := r.Status(ctx, "")
		if err != nil || st.Interrupted == nil {
			t.Fatalf("status after the failed fsync: %+v, %v; want the move reported interrupted", st, err)
		}
		// The user goes on meanwhile; the next command completes the move
		// and says where what it overwrote went (adversarial A8).
		writeFile(t, filepath.Join(root, "mine"), "my work\n")
		r.Close()
		var done []snap.InterruptedMove
		r, err = snap.Open(snap.Options{Dir: root, OnComplete: func(m snap.InterruptedMove) { done = append(done, m) }})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{}); err != nil { // completes the move
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "a")); string(b) != "v1\n" {
			t.Fatalf("a after completion: %q", b)
		}
		if len(done) != 1 || done[0].Found.IsZero() {
			t.Fatalf("OnComplete told %+v; want the completed rewind and the checkpoint of what it found", done)
		}
		var b strings.Builder
		if err := r.Cat(ctx, done[0].Found, "mine", &b); err != nil || b.String() != "my work\n" {
			t.Fatalf("the found checkpoint's mine: %q, %v", b.String(), err)
		}
	}
}
