package snap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

func TestRewindScopes(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "conv.json")
	os.WriteFile(conv, []byte(`[{"role":"user","content":"v1"}]`), 0o644)
	snaptest.WriteFiles(t, root, map[string]string{"a": "a1", "b": "b1", "d/c": "c1"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	os.WriteFile(conv, []byte(`[{"role":"user","content":"v1"},{"role":"assistant","content":"v2"}]`), 0o644)
	snaptest.WriteFiles(t, root, map[string]string{"a": "a2", "b": "b2", "d/c": "c2"})
	checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})

	t.Run("path", func(t *testing.T) {
		res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), Paths: []string{"d"}})
		if err != nil {
			t.Fatal(err)
		}
		got := snaptest.Snapshot(t, root, snaptest.SkipStore)
		if got["a"] != "a2" || got["b"] != "b2" || got["d/c"] != "c1" || strings.Join(res.Restored, ",") != "d/c" {
			t.Fatalf("partial rewind: %v %+v", got, res)
		}
		if data, _ := os.ReadFile(conv); !strings.Contains(string(data), "v2") {
			t.Fatal("a --path rewind touched the conversation")
		}
		if _, err := r.Undo(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["d/c"] != "c2" {
			t.Fatalf("undo of partial rewind: %v", got)
		}
	})
	t.Run("conversation only", func(t *testing.T) {
		if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), ConversationOnly: true}); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(conv); strings.Contains(string(data), "v2") {
			t.Fatal("conversation not rewound")
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a"] != "a2" {
			t.Fatalf("files changed by --conversation-only: %v", got)
		}
		r.Undo(ctx, "")
		if data, _ := os.ReadFile(conv); !strings.Contains(string(data), "v2") {
			t.Fatal("undo did not bring the conversation back")
		}
	})
	t.Run("files only", func(t *testing.T) {
		if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), FilesOnly: true}); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(conv); !strings.Contains(string(data), "v2") {
			t.Fatal("--files-only rewound the conversation")
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a"] != "a1" || got["d/c"] != "c1" {
			t.Fatalf("files not rewound: %v", got)
		}
		r.Undo(ctx, "")
	})
	t.Run("state out", func(t *testing.T) {
		out := t.TempDir()
		res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), ConversationOnly: true, StateOut: out})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(out, "conversation"))
		if err != nil || strings.Contains(string(data), "v2") || len(res.State) != 1 {
			t.Fatalf("state-out: %q %v %+v", data, err, res.State)
		}
		if data, _ := os.ReadFile(conv); !strings.Contains(string(data), "v2") {
			t.Fatal("--state-out wrote to the source path")
		}
		r.Undo(ctx, "")
	})
	t.Run("unknown ref", func(t *testing.T) {
		for _, ref := range []string{"nolabel", "#99", "@~50", "msg:none", "abcdef123456"} {
			if _, err := r.Rewind(ctx, snap.RewindOptions{Target: ref}); !errors.Is(err, snap.ErrNoCheckpoint) {
				t.Errorf("%s: %v", ref, err)
			}
		}
	})
}

func TestStdinStateNeedsStateOut(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a": "1"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "context", Data: []byte("ctx v1")}}})
	checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "context", Data: []byte("ctx v2")}}})
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if a := snap.AdviceOf(err); !errors.Is(err, snap.ErrPartial) || len(res.Errors) != 1 || !slices.Contains(a, snap.Advice{Do: snap.DoStateOut}) {
		t.Fatalf("%v (advice %v) %+v", err, a, res)
	}
	var sb strings.Builder
	if err := r.CatState(ctx, c1.ID, "context", &sb); err != nil || sb.String() != "ctx v1" {
		t.Fatalf("cat --state: %q %v", sb.String(), err)
	}
}

func TestRefForms(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	var ids []objects.ID
	for i, s := range []string{"one", "two", "three"} {
		snaptest.WriteFiles(t, root, map[string]string{"f": s})
		ids = append(ids, checkpoint(t, r, snap.CheckpointOptions{MessageID: "msg" + s, Labels: labelsIf(i == 0, "first")}).ID)
	}
	if _, err := r.Label(ctx, "", "#2", "second"); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]objects.ID{
		"@": ids[2], "@~1": ids[1], "@~2": ids[0], "#1": ids[0], "#3": ids[2], "msg:msgtwo": ids[1],
		"first": ids[0], "second": ids[1], ids[1].String(): ids[1], ids[2].String()[:10]: ids[2],
	} {
		got, err := r.Resolve(ctx, "", ref)
		if err != nil || got != want {
			t.Errorf("%s → %v, %v; want %v", ref, got.Short(), err, want.Short())
		}
	}
	if _, err := r.Resolve(ctx, "", "#0"); !errors.Is(err, snap.ErrUsage) {
		t.Errorf("#0: %v", err)
	}
	// Undo of the label removes it; undo of a checkpoint moves the head back.
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve(ctx, "", "second"); !errors.Is(err, snap.ErrNoCheckpoint) {
		t.Errorf("label survived its undo: %v", err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if head, _ := r.Resolve(ctx, "", "@"); head != ids[1] {
		t.Errorf("undo of a checkpoint left the head at %v", head.Short())
	}
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if head, _ := r.Resolve(ctx, "", "@"); head != ids[2] {
		t.Errorf("redo left the head at %v", head.Short())
	}
}

func labelsIf(ok bool, l string) []string {
	if ok {
		return []string{l}
	}
	return nil
}

// TestStatCacheAvoidsRereads: unchanged files are not read again; changed
// ones (even with the same size) are.
func TestStatCacheAvoidsRereads(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	files := map[string]string{}
	for i := 0; i < 50; i++ {
		files[filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i))] = strings.Repeat("y", i)
	}
	snaptest.WriteFiles(t, root, files)
	old := time.Now().Add(-time.Hour)
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		os.Chtimes(p, old, old)
		return nil
	})
	time.Sleep(100 * time.Millisecond) // past the racy margin of the files' ctimes
	first := checkpoint(t, r, snap.CheckpointOptions{})
	if first.Stats.Files != 50 {
		t.Fatalf("files %d", first.Stats.Files)
	}
	st, err := r.Status(ctx, "")
	if err != nil || !st.Clean {
		t.Fatalf("%+v %v", st, err)
	}
	res, err := r.CaptureStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 0 {
		t.Fatalf("no-change capture read %d files", res.Read)
	}
	// Same size, new content, mtime restored: ctime still changes.
	p := filepath.Join(root, "d", "b"+strings.Repeat("x", 1))
	os.WriteFile(p, []byte("z"), 0o644)
	os.Chtimes(p, old, old)
	second := checkpoint(t, r, snap.CheckpointOptions{})
	if len(second.Files.Modified) != 1 {
		t.Fatalf("same-size edit missed: %+v", second.Files)
	}
}

// TestEditSetCheckpoint: --paths examines only the named paths; a later full
// checkpoint catches what the hint missed.
func TestEditSetCheckpoint(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a/x": "1", "a/y": "1", "b/z": "1", ".gitignore": "*.o\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"a/x": "2", "b/z": "2", "a/new": "n", "a/obj.o": "ignored"})
	os.Remove(filepath.Join(root, "a/y"))
	hint := checkpoint(t, r, snap.CheckpointOptions{Paths: []string{"a/x", filepath.Join(root, "a/y"), "a/obj.o", "a/missing"}})
	if strings.Join(hint.Files.Modified, ",") != "a/x" || strings.Join(hint.Files.Deleted, ",") != "a/y" || len(hint.Files.Added) != 0 {
		t.Fatalf("edit-set checkpoint: %+v", hint.Files)
	}
	if hint.Stats.Files != 3 {
		t.Fatalf("derived file count %d", hint.Stats.Files)
	}
	full := checkpoint(t, r, snap.CheckpointOptions{})
	if strings.Join(full.Files.Modified, ",") != "b/z" || strings.Join(full.Files.Added, ",") != "a/new" {
		t.Fatalf("full checkpoint after hint: %+v", full.Files)
	}
	// A directory path captures the whole directory.
	snaptest.WriteFiles(t, root, map[string]string{"b/z": "3", "b/w": "w"})
	d := checkpoint(t, r, snap.CheckpointOptions{Paths: []string{"b"}})
	if strings.Join(d.Files.Modified, ",") != "b/z" || strings.Join(d.Files.Added, ",") != "b/w" {
		t.Fatalf("directory hint: %+v", d.Files)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Paths: []string{"../outside"}}); err == nil {
		t.Fatal("a path outside the project was accepted")
	}
}

// A rewind never touches the project's .git, a nested repository's .git or
// ignored files, even when it deletes the directory around them.
func TestRewindLeavesGitAndIgnoredAlone(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a", ".git/config": "[core]\n", ".gitignore": "*.log\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{
		"vendor/lib/lib.go": "package lib\n", "vendor/lib/.git/HEAD": "ref: refs/heads/main\n",
		"gen/out.txt": "generated", "gen/run.log": "ignored log",
	})
	checkpoint(t, r, snap.CheckpointOptions{})
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Deleted, ",") != "gen/out.txt,vendor/lib/lib.go" {
		t.Fatalf("deleted %v", res.Deleted)
	}
	got := snaptest.Snapshot(t, root, func(rel string) bool { return rel == ".snap" })
	want := map[string]string{"a.txt": "a", ".git/config": "[core]\n", ".gitignore": "*.log\n",
		"vendor/lib/.git/HEAD": "ref: refs/heads/main\n", "gen/run.log": "ignored log"}
	if d := snaptest.Diff(want, got); d != "" {
		t.Fatalf("after rewind:\n%s", d)
	}
}

// A stat-cache entry whose content the store no longer holds (here: its
// pack was lost) is not trusted: the file is read and stored again, so a new
// checkpoint never names missing content.
func TestStatCacheRereadsMissingContent(t *testing.T) {
	root := t.TempDir()
	r, _, err := snap.Init(snap.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snaptest.WriteFiles(t, root, map[string]string{"keep.txt": "same content throughout"})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "keep.txt"), old, old)
	checkpoint(t, r, snap.CheckpointOptions{})
	packs, _ := filepath.Glob(filepath.Join(r.StoreDir, "packs", "*.pack"))
	for _, p := range packs {
		os.Remove(p)
	}
	os.RemoveAll(filepath.Join(r.StoreDir, "refs", "sessions"))
	r.Objects().Reload()
	res := checkpoint(t, r, snap.CheckpointOptions{})
	var sb strings.Builder
	if err := r.Cat(ctx, res.ID, "keep.txt", &sb); err != nil || sb.String() != "same content throughout" {
		t.Fatalf("keep.txt after its content was lost: %q, %v", sb.String(), err)
	}
}

// A redo refused because a label it moves has moved since moves no ref:
// the session head stays where it was (model harness M9).
func TestRefusedRedoMovesNothing(t *testing.T) {
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "f"), "a\n")
	checkpoint(t, r, snap.CheckpointOptions{Labels: []string{"l2"}})
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	before, err := r.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, r, snap.CheckpointOptions{Session: "s2", Labels: []string{"l2"}})
	if _, err := r.Redo(ctx, ""); err == nil {
		t.Fatal("the redo succeeded although l2 moved")
	}
	after, err := r.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := func(list []snap.SessionInfo) string {
		for _, s := range list {
			if s.Name == snap.DefaultSession {
				return s.Head.String()
			}
		}
		return "none"
	}
	if head(after) != head(before) {
		t.Fatalf("the refused redo moved the head of the default session: %s, was %s", head(after), head(before))
	}
}
