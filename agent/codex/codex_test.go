package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
	// A command that does more than apply the patch is a full capture.
	withRm, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "\nEOF\nrm -f old.txt"}})
	twoArgs, _ := json.Marshal(map[string]any{"command": []string{"sh", "-c", "rm -rf build", patch}})
	for _, in := range []string{`{"command":["bash","-lc","make test"]}`, `{}`, `not json`, string(withRm), string(twoArgs)} {
		if got, ok := codex.PatchPaths([]byte(in)); ok {
			t.Errorf("%s: paths %v from no patch", in, got)
		}
	}
}

// An apply_patch call between PreToolUse and PostToolUse: the pre-tool
// checkpoint examines only the patched files, and 'rewind msg:<id>' brings
// them back; a Bash call is a full capture.
func TestCodexHooks(t *testing.T) {
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
