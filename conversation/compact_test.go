package conversation

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompactRawJSONL(t *testing.T) {
	doc := strings.Join([]string{
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"start"}}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"working"}]}}`,
		`{"type":"progress","data":{}}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{}}]}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`,
		`{"type":"user","uuid":"u3","message":{"role":"user","content":"next"}}`,
	}, "\n") + "\n"
	c := Parse([]byte(doc))
	if len(c.Messages) != 4 {
		t.Fatalf("fixture: %d messages", len(c.Messages))
	}
	out, err := CompactRaw([]byte(doc), []Span{{From: 1, To: 3, Summary: "task 1 done"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"u1"`) || lines[1] != `{"message":{"content":"task 1 done","role":"user"},"type":"user"}` || !strings.Contains(lines[2], `"u3"`) {
		t.Fatalf("compacted:\n%s", out)
	}
	c2 := Parse(out)
	if len(c2.Messages) != 3 || c2.Messages[1].Text != "task 1 done" || c2.Messages[1].Role != "user" {
		t.Fatalf("compacted view: %+v", c2.Messages)
	}
}

func TestCompactRawArray(t *testing.T) {
	doc := `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"}]`
	out, err := CompactRaw([]byte(doc), []Span{{From: 0, To: 2, Summary: "S"}})
	if err != nil {
		t.Fatal(err)
	}
	c := Parse(out)
	if c.Format != FormatJSONArray || len(c.Messages) != 3 || c.Messages[0].Text != "S" || c.Messages[1].Text != "c" {
		t.Fatalf("compacted array: %s\n%+v", out, c.Messages)
	}
	gem := `[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]}]`
	out, err = CompactRaw([]byte(gem), []Span{{From: 0, To: 2, Summary: "S"}})
	if err != nil || !strings.Contains(string(out), `"parts":[{"text":"S"}]`) {
		t.Fatalf("gemini: %s %v", out, err)
	}
	if _, err := CompactRaw([]byte(`{"messages":[{"role":"user","content":"a"}]}`), []Span{{From: 0, To: 1}}); err == nil {
		t.Fatal("a messages object compacted")
	}
	if _, err := CompactRaw([]byte(doc), []Span{{From: 0, To: 2}, {From: 1, To: 3}}); err == nil {
		t.Fatal("overlapping spans accepted")
	}
}

// A Claude Code session is a chain of records by uuid/parentUuid that
// Claude Code walks back from the last record when it loads the session:
// after compaction the chain from the last record must reach the start
// through the summary, and no record may name a parent that is gone.
func TestCompactRawKeepsClaudeChain(t *testing.T) {
	rec := func(uuid, parent, typ, content string) string {
		p := `null`
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"parentUuid":` + p + `,"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s1","version":"2.1.17","type":"` + typ +
			`","message":{"role":"` + typ + `","content":"` + content + `"},"uuid":"` + uuid + `","timestamp":"2026-01-01T00:00:0` + uuid[1:] + `Z"}`
	}
	doc := strings.Join([]string{
		rec("u1", "", "user", "start"),
		rec("u2", "u1", "assistant", "working"),
		`{"type":"file-history-snapshot","messageId":"x","snapshot":{}}`,
		rec("u3", "u2", "user", "more"),
		rec("u4", "u3", "assistant", "done"),
		rec("u5", "u4", "user", "next"),
		rec("u6", "u5", "assistant", "ok"),
	}, "\n") + "\n"
	c := Parse([]byte(doc))
	if len(c.Messages) != 6 {
		t.Fatalf("fixture: %d messages", len(c.Messages))
	}
	out, err := CompactRaw([]byte(doc), []Span{{From: 1, To: 4, Summary: "task 1 done"}})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := CompactRaw([]byte(doc), []Span{{From: 1, To: 4, Summary: "task 1 done"}})
	if string(again) != string(out) {
		t.Fatal("compacting twice gave different bytes")
	}
	checkChain(t, out, []string{"start", "task 1 done", "next", "ok"})
	// The kept records' bytes are unchanged but for the relinked parent.
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if lines[0] != rec("u1", "", "user", "start") || lines[3] != rec("u6", "u5", "assistant", "ok") {
		t.Fatalf("kept records changed:\n%s", out)
	}

	// A cut at the very start: the summary starts the chain.
	out, err = CompactRaw([]byte(doc), []Span{{From: 0, To: 2, Summary: "S0"}, {From: 3, To: 5, Summary: "S1"}})
	if err != nil {
		t.Fatal(err)
	}
	checkChain(t, out, []string{"S0", "more", "S1", "ok"})
}

// checkChain walks the chain back from out's last record and compares
// the message texts met, oldest first, with want.
func checkChain(t *testing.T, out []byte, want []string) {
	t.Helper()
	type r struct {
		UUID    string  `json:"uuid"`
		Parent  *string `json:"parentUuid"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	byID := map[string]r{}
	var last r
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		var x r
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if x.UUID == "" {
			continue
		}
		if x.Parent != nil {
			if _, ok := byID[*x.Parent]; !ok {
				t.Fatalf("%s names parent %s, which is not before it:\n%s", x.UUID, *x.Parent, out)
			}
		}
		byID[x.UUID] = x
		last = x
	}
	var got []string
	for x, ok := last, true; ok; {
		got = append([]string{x.Message.Content}, got...)
		if x.Parent == nil {
			break
		}
		x, ok = byID[*x.Parent]
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("chain from the last record: %q, want %q\n%s", got, want, out)
	}
}
