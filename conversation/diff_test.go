package conversation

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	claude := fixture(t, "claude_f5e7d3c25b68_lines1-30.jsonl")
	full := Parse(claude)
	lines := bytes.SplitAfter(claude, []byte("\n"))
	firstLines := func(n int) []byte { return bytes.Join(lines[:n], nil) }
	// Lines 1-22 end with a complete tool_use (line 22) of an API message
	// whose blocks all came before it; cut there the early view is a prefix.
	early := Parse(firstLines(22))

	openai := Parse(fixture(t, "openai_array.json"))
	rewritten := Parse([]byte(`[
		{"role": "system", "content": "You are a coding agent."},
		{"role": "user", "content": "Rename foo to bar in main.go"},
		{"role": "assistant", "content": "I will not."}
	]`))
	editedInput := Parse([]byte(`[
		{"role": "system", "content": "You are a coding agent."},
		{"role": "user", "content": "Rename foo to bar in main.go"},
		{"role": "assistant", "content": null, "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "edit_file", "arguments": "{\"path\":\"main.go\",\"old\":\"foo\",\"new\":\"baz\"}"}}]}
	]`))
	prettyInput := Parse([]byte(`[
		{"role": "system", "content": "You are a coding agent."},
		{"role": "user", "content": "Rename foo to bar in main.go"},
		{"role": "assistant", "content": null, "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "edit_file", "arguments": {"path": "main.go", "old": "foo", "new": "bar"}}}]}
	]`))

	cases := []struct {
		name           string
		a, b           *Conversation
		common         int
		removed, added int
	}{
		{"identical", full, full, len(full.Messages), 0, 0},
		{"identical parsed twice", Parse(claude), Parse(claude), len(full.Messages), 0, 0},
		{"appended messages", early, full, len(early.Messages), 0, len(full.Messages) - len(early.Messages)},
		{"truncated (rewound)", full, early, len(early.Messages), len(full.Messages) - len(early.Messages), 0},
		{"rewritten history", openai, rewritten, 2, 3, 1},
		{"tool input changed", openai, editedInput, 2, 3, 1},
		{"same input, other formatting", prettyInput, editedInput, 2, 1, 1},
		{"nil vs full", nil, openai, 0, 0, len(openai.Messages)},
		{"full vs nil", openai, nil, 0, len(openai.Messages), 0},
		{"nil vs nil", nil, nil, 0, 0, 0},
		{"different formats, same messages", Parse([]byte(`[{"role":"user","content":"hi"}]`)),
			Parse([]byte(`{"type":"user","uuid":"x","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`)), 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(tc.a, tc.b)
			if d.Common != tc.common || len(d.Removed) != tc.removed || len(d.Added) != tc.added {
				t.Errorf("Diff = common %d, removed %d, added %d; want %d, %d, %d",
					d.Common, len(d.Removed), len(d.Added), tc.common, tc.removed, tc.added)
			}
			if d.Removed == nil || d.Added == nil {
				t.Error("Removed/Added must be empty slices, not nil (JSON [])")
			}
			var buf bytes.Buffer
			if err := d.Format(&buf); err != nil {
				t.Fatal(err)
			}
			if tc.removed == 0 && tc.added == 0 && buf.Len() != 0 {
				t.Errorf("identical conversations printed:\n%s", buf.String())
			}
			if n := strings.Count(buf.String(), "@@ message "); n != max(tc.removed, tc.added) {
				t.Errorf("%d headers, want %d:\n%s", n, max(tc.removed, tc.added), buf.String())
			}
		})
	}
	// Same-input-other-formatting: the only difference must be the value.
	d := Diff(prettyInput, editedInput)
	if d.Common != 2 {
		t.Errorf("pretty vs compact input compared unequal before the changed value: %+v", d)
	}
	// An arguments object equals the same arguments sent as a JSON string.
	if d := Diff(prettyInput, openai); d.Common != 3 {
		t.Errorf("arguments object vs JSON-string arguments: common %d, want 3", d.Common)
	}
}

func TestDiffFormat(t *testing.T) {
	a := Parse([]byte(`[
		{"role": "user", "content": "Fix the bug"},
		{"role": "assistant", "content": "Looking.\nSecond line."}
	]`))
	long := strings.Repeat("x", 500)
	b := Parse([]byte(`[
		{"role": "user", "content": "Fix the bug"},
		{"role": "assistant", "content": [{"type": "text", "text": "Editing."},
			{"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": "main.go", "old_string": "` + long + `", "new_string": "y"}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "line1\nline2", "is_error": true}]}
	]`))
	var buf bytes.Buffer
	if err := Diff(a, b).Format(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	want := []string{
		"@@ message 1 @@\n",
		"- assistant: Looking.\n-   Second line.\n",
		"+ assistant: Editing.\n",
		`+   tool_call Edit {"file_path":"main.go","old_string":"xxx`,
		"@@ message 2 @@\n",
		`+ tool:` + "\n" + `+   tool_result toolu_1 (error): line1\nline2` + "\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 260 {
			t.Errorf("line not truncated (%d bytes): %.80s...", len(line), line)
		}
	}
	if strings.Contains(out, "@@ message 0 @@") {
		t.Errorf("common message printed:\n%s", out)
	}
}

func TestDiffJSON(t *testing.T) {
	d := Diff(Parse([]byte(`[{"role":"user","content":"a"}]`)), Parse([]byte(`[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`)))
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"common":1,"removed":[],"added":[{"index":1,"role":"assistant","text":"b"}]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 150) // 300 bytes
	got := truncate(s, 201)
	if !strings.HasSuffix(got, "...") || len(got) > 204 || !strings.HasPrefix(s, strings.TrimSuffix(got, "...")) {
		t.Errorf("truncate cut a rune or kept too much: %q", got)
	}
	if truncate("short", 200) != "short" {
		t.Error("short string changed")
	}
}
