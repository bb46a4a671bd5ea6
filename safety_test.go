package snap_test

// Regression tests for the adversarial report of 2026-11-23
// (../shared/reports/2026-11-23-adversarial/FINDINGS.md): one test per
// finding, each failing before its fix.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/storage"
)

// F1: diffing the working tree against the head read new content of a file
// below the root through a restorer without a Sys, and panicked.
func TestDiffUncheckpointedEditInSubdirectory(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"src/main.go": "v1\n", "top.txt": "v1\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"src/main.go": "v2\n", "src/deep/new.go": "new\n"})
	for _, paths := range [][]string{nil, {"src/main.go"}} {
		res, err := r.Diff(ctx, mustResolve(t, r, "", "@"), nil, paths)
		if err != nil {
			t.Fatal(err)
		}
		var patch string
		for _, f := range res.Files {
			if f.Path == "src/main.go" {
				patch = f.Patch
			}
		}
		if !strings.Contains(patch, "+v2") {
			t.Fatalf("diff %v: %+v", paths, res.Files)
		}
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// After retention expires a checkpoint's parent, showing the checkpoint
// works (its stats are stored in it) and naming the expired parent is
// "no such checkpoint" (exit 4), never "object missing" (12, damage).
func TestExpiredParentIsNotDamage(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	var ids []objects.ID
	for i := range 3 {
		writeFile(t, filepath.Join(root, "f"), strings.Repeat("x", i+1))
		ids = append(ids, checkpoint(t, r, snap.CheckpointOptions{}).ID)
	}
	if _, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 1}}); err != nil {
		t.Fatal(err)
	}
	show, err := r.Show(ctx, mustResolve(t, r, "", "@"))
	if err != nil {
		t.Fatalf("show @: %v", err)
	}
	if !show.ParentExpired || show.Stats.Modified != 1 {
		t.Fatalf("show @: parent_expired %v, stats %+v", show.ParentExpired, show.Stats)
	}
	for _, ref := range []string{"@~1", "@~2", "#1", ids[1].String(), ids[0].String()} {
		id, err := r.Resolve(ctx, "", ref)
		if err == nil {
			_, err = r.Diff(ctx, id, nil, nil)
		}
		if !errors.Is(err, snap.ErrExpired) || !errors.Is(err, snap.ErrNoCheckpoint) || errors.Is(err, objects.ErrNotFound) {
			t.Errorf("diff %s: %v, want ErrExpired", ref, err)
		}
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); !errors.Is(err, snap.ErrExpired) {
		t.Errorf("rewind @~1: %v, want ErrExpired", err)
	}
}

// F3: an external store belongs to the project root recorded at init:
// commands from a subdirectory capture the whole project, and a second
// project pointing at the same store, or a directory outside the root, is
// refused without reading or writing anything.
func TestExternalStoreBelongsToItsRoot(t *testing.T) {
	base := t.TempDir()
	a, b, store := filepath.Join(base, "A"), filepath.Join(base, "B"), filepath.Join(base, "store")
	writeFile(t, filepath.Join(a, "main.go"), "main")
	writeFile(t, filepath.Join(a, "src/lib.go"), "lib")
	writeFile(t, filepath.Join(b, "b.txt"), "B")
	r, _, err := snap.Init(snap.Options{Dir: a, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	r.Close()

	sub, err := snap.Open(snap.Options{Dir: filepath.Join(a, "src"), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if sub.Root != a {
		t.Fatalf("root from src/: %s, want %s", sub.Root, a)
	}
	writeFile(t, filepath.Join(a, "src/lib.go"), "lib2")
	res := checkpoint(t, sub, snap.CheckpointOptions{})
	if len(res.Files.Deleted) != 0 || strings.Join(res.Files.Modified, ",") != "src/lib.go" {
		t.Fatalf("checkpoint from src/: %+v", res.Files)
	}
	for _, dir := range []string{b, base} {
		if _, err := snap.Open(snap.Options{Dir: dir, Store: store}); !errors.Is(err, snap.ErrOtherProject) {
			t.Errorf("open from %s: %v, want ErrOtherProject", dir, err)
		}
	}
	if _, _, err := snap.Init(snap.Options{Dir: b, Store: store}); !errors.Is(err, snap.ErrOtherProject) {
		t.Errorf("init of another project with the same store: %v, want ErrOtherProject", err)
	}
	if got, _ := os.ReadFile(filepath.Join(b, "b.txt")); string(got) != "B" {
		t.Fatal("project B changed")
	}
}

// F2: a rewind, undo or redo never deletes or overwrites what the target's
// ignore rules or today's ignore: rewinding to a checkpoint made before the
// .gitignore and back again leaves .env and node_modules/ where they are,
// and no safety checkpoint pulls them into the store.
func TestRewindUndoRedoLeaveIgnoredAlone(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "app.js"), "v1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".gitignore"), ".env\nnode_modules/\n")
	writeFile(t, filepath.Join(root, ".env"), "API_KEY=secret")
	writeFile(t, filepath.Join(root, "node_modules/x/i.js"), "module")
	writeFile(t, filepath.Join(root, "app.js"), "v2")
	c2 := checkpoint(t, r, snap.CheckpointOptions{})
	ignored := func(step string) {
		t.Helper()
		got := snaptest.Snapshot(t, root, snaptest.SkipStore)
		if got[".env"] != "API_KEY=secret" || got["node_modules/x/i.js"] != "module" {
			t.Fatalf("%s: ignored files touched: %v", step, got)
		}
	}
	app := func(step, want string) {
		t.Helper()
		if got, _ := os.ReadFile(filepath.Join(root, "app.js")); string(got) != want {
			t.Fatalf("%s: app.js = %q, want %q", step, got, want)
		}
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()}); err != nil {
		t.Fatal(err)
	}
	ignored("rewind #1")
	app("rewind #1", "v1")
	if _, err := os.Stat(filepath.Join(root, ".gitignore")); !os.IsNotExist(err) {
		t.Fatal("rewind #1 left .gitignore")
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ignored("undo")
	app("undo", "v2")
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ignored("redo")
	app("redo", "v1")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c2.ID.String()}); err != nil {
		t.Fatal(err)
	}
	ignored("rewind #2")
	app("rewind #2", "v2")
	log, err := r.Log(ctx, snap.LogOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if err := r.Cat(ctx, e.ID, ".env", io.Discard); !errors.Is(err, snap.ErrNoPath) {
			t.Errorf("checkpoint %s (%s) holds .env: %v", e.ID.Short(), e.Kind, err)
		}
	}
}

// F4: a file that cannot be read (here: grown past the size limit) is
// recorded as skipped, with its previous entry carried forward, never as a
// deletion; a rewind to that checkpoint leaves it alone, and so does one
// to a checkpoint where a new file could not be read.
func TestUnreadableFileIsNeverADeletion(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	big := filepath.Join(root, "big.bin")
	writeFile(t, big, "small")
	writeFile(t, filepath.Join(root, "other"), "o1")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, big, strings.Repeat("x", 2000))
	writeFile(t, filepath.Join(root, "new.bin"), strings.Repeat("n", 2000))
	res := checkpoint(t, r, snap.CheckpointOptions{MaxFileSize: 1000})
	if len(res.Files.Deleted)+len(res.Files.Modified) != 0 || len(res.Files.Added) != 0 {
		t.Fatalf("checkpoint of an unreadable file records changes: %+v", res.Files)
	}
	var unreadable []string
	for _, s := range res.Skipped {
		if s.Kept {
			unreadable = append(unreadable, s.Path)
		}
	}
	if strings.Join(unreadable, ",") != "big.bin,new.bin" {
		t.Fatalf("skipped: %+v", res.Skipped)
	}
	show, err := r.Show(ctx, mustResolve(t, r, "", "@"))
	if err != nil || len(show.Files.Deleted) != 0 {
		t.Fatalf("show: %+v %v", show, err)
	}
	// Later, both are readable and hold something else.
	writeFile(t, big, "v3")
	writeFile(t, filepath.Join(root, "new.bin"), "n3")
	writeFile(t, filepath.Join(root, "other"), "o3")
	checkpoint(t, r, snap.CheckpointOptions{})
	rr, err := r.Rewind(ctx, snap.RewindOptions{Target: res.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if got["big.bin"] != "v3" || got["new.bin"] != "n3" || got["other"] != "o1" {
		t.Fatalf("rewind to a checkpoint with unreadable files: %v (%+v)", got, rr)
	}
}

// F18: empty directories are captured and restored.
func TestEmptyDirectoriesRestored(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	for _, d := range []string{"logs", "cache/tmp"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	writeFile(t, filepath.Join(root, "f"), "x")
	checkpoint(t, r, snap.CheckpointOptions{})
	os.RemoveAll(filepath.Join(root, "logs"))
	os.RemoveAll(filepath.Join(root, "cache"))
	st, err := r.Status(ctx, "")
	if err != nil || strings.Join(st.Files.Deleted, ",") != "cache/tmp/,logs/" {
		t.Fatalf("status: %+v %v", st, err)
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"logs", "cache/tmp"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Fatalf("%s not restored: %v", d, err)
		}
	}
	// And a rewind to a checkpoint without them removes them while empty.
	os.RemoveAll(filepath.Join(root, "logs"))
	os.MkdirAll(filepath.Join(root, "cache/tmp"), 0o755)
	writeFile(t, filepath.Join(root, "f"), "y")
	c2 := checkpoint(t, r, snap.CheckpointOptions{})
	os.MkdirAll(filepath.Join(root, "made"), 0o755)
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c2.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "made")); !os.IsNotExist(err) {
		t.Fatalf("empty directory not removed: %v", err)
	}
}

// F10: a dry run makes the checks the real rewind makes, so it names the
// same failures: a file that is ignored now, a directory in the way that
// holds an ignored file.
func TestDryRunPredictsFailures(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "config.local"), "v1")
	writeFile(t, filepath.Join(root, "target"), "a file")
	writeFile(t, filepath.Join(root, "a.txt"), "a1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	os.Remove(filepath.Join(root, "target"))
	writeFile(t, filepath.Join(root, "target/x.log"), "ignored")
	writeFile(t, filepath.Join(root, ".gitignore"), "config.local\n*.log\n")
	writeFile(t, filepath.Join(root, "config.local"), "v2-secret")
	writeFile(t, filepath.Join(root, "a.txt"), "a2")
	checkpoint(t, r, snap.CheckpointOptions{})
	// The dry run fails as the real run does (found by the model harness:
	// it listed the failures but returned no error).
	dry, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), DryRun: true})
	if !errors.Is(err, snap.ErrPartial) {
		t.Fatalf("dry run: %v, want ErrPartial", err)
	}
	real, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if !errors.Is(err, snap.ErrPartial) {
		t.Fatalf("real rewind: %v", err)
	}
	paths := func(res *snap.RewindResult) string {
		var errs []string
		for _, e := range res.Errors {
			errs = append(errs, e.Path+": "+e.Error)
		}
		return fmt.Sprintf("restored %v deleted %v errors %v", res.Restored, res.Deleted, errs)
	}
	if paths(dry) != paths(real) || len(real.Errors) != 2 {
		t.Fatalf("dry run and real run differ:\n dry  %s\n real %s", paths(dry), paths(real))
	}
	if got, _ := os.ReadFile(filepath.Join(root, "config.local")); string(got) != "v2-secret" {
		t.Fatal("ignored config.local overwritten")
	}
}

// A checkpoint identical to the head records nothing unless AllowEmpty:
// it answers the head's id, Unchanged, and its message id still resolves.
func TestUnchangedCheckpointRecordsNothing(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{MessageID: "m1"})
	c2 := checkpoint(t, r, snap.CheckpointOptions{MessageID: "m2", Kind: "post-tool"})
	if !c2.Unchanged || c2.ID != c1.ID {
		t.Fatalf("identical checkpoint: %+v", c2)
	}
	if id, err := r.Resolve(ctx, "", "msg:m2"); err != nil || id != c1.ID {
		t.Fatalf("msg:m2 = %v, %v", id, err)
	}
	c3 := checkpoint(t, r, snap.CheckpointOptions{AllowEmpty: true})
	if c3.Unchanged || c3.ID == c1.ID {
		t.Fatalf("--allow-empty: %+v", c3)
	}
	c4 := checkpoint(t, r, snap.CheckpointOptions{Labels: []string{"here"}})
	if c4.Unchanged {
		t.Fatal("a labelled checkpoint was not recorded")
	}
	log, _ := r.Log(ctx, snap.LogOptions{})
	if len(log) != 3 {
		t.Fatalf("log has %d checkpoints, want 3", len(log))
	}
	// A later real checkpoint with message id m2 wins over the record.
	writeFile(t, filepath.Join(root, "a"), "2")
	c5 := checkpoint(t, r, snap.CheckpointOptions{MessageID: "m2"})
	if id, _ := r.Resolve(ctx, "", "msg:m2"); id != c5.ID {
		t.Fatalf("msg:m2 after a newer checkpoint: %v, want %v", id, c5.ID)
	}
}

// F9: a state document whose source was deleted shows in status, a rewind
// to the head puts it back, and the safety checkpoint records its absence,
// so undo removes it again.
func TestDeletedTranscriptAfterHead(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "session.jsonl")
	writeFile(t, conv, `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	os.Remove(conv)
	st, err := r.Status(ctx, "")
	if err != nil || st.Clean || len(st.State) != 1 || st.State[0].Status != "deleted" {
		t.Fatalf("status after deleting the transcript: %+v %v", st, err)
	}
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@", ConversationOnly: true})
	if err != nil || len(res.State) != 1 {
		t.Fatalf("rewind @: %+v %v", res, err)
	}
	if _, err := os.Stat(conv); err != nil {
		t.Fatal("rewind @ did not restore the transcript")
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conv); !os.IsNotExist(err) {
		t.Fatalf("undo did not return to the transcript's absence: %v", err)
	}
}

// F5: a symlinked transcript is rewound through the link (the file the
// agent appends to); a stream (/dev/stdin, /proc/self/fd/N) is read like
// "-" and never recorded as a source; a FIFO is refused without blocking.
func TestStateDocumentSources(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.jsonl"), filepath.Join(dir, "session.jsonl")
	writeFile(t, real, "v1\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, link)})
	writeFile(t, real, "v1\nv2\n")
	writeFile(t, filepath.Join(root, "a"), "2")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(real); string(got) != "v1\n" {
		t.Fatalf("the file behind the link: %q, want v1", got)
	}

	stdin, err := os.Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	for _, p := range []string{"/dev/stdin", "/proc/self/fd/0", "-"} {
		d, err := snap.ReadStateDoc("conversation", p, strings.NewReader("streamed\n"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if d.Source != "" {
			t.Errorf("%s recorded as source %q", p, d.Source)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir, filepath.Join(dir, "missing")} {
		if _, err := snap.ReadStateDoc("conversation", p, nil); !errors.Is(err, snap.ErrUsage) {
			t.Errorf("%s: %v, want ErrUsage", p, err)
		}
	}
}

// F19: a transcript inside the project is a state document, not a tree
// file: --files-only leaves it alone and --conversation-only leaves status
// clean.
func TestTranscriptInsideProject(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(root, "chat.jsonl")
	writeFile(t, conv, "m1\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	if c1.Files.Added[0] != "a" || len(c1.Files.Added) != 1 {
		t.Fatalf("the transcript is a tree file: %+v", c1.Files)
	}
	writeFile(t, conv, "m1\nm2\n")
	writeFile(t, filepath.Join(root, "a"), "2")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), FilesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conv); string(got) != "m1\nm2\n" {
		t.Fatalf("--files-only rewound the transcript: %q", got)
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), ConversationOnly: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conv); string(got) != "m1\n" {
		t.Fatalf("--conversation-only: %q", got)
	}
	if st, err := r.Status(ctx, ""); err != nil || len(st.Files.Added)+len(st.Files.Modified)+len(st.Files.Deleted) != 0 {
		t.Fatalf("status after --conversation-only: %+v %v", st, err)
	}
}

// F6: a checkpoint waits for a rewind moving files in the project (here:
// the move lock held), bounded, and fails busy rather than capturing a
// half-moved tree.
func TestCheckpointWaitsForMove(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{})
	lock, err := r.Refs().Locks().Lock(ctx, storage.MoveLock, storage.Exclusive, 0)
	if err != nil {
		t.Fatal(err)
	}
	short, err := snap.Open(snap.Options{Dir: root, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	writeFile(t, filepath.Join(root, "a"), "2")
	start := time.Now()
	if _, err := short.Checkpoint(ctx, snap.CheckpointOptions{}); !errors.Is(err, snap.ErrBusy) || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("checkpoint during a move: %v after %v", err, time.Since(start))
	}
	done := make(chan error)
	go func() { _, err := r.Checkpoint(ctx, snap.CheckpointOptions{}); done <- err }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("checkpoint did not wait for the move: %v", err)
	default:
	}
	lock.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// F11: labels that look like ids or reserved words are refused, and a full
// id names its checkpoint whatever labels exist. --kind pre-rewind is
// snap's own.
func TestLabelsCannotShadowRefs(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "f"), "2")
	c2 := checkpoint(t, r, snap.CheckpointOptions{})
	for _, l := range []string{c2.ID.String(), c2.ID.String()[:8], "abcdef", "HEAD", "head", "bad/name", "-x"} {
		if _, err := r.Label(ctx, "", "#1", l); !errors.Is(err, snap.ErrUsage) {
			t.Errorf("label %q: %v, want ErrUsage", l, err)
		}
	}
	for _, l := range []string{"v1", "abcdefg", "12345", "release-2"} {
		if _, err := r.Label(ctx, "", "#1", l); err != nil {
			t.Errorf("label %q: %v", l, err)
		}
	}
	if id, err := r.Resolve(ctx, "", c2.ID.String()); err != nil || id != c2.ID {
		t.Fatalf("full id resolves to %v, %v", id, err)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Kind: "pre-rewind", AllowEmpty: true}); !errors.Is(err, snap.ErrUsage) {
		t.Errorf("--kind pre-rewind: %v", err)
	}
	if _, err := r.Resolve(ctx, "", "msg:"); !errors.Is(err, snap.ErrUsage) {
		t.Errorf("msg: with no id: %v", err)
	}
	_ = c1
}

// F12: archiving and removing a session are undone by undo in that
// session; an archived name cannot be reused by accident; counts are what
// log lists; an unknown session is "no such session".
func TestSessionManagement(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	c := checkpoint(t, r, snap.CheckpointOptions{Session: "ag"})
	count := func(name string, archived bool) int {
		t.Helper()
		infos, err := r.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := -1
		for _, s := range infos {
			if s.Name == name && s.Archived == archived {
				if n >= 0 {
					t.Fatalf("session %s listed twice: %+v", name, infos)
				}
				n = s.Checkpoints
			}
		}
		return n
	}
	for _, op := range []func(context.Context, string) error{r.ArchiveSession, r.RemoveSession} {
		if err := op(ctx, "ag"); err != nil {
			t.Fatal(err)
		}
		if count("ag", false) >= 0 {
			t.Fatal("session still active")
		}
		if _, err := r.Undo(ctx, "ag"); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if id, err := r.Resolve(ctx, "ag", "@"); err != nil || id != c.ID || count("ag", false) != 1 {
			t.Fatalf("after undo: head %v %v, count %d", id, err, count("ag", false))
		}
	}
	if err := r.ArchiveSession(ctx, "ag"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "a"), "2")
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "ag"}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("checkpoint into an archived session's name: %v", err)
	}
	if err := r.RemoveSession(ctx, "nosuch"); !errors.Is(err, snap.ErrNoSession) {
		t.Fatalf("rm nosuch: %v", err)
	}
	// Counts follow retention: 5 checkpoints, gc keeps 2.
	for i := range 5 {
		writeFile(t, filepath.Join(root, "b"), fmt.Sprint(i))
		checkpoint(t, r, snap.CheckpointOptions{Session: "five"})
	}
	if _, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 2}}); err != nil {
		t.Fatal(err)
	}
	log, _ := r.Log(ctx, snap.LogOptions{Session: "five"})
	if n := count("five", false); n != len(log) || n != 2 {
		t.Fatalf("count %d, log lists %d, want 2", n, len(log))
	}
}

// F13: a --path rewind restores those paths and leaves the head where it
// is; a path in neither tree is an error that records nothing.
func TestRewindPathKeepsHead(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a": "a1", "b": "b1"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"a": "a2", "b": "b2"})
	c2 := checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), Paths: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if head, _ := r.Resolve(ctx, "", "@"); head != c2.ID {
		t.Fatalf("head moved to %v", head)
	}
	st, _ := r.Status(ctx, "")
	if strings.Join(st.Files.Modified, ",") != "a" {
		t.Fatalf("status after --path a: %+v", st.Files)
	}
	ops, _ := r.Ops(ctx, 0)
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), Paths: []string{"typo/not/there"}}); !errors.Is(err, snap.ErrNoPath) {
		t.Fatalf("--path typo: %v", err)
	}
	if after, _ := r.Ops(ctx, 0); len(after) != len(ops) {
		t.Fatal("a refused --path rewind recorded an operation")
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a"] != "a2" || got["b"] != "b2" {
		t.Fatalf("undo of --path: %v", got)
	}
}

// Diffing across an empty directory read the directory's tree as file
// content and failed "object corrupt" (exit 12).
func TestDiffEmptyDirectory(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{})
	os.Mkdir(filepath.Join(root, "e"), 0o755)
	res, err := r.Diff(ctx, mustResolve(t, r, "", "@"), nil, nil)
	if err != nil || len(res.Files) != 1 || res.Files[0].Status != "added" || res.Files[0].NewMode != "dir" {
		t.Fatalf("diff with a new empty directory: %+v %v", res, err)
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	to := mustResolve(t, r, "", "@")
	if res, err := r.Diff(ctx, mustResolve(t, r, "", "@~1"), &to, nil); err != nil || len(res.Files) != 1 {
		t.Fatalf("diff of two checkpoints: %+v %v", res, err)
	}
}

// G2 (second adversarial pass): undo after rewind, undo, edits, redo
// returns to the state before the redo — the edits made after the undo —
// not to the state before the first rewind.
func TestUndoOfRedoReturnsToBeforeTheRedo(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "v1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "a"), "v2")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "a"), "v3 after the undo")
	writeFile(t, filepath.Join(root, "n"), "new")
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if got["a"] != "v3 after the undo" || got["n"] != "new" {
		t.Fatalf("undo of the redo: %v", got)
	}
}

// G11: a rewind while an edited file cannot be read takes a safety
// checkpoint that says so; its undo leaves the file alone.
func TestSafetyCheckpointRecordsUnreadable(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "big"), "v1")
	writeFile(t, filepath.Join(root, "other"), "o1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "other"), "o2")
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := r.ConfigSet(ctx, "capture.max-file-size", "10"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "big"), "the user's edit, too big to read")
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if err != nil || !res.SafetyCreated {
		t.Fatalf("rewind with an unreadable edit: safety created %v, %v", res != nil && res.SafetyCreated, err)
	}
	if err := r.ConfigSet(ctx, "capture.max-file-size", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "big")); string(got) != "the user's edit, too big to read" {
		t.Fatalf("undo overwrote the unreadable edit: %q", got)
	}
}

// G10: a transcript whose source cannot be read is kept as it was, not
// recorded as absent; G5: a REF of more hex digits than an id is no id.
func TestUnreadableTranscriptKeptAndLongHexRef(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "c.jsonl")
	writeFile(t, conv, "m1\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	os.Remove(conv)
	os.Mkdir(conv, 0o755) // not a file: cannot be read
	writeFile(t, filepath.Join(root, "a"), "2")
	res := checkpoint(t, r, snap.CheckpointOptions{})
	var buf strings.Builder
	if err := r.CatState(ctx, mustResolve(t, r, "", "@"), "conversation", &buf); err != nil || buf.String() != "m1\n" {
		t.Fatalf("unreadable transcript: %q %v (skipped %+v)", buf.String(), err, res.Skipped)
	}
	if _, err := r.Resolve(ctx, "", strings.Repeat("ab", 40)); !errors.Is(err, snap.ErrNoCheckpoint) {
		t.Fatalf("80 hex digits: %v", err)
	}
}

// G3, G4: a transcript path that leads, link by link, to /dev/stdin is a
// stream (never recorded, never written); one that leads into the store,
// however the project is reached, is never written.
func TestTranscriptLinksToStreamsAndStore(t *testing.T) {
	dir := t.TempDir()
	t2, t1 := filepath.Join(dir, "t2"), filepath.Join(dir, "t1")
	os.Symlink("/dev/stdin", t2)
	os.Symlink(t2, t1)
	d, err := snap.ReadStateDoc("conversation", t1, strings.NewReader("x\n"))
	if err != nil || d.Source != "" {
		t.Fatalf("t1 -> t2 -> /dev/stdin: source %q, %v", d.Source, err)
	}

	real := filepath.Join(t.TempDir(), "proj")
	os.Mkdir(real, 0o755)
	via := filepath.Join(t.TempDir(), "via")
	os.Symlink(real, via)
	r, _, err := snap.Init(snap.Options{Dir: via})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeFile(t, filepath.Join(real, "a"), "1")
	checkpoint(t, r, snap.CheckpointOptions{})
	link := filepath.Join(dir, "session.jsonl")
	os.Symlink(filepath.Join(real, ".snap", "oplog"), link)
	writeFile(t, filepath.Join(real, "a"), "2")
	c2 := checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, link)})
	oplog, _ := os.ReadFile(filepath.Join(real, ".snap", "oplog"))
	writeFile(t, filepath.Join(real, "a"), "3")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c2.ID.String(), ConversationOnly: true}); !errors.Is(err, snap.ErrPartial) {
		t.Fatalf("rewind writing through a link into the store: %v", err)
	}
	if now, _ := os.ReadFile(filepath.Join(real, ".snap", "oplog")); !bytes.HasPrefix(now, oplog) {
		t.Fatal("the op log was overwritten")
	}
}

// G6: an external store records the real project root: reached through a
// symlink or by its real path it is one project, and a symlink repointed
// at another directory does not make that one the project.
func TestExternalStoreRootThroughSymlinks(t *testing.T) {
	base := t.TempDir()
	v1, v2, cur, store := filepath.Join(base, "v1"), filepath.Join(base, "v2"), filepath.Join(base, "current"), filepath.Join(base, "store")
	writeFile(t, filepath.Join(v1, "a"), "v1")
	writeFile(t, filepath.Join(v2, "b"), "v2")
	os.Symlink(v1, cur)
	r, _, err := snap.Init(snap.Options{Dir: cur, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, d := range []string{cur, v1} {
		r, err := snap.Open(snap.Options{Dir: d, Store: store})
		if err != nil {
			t.Fatalf("open from %s: %v", d, err)
		}
		r.Close()
	}
	os.Remove(cur)
	os.Symlink(v2, cur)
	if _, err := snap.Open(snap.Options{Dir: cur, Store: store}); !errors.Is(err, snap.ErrOtherProject) {
		t.Fatalf("open through a repointed symlink: %v, want ErrOtherProject", err)
	}
}

// G7: another project's store kept inside this project (its SNAP_STORE)
// is never captured, so a rewind never deletes it.
func TestOtherStoreInsideProjectIsNotCaptured(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "b"), "B")
	rb, _, err := snap.Init(snap.Options{Dir: other, Store: filepath.Join(root, "stores", "b")})
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, rb, snap.CheckpointOptions{})
	rb.Close()
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	for _, p := range c1.Files.Added {
		if strings.HasPrefix(p, "stores/b") {
			t.Fatalf("captured another project's store: %v", c1.Files.Added)
		}
	}
	writeFile(t, filepath.Join(root, "a"), "2")
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Open(snap.Options{Dir: other, Store: filepath.Join(root, "stores", "b")}); err != nil {
		t.Fatalf("the other project's store after a rewind: %v", err)
	}
}

// G8, G9: a transcript inside the project is not a tree file whether it was
// recorded through a symlinked project path or by another session.
func TestInProjectTranscriptAcrossLinksAndSessions(t *testing.T) {
	real := filepath.Join(t.TempDir(), "preal")
	os.Mkdir(real, 0o755)
	link := filepath.Join(t.TempDir(), "plink")
	os.Symlink(real, link)
	r, _, err := snap.Init(snap.Options{Dir: real})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeFile(t, filepath.Join(real, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "b"})
	conv := filepath.Join(link, "t.jsonl") // recorded through the link
	writeFile(t, conv, "m1\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "a", State: convDoc(t, conv)})
	if st, err := r.Status(ctx, "a"); err != nil || len(st.Files.Added) != 0 {
		t.Fatalf("status of session a: %+v %v", st, err)
	}
	// Session b never recorded the transcript; its rewind must not delete it.
	writeFile(t, filepath.Join(real, "a"), "2")
	checkpoint(t, r, snap.CheckpointOptions{Session: "b"})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "b", Target: c1.ID.String()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(real, "t.jsonl")); string(got) != "m1\n" {
		t.Fatalf("session b's rewind deleted session a's transcript: %q", got)
	}
}

// G12: a tracked file that only the target's rules ignore is kept in the
// safety checkpoint as it was (no deletion recorded, not read again), so a
// later rewind to that safety checkpoint does not delete it.
func TestTargetOnlyIgnoredIsKeptInSafety(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".gitignore"), ".env\n")
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	os.Remove(filepath.Join(root, ".gitignore"))
	writeFile(t, filepath.Join(root, ".env"), "SECRET=1")
	writeFile(t, filepath.Join(root, "a"), "2")
	checkpoint(t, r, snap.CheckpointOptions{})  // tracks .env
	writeFile(t, filepath.Join(root, "a"), "3") // uncheckpointed: a safety checkpoint is taken
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if err != nil || !res.SafetyCreated {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	show, err := r.Show(ctx, *res.SafetyCheckpoint)
	if err != nil || len(show.Files.Deleted) != 0 {
		t.Fatalf("safety checkpoint records deletions: %+v %v", show.Files, err)
	}
	os.Remove(filepath.Join(root, ".gitignore")) // .env is not ignored any more
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: res.SafetyCheckpoint.String()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, ".env")); string(got) != "SECRET=1" {
		t.Fatalf(".env after rewinding to the safety checkpoint: %q", got)
	}
}

// G14, G16, G17, G23, G26 (second adversarial pass, minor): a .gitignore
// with a byte-order mark keeps its first pattern; rewinding away e1/e2/
// removes e1/ too; --conversation-only --state-out (an export) leaves the
// head; a document read from stdin that is already as in the target is no
// failure; a rewind into an archived session's name is refused.
func TestSecondPassMinor(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, ".gitignore"), "\uFEFF.env\n")
	writeFile(t, filepath.Join(root, ".env"), "secret")
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "notes", Data: []byte("n\n")}}})
	if slices.Contains(c1.Files.Added, ".env") {
		t.Fatal("a .gitignore with a BOM lost its first pattern")
	}
	os.MkdirAll(filepath.Join(root, "e1/e2"), 0o755)
	writeFile(t, filepath.Join(root, "a"), "2")
	c2 := checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()}); err != nil {
		t.Fatalf("rewind with an unchanged stdin document: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "e1")); !os.IsNotExist(err) {
		t.Fatalf("e1/ left behind: %v", err)
	}
	head, _ := r.Resolve(ctx, "", "@")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c2.ID.String(), ConversationOnly: true, StateOut: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if now, _ := r.Resolve(ctx, "", "@"); now != head {
		t.Fatal("an export with --state-out moved the head")
	}
	checkpoint(t, r, snap.CheckpointOptions{Session: "arch", AllowEmpty: true})
	if err := r.ArchiveSession(ctx, "arch"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "arch", Target: c1.ID.String()}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("rewind into an archived session: %v", err)
	}
}

// Found by the model harness: a --path restore removed the directories
// above the path that it left empty, outside what it was asked to restore.
func TestRewindPathLeavesParentDirectories(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "src/build/b/y"), "y")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), Paths: []string{"src/build/b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "src/build/b")); !os.IsNotExist(err) {
		t.Fatalf("src/build/b not removed: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(root, "src/build")); err != nil || !fi.IsDir() {
		t.Fatalf("src/build, outside --path, was removed: %v", err)
	}
}

// M1 (model harness): the undo of a --files-only rewind leaves a
// transcript kept in the project alone (its target records it as a source
// though the head it runs from does not).
func TestUndoFilesOnlyKeepsInProjectTranscript(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "a")
	checkpoint(t, r, snap.CheckpointOptions{})
	conv := filepath.Join(root, "chat.jsonl")
	writeFile(t, conv, `{"role":"user","content":"hi"}`+"\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1", FilesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conv); err != nil {
		t.Fatalf("undo deleted the transcript: %v", err)
	}
}

// M2 (model harness): undoing a rewind whose previous head retention has
// removed is refused; it moved the head to a checkpoint that no longer
// exists (status then failed "object not found", fsck reported damage).
func TestUndoRefusesExpiredHead(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	for i := range 2 {
		writeFile(t, filepath.Join(root, "f"), fmt.Sprint(i+1))
		checkpoint(t, r, snap.CheckpointOptions{}) // A, B
	}
	writeFile(t, filepath.Join(root, "f"), "3")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"}); err != nil { // head A; before: B
		t.Fatal(err)
	}
	for i := range 2 {
		writeFile(t, filepath.Join(root, "f"), fmt.Sprint(i+4))
		checkpoint(t, r, snap.CheckpointOptions{}) // C, D
	}
	for range 2 {
		if _, err := r.Undo(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); !errors.Is(err, snap.ErrNoCheckpoint) {
		t.Fatalf("undo to an expired head: %v", err)
	}
	if _, err := r.Status(ctx, ""); err != nil {
		t.Fatalf("status after the refused undo: %v", err)
	}
}

// M6 (model harness): a file that today's rules ignore but that already
// holds the target's content is no failure (every such rewind exited 3).
// M7: a transcript under /dev/shm is a file, not a stream.
func TestIgnoredButSameIsNoFailure(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "x"), "x1\n")
	writeFile(t, filepath.Join(root, "f"), "f\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".gitignore"), "x*\n")
	if res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil || len(res.Errors) != 0 {
		t.Fatalf("rewind with an ignored file already as in the target: %+v %v", res, err)
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		p := filepath.Join("/dev/shm", fmt.Sprintf("snap-test-%d.jsonl", os.Getpid()))
		writeFile(t, p, "m\n")
		defer os.Remove(p)
		if d, err := snap.ReadStateDoc("conversation", p, nil); err != nil || d.Source != p {
			t.Fatalf("a transcript under /dev/shm: source %q, %v", d.Source, err)
		}
	}
}

// M4 (model harness): an edit-set checkpoint of a path inside an ignored
// directory records what a full capture would, nothing: it recorded the
// ignored directory (empty), and the next checkpoint "deleted" it.
func TestEditSetBelowIgnoredDirectory(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "node_modules/\n", "main.go": "m\n", "src/node_modules/x.js": "x\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	for _, paths := range [][]string{{"src/node_modules/x.js"}, {"src/node_modules"}, {"src/node_modules/new/y.js"}} {
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Paths: paths})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Unchanged {
			t.Fatalf("edit-set %v inside an ignored directory recorded a checkpoint: %+v", paths, res.Files)
		}
	}
	// A directory the head has, ignored since: only the path named
	// changes (the model harness, seed 201: the whole directory went).
	snaptest.WriteFiles(t, root, map[string]string{"a/b/x": "x\n", "a/z.txt": "z\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, ".git/info/exclude"), "a\n")
	res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Paths: []string{"a/b/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Files.Deleted, []string{"a/b/x"}) || len(res.Files.Added)+len(res.Files.Modified) > 0 {
		t.Fatalf("edit-set of a/b/x under a newly ignored a/: %+v", res.Files)
	}
}

// M5 (model harness): a negated directory rule re-includes the directory,
// not what other rules ignore beneath it (go-git's matcher re-included
// it all, so the secret was captured and a rewind could delete it).
func TestNegatedDirectoryKeepsIgnoredBeneath(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "*.log\n!src/\n", "src/lib/debug.log": "secret\n", "src/a.go": "a\n"})
	res := checkpoint(t, r, snap.CheckpointOptions{})
	if slices.Contains(res.Files.Added, "src/lib/debug.log") {
		t.Fatalf("an ignored file under a re-included directory was captured: %v", res.Files.Added)
	}
	writeFile(t, filepath.Join(root, "src/main.go/z.txt"), "notes\n")
	writeFile(t, filepath.Join(root, ".gitignore"), "z.*\n!main.go\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil && !errors.Is(err, snap.ErrPartial) {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "src/main.go/z.txt")); err != nil || string(b) != "notes\n" {
		t.Fatalf("a rewind deleted a file git ignores: %q %v", b, err)
	}
}

// M3 (model harness): a rewind that creates a path the ignore rules in
// force ignore (the target has it) lists it as created, and its undo
// removes it again: the undo, finding it ignored under its target's rules,
// kept it, and was not exact. What changed since the rewind stays.
func TestUndoRemovesIgnoredPathsItsRewindCreated(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"x": "a\n", "f": "b\n", "build/src/y": "y\n", "build/src/z": "z\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "x\n", "build/.gitignore": "src/\n"})
	for _, p := range []string{"x", "build/src"} {
		os.RemoveAll(filepath.Join(root, p))
	}
	checkpoint(t, r, snap.CheckpointOptions{})
	before := listTree(t, root)
	want := []string{"build/src/", "build/src/y", "build/src/z", "x"}
	for _, dry := range []bool{true, false} {
		res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1", DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(res.Created)
		if !slices.Equal(res.Created, want) {
			t.Fatalf("dry run %v: created %v, want %v", dry, res.Created, want)
		}
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if after := listTree(t, root); after != before {
		t.Fatalf("undo is not exact:\nbefore %s\nafter  %s", before, after)
	}
	// Redone, then undone again after a created file changed: the
	// changed file stays, the rest goes.
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "build/src/z"), "mine\n")
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "build/src/z")); err != nil || string(b) != "mine\n" {
		t.Fatalf("undo removed a created file changed since: %q %v", b, err)
	}
	for _, p := range []string{"x", "build/src/y"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Fatalf("undo after redo left %s: %v", p, err)
		}
	}
}

// listTree lists every path under root but the store, with file contents.
func listTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if rel == ".snap" {
			return filepath.SkipDir
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %q; ", rel, data)
		return nil
	})
	return b.String()
}

// M8 (model harness): the dry run predicted removing a captured empty
// directory that holds an ignored one, which the rewind cannot remove;
// and an ignored directory already there was reported restored by every
// rewind.
func TestDryRunMatchesRewindForDirectories(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "f\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "src/build/out.o"), "o\n")
	writeFile(t, filepath.Join(root, ".git/info/exclude"), "**/build\n")
	if err := os.MkdirAll(filepath.Join(root, "e/build"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{}) // src/ and e/ captured empty
	dry, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dry.Deleted, res.Deleted) || !slices.Equal(dry.Restored, res.Restored) {
		t.Fatalf("dry run: deleted %v restored %v; rewind: deleted %v restored %v", dry.Deleted, dry.Restored, res.Deleted, res.Restored)
	}
	// Back: e/build is ignored now and already there.
	res, err = r.Rewind(ctx, snap.RewindOptions{Target: res.SafetyCheckpoint.String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Restored) != 0 {
		t.Fatalf("a rewind to what is on disk restored %v", res.Restored)
	}
}

// G16 (second adversarial pass): an edit-set checkpoint keeps the marks of
// the paths the parent could not read, so a rewind to it leaves such a
// file alone (it restored a stale version over the file on disk).
func TestEditSetKeepsUnreadableMarks(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("a", 500))
	writeFile(t, filepath.Join(root, "main.go"), "v1\n")
	checkpoint(t, r, snap.CheckpointOptions{})
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("b", 5000))
	checkpoint(t, r, snap.CheckpointOptions{MaxFileSize: 1024}) // big.bin skipped, its old version kept
	writeFile(t, filepath.Join(root, "main.go"), "v2\n")
	res := checkpoint(t, r, snap.CheckpointOptions{Paths: []string{"main.go"}})
	if len(res.Skipped) != 1 || res.Skipped[0].Path != "big.bin" || !res.Skipped[0].Kept {
		t.Fatalf("edit set skipped %+v, want big.bin carried", res.Skipped)
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "big.bin")); len(b) != 5000 {
		t.Fatalf("a rewind to the edit set wrote big.bin (%d bytes)", len(b))
	}
}

// G15, G21 (second adversarial pass): a transcript kept behind a symlink.
// A rewind to a checkpoint that records it absent removes the file the
// link leads to and keeps the link (it removed the link, and the undo put
// a regular file in its place); a rewind that puts it back through a
// dangling link creates the file the link names (it failed, exit 3, after
// a dry run that predicted success).
func TestSymlinkedTranscriptAbsentAndDangling(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.jsonl"), filepath.Join(dir, "link.jsonl")
	writeFile(t, real, `{"role":"user","content":"one"}`+"\n")
	if err := os.Symlink("real.jsonl", link); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "f"), "f\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, link)})
	os.Remove(real)
	checkpoint(t, r, snap.CheckpointOptions{}) // re-read from the link: absent
	writeFile(t, real, `{"role":"user","content":"two"}`+"\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is gone or replaced: %v", err)
	}
	if _, err := os.Lstat(real); !os.IsNotExist(err) {
		t.Fatalf("the transcript the link leads to is still there: %v", err)
	}
	// Dangling now: the dry run and the rewind agree, and the file is made.
	for _, dry := range []bool{true, false} {
		res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1", DryRun: dry})
		if err != nil || len(res.State) != 1 {
			t.Fatalf("dry run %v: %+v %v", dry, res, err)
		}
	}
	if b, err := os.ReadFile(real); err != nil || !strings.Contains(string(b), "one") {
		t.Fatalf("through the dangling link: %q %v", b, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	// Undo of the first rewind's undo chain: the second transcript comes back.
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(real); err != nil || !strings.Contains(string(b), "two") {
		t.Fatalf("undo did not give back the later transcript: %q %v", b, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("undo replaced the link: %v", err)
	}
}

// G26(k) (second adversarial pass): a state document whose source a
// rewind could never write back (inside .git or the store) is refused at
// checkpoint time; every later rewind failed on it.
func TestStateSourceInGitRefused(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	for _, p := range []string{filepath.Join(root, ".git", "config"), filepath.Join(r.StoreDir, "notes.txt")} {
		writeFile(t, p, "x\n")
		doc, err := snap.ReadStateDoc("g", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{State: []snap.StateDoc{doc}}); !errors.Is(err, snap.ErrUsage) {
			t.Fatalf("state source %s: %v", p, err)
		}
	}
}

// Model harness, seed 302: a path snap could not read when the target was
// checkpointed covers what lies beneath it whatever it is now. It was a
// file then and is a directory now: the undo deleted the directory's
// files, then the directory.
func TestKeptFileNowADirectory(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a/notes": "small\n", "f": "f\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	if err := r.ConfigSet(ctx, "capture.max-file-size", "100"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "a/notes"), strings.Repeat("big\n", 100)) // unreadable now: kept
	writeFile(t, filepath.Join(root, "f"), "f2\n")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@", Paths: []string{"a", "f"}}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "a/notes"))
	writeFile(t, filepath.Join(root, "a/notes/mine.txt"), "mine\n")
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a/notes/mine.txt")); err != nil || string(b) != "mine\n" {
		t.Fatalf("a directory where a kept file was: %q %v", b, err)
	}
}

// Model harness, seed 303: what a rewind creates in a directory that
// replaced a file is listed as created too, so the undo can put the file
// back (it failed: "a directory is in the way").
func TestUndoCreatedWhereAFileWas(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"src/b/y": "y\n", "f": "f\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	os.RemoveAll(filepath.Join(root, "src"))
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "b\n", "src": "a file now\n"})
	before := listTree(t, root)
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if after := listTree(t, root); after != before {
		t.Fatalf("undo is not exact:\nbefore %s\nafter  %s", before, after)
	}
}

// Model harness, seed 305: a directory the rules ignore is never removed
// to make room for a target's file, even an empty one (the undo could not
// give it back).
func TestIgnoredEmptyDirectoryNotReplaced(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"run.sh": "echo\n", "f": "f\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	os.Remove(filepath.Join(root, "run.sh"))
	if err := os.MkdirAll(filepath.Join(root, "run.sh", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".gitignore"), "run.sh\n")
	for _, dry := range []bool{true, false} {
		_, err := r.Rewind(ctx, snap.RewindOptions{Target: "@", DryRun: dry})
		if !errors.Is(err, snap.ErrPartial) {
			t.Fatalf("dry run %v: %v", dry, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "run.sh", "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("the ignored directory was removed: %v", err)
	}
}

// Model harness, seeds 304 and 305: a captured directory where the target
// has a file goes, with the empty directories it holds, unless one is
// ignored (it was removed with the rest); and the dry run predicts the
// replacement of a captured directory (it predicted a failure).
func TestDirectoryReplacedByFile(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"b": "file\n", "c": "file\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	for _, p := range []string{"b", "c"} {
		os.Remove(filepath.Join(root, p))
	}
	writeFile(t, filepath.Join(root, "b/x"), "x\n")
	for _, d := range []string{"c/src", "c/keep"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	writeFile(t, filepath.Join(root, ".gitignore"), "src/\n")
	dry, derr := r.Rewind(ctx, snap.RewindOptions{Target: "@", DryRun: true})
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"})
	if !errors.Is(err, snap.ErrPartial) || !errors.Is(derr, snap.ErrPartial) {
		t.Fatalf("rewind: %v; dry run: %v", err, derr)
	}
	if !slices.Equal(dry.Restored, res.Restored) || !slices.Contains(res.Restored, "b") {
		t.Fatalf("dry run restored %v, rewind %v", dry.Restored, res.Restored)
	}
	if fi, err := os.Stat(filepath.Join(root, "c/src")); err != nil || !fi.IsDir() {
		t.Fatalf("the ignored c/src was removed: %v", err)
	}
}

// Model harness, seed 305: the transcript moved (a new path for the same
// document). A rewind to a checkpoint that kept it at the old path records
// the head's copy in its safety checkpoint (it recorded the old path, so
// the live transcript was in no checkpoint, and the undo deleted it), and
// does not overwrite a different file at the old path.
func TestMovedTranscriptRewindAndUndo(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	dir := t.TempDir()
	old, live := filepath.Join(dir, "t.jsonl"), filepath.Join(root, "chat.jsonl")
	writeFile(t, filepath.Join(root, "f"), "f\n")
	writeFile(t, old, `{"role":"user","content":"old"}`+"\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, old)})
	writeFile(t, live, `{"role":"user","content":"live"}`+"\n")
	writeFile(t, filepath.Join(root, "f"), "f2\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, live)})
	writeFile(t, old, `{"role":"user","content":"old, continued"}`+"\n")
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1"})
	if !errors.Is(err, snap.ErrPartial) || len(res.Errors) != 1 || res.Errors[0].Path != old {
		t.Fatalf("rewind over a different file at the old path: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(old); !strings.Contains(string(b), "continued") {
		t.Fatalf("the file at the old path was overwritten: %q", b)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(live); err != nil || !strings.Contains(string(b), "live") {
		t.Fatalf("the live transcript after the undo: %q %v", b, err)
	}
}

// A rewind that writes the target's transcript at its old path, where
// nothing was (the session keeps it elsewhere now), lists it as created;
// the undo removes it again unless it changed since (model seed 308).
func TestUndoRemovesTranscriptItsRewindCreated(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	dir := t.TempDir()
	old, live := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "other.jsonl")
	writeFile(t, filepath.Join(root, "f"), "f\n")
	writeFile(t, old, `{"role":"user","content":"old"}`+"\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, old)})
	writeFile(t, live, `{"role":"user","content":"live"}`+"\n")
	writeFile(t, filepath.Join(root, "f"), "f2\n")
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, live)})
	os.Remove(old)
	for _, dry := range []bool{true, false} {
		res, err := r.Rewind(ctx, snap.RewindOptions{Target: "@~1", DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.State) != 1 || res.State[0].Path != old || !res.State[0].Created {
			t.Fatalf("dry run %v: state %+v, want %s listed as created", dry, res.State, old)
		}
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Fatalf("the undo left the transcript its rewind created: %v (%+v)", err, res.Rewind.State)
	}
	if b, err := os.ReadFile(live); err != nil || !strings.Contains(string(b), "live") {
		t.Fatalf("the live transcript after the undo: %q %v", b, err)
	}
	// Redone, the file changed since: the undo keeps it.
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	writeFile(t, old, `{"role":"user","content":"old, continued"}`+"\n")
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); !strings.Contains(string(b), "continued") {
		t.Fatalf("the undo removed a created transcript changed since: %q", b)
	}
}
