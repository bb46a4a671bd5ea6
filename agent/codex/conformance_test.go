package codex_test

import (
	"encoding/json"
	"testing"

	"github.com/snapcore-dev/snap/agent/agenttest"
	"github.com/snapcore-dev/snap/agent/codex"
)

// TestConformance runs the adapters' conformance suite on Codex CLI's.
func TestConformance(t *testing.T) {
	agenttest.Run(t, codex.Adapter, agenttest.Fixtures{
		Payload: func(event, session, cwd, transcript string) []byte {
			b, _ := json.Marshal(map[string]any{"hook_event_name": event, "session_id": session, "cwd": cwd, "transcript_path": transcript})
			return b
		},
		Samples: func(cwd, transcript string) [][]byte {
			base := map[string]any{"session_id": "019a-codex", "turn_id": "t1", "transcript_path": transcript, "cwd": cwd}
			patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n"
			var out [][]byte
			for _, extra := range []map[string]any{
				{"hook_event_name": "SessionStart", "source": "startup"},
				{"hook_event_name": "UserPromptSubmit", "prompt": "fix it"},
				{"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_use_id": "call_1", "tool_input": map[string]any{"patch": patch}},
				{"hook_event_name": "PostToolUse", "tool_name": "shell", "call_id": "call_2",
					"tool_input": map[string]any{"command": []string{"apply_patch", patch}, "workdir": "sub"}},
				{"hook_event_name": "PreToolUse", "tool_name": "shell", "call_id": "call_3",
					"tool_input": map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "EOF\n"}}},
				{"hook_event_name": "PreCompact"},
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
		Replay: replayCodexHooks,
	})
}
