package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapcore-dev/snap/mcp"
	"github.com/snapcore-dev/snap/snaptest"
)

// The agents' transcript directories are the ones the front-end passes
// (the CLI: those of the registered agent adapters), not a list of the
// server's own: a transcript there is accepted, one in a directory no
// agent keeps is not, and the refusal names the directories as ~/REL.
func TestTranscriptDirsFromOptions(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	repo, _ := snaptest.NewRepo(t)
	agentDir := filepath.Join(home, ".agent", "sessions")
	other := filepath.Join(home, ".claude", "projects") // no adapter passed it here
	for _, d := range []string{agentDir, other} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "t.jsonl"), []byte(`{"role":"user","content":"hi"}`+"\n"), 0o600)
	}
	cs := connect(t, mcp.New(repo, mcp.Options{Session: "c", TranscriptDirs: []string{agentDir}}))
	call := func(p string) *sdk.CallToolResult {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint", Arguments: map[string]any{"conversation_path": p}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(filepath.Join(agentDir, "t.jsonl")); res.IsError {
		t.Fatalf("a transcript in an agent's directory refused: %s", text(res))
	}
	res := call(filepath.Join(other, "t.jsonl"))
	if !res.IsError || !strings.Contains(text(res), "transcript directories (~/.agent/sessions)") {
		t.Fatalf("a transcript in no agent's directory: error %v: %s", res.IsError, text(res))
	}
}
