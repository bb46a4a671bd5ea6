package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// snap trace export writes Agent Trace records that validate against the
// specification's JSON Schema (agenttrace/testdata), one per checkpoint
// that added lines: the agent's as ai with its line ranges, the user's as
// human, another session's lines in that session's record only; vcs names
// git's HEAD in a git repository.
func TestTraceExportValidates(t *testing.T) {
	p := newProject(t)
	head := ""
	cmd := exec.Command("sh", "-c", "git init -q && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m base && git rev-parse HEAD")
	cmd.Dir = p.dir
	if out, err := cmd.CombinedOutput(); err == nil {
		head = strings.TrimSpace(string(out))
	} else {
		t.Fatalf("git: %v %s", err, out)
	}
	p.write(map[string]string{"a.go": "package a\n"})
	p.ok("checkpoint", "--actor", "agent", "--call", "toolu_1")
	p.write(map[string]string{"a.go": "package a\n\nfunc A() {}\nfunc B() {}\n"})
	p.ok("checkpoint", "--actor", "agent", "--call", "toolu_2")
	p.write(map[string]string{"a.go": "package a\n\nfunc A() {}\nfunc B() {}\n// mine\n"})
	p.ok("checkpoint", "--actor", "user")
	p.write(map[string]string{"b.txt": "B's\n"})
	p.ok("-s", "B", "checkpoint")
	p.write(map[string]string{"c.txt": "after B\n"})
	p.ok("checkpoint", "--actor", "agent")

	data, err := os.ReadFile(filepath.Join("..", "..", "agenttrace", "testdata", "trace-record.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.AddResource("schema.json", doc)
	schema, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	out := p.ok("trace", "export")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var summary []string
	for _, l := range lines {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Fatalf("%s\n%v", l, err)
		}
		var r struct {
			VCS   *struct{ Type, Revision string }
			Files []struct {
				Path          string
				Conversations []struct {
					Contributor struct{ Type string }
					Ranges      []struct{ Start_line, End_line int }
				}
			}
		}
		json.Unmarshal([]byte(l), &r)
		for _, f := range r.Files {
			cv := f.Conversations[0]
			for _, rg := range cv.Ranges {
				summary = append(summary, f.Path+":"+cv.Contributor.Type+":"+itoa(rg.Start_line)+"-"+itoa(rg.End_line))
			}
		}
		if r.VCS == nil || r.VCS.Type != "git" || r.VCS.Revision != head {
			t.Fatalf("vcs %+v, want git %s", r.VCS, head)
		}
	}
	// (newProject's two checkpoints first: their actor is unknown.)
	want := ".gitignore:unknown:1-2 README.md:unknown:1-1 main.go:unknown:1-5 main.go:unknown:4-4 util.go:unknown:1-1 " +
		"a.go:ai:1-1 a.go:ai:2-4 a.go:human:5-5 c.txt:ai:1-1"
	if got := strings.Join(summary, " "); got != want {
		t.Fatalf("records:\n%s\nwant %s\n%s", got, want, out)
	}
	// --since: only what came after.
	if out := p.ok("trace", "export", "--since", "#5", "--json"); !strings.Contains(out, `"path": "c.txt"`) || strings.Contains(out, `"path": "a.go"`) {
		t.Fatalf("--since #3: %s", out)
	}
	// Session B's record holds its own line.
	if out := p.ok("-s", "B", "trace", "export"); !strings.Contains(out, `"path":"b.txt"`) || strings.Contains(out, `"c.txt"`) {
		t.Fatalf("session B: %s", out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
