package conversation

import (
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
