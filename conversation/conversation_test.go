package conversation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const fixtureDir = "../testdata/conversation"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// checkInvariants asserts what must hold for every view.
func checkInvariants(t testing.TB, data []byte, c *Conversation) {
	t.Helper()
	if c == nil {
		t.Fatal("Parse returned nil")
	}
	if c.Messages == nil {
		t.Error("Messages is nil, want an empty slice")
	}
	for i, m := range c.Messages {
		if m.Index != i {
			t.Errorf("message %d has Index %d", i, m.Index)
		}
		if m.Role == "" {
			t.Errorf("message %d has no role", i)
		}
		for _, tc := range m.ToolCalls {
			if len(tc.Input) > 0 && !json.Valid(tc.Input) {
				t.Errorf("message %d: tool call %q input is not valid JSON: %s", i, tc.Name, tc.Input)
			}
		}
	}
	for _, p := range c.Problems {
		if strings.Contains(p.Message, "internal error") {
			t.Errorf("Parse recovered from a panic: %s", p.Message)
		}
	}
	if c.Format == FormatUnknown && len(c.Problems) == 0 {
		t.Error("unknown format without a Problem explaining why")
	}
	if n := Count(data); n != len(c.Messages) {
		t.Errorf("Count = %d, len(Parse().Messages) = %d", n, len(c.Messages))
	}
	if _, err := json.Marshal(c); err != nil {
		t.Errorf("view does not marshal to JSON: %v", err)
	}
}

func roles(c *Conversation) []string {
	r := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		r[i] = m.Role
	}
	return r
}

func problemText(c *Conversation) string {
	var b strings.Builder
	for _, p := range c.Problems {
		b.WriteString(p.Message)
		b.WriteString("\n")
	}
	return b.String()
}

// parseCase is a document of TestParse and what its view must be.
type parseCase struct {
	name         string
	data         string
	file         string
	format       Format
	roles        []string
	problems     int      // exact number of Problems, -1 for "at least one"
	problemLines []int    // Lines of the Problems, in order, when set
	problemHas   []string // substrings of the Problems' text
	check        func(t *testing.T, c *Conversation)
}

// parseCases are TestParse's documents (ParsePage and CountReader are
// checked against Parse and Count on them too).
func parseCases() []parseCase {
	type tc = parseCase
	return []tc{
		// Unknown and empty.
		{name: "empty", data: "", format: FormatUnknown, problems: 1, problemHas: []string{"empty document"}},
		{name: "whitespace only", data: " \n\t\r\n", format: FormatUnknown, problems: 1},
		{name: "BOM only", data: "\xef\xbb\xbf", format: FormatUnknown, problems: 1},
		{name: "plain text", data: "hello world\nthis is not json\n", format: FormatUnknown, problems: 1,
			problemHas: []string{"not a JSON document", `"hello world`}},
		{name: "log line starting with bracket", data: "[INFO] starting\n[INFO] done\n", format: FormatUnknown, problems: 1},
		{name: "json number", data: "42", format: FormatUnknown, problems: 1},
		{name: "json string", data: `"hi"`, format: FormatUnknown, problems: 1},
		{name: "object without messages", data: `{"foo": 1, "bar": [1]}`, format: FormatUnknown, problems: 1,
			problemHas: []string{"without a messages"}},
		{name: "broken multi-line text with braces", data: "{\n  not json at all\n}\n", format: FormatUnknown, problems: 1,
			problemHas: []string{"invalid JSON object"}},

		// JSON arrays.
		{name: "openai array", file: "openai_array.json", format: FormatJSONArray,
			roles: []string{"system", "user", "assistant", "tool", "assistant"}, problems: 0,
			check: func(t *testing.T, c *Conversation) {
				tcall := c.Messages[2].ToolCalls
				if len(tcall) != 1 || tcall[0].ID != "call_1" || tcall[0].Name != "edit_file" ||
					string(tcall[0].Input) != `{"path":"main.go","old":"foo","new":"bar"}` {
					t.Errorf("tool call = %+v (input %s)", tcall, tcall[0].Input)
				}
				tr := c.Messages[3].ToolResults
				if c.Messages[3].Text != "" || len(tr) != 1 || tr[0] != (ToolResult{ToolUseID: "call_1", Content: "ok"}) {
					t.Errorf("tool message = %+v", c.Messages[3])
				}
				if c.Messages[4].Text != "Renamed foo to bar." {
					t.Errorf("text from parts = %q", c.Messages[4].Text)
				}
			}},
		{name: "anthropic array", file: "anthropic_array.json", format: FormatJSONArray,
			roles: []string{"user", "assistant", "tool", "assistant", "user", "assistant"}, problems: 0,
			check: func(t *testing.T, c *Conversation) {
				a := c.Messages[1]
				if a.Text != "Let me fix it." {
					t.Errorf("assistant text = %q (thinking must be excluded)", a.Text)
				}
				if len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "Edit" || a.ToolCalls[0].ID != "toolu_1" {
					t.Fatalf("tool calls = %+v", a.ToolCalls)
				}
				var in struct {
					FilePath string `json:"file_path"`
				}
				if err := json.Unmarshal(a.ToolCalls[0].Input, &in); err != nil || in.FilePath != "README.md" {
					t.Errorf("Edit input = %s", a.ToolCalls[0].Input)
				}
				if got := c.Messages[2].ToolResults; len(got) != 1 || got[0].Content != "The file README.md has been updated." {
					t.Errorf("flattened tool result = %+v", got)
				}
				u := c.Messages[4]
				if u.Text != "Tests fail, please check." || len(u.ToolResults) != 1 || !u.ToolResults[0].IsError {
					t.Errorf("mixed user message = %+v", u)
				}
			}},
		{name: "gemini api contents", format: FormatJSONArray, roles: []string{"user", "assistant", "tool"}, problems: 0,
			data: `[{"role":"user","parts":[{"text":"list files"}]},
			        {"role":"model","parts":[{"text":"Listing."},{"functionCall":{"name":"ls","args":{"dir":"."}}}]},
			        {"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"output":"a.go"}}}]}]`,
			check: func(t *testing.T, c *Conversation) {
				if got := c.Messages[1].ToolCalls; len(got) != 1 || got[0].Name != "ls" || string(got[0].Input) != `{"dir":"."}` {
					t.Errorf("functionCall = %+v", got)
				}
				if got := c.Messages[2].ToolResults; len(got) != 1 || got[0].Content != "a.go" {
					t.Errorf("functionResponse = %+v", got)
				}
			}},
		{name: "empty array", data: "[]", format: FormatJSONArray, roles: []string{}, problems: 0},
		{name: "array with non-object elements", data: `[{"role":"user","content":"a"}, "stray", 3, null, {"role":"assistant","content":"b"}]`,
			format: FormatJSONArray, roles: []string{"user", "assistant"}, problems: 3,
			problemHas: []string{"element 1 of the array is a string", "element 2 of the array is a number", "element 3 of the array is null"}},
		{name: "truncated array", data: `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","cont`,
			format: FormatJSONArray, roles: []string{"user", "assistant"}, problems: 1,
			problemHas: []string{"truncated", "2 element(s)"}},
		{name: "legacy openai function_call", format: FormatJSONArray, roles: []string{"assistant", "tool"}, problems: 0,
			data: `[{"role":"assistant","content":null,"function_call":{"name":"run","arguments":"not json"}},{"role":"function","name":"run","content":"done"}]`,
			check: func(t *testing.T, c *Conversation) {
				if got := c.Messages[0].ToolCalls; len(got) != 1 || got[0].Name != "run" || string(got[0].Input) != `"not json"` {
					t.Errorf("function_call = %+v", got)
				}
			}},
		{name: "odd field types", format: FormatJSONArray, roles: []string{"user", "unknown", "tool"}, problems: 0,
			data: `[{"role":"user","content":["plain string part", 7, {"type":"text","text":"block"}], "timestamp": 12},
			        {"role":5,"content":true},
			        {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":"yes"}]}]`,
			check: func(t *testing.T, c *Conversation) {
				if c.Messages[0].Text != "plain string part\nblock" {
					t.Errorf("text = %q", c.Messages[0].Text)
				}
				if c.Messages[1].Text != "true" {
					t.Errorf("boolean content = %q", c.Messages[1].Text)
				}
				if got := c.Messages[2].ToolResults; len(got) != 1 || got[0].ToolUseID != "t1" || got[0].Content != "x" {
					t.Errorf("tool result = %+v", got)
				}
			}},

		// Objects with a messages array.
		{name: "gemini session", file: "gemini_ab2b9748b105_session.json", format: FormatJSONMessages, problems: 0,
			check: func(t *testing.T, c *Conversation) {
				if len(c.Messages) != 13 {
					t.Fatalf("got %d messages, want 13", len(c.Messages))
				}
				if c.Messages[0].Role != "user" || c.Messages[1].Role != "assistant" || c.Messages[5].Role != "info" {
					t.Errorf("roles = %v", roles(c))
				}
				calls := map[string]int{}
				for _, m := range c.Messages {
					for _, tc := range m.ToolCalls {
						calls[tc.Name]++
					}
				}
				if calls["write_file"] != 1 || calls["run_shell_command"] != 6 {
					t.Errorf("tool calls = %v, want 1 write_file and 6 run_shell_command", calls)
				}
				m := c.Messages[1]
				if len(m.ToolResults) != 1 || m.ToolResults[0].ToolUseID != m.ToolCalls[0].ID ||
					!strings.HasPrefix(m.ToolResults[0].Content, "Successfully created") {
					t.Errorf("gemini tool result = %+v", m.ToolResults)
				}
				if m.Timestamp != "2026-01-15T20:51:52.837Z" || m.ID != "98b30b64-9492-42d4-bee3-0503a112fa53" {
					t.Errorf("id/timestamp = %q %q", m.ID, m.Timestamp)
				}
			}},
		{name: "pretty-printed object in a jsonl file", file: "pretty_object.jsonl", format: FormatJSONMessages,
			roles: []string{"user", "assistant"}, problems: 0},
		{name: "api request body with system", format: FormatJSONMessages, roles: []string{"system", "user"}, problems: 0,
			data: `{"model":"m","system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":"hi"}]}`,
			check: func(t *testing.T, c *Conversation) {
				if c.Messages[0].Text != "Be brief." {
					t.Errorf("system text = %q", c.Messages[0].Text)
				}
			}},
		{name: "empty messages array", data: `{"messages": []}`, format: FormatJSONMessages, roles: []string{}, problems: 0},
		{name: "history fallback", format: FormatJSONMessages, roles: []string{"system", "assistant", "tool"}, problems: 0,
			data: `{"trajectory":[{"action":"ls"}],"history":[{"role":"system","content":"sys"},
			  {"role":"assistant","content":"look","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
			  {"role":"tool","content":"a.py","tool_call_ids":["c1"]}]}`,
			check: func(t *testing.T, c *Conversation) {
				if got := c.Messages[2].ToolResults; len(got) != 1 || got[0].ToolUseID != "c1" || got[0].Content != "a.py" {
					t.Errorf("tool result = %+v", got)
				}
			}},
		{name: "trajectory steps", format: FormatJSONMessages, roles: []string{"assistant", "assistant"}, problems: 0,
			data: `{"trajectory":[{"response":"Let me look.","thought":"t","action":"ls -F","observation":"a.py\n"},{"thought":"done","action":"submit","observation":""}]}`,
			check: func(t *testing.T, c *Conversation) {
				m := c.Messages[0]
				if m.Text != "Let me look." || len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Input) != `"ls -F"` ||
					len(m.ToolResults) != 1 || m.ToolResults[0].Content != "a.py\n" {
					t.Errorf("step = %+v", m)
				}
				if c.Messages[1].Text != "done" {
					t.Errorf("thought fallback = %q", c.Messages[1].Text)
				}
			}},
		{name: "truncated gemini session", format: FormatJSONMessages, roles: []string{"user", "assistant"}, problems: 1,
			data:       "{\n  \"sessionId\": \"s\",\n  \"messages\": [\n    {\"type\": \"user\", \"content\": \"a\"},\n    {\"type\": \"gemini\", \"content\": \"b\"},\n    {\"type\": \"gem",
			problemHas: []string{`"messages"`, "truncated"}},

		// JSONL.
		{name: "broken jsonl", file: "broken.jsonl", format: FormatJSONL, roles: []string{"user", "assistant", "tool"},
			problems: 5, problemLines: []int{3, 4, 7, 9, 10},
			problemHas: []string{"invalid JSON", "run together", `unknown type "mystery-record"`, "2 record(s)", "an array, not an object", "truncated last line"},
			check: func(t *testing.T, c *Conversation) {
				a := c.Messages[1]
				if a.ID != "msg_1" || a.Text != "Creating it." || len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "Write" {
					t.Errorf("merged assistant = %+v", a)
				}
				if !reflect.DeepEqual(a.Lines, []int{4}) {
					t.Errorf("Lines = %v, want [4]", a.Lines)
				}
				if c.Messages[0].ID != "u1" || c.Messages[0].Timestamp != "2026-01-05T10:00:00.000Z" {
					t.Errorf("user id/timestamp = %q %q", c.Messages[0].ID, c.Messages[0].Timestamp)
				}
				if !reflect.DeepEqual(c.Messages[2].Lines, []int{6}) {
					t.Errorf("tool Lines = %v", c.Messages[2].Lines)
				}
			}},
		{name: "jsonl bare messages", format: FormatJSONL, roles: []string{"user", "assistant"}, problems: 0,
			data: "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n"},
		{name: "jsonl crlf and bom", format: FormatJSONL, roles: []string{"user", "assistant"}, problems: 0,
			data: "\xef\xbb\xbf{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\r\n" +
				"{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}}\r\n",
			check: func(t *testing.T, c *Conversation) {
				if c.Messages[1].Text != "b" || c.Messages[1].Lines[0] != 2 {
					t.Errorf("second message = %+v", c.Messages[1])
				}
			}},
		{name: "jsonl first line garbage", format: FormatJSONL, roles: []string{"user"}, problems: 1, problemLines: []int{1},
			data: "garbage\n{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n"},
		{name: "jsonl first line truncated", format: FormatJSONL, roles: []string{"user"}, problems: 1, problemLines: []int{1},
			data: "{\"type\":\"user\",\"mess\n{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n"},
		{name: "jsonl single truncated line", data: `{"type":"user","message":{"role":"user","content":"a`,
			format: FormatJSONL, roles: []string{}, problems: 1, problemLines: []int{1}, problemHas: []string{"truncated last line"}},
		{name: "jsonl only two objects on one line", format: FormatJSONL, roles: []string{"user", "user"}, problems: 1,
			data: `{"type":"user","message":{"content":"a"}}{"type":"user","message":{"content":"b"}}`},
		{name: "jsonl record then garbage on one line", format: FormatJSONL, roles: []string{"user"}, problems: 1,
			data:       "{\"type\":\"user\",\"message\":{\"content\":\"a\"}} trailing\n{\"type\":\"summary\"}\n",
			problemHas: []string{"after 1 JSON value"}},
		{name: "jsonl record without message", format: FormatJSONL, roles: []string{"user"}, problems: 1, problemLines: []int{1},
			data:       "{\"type\":\"assistant\",\"uuid\":\"x\"}\n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n",
			problemHas: []string{"assistant record without a message"}},
		{name: "jsonl record with content but no message", format: FormatJSONL, roles: []string{"assistant"}, problems: 0,
			data: "{\"type\":\"assistant\",\"content\":\"hello\"}\n{\"type\":\"progress\"}\n"},
		{name: "jsonl bookkeeping only", format: FormatJSONL, roles: []string{}, problems: 0,
			data: "{\"type\":\"summary\",\"summary\":\"s\"}\n{\"type\":\"file-history-snapshot\"}\n{\"type\":\"progress\"}\n{\"type\":\"system\"}\n"},
		{name: "jsonl record without type or role", format: FormatJSONL, roles: []string{"user"}, problems: 1,
			data:       "{\"foo\":1}\n{\"foo\":2}\n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n",
			problemHas: []string{"2 record(s) without a type or role"}},
		{name: "single pretty-printed record", format: FormatJSONL, roles: []string{"user"}, problems: 0,
			data: "{\n  \"type\": \"user\",\n  \"message\": {\"role\": \"user\", \"content\": \"a\"}\n}\n"},
		{name: "message field of wrong type", format: FormatJSONL, roles: []string{}, problems: 3,
			problemHas: []string{"user record without a message object", "assistant record without a message object"},
			data:       "{\"type\":\"user\",\"message\":\"oops\"}\n{\"type\":\"assistant\",\"message\":[1]}\n{\"type\":\"assistant\",\"message\":[2]}\n",
		},
	}
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases() {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			if tc.file != "" {
				data = fixture(t, tc.file)
			}
			orig := append([]byte(nil), data...)
			c := Parse(data)
			checkInvariants(t, data, c)
			if string(data) != string(orig) {
				t.Fatal("Parse modified its input")
			}
			if c.Format != tc.format {
				t.Errorf("Format = %q, want %q (problems: %s)", c.Format, tc.format, problemText(c))
			}
			if tc.roles != nil && !reflect.DeepEqual(roles(c), tc.roles) {
				t.Errorf("roles = %q, want %q", roles(c), tc.roles)
			}
			switch {
			case tc.problems < 0 && len(c.Problems) == 0:
				t.Errorf("no Problems, want some")
			case tc.problems >= 0 && len(c.Problems) != tc.problems:
				t.Errorf("%d Problems, want %d:\n%s", len(c.Problems), tc.problems, problemText(c))
			}
			if tc.problemLines != nil {
				var lines []int
				for _, p := range c.Problems {
					lines = append(lines, p.Line)
				}
				if !reflect.DeepEqual(lines, tc.problemLines) {
					t.Errorf("problem lines = %v, want %v:\n%s", lines, tc.problemLines, problemText(c))
				}
			}
			for _, s := range tc.problemHas {
				if !strings.Contains(problemText(c), s) {
					t.Errorf("Problems lack %q:\n%s", s, problemText(c))
				}
			}
			if tc.check != nil && !t.Failed() {
				tc.check(t, c)
			}
		})
	}
}

func TestClaudeAssistantMerge(t *testing.T) {
	lines := []string{
		`{"type":"user","uuid":"u1","timestamp":"T0","message":{"role":"user","content":"go"}}`,
		`{"type":"assistant","uuid":"a1","timestamp":"T1","message":{"id":"msg_A","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"}]}}`,
		`{"type":"assistant","uuid":"a2","timestamp":"T2","message":{"id":"msg_A","role":"assistant","content":[{"type":"text","text":"first"}]}}`,
		`{"type":"progress","data":{}}`,
		`{"type":"assistant","uuid":"a3","timestamp":"T3","message":{"id":"msg_A","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"/p/a.go","old_string":"a","new_string":"b"}}]}}`,
		`{"type":"user","uuid":"u2","timestamp":"T4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}}`,
		// A late block of msg_A after the tool result: still merged into msg_A.
		`{"type":"assistant","uuid":"a4","timestamp":"T5","message":{"id":"msg_A","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Write","input":{"file_path":"/p/b.go","content":"package b"}}]}}`,
		// The same block written twice is kept once.
		`{"type":"assistant","uuid":"a5","timestamp":"T6","message":{"id":"msg_A","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Write","input":{"file_path":"/p/b.go","content":"package b"}}]}}`,
		`{"type":"assistant","uuid":"a6","timestamp":"T7","message":{"id":"msg_B","role":"assistant","content":[{"type":"text","text":"second"}]}}`,
		`{"type":"assistant","uuid":"a7","timestamp":"T8","message":{"id":"msg_B","role":"assistant","content":[{"type":"text","text":"more"}]}}`,
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	c := Parse(data)
	checkInvariants(t, data, c)
	if len(c.Problems) != 0 {
		t.Fatalf("problems: %s", problemText(c))
	}
	want := []string{"user", "assistant", "tool", "assistant"}
	if !reflect.DeepEqual(roles(c), want) {
		t.Fatalf("roles = %v, want %v", roles(c), want)
	}
	a := c.Messages[1]
	if a.ID != "msg_A" || a.Text != "first" || a.Timestamp != "T1" {
		t.Errorf("msg_A = id %q text %q ts %q", a.ID, a.Text, a.Timestamp)
	}
	if !reflect.DeepEqual(a.Lines, []int{2, 3, 5, 7, 8}) {
		t.Errorf("msg_A Lines = %v", a.Lines)
	}
	if len(a.ToolCalls) != 2 || a.ToolCalls[0].Name != "Edit" || a.ToolCalls[1].Name != "Write" {
		t.Errorf("msg_A tool calls = %+v", a.ToolCalls)
	}
	if c.Messages[2].ID != "u2" || c.Messages[2].ToolResults[0].ToolUseID != "toolu_1" {
		t.Errorf("tool message = %+v", c.Messages[2])
	}
	if b := c.Messages[3]; b.Text != "second\nmore" || !reflect.DeepEqual(b.Lines, []int{9, 10}) {
		t.Errorf("msg_B = %+v", b)
	}
}

// Facts checked by reading the verbatim excerpts in testdata.
func TestClaudeExcerpts(t *testing.T) {
	cases := []struct {
		file     string
		messages int
		roles    map[string]int
		calls    map[string]int
	}{
		{"claude_f5e7d3c25b68_lines1-30.jsonl", 18,
			map[string]int{"user": 1, "assistant": 9, "tool": 8},
			map[string]int{"Read": 3, "Grep": 2, "Edit": 2, "Bash": 1}},
		{"claude_8df6319ef9a6_lines1-13_20-24.jsonl", 4,
			map[string]int{"user": 1, "assistant": 2, "tool": 1},
			map[string]int{"Read": 6, "Write": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data := fixture(t, tc.file)
			c := Parse(data)
			checkInvariants(t, data, c)
			if c.Format != FormatJSONL || len(c.Problems) != 0 {
				t.Fatalf("format %q, problems:\n%s", c.Format, problemText(c))
			}
			if len(c.Messages) != tc.messages {
				t.Errorf("%d messages, want %d", len(c.Messages), tc.messages)
			}
			gotRoles, gotCalls := map[string]int{}, map[string]int{}
			for _, m := range c.Messages {
				gotRoles[m.Role]++
				for _, tc := range m.ToolCalls {
					gotCalls[tc.Name]++
				}
			}
			if !reflect.DeepEqual(gotRoles, tc.roles) {
				t.Errorf("roles = %v, want %v", gotRoles, tc.roles)
			}
			if !reflect.DeepEqual(gotCalls, tc.calls) {
				t.Errorf("tool calls = %v, want %v", gotCalls, tc.calls)
			}
			assertUniqueAssistantIDs(t, c)
			assertEditInputs(t, c)
		})
	}
	// The 8df6319ef9a6 excerpt: one assistant message over lines 6-13 with six parallel Reads.
	c := Parse(fixture(t, "claude_8df6319ef9a6_lines1-13_20-24.jsonl"))
	if m := c.Messages[1]; m.ID != "msg_01HVMtpdybXyHKtfjxT8Ky3y" || len(m.ToolCalls) != 6 ||
		!reflect.DeepEqual(m.Lines, []int{6, 7, 8, 9, 10, 11, 12, 13}) {
		t.Errorf("parallel-read message = id %q, %d calls, lines %v", m.ID, len(m.ToolCalls), m.Lines)
	}
}

func assertUniqueAssistantIDs(t *testing.T, c *Conversation) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range c.Messages {
		if m.Role != "assistant" {
			continue
		}
		if m.ID == "" {
			t.Errorf("assistant message %d has no id", m.Index)
		}
		if prev, ok := seen[m.ID]; ok {
			t.Errorf("assistant id %q at messages %d and %d", m.ID, prev, m.Index)
		}
		seen[m.ID] = m.Index
	}
}

// assertEditInputs checks that every Edit/Write call carries its file_path.
func assertEditInputs(t *testing.T, c *Conversation) {
	t.Helper()
	for _, m := range c.Messages {
		for _, tc := range m.ToolCalls {
			if tc.Name != "Edit" && tc.Name != "Write" {
				continue
			}
			var in struct {
				FilePath  string  `json:"file_path"`
				OldString *string `json:"old_string"`
				Content   *string `json:"content"`
			}
			if err := json.Unmarshal(tc.Input, &in); err != nil || in.FilePath == "" {
				t.Errorf("%s call in message %d: input %s", tc.Name, m.Index, tc.Input)
				continue
			}
			if tc.Name == "Edit" && in.OldString == nil || tc.Name == "Write" && in.Content == nil {
				t.Errorf("%s call in message %d lacks its payload: %s", tc.Name, m.Index, tc.Input)
			}
		}
	}
}

func TestParseDoesNotRetainInput(t *testing.T) {
	data := fixture(t, "broken.jsonl")
	c := Parse(data)
	before, _ := json.Marshal(c)
	for i := range data {
		data[i] = 'x'
	}
	after, _ := json.Marshal(c)
	if string(before) != string(after) {
		t.Error("the view changed when the input buffer was overwritten")
	}
}

func TestCountAgreesOnFixtures(t *testing.T) {
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data := fixture(t, e.Name())
		c := Parse(data)
		if n := Count(data); n != len(c.Messages) {
			t.Errorf("%s: Count = %d, Parse = %d", e.Name(), n, len(c.Messages))
		}
	}
}
