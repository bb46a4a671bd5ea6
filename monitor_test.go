package snap_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/worktree"
)

// fullScanTree captures root as a checkpoint without a monitor would, into
// a scratch store: content addressing makes its id comparable with the
// store's.
func fullScanTree(t *testing.T, root, store string, maxSize int64) objects.ID {
	t.Helper()
	st, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	defer w.Abort()
	snapshot, err := worktree.Capture(context.Background(), w, worktree.Options{Root: root, StoreDir: store, MaxFileSize: maxSize})
	if err != nil {
		t.Fatal(err)
	}
	return snapshot.Tree
}

// A checkpoint taken with the watch daemon records exactly the tree a full
// scan records, whatever a writer did since the last one (files created,
// modified in place, renamed, deleted, chmod'ed, symlinks swapped for
// files, directories made, moved and removed, ignore rules edited, changes
// within one timestamp tick), and most of them build on the daemon's
// answer instead of scanning.
func TestCheckpointWithTheMonitorEqualsAFullScan(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 0, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the daemon: %v", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := r.WatchStatus(time.Second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch daemon did not answer within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rng := rand.New(rand.NewPCG(42, 1))
	checkRandomChanges(t, r, root, rng)
}

// startWatch runs r's daemon until the test ends.
func startWatch(t *testing.T, r *snap.Repo) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 0, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := r.WatchStatus(time.Second); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch daemon did not answer within 10s")
		}
	}
}

// checkpointEqualsFullScan takes a checkpoint and compares its tree with a
// full scan's; it returns whether the checkpoint built on the daemon.
func checkpointEqualsFullScan(t *testing.T, r *snap.Repo, root, what string) bool {
	t.Helper()
	ctx := context.Background()
	res, err := r.Checkpoint(ctx, snap.CheckpointOptions{AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	node, _, err := r.ReadNode(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := fullScanTree(t, root, r.StoreDir, r.MaxFileSize()); node.Tree != want {
		t.Fatalf("%s: checkpoint %s (monitored %v) records tree %s; a full scan records %s", what, res.ID.Short(), res.Monitored, node.Tree.Short(), want.Short())
	}
	return res.Monitored
}

// Adversarial W1 (torture/watch-findings/01): a file with another name
// (a hard link), written through that name, changes without an event in
// its own directory: a directory holding such a file is read every time.
func TestMonitorReadsFilesWithOtherNames(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a"), 0o755)
	os.MkdirAll(filepath.Join(root, "c"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "f"), []byte("original\n"), 0o644)
	os.WriteFile(filepath.Join(root, "c", ".gitignore"), []byte(""), 0o644)
	os.WriteFile(filepath.Join(root, "c", "x.log"), []byte("log\n"), 0o644)
	if err := os.Link(filepath.Join(root, "a", "f"), filepath.Join(outside, "f")); err != nil {
		t.Skip("no hard links here:", err)
	}
	os.Link(filepath.Join(root, "c", ".gitignore"), filepath.Join(outside, "ignore"))
	startWatch(t, r)
	checkpointEqualsFullScan(t, r, root, "first")
	if !checkpointEqualsFullScan(t, r, root, "second") {
		t.Fatal("the second checkpoint did not build on the daemon")
	}
	os.WriteFile(filepath.Join(outside, "f"), []byte("changed through the other name\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "ignore"), []byte("*.log\n"), 0o644)
	checkpointEqualsFullScan(t, r, root, "after writes through the other names")
}

// Adversarial W3 (torture/watch-findings/03): another directory at the
// project's path (a directory above it moved away, a copy put back) is
// not the one the daemon watches: a full scan.
func TestMonitorNoticesAnotherRoot(t *testing.T) {
	anc := filepath.Join(t.TempDir(), "anc")
	root := filepath.Join(anc, "proj")
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "f"), []byte("1\n"), 0o644)
	store := filepath.Join(t.TempDir(), "store")
	r, _, err := snap.Init(snap.Options{Dir: root, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	startWatch(t, r)
	checkpointEqualsFullScan(t, r, root, "first")
	checkpointEqualsFullScan(t, r, root, "second")
	// (A directory above the root moves: the root's own watch hears
	// nothing.)
	if err := os.Rename(anc, anc+".old"); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "f"), []byte("2, in another directory\n"), 0o644)
	if checkpointEqualsFullScan(t, r, root, "another root") {
		t.Fatal("a checkpoint of another directory at the root's path built on the daemon of the old one")
	}
}

func checkRandomChanges(t *testing.T, r *snap.Repo, root string, rng *rand.Rand) {
	ctx := context.Background()
	names := []string{"a", "b", "src", "build", "node_modules", "x.txt", "y.go", ".gitignore", "z.log"}
	randPath := func() string {
		var parts []string
		for range 1 + rng.IntN(3) {
			parts = append(parts, names[rng.IntN(len(names))])
		}
		return strings.Join(parts, "/")
	}
	mkparent := func(p string) bool {
		d := filepath.Dir(filepath.Join(root, p))
		for a := d; a != root; a = filepath.Dir(a) {
			if fi, err := os.Lstat(a); err == nil && !fi.IsDir() {
				os.Remove(a)
			}
		}
		return os.MkdirAll(d, 0o755) == nil
	}
	change := func() {
		p := randPath()
		full := filepath.Join(root, p)
		switch k := rng.IntN(10); {
		case k < 4:
			if !mkparent(p) {
				return
			}
			if fi, err := os.Lstat(full); err == nil && (fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0) {
				os.RemoveAll(full)
			}
			data := fmt.Sprintf("v%d\n", rng.IntN(4))
			if filepath.Base(p) == ".gitignore" {
				// (The last ignores itself: its rules apply, it is not recorded.)
				data = []string{"*.log\n", "build/\n", "!z.log\n", "node_modules\n", "", ".gitignore\n*.txt\n"}[rng.IntN(6)]
			}
			if rng.IntN(2) == 0 { // in place: same inode, perhaps the same size and tick
				if f, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644); err == nil {
					f.WriteString(data)
					f.Close()
				}
			} else {
				os.WriteFile(full+".tmp", []byte(data), 0o644)
				os.Rename(full+".tmp", full)
			}
		case k == 4:
			os.RemoveAll(full)
		case k == 5:
			os.Chmod(full, fs.FileMode([]int{0o644, 0o755}[rng.IntN(2)]))
		case k == 6:
			if mkparent(p) {
				os.RemoveAll(full)
				os.Symlink([]string{"x.txt", "a", "../b"}[rng.IntN(3)], full)
			}
		case k == 7:
			if mkparent(p) {
				if fi, err := os.Lstat(full); err == nil && !fi.IsDir() {
					os.Remove(full)
				}
				os.MkdirAll(full, 0o755)
			}
		default:
			q := randPath()
			if strings.HasPrefix(q+"/", p+"/") || strings.HasPrefix(p+"/", q+"/") || !mkparent(q) {
				return
			}
			os.RemoveAll(filepath.Join(root, q))
			os.Rename(full, filepath.Join(root, q))
		}
	}
	for range 30 {
		change()
	}
	monitored := 0
	const rounds = 60
	for round := range rounds {
		for range rng.IntN(5) {
			change()
		}
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{AllowEmpty: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Monitored {
			monitored++
		}
		node, _, err := r.ReadNode(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := fullScanTree(t, root, r.StoreDir, r.MaxFileSize()); node.Tree != want {
			t.Fatalf("round %d: checkpoint %s (monitored %v) records tree %s; a full scan records %s", round, res.ID.Short(), res.Monitored, node.Tree.Short(), want.Short())
		}
	}
	if monitored < rounds/2 {
		t.Fatalf("only %d of %d checkpoints built on the daemon's answer", monitored, rounds)
	}
}

// An ignore file that ignores itself applies, but is not recorded: a
// directory taken from the tree would lose its rules. A monitored
// checkpoint of a change beneath such a directory recorded what those
// rules ignore (the directory was read under the rules its tree records,
// none); now its directory is read again at every capture.
func TestMonitorReadsRulesItDidNotRecord(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "sub", ".gitignore"), ".gitignore\n*.txt\n")
	writeFile(t, filepath.Join(root, "sub", "deep", "a.go"), "package a\n")
	startWatch(t, r)
	checkpointEqualsFullScan(t, r, root, "first")
	writeFile(t, filepath.Join(root, "sub", "deep", "notes.txt"), "ignored by sub/.gitignore\n")
	writeFile(t, filepath.Join(root, "sub", "deep", "b.go"), "package a\n")
	if !checkpointEqualsFullScan(t, r, root, "a change beneath the directory") {
		t.Fatal("the second checkpoint did not build on the daemon")
	}
}

// rewindMonitored rewinds to target and checks that the safety checkpoint
// recorded what a full scan under the rules on disk recorded just before;
// it returns whether that capture built on the daemon.
func rewindMonitored(t *testing.T, r *snap.Repo, root string, target objects.ID) (*snap.RewindResult, bool) {
	t.Helper()
	want := fullScanTree(t, root, r.StoreDir, r.MaxFileSize())
	res, err := r.Rewind(context.Background(), snap.RewindOptions{Target: target.String(), FilesOnly: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	node, _, err := r.ReadNode(context.Background(), *res.SafetyCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if node.Tree != want {
		t.Fatalf("the safety checkpoint (monitored %v) records tree %s; a full scan before the rewind %s", res.SafetyMonitored, node.Tree.Short(), want.Short())
	}
	return res, res.SafetyMonitored
}

// A rewind's safety capture, under its target's rules as well as those on
// disk, builds on the daemon when the target's rules are the ones on disk
// (the same ignore files, all recorded); when they differ, or a rule file
// is not recorded, it scans the tree, and what only the target ignores is
// left out as before.
func TestRewindSafetyCaptureUsesTheMonitor(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	for i := range 20 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.go", i)), "v1\n")
	}
	startWatch(t, r)
	a := checkpoint(t, r, snap.CheckpointOptions{})
	for i := range 10 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.go", i)), "v2\n")
	}
	b := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "d0", "f0.go"), "v3, since\n")
	if _, monitored := rewindMonitored(t, r, root, a.ID); !monitored {
		t.Error("the safety capture of a rewind under the same rules scanned the tree")
	}
	for i := range 10 {
		if b, _ := os.ReadFile(filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.go", i))); string(b) != "v1\n" {
			t.Fatalf("f%d.go after the rewind: %q", i, b)
		}
	}

	// The rules on disk change: the target's (a's, b's) are not today's.
	writeFile(t, filepath.Join(root, ".gitignore"), "")
	writeFile(t, filepath.Join(root, "d1", "x.log"), "a log a and b ignore\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	res, monitored := rewindMonitored(t, r, root, b.ID)
	if monitored {
		t.Error("the safety capture under other rules built on the daemon")
	}
	if _, err := os.Stat(filepath.Join(root, "d1", "x.log")); err != nil {
		t.Errorf("d1/x.log, which the target's rules ignore, after the rewind: %v", err)
	}
	_ = res
}

// countingSys counts the fstatat calls made through it.
type countingSys struct {
	fsys.Sys
	fstatat atomic.Int64
}

func (c *countingSys) Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	c.fstatat.Add(1)
	return c.Sys.Fstatat(dirfd, path, st, flags)
}

// A rewind's safety capture builds on the later of the last capture under
// its target's rules (a rewind to the same target before) and the last
// under the rules on disk: rewinding to one target again and again, the
// agent's way of retrying, reads only what changed since the last
// checkpoint, not all a move to it changed since the first time.
func TestRewindSafetyCaptureBuildsOnTheLaterBase(t *testing.T) {
	root := t.TempDir()
	sys := &countingSys{Sys: fsys.RealSys}
	r, _, err := snap.Init(snap.Options{Dir: root, Sys: sys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const files = 40
	for i := range files {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.go", i)), "v1\n")
	}
	startWatch(t, r)
	a := checkpoint(t, r, snap.CheckpointOptions{})
	for i := range 10 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.go", i)), "v2\n")
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, monitored := rewindMonitored(t, r, root, a.ID); !monitored {
		t.Fatal("the first rewind's safety capture scanned the tree")
	}
	checkpoint(t, r, snap.CheckpointOptions{AllowEmpty: true})
	time.Sleep(20 * time.Millisecond) // (past the racy window of the files the rewind wrote)
	checkpoint(t, r, snap.CheckpointOptions{AllowEmpty: true})
	before := sys.fstatat.Load()
	res, monitored := rewindMonitored(t, r, root, a.ID)
	if !monitored || len(res.Restored) != 0 {
		t.Fatalf("the second rewind: monitored %v, restored %v", monitored, res.Restored)
	}
	if n := sys.fstatat.Load() - before; n >= files/2 {
		t.Errorf("the second rewind to the same target, nothing changed since the last checkpoint, made %d fstatat calls: its safety capture read again what the first rewind changed", n)
	}
}
