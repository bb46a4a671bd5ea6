package snap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

var ctx = context.Background()

func checkpoint(t *testing.T, r *snap.Repo, o snap.CheckpointOptions) *snap.CheckpointResult {
	t.Helper()
	res, err := r.Checkpoint(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCheckpointCapturesTreeRules(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{
		"main.go":                "package main\n",
		"empty":                  "",
		"bin/run.sh*":            "#!/bin/sh\necho hi\n",
		"link":                   "->main.go",
		"dangling":               "->does/not/exist",
		".gitignore":             "build/\n*.log\n",
		"build/out.bin":          "artefact",
		"app.log":                "log",
		"sub/.gitignore":         "secret.txt\n!keep.log\n",
		"sub/secret.txt":         "s",
		"sub/keep.log":           "kept by negation",
		"sub/deep/x.txt":         "x",
		".snapignore":            "scratch/\n",
		"scratch/tmp":            "t",
		"vendor/lib/.git/HEAD":   "ref: refs/heads/main\n",
		"vendor/lib/lib.go":      "package lib\n",
		".git/config":            "[core]\n",
		".git/info/exclude":      "excluded.txt\n",
		"excluded.txt":           "e",
		"big.bin":                strings.Repeat("b", 2000),
		"emptydir/.placeholder2": "",
	})
	os.Remove(filepath.Join(root, "emptydir/.placeholder2"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := checkpoint(t, r, snap.CheckpointOptions{MaxFileSize: 1000})
	// An empty directory is captured too (F18); it is not a file.
	want := []string{".gitignore", ".snapignore", "bin/run.sh", "dangling", "empty", "emptydir/", "link", "main.go", "sub/.gitignore", "sub/deep/x.txt", "sub/keep.log", "vendor/lib/lib.go"}
	if got := strings.Join(res.Files.Added, " "); got != strings.Join(want, " ") {
		t.Fatalf("captured:\n got %s\nwant %s", got, strings.Join(want, " "))
	}
	skipped := map[string]string{}
	for _, s := range res.Skipped {
		skipped[s.Path] = s.Reason
	}
	if !strings.Contains(skipped["big.bin"], "max-file-size") || !strings.Contains(skipped["fifo"], "not a regular file") || len(skipped) != 2 {
		t.Fatalf("skipped = %v", res.Skipped)
	}
	var sb strings.Builder
	if err := r.Cat(ctx, mustResolve(t, r, "", "@"), "link", &sb); err != nil || sb.String() != "main.go" {
		t.Fatalf("symlink stored as %q, %v", sb.String(), err)
	}
	show, err := r.Show(ctx, mustResolve(t, r, "", "@"))
	if err != nil {
		t.Fatal(err)
	}
	if show.Stats.Files != len(want)-1 {
		t.Fatalf("stats %+v", show.Stats)
	}
}

func TestRewindUndoRedoRoundTrip(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "transcript.jsonl")
	line := func(role, text string) string {
		return `{"type":"` + role + `","message":{"role":"` + role + `","content":"` + text + `"}}` + "\n"
	}
	os.WriteFile(conv, []byte(line("user", "hello")), 0o644)
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "one\n", "dir/b.txt": "bee\n", "run.sh*": "#!/bin/sh\n", ".gitignore": "*.tmp\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	snap1 := snaptest.Snapshot(t, root, snaptest.SkipStore)

	// Step 2: edit, add, delete, change mode, symlink; the transcript grows.
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "two\n", "new/c.txt": "sea\n", "run.sh": "#!/bin/sh\n", "l": "->a.txt"})
	os.Remove(filepath.Join(root, "dir/b.txt"))
	appendFile(t, conv, line("assistant", "edited a.txt"))
	c2 := checkpoint(t, r, snap.CheckpointOptions{MessageID: "m2", State: convDoc(t, conv)})
	if len(c2.Files.Added) != 2 || len(c2.Files.Modified) != 2 || len(c2.Files.Deleted) != 1 {
		t.Fatalf("files %+v", c2.Files)
	}
	if c2.Stats.Messages != 2 || c1.Stats.Messages != 1 {
		t.Fatalf("messages %d %d", c1.Stats.Messages, c2.Stats.Messages)
	}
	convAt2, _ := os.ReadFile(conv)

	// Uncheckpointed work: an edit, a new file, an ignored file, conversation.
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "three, not checkpointed\n", "fresh.txt": "new file\n", "x.tmp": "ignored\n"})
	appendFile(t, conv, line("user", "not checkpointed"))
	before := snaptest.Snapshot(t, root, snaptest.SkipStore)
	convBefore, _ := os.ReadFile(conv)

	// Dry run changes nothing.
	dry, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()[:8], DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.SafetyCheckpoint != nil || len(dry.Restored) == 0 {
		t.Fatalf("dry run %+v", dry)
	}
	if d := snaptest.Diff(before, snaptest.Snapshot(t, root, snaptest.SkipStore)); d != "" {
		t.Fatalf("dry run changed the tree:\n%s", d)
	}

	rw, err := r.Rewind(ctx, snap.RewindOptions{Target: "#1"})
	if err != nil {
		t.Fatal(err)
	}
	if rw.SafetyCheckpoint == nil || *rw.SafetyCheckpoint == c2.ID {
		t.Fatalf("expected a new safety checkpoint, got %v", rw.SafetyCheckpoint)
	}
	after := snaptest.Snapshot(t, root, snaptest.SkipStore)
	want := copyMap(snap1)
	want["x.tmp"] = "ignored\n" // ignored files are never touched
	if d := snaptest.Diff(want, after); d != "" {
		t.Fatalf("after rewind the tree differs from #1:\n%s", d)
	}
	if got, _ := os.ReadFile(conv); string(got) != line("user", "hello") {
		t.Fatalf("conversation not rewound: %q", got)
	}
	st, err := r.Status(ctx, "")
	if err != nil || !st.Clean {
		t.Fatalf("status after rewind: %+v %v", st, err)
	}

	// Undo puts everything back, uncheckpointed work included.
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if d := snaptest.Diff(before, snaptest.Snapshot(t, root, snaptest.SkipStore)); d != "" {
		t.Fatalf("undo did not restore the tree:\n%s", d)
	}
	if got, _ := os.ReadFile(conv); string(got) != string(convBefore) {
		t.Fatalf("undo did not restore the conversation: %q", got)
	}
	// Redo re-applies the rewind; the tree is exactly the first safety
	// checkpoint, so no new one is taken.
	redo, err := r.Redo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if redo.Rewind.SafetyCreated || *redo.Rewind.SafetyCheckpoint != *rw.SafetyCheckpoint {
		t.Fatalf("redo took a new safety checkpoint: %+v", redo.Rewind)
	}
	if d := snaptest.Diff(want, snaptest.Snapshot(t, root, snaptest.SkipStore)); d != "" {
		t.Fatalf("redo differs from #1:\n%s", d)
	}
	// The log still shows c2 (abandoned) and the safety checkpoint.
	log, err := r.Log(ctx, snap.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]snap.LogEntry{}
	for _, e := range log {
		found[e.ID.String()] = e
	}
	if e, ok := found[c2.ID.String()]; !ok || !e.Abandoned {
		t.Fatalf("c2 not listed as abandoned: %+v", log)
	}
	if e, ok := found[c1.ID.String()]; !ok || !e.Head || e.Seq != 1 {
		t.Fatalf("c1 not head #1: %+v", log)
	}
	// Rewind forward to c2 by message id: its conversation comes back.
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "msg:m2"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conv); string(got) != string(convAt2) {
		t.Fatalf("conversation at m2: %q", got)
	}
}

func convDoc(t *testing.T, path string) []snap.StateDoc {
	t.Helper()
	d, err := snap.ReadStateDoc(snap.ConversationDoc, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []snap.StateDoc{d}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func copyMap(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

var _ = errors.Is
var _ = time.Now

// mustResolve resolves ref in session of r.
func mustResolve(t testing.TB, r *snap.Repo, session, ref string) objects.ID {
	t.Helper()
	id, err := r.Resolve(ctx, session, ref)
	if err != nil {
		t.Fatalf("resolve %q: %v", ref, err)
	}
	return id
}
