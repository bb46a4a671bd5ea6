package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

func TestNormalizeArgs(t *testing.T) {
	app := newApp(&invocation{})
	if findCommand(app.Commands, "help") == nil {
		installHelp(app, &invocation{}) // TestHelpCommandInApp says when newApp lacks it
	}
	tests := []struct {
		name string
		in   string
		want string
		dash int
	}{
		{"flags after positional", "snap rewind #2 --dry-run", "snap rewind --dry-run -- #2", -1},
		{"global flags before command", "snap --json -C d log -n 3", "snap log --json -C d -n 3 --", -1},
		{"value flag takes next token", "snap cat @ --state conversation", "snap cat --state conversation -- @", -1},
		{"stdin value", "snap checkpoint --conversation - -m x", "snap checkpoint --conversation - -m x --", -1},
		{"flag=value", "snap log --n=2 --json=true", "snap log --json=true --n=2 --", -1},
		{"subcommand", "snap --json op log -n 1", "snap op log --json -n 1 --", -1},
		{"global between command and subcommand", "snap session --json archive x", "snap session archive --json -- x", -1},
		{"dashdash keeps paths", "snap diff #1 --stat -- a --json", "snap diff --stat -- #1 a --json", 1},
		{"dashdash first", "snap diff -- a", "snap diff -- a", 0},
		{"unknown command left alone", "snap frob --json", "snap frob --json", -1},
		{"help is a command", "snap help session archive --json", "snap help --json -- session archive", -1},
		{"command flag before command left alone", "snap -n 3 log", "snap -n 3 log", -1},
		{"no command", "snap --json", "snap --json", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dash := normalizeArgs(app, strings.Fields(tt.in))
			eq(t, "args", strings.Join(got, " "), tt.want)
			eq(t, "dash", dash, tt.dash)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "100", want: 100},
		{in: "10K", want: 10 << 10},
		{in: "10k", want: 10 << 10},
		{in: "10M", want: 10 << 20},
		{in: "10MiB", want: 10 << 20},
		{in: "10MB", want: 10 << 20},
		{in: "1G", want: 1 << 30},
		{in: "2T", want: 2 << 40},
		{in: "", bad: true},
		{in: "lots", bad: true},
		{in: "-1", bad: true},
		{in: "99999999999T", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			if tt.bad {
				if err == nil {
					t.Errorf("parseSize(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSplitRefPath(t *testing.T) {
	tests := []struct{ in, ref, path string }{
		{"#2:src/a.go", "#2", "src/a.go"},
		{":a", "", "a"},
		{"msg:m1:a/b", "msg:m1", "a/b"},
		{"abcdef:x:y", "abcdef", "x:y"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ref, path, ok := splitRefPath(tt.in)
			if !ok || ref != tt.ref || path != tt.path {
				t.Errorf("splitRefPath(%q) = %q, %q, %v", tt.in, ref, path, ok)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		exit int
		code string
	}{
		{"usage", usageErrorf("x"), exitUsage, "usage"},
		{"engine usage", fmt.Errorf("w: %w", snap.ErrUsage), exitUsage, "usage"},
		{"partial", snap.ErrPartial, exitPartial, "partial"},
		{"no checkpoint", fmt.Errorf("w: %w", snap.ErrNoCheckpoint), exitNoCheckpoint, "no_checkpoint"},
		{"no path", fmt.Errorf("w: %w", snap.ErrNoPath), exitNoCheckpoint, "no_path"},
		{"ambiguous", fmt.Errorf("w: %w", objects.ErrAmbiguous), exitNoCheckpoint, "ambiguous_ref"},
		{"no store", fmt.Errorf("w: %w", snap.ErrNoStore), exitNoStore, "no_store"},
		{"busy", fmt.Errorf("w: %w", refs.ErrBusy), exitBusy, "store_busy"},
		{"objects corrupt", fmt.Errorf("w: %w", objects.ErrCorrupt), exitCorrupt, "store_corrupt"},
		{"refs corrupt", &refs.CorruptError{Path: "oplog"}, exitCorrupt, "store_corrupt"},
		{"object missing", fmt.Errorf("w: %w", objects.ErrNotFound), exitCorrupt, "object_missing"},
		{"fsck", errCorruptFound, exitCorrupt, "store_corrupt"},
		{"corrupt wins over partial", errors.Join(snap.ErrPartial, objects.ErrCorrupt), exitCorrupt, "store_corrupt"},
		{"nothing to undo", snap.ErrNothingToUndo, exitError, "nothing_to_undo"},
		{"interrupted", context.Canceled, exitInterrupted, "interrupted"},
		{"other", errors.New("disk on fire"), exitError, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exit, code := classify(tt.err)
			if exit != tt.exit || code != tt.code {
				t.Errorf("classify(%v) = %d %q, want %d %q", tt.err, exit, code, tt.exit, tt.code)
			}
		})
	}
}

// --version prints the build's version and touches no store; -v is not an
// alias (too easily meant as "verbose").
func TestVersion(t *testing.T) {
	r := runCLI(t, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "snap version ") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Fatalf("--version: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", "-v"); r.code != 2 {
		t.Fatalf("-v: exit %d, want 2 (usage)", r.code)
	}
}

// A panic anywhere below run becomes an error of the documented shape:
// exit 1, code internal_error, a JSON document with --json.
func TestPanicIsAnError(t *testing.T) {
	//lint:ignore SA5000 the panic is what is tested
	err := recovered(func() error { var m map[string]int; m["x"]++; return nil })
	if exit, code := classify(err); exit != exitError || code != "internal_error" {
		t.Fatalf("recovered panic classified %d %q: %v", exit, code, err)
	}
	var buf strings.Builder
	reportError(&buf, true, err)
	var doc struct {
		Error struct{ Code, Message string }
	}
	if jerr := json.Unmarshal([]byte(buf.String()), &doc); jerr != nil || doc.Error.Code != "internal_error" {
		t.Fatalf("JSON error document: %q (%v)", buf.String(), jerr)
	}
}

// F13: "--path --json" is --path without its value, not a path "--json".
func TestFlagValueIsNotAFlag(t *testing.T) {
	app := newApp(&invocation{})
	got, _ := normalizeArgs(app, []string{"snap", "rewind", "#1", "--path", "--json"})
	if strings.Join(got, " ") != "snap rewind --json --path -- #1" {
		t.Fatalf("normalized: %q", got)
	}
	got, _ = normalizeArgs(app, []string{"snap", "rewind", "#1", "--path=--json"})
	if strings.Join(got, " ") != "snap rewind --path=--json -- #1" {
		t.Fatalf("normalized: %q", got)
	}
}

// The hook fast path takes exactly "snap hook AGENT" for a known agent;
// anything else goes through the whole CLI. Both end in runHook, so an
// event reads the same either way: no output, exit 0, one log line.
func TestHookFastPath(t *testing.T) {
	for _, tc := range []struct {
		args string
		fast bool
	}{
		{"snap hook claude-code", true},
		{"snap hook codex", true},
		{"snap hook gemini", true},
		{"snap hook log", false},
		{"snap hook nosuchagent", false},
		{"snap hook claude-code --json", false},
		{"snap hook claude-code --help", false},
		{"snap -C d hook claude-code", false},
		{"snap hook", false},
		{"snap checkpoint x", false},
	} {
		if _, fast := hookFastPath(strings.Fields(tc.args)); fast != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.args, fast, tc.fast)
		}
	}
	dir := t.TempDir()
	payload := fmt.Sprintf(`{"hook_event_name":"PreToolUse","session_id":"s1","cwd":%q,"tool_name":"Read","tool_input":{"file_path":"a"}}`, dir)
	if code := run(context.Background(), []string{"snap", "-C", dir, "init"}, nil, &strings.Builder{}, &strings.Builder{}); code != 0 {
		t.Fatalf("init: exit %d", code)
	}
	for _, args := range [][]string{{"snap", "hook", "claude-code"}, {"snap", "hook", "claude-code", "--json"}} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, strings.NewReader(payload), &stdout, &stderr); code != 0 || stdout.Len() > 0 || stderr.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
	var out strings.Builder
	if code := run(context.Background(), []string{"snap", "-C", dir, "hook", "log"}, nil, &out, &strings.Builder{}); code != 0 ||
		strings.Count(out.String(), "PreToolUse session=s1: nothing to record") != 2 {
		t.Errorf("hook log: exit %d\n%s", code, out.String())
	}
}

// newApp makes only the command the arguments run: the table names each
// command as the command names itself, and commandOf finds it past the
// global flags, or asks for all when it cannot tell.
func TestCommandOf(t *testing.T) {
	for _, c := range commands {
		if got := c.make(&invocation{}).Name; got != c.name {
			t.Errorf("the table names %q, the command itself %q", c.name, got)
		}
	}
	if cmds := appOf(&invocation{}, []string{}).Commands; len(cmds) != 1 || cmds[0].Name != "help" {
		t.Errorf("an app of no command has %d commands", len(cmds))
	}
	if cmds := appOf(&invocation{}, []string{"log"}).Commands; len(cmds) != 2 || cmds[0].Name != "log" {
		t.Errorf("an app of log has %d commands", len(cmds))
	}
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"snap log -n 3", []string{"log"}},
		{"snap --json -s s1 -C /tmp --store=/x rewind @~1", []string{"rewind"}},
		{"snap -s log log", []string{"log"}}, // (-s takes the value "log")
		{"snap --version", []string{}},
		{"snap", nil},
		{"snap help log", nil},
		{"snap --help", nil},
		{"snap nosuch", nil},
		{"snap --dry-run rewind", nil},
		{"snap -- log", nil},
	} {
		if got := commandOf(strings.Fields(tc.args)); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("commandOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
