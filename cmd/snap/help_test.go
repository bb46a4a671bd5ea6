package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runWithHelp runs the CLI in-process as run does, with helpCommand in the
// app (TestHelpCommandInApp checks that newApp has it).
func runWithHelp(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, dashPos: -1}
	app := newApp(inv)
	if findCommand(app.Commands, "help") == nil {
		installHelp(app, inv)
	}
	full, dash := normalizeArgs(app, append([]string{"snap"}, args...))
	inv.dashPos = dash
	code := 0
	if err := recovered(func() error { return app.RunContext(context.Background(), full) }); err != nil {
		code = reportError(&errb, wantsJSON(full), err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// snap's own help command is the one the app runs (urfave/cli's drops a
// subcommand: 'snap help session archive' printed the help of session).
func TestHelpCommandInApp(t *testing.T) {
	c := findCommand(newApp(&invocation{}).Commands, "help")
	if c == nil || c.Usage != helpCommand(&invocation{}).Usage {
		t.Fatal("newApp does not call installHelp(app, inv) (main.go): 'snap help A B' shows A's help, 'snap help --json' fails")
	}
}

// snap help [COMMAND [SUBCOMMAND]] prints what --help prints (F20).
func TestHelpSubcommands(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"session", "archive"}, {"session", "rm"}, {"op", "log"}, {"session"}, {"op"}, {"log"}, {"rewind"}, {},
	} {
		want := runWithHelp(t, append(append([]string(nil), args...), "--help")...)
		got := runWithHelp(t, append([]string{"help"}, args...)...)
		if got.code != 0 || got.stdout != want.stdout || want.code != 0 {
			t.Errorf("snap help %s: exit %d\n%s\nwant (exit %d):\n%s", strings.Join(args, " "), got.code, got.stdout+got.stderr, want.code, want.stdout)
		}
	}
	for args, want := range map[string][]string{
		"session archive": {"snap session archive - move a session out of the active list", "snap session archive agent-2"},
		"session":         {"COMMANDS:", "   archive ", "   rm ", "--session ID, -s ID"},
		"op":              {"COMMANDS:", "   log ", "list operations, newest first"},
		"op log":          {"snap op log - list operations, newest first", "-n N"},
		"h op log":        {"snap op log - list operations"},
	} {
		fields := strings.Fields(args)
		if fields[0] != "h" {
			fields = append([]string{"help"}, fields...)
		}
		r := runWithHelp(t, fields...)
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("snap %s lacks %q:\n%s", strings.Join(fields, " "), w, r.stdout)
			}
		}
	}
	// --json: one document holding the same text.
	r := runWithHelp(t, "help", "session", "archive", "--json")
	doc := decode(t, r.stdout)
	eq(t, "help --json command", get(t, doc, "command"), any("snap session archive"))
	if h, _ := get(t, doc, "help").(string); !strings.Contains(h, "move a session out of the active list") {
		t.Errorf("help --json: %s", r.stdout)
	}
	doc = decode(t, runWithHelp(t, "--json", "help").stdout)
	eq(t, "snap --json help", get(t, doc, "command"), any("snap"))
	// Unknown topics are usage errors.
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "session", "nosuch"}, {"help", "log", "extra"}, {"help", "nosuch", "--json"}} {
		r := runWithHelp(t, args...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("snap %s: exit %d, want %d (usage)\n%s%s", strings.Join(args, " "), r.code, exitUsage, r.stdout, r.stderr)
		}
	}
}
