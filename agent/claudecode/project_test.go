package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/claudecode"
)

func hook(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(fields)
	var stderr bytes.Buffer
	agent.Hook(context.Background(), bytes.NewReader(b), &stderr, agent.Options{}, claudecode.Parse)
	return stderr.String()
}

// An agent started in the home directory (or /) gets no store there: a
// store in ~ would make every project below it part of one big project.
func TestHookMakesNoStoreInHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("n\n"), 0o644)
	e := hook(t, map[string]any{"hook_event_name": "SessionStart", "session_id": "h", "cwd": home})
	if !strings.Contains(e, "not a project") {
		t.Fatalf("stderr %q", e)
	}
	if _, err := os.Stat(filepath.Join(home, ".snap")); err == nil {
		t.Fatal("a store was made in the home directory")
	}
}

// A git repository below a directory holding a store is a project of its
// own: its first event makes its own store, and nothing of it goes to the
// outer one (nor anything of the outer directory into its checkpoints).
func TestHookRepositoryBelowAStore(t *testing.T) {
	outer := t.TempDir()
	os.WriteFile(filepath.Join(outer, "other.txt"), []byte("another project\n"), 0o644)
	outerRepo, _, err := snap.Init(snap.Options{Dir: outer})
	if err != nil {
		t.Fatal(err)
	}
	outerRepo.Close()
	app := filepath.Join(outer, "projects", "app")
	os.MkdirAll(filepath.Join(app, ".git"), 0o755)
	os.MkdirAll(filepath.Join(app, "src"), 0o755)
	os.WriteFile(filepath.Join(app, "src", "a.go"), []byte("package a\n"), 0o644)
	if e := hook(t, map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "go", "session_id": "app1", "cwd": filepath.Join(app, "src")}); e != "" {
		t.Fatalf("stderr %q", e)
	}
	repo, err := snap.Open(snap.Options{Dir: app})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	if repo.Root != app {
		t.Fatalf("the event went to the store of %s, want %s", repo.Root, app)
	}
	head, err := repo.Resolve(context.Background(), "app1", "@")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := repo.Files(context.Background(), head, "")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range ls {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, " ") != "src/a.go" {
		t.Fatalf("checkpoint holds %v", paths)
	}
	o, _ := snap.Open(snap.Options{Dir: outer})
	defer o.Close()
	if l, _ := o.Log(context.Background(), snap.LogOptions{Session: "app1"}); len(l) != 0 {
		t.Fatalf("the outer store got %d checkpoints", len(l))
	}
}

// A transcript path that is not a regular file (a FIFO here: reading it
// would block) records the files without it, and says so.
func TestHookTranscriptNotRegular(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	fifo := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no fifo:", err)
	}
	e := hook(t, map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "p", "session_id": "f", "cwd": proj, "transcript_path": fifo})
	if !strings.Contains(e, "not a regular file") {
		t.Fatalf("stderr %q", e)
	}
	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	if l, _ := repo.Log(context.Background(), snap.LogOptions{Session: "f"}); len(l) != 1 {
		t.Fatalf("%d checkpoints, want the files recorded", len(l))
	}
}

// The project spelled through a symlink in file_path (macOS's /tmp is
// /private/tmp) is the same project: the hint applies.
func TestHookPathThroughSymlink(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	hook(t, map[string]any{"hook_event_name": "SessionStart", "session_id": "l", "cwd": proj})
	e := hook(t, map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_L", "session_id": "l", "cwd": proj,
		"tool_input": map[string]any{"file_path": filepath.Join(link, "a.txt")}})
	if e != "" {
		t.Fatalf("stderr %q", e)
	}
	repo, _ := snap.Open(snap.Options{Dir: proj})
	defer repo.Close()
	if _, err := repo.Resolve(context.Background(), "l", "msg:toolu_L"); err != nil {
		t.Fatal(err)
	}
}
