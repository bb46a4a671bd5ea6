package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
)

// result is one in-process run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// project is a temporary project with a store, two checkpoints and a
// conversation transcript; its store is fsck'd at cleanup.
type project struct {
	t    *testing.T
	dir  string
	conv string   // the transcript, outside the project as an agent keeps it
	ids  []string // checkpoint ids, oldest first, as the fixture made them
	// corrupt: the test damages the store on purpose; skip the cleanup fsck.
	corrupt bool
}

const convLine1 = `{"type":"user","message":{"role":"user","content":"Please fix main.go"},"uuid":"u1","timestamp":"2025-01-01T10:00:00Z"}` + "\n"
const convLine2 = `{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Editing it."},{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"main.go","old_string":"a","new_string":"b"}}]},"uuid":"a1","timestamp":"2025-01-01T10:00:01Z"}` + "\n"
const convLine3 = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"uuid":"u2","timestamp":"2025-01-01T10:00:02Z"}` + "\n"
const convLine4 = `{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Done."}]},"uuid":"a2","timestamp":"2025-01-01T10:00:03Z"}` + "\n"

// isolate clears the environment variables the CLI reads, and gives it an
// empty home directory, so that no git configuration of the developer's
// (a global excludes file) reaches a capture.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("SNAP_SESSION", "")
	t.Setenv("SNAP_STORE", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig-none"))
}

// newBareProject makes an initialised project with a few files and no
// checkpoint.
func newBareProject(t *testing.T) *project {
	t.Helper()
	isolate(t)
	p := &project{t: t, dir: t.TempDir()}
	p.conv = filepath.Join(t.TempDir(), "transcript.jsonl")
	p.write(map[string]string{
		"main.go":    "package main\n\nfunc main() {\n\tprintln(\"a\")\n}\n",
		"README.md":  "# demo\n",
		".gitignore": "*.log\nbuild/\n",
	})
	p.writeConv(convLine1 + convLine2)
	p.ok("init")
	t.Cleanup(p.fsck)
	return p
}

// newProject makes a project with two checkpoints of the default session:
// #1 (label "start", msg_1) and #2 (msg_2: main.go modified, util.go added,
// README.md deleted, an ignored build artefact, two more messages).
func newProject(t *testing.T) *project {
	t.Helper()
	p := newBareProject(t)
	p.ids = append(p.ids, p.checkpointID("-m", "msg_1", "--summary", "first", "--conversation", p.conv, "--label", "start"))
	p.write(map[string]string{
		"main.go":       "package main\n\nfunc main() {\n\tprintln(\"b\")\n}\n",
		"util.go":       "package main\n",
		"build/out.bin": "artefact",
	})
	p.writeConv(convLine1 + convLine2 + convLine3 + convLine4)
	p.remove("README.md")
	p.ids = append(p.ids, p.checkpointID("-m", "msg_2", "--summary", "second"))
	return p
}

// fsck checks the store at cleanup.
func (p *project) fsck() {
	if p.corrupt {
		return
	}
	repo, err := snap.Open(snap.Options{Dir: p.dir})
	if err != nil {
		p.t.Errorf("cleanup: open store: %v", err)
		return
	}
	defer repo.Close()
	rep, err := gc.Fsck(context.Background(), repo.Objects(), repo.Refs(), true)
	if err != nil {
		p.t.Errorf("cleanup: fsck: %v", err)
		return
	}
	if rep.Corrupt() {
		p.t.Errorf("cleanup: fsck found damage: %v", rep.Problems)
	}
}

// run runs the CLI in-process in the project (-C dir) with stdin.
func (p *project) runIn(stdin string, args ...string) result {
	p.t.Helper()
	return runCLI(p.t, stdin, append([]string{"-C", p.dir}, args...)...)
}

func (p *project) run(args ...string) result {
	p.t.Helper()
	return p.runIn("", args...)
}

// ok runs the CLI and fails the test unless it exits 0.
func (p *project) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("snap %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// json runs the CLI with --json, expects exit 0 and decodes stdout.
func (p *project) json(args ...string) map[string]any {
	p.t.Helper()
	return decode(p.t, p.ok(append(args, "--json")...))
}

func (p *project) checkpointID(args ...string) string {
	p.t.Helper()
	doc := p.json(append([]string{"checkpoint"}, args...)...)
	id, _ := doc["id"].(string)
	if len(id) != 64 {
		p.t.Fatalf("checkpoint id %q", id)
	}
	return id
}

func (p *project) write(files map[string]string) {
	p.t.Helper()
	for name, content := range files {
		path := filepath.Join(p.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
}

func (p *project) writeConv(s string) {
	p.t.Helper()
	if err := os.WriteFile(p.conv, []byte(s), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) readConv() string {
	p.t.Helper()
	data, err := os.ReadFile(p.conv)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(data)
}

func (p *project) read(name string) string {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, filepath.FromSlash(name)))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(data)
}

func (p *project) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(p.dir, filepath.FromSlash(name)))
	return err == nil
}

func (p *project) remove(name string) {
	p.t.Helper()
	if err := os.RemoveAll(filepath.Join(p.dir, filepath.FromSlash(name))); err != nil {
		p.t.Fatal(err)
	}
}

// runCLI runs the whole CLI in-process; args exclude the program name.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"snap"}, args...), strings.NewReader(stdin), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", s)
	}
	return m
}

// get walks a decoded JSON document: get(doc, "files.added.0") .
func get(t *testing.T, doc any, path string) any {
	t.Helper()
	cur := doc
	for _, k := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[k]
			if !ok {
				t.Fatalf("%s: no field %q in %v", path, k, v)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(v) {
				t.Fatalf("%s: no index %q in %v", path, k, v)
			}
			cur = v[i]
		default:
			t.Fatalf("%s: cannot index %T with %q", path, cur, k)
		}
	}
	return cur
}

// strs turns a decoded JSON array of strings into []string.
func strs(t *testing.T, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %#v", v)
	}
	out := []string{}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("not a string: %#v", e)
		}
		out = append(out, s)
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func sameStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
