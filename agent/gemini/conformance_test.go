package gemini_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap/agent/agenttest"
	"github.com/snapcore-dev/snap/agent/gemini"
)

// TestConformance runs the adapters' conformance suite on Gemini CLI's.
func TestConformance(t *testing.T) {
	agenttest.Run(t, gemini.Adapter, agenttest.Fixtures{
		Payload: func(event, session, cwd, transcript string) []byte {
			b, _ := json.Marshal(map[string]any{"hook_event_name": event, "session_id": session, "cwd": cwd, "transcript_path": transcript})
			return b
		},
		Samples: func(cwd, transcript string) [][]byte {
			base := map[string]any{"session_id": "ab2b9748-b105", "transcript_path": transcript, "cwd": cwd, "timestamp": "2026-01-15T00:00:00Z"}
			var out [][]byte
			for _, extra := range []map[string]any{
				{"hook_event_name": "SessionStart", "trigger": "startup"},
				{"hook_event_name": "BeforeAgent", "prompt": "make the colors doc"},
				{"hook_event_name": "BeforeTool", "tool_name": "write_file", "tool_call_id": "c1",
					"tool_input": map[string]any{"file_path": filepath.Join(cwd, "docs", "color.md"), "content": "# Colors\n"}},
				{"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_call_id": "c2",
					"tool_input": map[string]any{"command": "git add -A", "description": "stage"}, "tool_response": map[string]any{"output": ""}},
				{"hook_event_name": "PreCompress", "trigger": "auto"},
			} {
				p := map[string]any{}
				for k, v := range base {
					p[k] = v
				}
				for k, v := range extra {
					p[k] = v
				}
				b, _ := json.Marshal(p)
				out = append(out, b)
			}
			return out
		},
		Replay: replayRealGeminiSession,
	})
}
