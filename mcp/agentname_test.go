package mcp

import (
	"context"
	"testing"
)

// A checkpoint through the MCP server records the client's name as its
// agent, reduced to what a name may hold; a client that gives none is
// "mcp".
func TestAgentName(t *testing.T) {
	for in, want := range map[string]string{
		"claude-code": "claude-code", "Claude Code": "claude-code", "gemini-cli-mcp-client": "gemini-cli-mcp-client",
		"": "mcp", "../..": "mcp", "a/b\x00c": "abc", ".hidden": "hidden", "codex 1.0": "codex-1.0",
	} {
		ctx := context.WithValue(context.Background(), clientKey{}, in)
		if got := agentName(ctx); got != want {
			t.Errorf("agentName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := agentName(context.Background()); got != "mcp" {
		t.Errorf("no client name: %q", got)
	}
}
