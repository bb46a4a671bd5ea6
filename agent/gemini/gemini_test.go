package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/gemini"
)

// replayRealGeminiSession (the conformance suite's replay,
// TestConformance/replay) replays the real Gemini CLI session of
// ../shared/realdata as the hooks Gemini CLI would have run (SessionStart,
// BeforeAgent per user message, BeforeTool → the tool run → AfterTool per
// call, AfterAgent), its transcript (one JSON object, rewritten whole)
// growing message by message; write_file is applied, run_shell_command
// run in the project. Then it rewinds to before every call that changed
// files (msg:<tool call id>) and checks the files and the transcript.
func replayRealGeminiSession(t *testing.T) {
	src, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "realdata", "entire-cli_ab2b9748b105_gemini.json"))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("the real Gemini session is not here (%s): the replay needs it", src)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the replay runs the session's git commands: git is needed")
	}
	var session struct {
		SessionID string            `json:"sessionId"`
		Messages  []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &session); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	proj := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "u@example.com"}, {"config", "user.name", "u"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = proj
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(filepath.Join(proj, "docs"), 0o755)
	os.WriteFile(filepath.Join(proj, "docs", "color.md"), []byte("# Colors\n"), 0o644)
	conv := filepath.Join(t.TempDir(), "session.json")
	writeTranscript := func(n int) {
		b, _ := json.MarshalIndent(map[string]any{"sessionId": session.SessionID, "messages": session.Messages[:n]}, "", "  ")
		os.WriteFile(conv, b, 0o644)
	}
	hook := func(fields map[string]any) {
		t.Helper()
		p := map[string]any{"session_id": session.SessionID, "transcript_path": conv, "cwd": proj, "timestamp": "2026-01-15T00:00:00Z"}
		for k, v := range fields {
			p[k] = v
		}
		b, _ := json.Marshal(p)
		var stderr bytes.Buffer
		agent.Hook(ctx, bytes.NewReader(b), &stderr, agent.Options{}, gemini.Parse)
		if stderr.Len() > 0 {
			t.Fatalf("hook %s: %s", p["hook_event_name"], stderr.String())
		}
	}
	type before struct {
		id    string
		files map[string]string
		conv  []byte
	}
	var changed []before
	writeTranscript(0)
	hook(map[string]any{"hook_event_name": "SessionStart", "trigger": "startup"})
	calls := 0
	for i, raw := range session.Messages {
		writeTranscript(i + 1)
		var m struct {
			Type      string `json:"type"`
			Content   any    `json:"content"`
			ToolCalls []struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"toolCalls"`
		}
		json.Unmarshal(raw, &m)
		if m.Type == "user" {
			prompt, _ := m.Content.(string)
			hook(map[string]any{"hook_event_name": "BeforeAgent", "prompt": prompt})
		}
		for _, c := range m.ToolCalls {
			calls++
			var args struct {
				FilePath string `json:"file_path"`
				Content  string `json:"content"`
				Command  string `json:"command"`
			}
			json.Unmarshal(c.Args, &args)
			input := map[string]any{}
			json.Unmarshal(c.Args, &input)
			if args.FilePath != "" {
				input["file_path"] = filepath.Join(proj, args.FilePath)
			}
			hook(map[string]any{"hook_event_name": "BeforeTool", "tool_name": c.Name, "tool_call_id": c.ID, "tool_input": input})
			tc, _ := os.ReadFile(conv)
			b := before{c.ID, snapshot(proj), tc}
			switch c.Name {
			case "write_file":
				os.MkdirAll(filepath.Dir(filepath.Join(proj, args.FilePath)), 0o755)
				os.WriteFile(filepath.Join(proj, args.FilePath), []byte(args.Content), 0o644)
			case "run_shell_command":
				cmd := exec.Command("sh", "-c", args.Command)
				cmd.Dir = proj
				cmd.Run() // what it prints, or fails on, is the session's business
			}
			if !equal(b.files, snapshot(proj)) {
				changed = append(changed, b)
			}
			hook(map[string]any{"hook_event_name": "AfterTool", "tool_name": c.Name, "tool_call_id": c.ID, "tool_input": input})
		}
	}
	hook(map[string]any{"hook_event_name": "AfterAgent"})
	if calls < 5 || len(changed) < 2 {
		t.Fatalf("%d calls, %d changed files: the replay did not run", calls, len(changed))
	}
	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	for _, b := range changed {
		out := t.TempDir()
		if _, err := repo.Rewind(ctx, snap.RewindOptions{Session: session.SessionID, Target: "msg:" + b.id, StateOut: out}); err != nil {
			t.Fatalf("rewind msg:%s: %v", b.id, err)
		}
		if !equal(b.files, snapshot(proj)) {
			t.Fatalf("after rewind msg:%s the files differ from before the call", b.id)
		}
		if got, _ := os.ReadFile(filepath.Join(out, snap.ConversationDoc)); !bytes.Equal(got, b.conv) {
			t.Fatalf("after rewind msg:%s the transcript is %d bytes, want %d", b.id, len(got), len(b.conv))
		}
	}
	t.Logf("%d tool calls, %d changed files, each rewound exactly", calls, len(changed))
}

// snapshot reads every file of dir but .snap and .git.
func snapshot(dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".snap" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
