package claudecode_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap/agent/agenttest"
	"github.com/snapcore-dev/snap/agent/claudecode"
)

// TestConformance runs the adapters' conformance suite on Claude Code's.
func TestConformance(t *testing.T) {
	agenttest.Run(t, claudecode.Adapter, agenttest.Fixtures{
		Payload: func(event, session, cwd, transcript string) []byte {
			b, _ := json.Marshal(map[string]any{"hook_event_name": event, "session_id": session, "cwd": cwd, "transcript_path": transcript})
			return b
		},
		Samples: func(cwd, transcript string) [][]byte {
			base := map[string]any{"session_id": "3f1c2a9e-7b0d-4e52-9a61-0c8d5e4b2f10", "transcript_path": transcript, "cwd": cwd, "permission_mode": "default"}
			var out [][]byte
			for _, extra := range []map[string]any{
				{"hook_event_name": "SessionStart", "source": "startup", "model": "claude-opus"},
				{"hook_event_name": "UserPromptSubmit", "prompt": "fix the bug\nplease"},
				{"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_01ABCDEF",
					"tool_input": map[string]any{"file_path": filepath.Join(cwd, "a.txt"), "old_string": "v1", "new_string": "v2", "replace_all": false}},
				{"hook_event_name": "PostToolUse", "tool_name": "NotebookEdit", "tool_use_id": "toolu_02",
					"tool_input": map[string]any{"notebook_path": filepath.Join(cwd, "n.ipynb")}, "tool_response": map[string]any{"ok": true}, "duration_ms": 12},
				{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_03", "tool_input": map[string]any{"command": "make", "description": "build"}},
				{"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "reviewer", "stop_hook_active": false},
				{"hook_event_name": "PreCompact", "trigger": "auto"},
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
		Replay: replayRealSessions,
	})
}
