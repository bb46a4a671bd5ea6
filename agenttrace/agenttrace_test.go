package agenttrace_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/snapcore-dev/snap/agenttrace"
)

// Schema compiles the specification's JSON Schema (with format
// assertions: uuid, date-time, uri); tests elsewhere validate what snap
// writes with it.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile("testdata/trace-record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("trace-record.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("trace-record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordValidates(t *testing.T) {
	s := Schema(t)
	r := agenttrace.Record{Version: agenttrace.Version, ID: agenttrace.UUID([16]byte{1, 2, 3}), Timestamp: agenttrace.Timestamp(time.Unix(1700000000, 5)),
		VCS: &agenttrace.VCS{Type: "git", Revision: "a1b2"}, Tool: &agenttrace.Tool{Name: "snap", Version: "test"},
		Files: []agenttrace.File{{Path: "a.go", Conversations: []agenttrace.Conversation{{
			Contributor: &agenttrace.Contributor{Type: agenttrace.AI},
			Ranges:      []agenttrace.Range{{StartLine: 1, EndLine: 3}},
			Related:     []agenttrace.Related{{Type: "session", URL: "urn:snap:session:default"}},
		}}}},
		Metadata: map[string]any{"dev.snap": map[string]any{"checkpoint": "x"}}}
	b, _ := json.Marshal(r)
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err := s.Validate(v); err != nil {
		t.Fatalf("%s\n%v", b, err)
	}
	// The schema is strict where it says so: a bad contributor type and a
	// line 0 are refused (the check can fail).
	r.Files[0].Conversations[0].Contributor.Type = "robot"
	r.Files[0].Conversations[0].Ranges[0].StartLine = 0
	b, _ = json.Marshal(r)
	v, _ = jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err := s.Validate(v); err == nil {
		t.Fatalf("an invalid record validated: %s", b)
	}
}
