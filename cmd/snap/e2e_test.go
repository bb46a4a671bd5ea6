package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/snaptest"
)

// TestEndToEnd builds the real binary and runs a short agent session with
// it: checkpoints with the transcript on stdin, log, rewind, undo, redo,
// fsck.
func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)

	p := &project{t: t, dir: t.TempDir()}
	t.Cleanup(p.fsck)
	snapCmd := func(stdin string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = p.dir
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("snap %q: %v", args, err)
		}
		if code != 0 && code != 3 {
			t.Logf("snap %q: exit %d: %s", args, code, errb.String())
		}
		return out.String(), code
	}
	mustSnap := func(stdin string, args ...string) string {
		t.Helper()
		out, code := snapCmd(stdin, args...)
		if code != 0 {
			t.Fatalf("snap %q: exit %d", args, code)
		}
		return out
	}

	p.write(map[string]string{"app.py": "print('v1')\n", ".gitignore": "__pycache__/\n"})
	if out := mustSnap("", "init"); !strings.Contains(out, "Initialized") {
		t.Errorf("init: %q", out)
	}
	transcript := convLine1 + convLine2
	out := mustSnap(transcript, "checkpoint", "--conversation", "-", "-m", "msg_1", "--summary", "v1")
	id1 := strings.SplitN(out, "\n", 2)[0]
	if len(id1) != 64 {
		t.Fatalf("checkpoint printed %q", out)
	}

	p.write(map[string]string{"app.py": "print('v2')\n", "lib.py": "x = 1\n", "__pycache__/app.pyc": "junk"})
	transcript += convLine3 + convLine4
	var ck struct {
		ID     string  `json:"id"`
		Parent *string `json:"parent"`
		Files  struct {
			Added, Modified, Deleted []string
		} `json:"files"`
		State map[string]int64 `json:"state"`
	}
	if err := json.Unmarshal([]byte(mustSnap(transcript, "checkpoint", "--json", "--conversation", "-", "-m", "msg_2")), &ck); err != nil {
		t.Fatal(err)
	}
	if ck.Parent == nil || *ck.Parent != id1 {
		t.Errorf("parent = %v, want %s", ck.Parent, id1)
	}
	sameStrings(t, "added", ck.Files.Added, "lib.py")
	sameStrings(t, "modified", ck.Files.Modified, "app.py")
	eq(t, "conversation size", ck.State["conversation"], int64(len(transcript)))

	log := mustSnap("", "log")
	if !strings.Contains(log, "#2") || !strings.Contains(log, "(head)") || !strings.Contains(log, "4 msgs") {
		t.Errorf("log:\n%s", log)
	}
	if got := mustSnap("", "cat", "msg:msg_1", "--state", "conversation"); got != convLine1+convLine2 {
		t.Errorf("cat conversation = %q", got)
	}

	// The conversation came from stdin: a rewind has nowhere to put it back
	// but --state-out.
	stateOut := filepath.Join(t.TempDir(), "state")
	mustSnap("", "rewind", "#1", "--state-out", stateOut)
	eq(t, "app.py after rewind", p.read("app.py"), "print('v1')\n")
	if p.exists("lib.py") {
		t.Errorf("lib.py survived the rewind")
	}
	eq(t, "__pycache__ untouched", p.read("__pycache__/app.pyc"), "junk")
	data, err := os.ReadFile(filepath.Join(stateOut, "conversation"))
	if err != nil || string(data) != convLine1+convLine2 {
		t.Errorf("--state-out conversation = %q, %v", data, err)
	}

	mustSnap("", "undo")
	eq(t, "app.py after undo", p.read("app.py"), "print('v2')\n")
	eq(t, "lib.py after undo", p.read("lib.py"), "x = 1\n")
	mustSnap("", "redo")
	eq(t, "app.py after redo", p.read("app.py"), "print('v1')\n")

	if _, code := snapCmd("", "show", "nosuch"); code != exitNoCheckpoint {
		t.Errorf("show nosuch: exit %d", code)
	}
	if out := mustSnap("", "fsck"); !strings.Contains(out, "ok") {
		t.Errorf("fsck: %s", out)
	}
}

// buildTags are the Makefile's SNAP_TAGS, so that the binary under test is
// the one 'make build' makes.
const buildTags = "urfave_cli_no_docs,netgo,osusergo"

// buildBinary builds snap into the test's temporary directory as 'make
// build' does (the core build, with buildTags and snapcore, and snap-full
// beside it), in an isolated environment (isolate), and returns the core
// build's path; it skips the test with -short or without the go tool.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	// The build uses the go command's own caches: isolate gives HOME a
	// fresh directory, where the build cache and the module cache would
	// start empty (every module fetched and built again: minutes).
	caches, err := exec.Command(goTool, "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	dirs := strings.Split(strings.TrimSpace(string(caches)), "\n")
	if len(dirs) != 2 {
		t.Fatalf("go env GOCACHE GOMODCACHE: %q", caches)
	}
	isolate(t)
	t.Setenv("SNAP_FULL", "")
	dir := t.TempDir()
	for _, b := range [][2]string{{"snap", buildTags + ",snapcore"}, {"snap-full", buildTags}} {
		build := exec.Command(goTool, "build", "-tags", b[1], "-o", filepath.Join(dir, b[0]), ".")
		build.Env = append(os.Environ(), "GOCACHE="+dirs[0], "GOMODCACHE="+dirs[1])
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %s: %v\n%s", b[1], err, out)
		}
	}
	return filepath.Join(dir, "snap")
}

// The core build links neither the MCP SDK, nor net/http, nor go-git's
// commands and transports (it starts in about two thirds of the complete
// build's time: bench W10), and runs snap-full beside it in its own place for what
// needs them: the same output, the same exit code. Without snap-full it
// says what is missing and changes nothing.
func TestCoreBuild(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	deps, err := exec.Command(goTool, "list", "-deps", "-tags", buildTags+",snapcore", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, heavy := range []string{"github.com/go-git/go-git/v5", "github.com/modelcontextprotocol/go-sdk/mcp", "net/http",
		"github.com/snapcore-dev/snap/gitbridge", "github.com/snapcore-dev/snap/mcp", "github.com/snapcore-dev/snap/ui"} {
		if slices.Contains(strings.Fields(string(deps)), heavy) {
			t.Errorf("the core build links %s", heavy)
		}
	}

	bin := buildBinary(t)
	full := filepath.Join(filepath.Dir(bin), "snap-full")
	p := newBareProject(t)
	var env []string // more of run's environment
	run := func(bin string, stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = p.dir, append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), errb.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %q: %v", bin, args, err)
		}
		return out.String(), errb.String(), 0
	}
	vc, _, _ := run(bin, "", "--version")
	vf, _, _ := run(full, "", "--version")
	if vc != vf || !strings.HasPrefix(vc, "snap version") {
		t.Errorf("--version: core %q, full %q", vc, vf)
	}
	if _, stderr, code := run(bin, "", "checkpoint", "--summary", "one"); code != 0 {
		t.Fatalf("checkpoint: exit %d: %s", code, stderr)
	}
	// snap mcp: an MCP client's first request, answered by snap-full.
	// (stdin stays open until the answer is read: at its end the server
	// stops, perhaps before answering.)
	mcpCmd := exec.Command(bin, "mcp")
	mcpCmd.Dir = p.dir
	var mcpErr bytes.Buffer
	mcpCmd.Stderr = &mcpErr
	in, err := mcpCmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := mcpCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpCmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	answer, _ := bufio.NewReader(outPipe).ReadString('\n')
	in.Close()
	if err := mcpCmd.Wait(); err != nil || !strings.Contains(answer, `"serverInfo"`) {
		t.Errorf("snap mcp through the core build: %v, %q, %s", err, answer, mcpErr.String())
	}
	// The git bridge, with its own exit code: no git repository here.
	_, stderrCore, codeCore := run(bin, "", "git", "export", "--json")
	_, stderrFull, codeFull := run(full, "", "git", "export", "--json")
	if codeCore != codeFull || stderrCore != stderrFull || codeCore != exitNoStore {
		t.Errorf("git export: core exit %d %q, full exit %d %q", codeCore, stderrCore, codeFull, stderrFull)
	}
	// Without snap-full: a clear error, nothing done.
	alone := filepath.Join(t.TempDir(), "snap")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	before := snaptest.Snapshot(t, p.dir, nil)
	_, stderr, code := run(alone, "", "ui", "--addr", "127.0.0.1:0")
	if code != exitError || !strings.Contains(stderr, "snap ui needs snap-full") {
		t.Errorf("snap ui without snap-full: exit %d, %q", code, stderr)
	}
	if after := snaptest.Snapshot(t, p.dir, nil); !maps.Equal(before, after) {
		t.Errorf("snap ui without snap-full changed the project")
	}
	// A snap-full that is a core build too: an error, not a loop.
	if err := os.WriteFile(filepath.Join(filepath.Dir(alone), "snap-full"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(alone, "", "ui", "--addr", "127.0.0.1:0")
	if code != exitError || !strings.Contains(stderr, "is a core build too") {
		t.Errorf("snap ui with a core build as snap-full: exit %d, %q", code, stderr)
	}
	// A snap-full that is not this version's complete build is never run
	// (torture/split-findings/04): another program, another version, a
	// copy cut short.
	fullData, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, content, want string
	}{
		{"another program", "#!/bin/sh\necho \"$@\" >> \"$0.ran\"\n", "is not snap: it gave no answer"},
		{"another version", "#!/bin/sh\n[ -n \"$SNAP_HANDSHAKE\" ] && echo 'snap complete build, v0.1.0 go1.20, hand-over 1' && exit 0\necho \"$@\" >> \"$0.ran\"\n", "is another build"},
		{"a copy cut short", string(fullData[:200000]), "does not run"},
	} {
		other := filepath.Join(t.TempDir(), "snap-full")
		if err := os.WriteFile(other, []byte(c.content), 0o755); err != nil {
			t.Fatal(err)
		}
		env = []string{"SNAP_FULL=" + other}
		stdout, stderr, code := run(bin, "", "--json", "trace", "export")
		if code != exitError || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%s as snap-full: exit %d, stdout %q, stderr %q; want exit %d, %q", c.name, code, stdout, stderr, exitError, c.want)
		}
		if ran, _ := os.ReadFile(other + ".ran"); strings.Contains(string(ran), "trace") {
			t.Errorf("%s as snap-full was run with the command", c.name)
		}
	}
}
