package conversation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realdataDir is /work/shared/realdata seen from the package directory
// (project root /work/main, shared material in /work/shared).
const realdataDir = "../../shared/realdata"

func realdata(t *testing.T, name string) []byte {
	t.Helper()
	if _, err := os.Stat(realdataDir); err != nil {
		t.Skipf("realdata not found at %s: skipping real-transcript tests", realdataDir)
	}
	b, err := os.ReadFile(filepath.Join(realdataDir, name))
	if err != nil {
		t.Fatalf("read real transcript: %v", err)
	}
	return b
}

// Facts below were checked by reading the files (see realdata/README.md).
func TestRealTranscripts(t *testing.T) {
	cases := []struct {
		file     string
		format   Format
		messages int
		roles    map[string]int
		calls    map[string]int // tool calls by name (only the names listed are checked)
	}{
		{
			// 98 lines: 1 prompt, 29 assistant API messages over 63 lines,
			// 28 tool results, 5 file-history-snapshot, 1 system.
			file: "entire-cli_f5e7d3c25b68_claude.jsonl", format: FormatJSONL, messages: 58,
			roles: map[string]int{"user": 1, "assistant": 29, "tool": 28},
			calls: map[string]int{"Edit": 12, "Write": 0, "Read": 11, "Bash": 3, "Grep": 2},
		},
		{
			// 375 lines: 3 prompts, 49 assistant API messages over 133 lines,
			// 55 tool results; progress, file-history-snapshot and system records.
			file: "entire-cli_8df6319ef9a6_claude.jsonl", format: FormatJSONL, messages: 107,
			roles: map[string]int{"user": 3, "assistant": 49, "tool": 55},
			calls: map[string]int{"Edit": 24, "Write": 1, "Read": 12, "Bash": 13, "Grep": 5},
		},
		{
			file: "entire-cli_ab2b9748b105_gemini.json", format: FormatJSONMessages, messages: 13,
			roles: map[string]int{"user": 1, "assistant": 11, "info": 1},
			calls: map[string]int{"write_file": 1, "run_shell_command": 6, "read_file": 2},
		},
		{
			// history: system prompt, issue, then 11 action/observation pairs.
			file: "swe-agent_marshmallow-1867_function_calling_replace.traj", format: FormatJSONMessages, messages: 24,
			roles: map[string]int{"system": 1, "user": 1, "assistant": 11, "tool": 11},
			calls: map[string]int{"create": 1, "edit": 2, "submit": 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data := realdata(t, tc.file)
			c := Parse(data)
			checkInvariants(t, data, c)
			if c.Format != tc.format {
				t.Errorf("Format = %q, want %q", c.Format, tc.format)
			}
			if len(c.Problems) != 0 {
				t.Errorf("unexpected Problems:\n%s", problemText(c))
			}
			if len(c.Messages) != tc.messages {
				t.Errorf("%d messages, want %d", len(c.Messages), tc.messages)
			}
			roles, calls := map[string]int{}, map[string]int{}
			for _, m := range c.Messages {
				roles[m.Role]++
				for _, call := range m.ToolCalls {
					calls[call.Name]++
				}
			}
			for r, n := range tc.roles {
				if roles[r] != n {
					t.Errorf("%d %q messages, want %d (all: %v)", roles[r], r, n, roles)
				}
			}
			for name, n := range tc.calls {
				if calls[name] != n {
					t.Errorf("%d %s calls, want %d (all: %v)", calls[name], name, n, calls)
				}
			}
			if c.Format == FormatJSONL { // Claude: merged assistant messages keep message.id
				assertUniqueAssistantIDs(t, c)
			}
			assertEditInputs(t, c)
		})
	}
}

// Every tool call of the Claude transcripts has its result in a later "tool"
// message, and merged assistant messages list their source lines in order.
func TestRealClaudeStructure(t *testing.T) {
	for _, name := range []string{"entire-cli_f5e7d3c25b68_claude.jsonl", "entire-cli_8df6319ef9a6_claude.jsonl"} {
		t.Run(name, func(t *testing.T) {
			c := Parse(realdata(t, name))
			pending := map[string]bool{}
			for _, m := range c.Messages {
				for i := 1; i < len(m.Lines); i++ {
					if m.Lines[i] <= m.Lines[i-1] {
						t.Errorf("message %d: Lines not increasing: %v", m.Index, m.Lines)
					}
				}
				for _, tc := range m.ToolCalls {
					pending[tc.ID] = true
				}
				for _, tr := range m.ToolResults {
					if !pending[tr.ToolUseID] {
						t.Errorf("message %d: result for unknown tool call %q", m.Index, tr.ToolUseID)
					}
					delete(pending, tr.ToolUseID)
				}
			}
			if len(pending) != 0 {
				t.Errorf("tool calls without results: %v", pending)
			}
		})
	}
}

// The first n lines of a real transcript (an earlier state of it) diff
// against the whole as a pure append.
func TestRealTranscriptGrowthIsAppend(t *testing.T) {
	data := realdata(t, "entire-cli_8df6319ef9a6_claude.jsonl")
	full := Parse(data)
	cut := 0
	for i, lines := 0, 0; i < len(data); i++ {
		if data[i] == '\n' {
			if lines++; lines == 200 {
				cut = i + 1
				break
			}
		}
	}
	early := Parse(data[:cut])
	d := Diff(early, full)
	// The last message of the early view may still grow (more blocks of the
	// same API message come later), so it may be the one place they differ.
	if d.Common < len(early.Messages)-1 || len(d.Removed) > 1 {
		t.Errorf("Common %d, removed %d, early has %d messages", d.Common, len(d.Removed), len(early.Messages))
	}
	if d.Common+len(d.Added) != len(full.Messages) {
		t.Errorf("Common %d + added %d != %d", d.Common, len(d.Added), len(full.Messages))
	}
}

// Compacting a real Claude Code session keeps its record chain whole:
// no parent that resolved before dangles after, and the walk back from the
// last record passes through the summary to the chain's start.
func TestRealCompactRawKeepsChain(t *testing.T) {
	for _, name := range []string{"entire-cli_f5e7d3c25b68_claude.jsonl", "entire-cli_8df6319ef9a6_claude.jsonl"} {
		t.Run(name, func(t *testing.T) {
			data := realdata(t, name)
			n := len(Parse(data).Messages)
			out, err := CompactRaw(data, []Span{{From: 2, To: n / 2, Summary: "first half done"}})
			if err != nil {
				t.Fatal(err)
			}
			type rec struct {
				UUID    string  `json:"uuid"`
				Parent  *string `json:"parentUuid"`
				Message struct {
					Content any `json:"content"`
				} `json:"message"`
			}
			records := func(doc []byte) (map[string]rec, rec, int) {
				byID := map[string]rec{}
				var last rec
				dangling := 0
				for _, l := range strings.Split(strings.TrimSpace(string(doc)), "\n") {
					var r rec
					if json.Unmarshal([]byte(l), &r) != nil || r.UUID == "" {
						continue
					}
					byID[r.UUID], last = r, r
				}
				for _, r := range byID {
					if r.Parent != nil && byID[*r.Parent].UUID == "" {
						dangling++
					}
				}
				return byID, last, dangling
			}
			_, _, before := records(data)
			byID, last, after := records(out)
			if after != before {
				t.Fatalf("%d records name a parent that is not in the file, %d before compaction", after, before)
			}
			sawSummary := false
			steps := 0
			for r, ok := last, true; ok && steps <= len(byID); steps++ {
				if r.Message.Content == "first half done" {
					sawSummary = true
				}
				if r.Parent == nil {
					break
				}
				r, ok = byID[*r.Parent]
			}
			if !sawSummary {
				t.Fatal("the walk back from the last record does not pass through the summary")
			}
		})
	}
}
