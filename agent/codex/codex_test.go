package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/codex"
)

func TestPatchPaths(t *testing.T) {
	patch := "*** Begin Patch\n*** Update File: src/login.rs\n@@\n-old\n+new\n*** Add File: docs/new.md\n+hello\n" +
		"*** Delete File: old.txt\n*** Update File: a.go\n*** Move to: b.go\n*** End Patch"
	want := []string{"src/login.rs", "docs/new.md", "old.txt", "a.go", "b.go"}
	for _, c := range []struct {
		name  string
		input any
	}{
		{"patch field", map[string]any{"patch": patch}},
		{"input field", map[string]any{"input": patch}},
		{"argv", map[string]any{"command": []string{"apply_patch", patch}}},
		{"command line", map[string]any{"command": patch}},
		{"heredoc", map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "\nEOF\n"}}},
	} {
		b, _ := json.Marshal(c.input)
		got, ok := codex.PatchPaths(b)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, ok, want)
		}
	}
	// A shell call's workdir: the patch's paths are relative to it (and it
	// to cwd when relative); absolute paths stay as they are.
	for _, c := range []struct {
		workdir string
		want    []string
	}{
		{"/p/sub", []string{"/p/sub/a.txt", "/abs/b.txt"}},
		{"sub/dir", []string{"sub/dir/a.txt", "/abs/b.txt"}},
		{"..", []string{"../a.txt", "/abs/b.txt"}},
		{"", []string{"a.txt", "/abs/b.txt"}},
	} {
		in, _ := json.Marshal(map[string]any{"command": []string{"apply_patch", "*** Begin Patch\n*** Update File: a.txt\n*** Add File: /abs/b.txt\n*** End Patch\n"}, "workdir": c.workdir})
		if got, ok := codex.PatchPaths(in); !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("workdir %q: %v %v, want %v", c.workdir, got, ok, c.want)
		}
	}
	// A command that does more than apply the patch is a full capture.
	withRm, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "\nEOF\nrm -f old.txt"}})
	twoArgs, _ := json.Marshal(map[string]any{"command": []string{"sh", "-c", "rm -rf build", patch}})
	for _, in := range []string{`{"command":["bash","-lc","make test"]}`, `{}`, `not json`, string(withRm), string(twoArgs)} {
		if got, ok := codex.PatchPaths([]byte(in)); ok {
			t.Errorf("%s: paths %v from no patch", in, got)
		}
	}
}

// replayCodexHooks (the conformance suite's replay, TestConformance/replay:
// no real Codex session is public, so payloads of its real shapes): an
// apply_patch call between PreToolUse and PostToolUse: the pre-tool
// checkpoint examines only the patched files, and 'rewind msg:<id>' brings
// them back; a Bash call is a full capture.
func replayCodexHooks(t *testing.T) {
	ctx := context.Background()
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.go"), []byte("package a // old\n"), 0o644)
	conv := filepath.Join(t.TempDir(), "rollout.jsonl")
	os.WriteFile(conv, []byte(`{"type":"session_meta"}`+"\n"), 0o644)
	hook := func(fields map[string]any) {
		t.Helper()
		p := map[string]any{"session_id": "019a-codex", "turn_id": "t1", "transcript_path": conv, "cwd": proj}
		for k, v := range fields {
			p[k] = v
		}
		b, _ := json.Marshal(p)
		var stderr bytes.Buffer
		agent.Hook(ctx, bytes.NewReader(b), &stderr, agent.Options{}, codex.Parse)
		if stderr.Len() > 0 {
			t.Fatalf("hook: %s", stderr.String())
		}
	}
	hook(map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	patch := "*** Begin Patch\n*** Update File: a.go\n@@\n-package a // old\n+package a // new\n*** End Patch"
	hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_use_id": "call_1", "tool_input": map[string]any{"patch": patch}})
	os.WriteFile(filepath.Join(proj, "a.go"), []byte("package a // new\n"), 0o644)
	hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "apply_patch", "tool_use_id": "call_1", "tool_input": map[string]any{"patch": patch}})
	hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "call_2", "tool_input": map[string]any{"command": "touch b"}})
	os.WriteFile(filepath.Join(proj, "b"), nil, 0o644)
	hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_2", "tool_input": map[string]any{"command": "touch b"}})
	hook(map[string]any{"hook_event_name": "Stop"})

	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	log, _ := repo.Log(ctx, snap.LogOptions{Session: "019a-codex"})
	if len(log) < 3 {
		t.Fatalf("log: %+v", log)
	}
	if _, err := repo.Rewind(ctx, snap.RewindOptions{Session: "019a-codex", Target: "msg:call_1", FilesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "a.go")); string(b) != "package a // old\n" {
		t.Fatalf("a.go after rewind msg:call_1: %q", b)
	}
	if _, err := os.Stat(filepath.Join(proj, "b")); err == nil {
		t.Fatal("b exists after the rewind to before it was created")
	}
}

// An apply_patch run through the shell tool with a workdir (the payload of
// the adversarial report's N5): the patch names sub/a.txt as "a.txt", and
// the hook examines sub/a.txt, so the post-tool checkpoint records the
// edit and 'rewind msg:ID' brings the old content back. A workdir outside
// the project makes the event a full capture.
func TestCodexShellWorkdir(t *testing.T) {
	ctx := context.Background()
	proj := t.TempDir()
	os.MkdirAll(filepath.Join(proj, "sub"), 0o755)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("root\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "sub", "a.txt"), []byte("sub-v1\n"), 0o644)
	var stderr bytes.Buffer
	hook := func(event, callID, workdir string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"session_id": "c1", "cwd": proj, "hook_event_name": event, "tool_name": "shell", "call_id": callID,
			"tool_input": map[string]any{"command": []string{"apply_patch", "*** Begin Patch\n*** Update File: a.txt\n@@\n-sub-v1\n+sub-v2\n*** End Patch\n"}, "workdir": workdir}})
		agent.Hook(ctx, bytes.NewReader(b), &stderr, agent.Options{}, codex.Parse)
	}
	hook("PreToolUse", "call_9", filepath.Join(proj, "sub"))
	os.WriteFile(filepath.Join(proj, "sub", "a.txt"), []byte("sub-v2\n"), 0o644)
	hook("PostToolUse", "call_9", filepath.Join(proj, "sub"))
	if stderr.Len() > 0 {
		t.Fatalf("hook: %s", stderr.String())
	}
	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	st, err := repo.Status(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean {
		t.Fatalf("after the post-tool event, status of c1 lists %+v: the edit was not recorded", st.Files)
	}
	if _, err := repo.Rewind(ctx, snap.RewindOptions{Session: "c1", Target: "msg:call_9", FilesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "sub", "a.txt")); string(b) != "sub-v1\n" {
		t.Fatalf("sub/a.txt after rewind msg:call_9: %q", b)
	}

	// A workdir outside the project: the whole tree is examined.
	outside := t.TempDir()
	hook("PreToolUse", "call_10", outside)
	os.WriteFile(filepath.Join(proj, "sub", "a.txt"), []byte("sub-v3\n"), 0o644)
	stderr.Reset()
	hook("PostToolUse", "call_10", outside)
	if !strings.Contains(stderr.String(), "whole tree examined") {
		t.Errorf("no full-capture warning: %q", stderr.String())
	}
	if st, _ := repo.Status(ctx, "c1"); st == nil || !st.Clean {
		t.Fatalf("after a post-tool event with a workdir outside the project: %+v", st)
	}
}
