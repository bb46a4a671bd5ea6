package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap"
)

var testSpecs = []HookSpec{{Event: "PreToolUse", Matcher: "Edit|Bash"}, {Event: "Stop"}}

func TestRunsSnapHook(t *testing.T) {
	for cmd, want := range map[string]bool{
		"snap hook claude-code":                      true,
		"/usr/local/bin/snap hook claude-code":       true,
		"'/home/a b/My Tools/snap' hook claude-code": true,
		`'/it'\''s/snap' hook claude-code`:           true,
		"npx @acme/audit-trail hook claude-code":     false,
		"snap hook claude-code 2>>/tmp/err":          false,
		"/opt/snapshot hook claude-code":             false,
		"snap hook gemini":                           false,
		"echo snap hook claude-code":                 false,
		"'/unterminated/snap hook claude-code":       false,
		"'/x/snap'hook claude-code":                  false,
	} {
		if got := RunsSnapHook(cmd, "claude-code"); got != want {
			t.Errorf("RunsSnapHook(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// A path with a space is quoted, and the quoted command runs.
func TestQuoteCommandRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "My Tools", "it's")
	os.MkdirAll(dir, 0o755)
	prog := filepath.Join(dir, "snap")
	os.WriteFile(prog, []byte("#!/bin/sh\necho \"ran $1 $2\"\n"), 0o755)
	cmd := QuoteCommand(prog) + " hook claude-code"
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil || string(out) != "ran hook claude-code\n" {
		t.Fatalf("%s: %v %q", cmd, err, out)
	}
	if !RunsSnapHook(cmd, "claude-code") {
		t.Fatalf("%s is not recognised as snap's", cmd)
	}
}

// Settings snap cannot read whole are refused, never rewritten: content
// after the first JSON value, an event that is not a list.
func TestInstallRefusesWhatItWouldLose(t *testing.T) {
	for name, content := range map[string]string{
		"two values":     `{"model":"opus"}` + "\n" + `{"permissions":{"deny":["Bash(rm -rf:*)"]}}`,
		"event not list": `{"hooks":{"Stop":{"hooks":[{"type":"command","command":"say done"}]}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "settings.json")
			os.WriteFile(p, []byte(content), 0o644)
			if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{}); err == nil {
				t.Fatal("installed")
			}
			if b, _ := os.ReadFile(p); string(b) != content {
				t.Fatalf("the file changed: %s", b)
			}
		})
	}
}

// Another tool's hook that merely ends like snap's is neither taken for
// snap's at install nor removed at uninstall; a hook running snap at
// another path (a moved snap, or the user's own) counts as installed and is
// neither rewritten nor removed; characters like & stay as they are.
func TestInstallOnlyTouchesSnapsHooks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	orig := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"npx @acme/audit-trail hook claude-code"}]},` +
		`{"hooks":[{"type":"command","command":"/opt/old/snap hook claude-code"}]}],` +
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"make lint && echo ok > /dev/null"}]}]}}`
	os.WriteFile(p, []byte(orig), 0o644)
	res, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Events, ",") != "PreToolUse" || strings.Join(res.Kept, ",") != "Stop" {
		t.Fatalf("events %v, kept %v", res.Events, res.Kept)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "make lint && echo ok > /dev/null") || !strings.Contains(string(b), "npx @acme/audit-trail") ||
		!strings.Contains(string(b), `{"hooks":[{"type":"command","command":"/opt/old/snap hook claude-code"}]}]`) {
		t.Fatalf("after install:\n%s", b)
	}
	res, err = InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Uninstall: true})
	if err != nil || strings.Join(res.Kept, ",") != "Stop" {
		t.Fatal(res, err)
	}
	if b, _ := os.ReadFile(p); string(b) != orig {
		t.Fatalf("after uninstall:\n%s\nwant\n%s", b, orig)
	}
}

// claudeSpecs are Claude Code's hooks (agent/claudecode.Hooks).
var claudeSpecs = []HookSpec{
	{Event: "SessionStart"}, {Event: "UserPromptSubmit"},
	{Event: "PreToolUse", Matcher: "*"}, {Event: "PostToolUse", Matcher: "*"},
	{Event: "Stop"}, {Event: "SubagentStop"}, {Event: "PreCompact"},
}

// snapHooks counts, per event, the hooks in a settings text that run
// snap's hook for claude-code.
func snapHooks(t *testing.T, text []byte) map[string]int {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	n := map[string]int{}
	for event, entries := range s.Hooks {
		for _, e := range entries {
			for _, h := range e.Hooks {
				if RunsSnapHook(h.Command, "claude-code") {
					n[event]++
				}
			}
		}
	}
	return n
}

// Adversarial report A2: hooks the user wrote that run snap (a timeout, a
// matcher of their own, another path to snap, in an entry shared with
// another command) are the user's. Install rewrites none of them and adds
// no second hook beside one (it reports them as kept); uninstall removes
// none of them; and install then uninstall gives back the original bytes,
// also for "hooks": null, empty containers and an empty file. Installing
// again over snap's own install changes nothing.
func TestInstallKeepsUsersOwnSnapHooks(t *testing.T) {
	const cmd = "/tmp/a2/snap hook claude-code" // this install's command line
	for _, c := range []struct {
		name, text string
		kept       string // the events whose hook is the user's
	}{
		{"timeout", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code","timeout":99}]}]}}`, "Stop"},
		{"matcher Bash", `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"snap hook claude-code"}]}]}}`, "PreToolUse"},
		{"absolute path", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/usr/local/bin/snap hook claude-code"}]}]}}`, "Stop"},
		{"bare snap, snap's shape", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code"}]}]}}`, "Stop"},
		{"shared with fmt", `{"hooks":{"PostToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"snap hook claude-code"},{"type":"command","command":"fmt"}]}]}}`, "PostToolUse"},
		{"snap's matcher, another member", `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"` + cmd + `"}],"note":"mine"}]}}`, "PreToolUse"},
		{"several, multi-line", "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"snap hook claude-code\", \"timeout\": 5}]}\n    ],\n" +
			"    \"SessionStart\": [{\"matcher\": \"startup\", \"hooks\": [{\"command\": \"'/opt/my tools/snap' hook claude-code\", \"type\": \"command\"}]}]\n  }\n}\n", "SessionStart,Stop"},
		{"hooks null", `{"a":1,  "hooks" : null}`, ""},
		{"hooks empty", `{"a":1, "hooks": { }}`, ""},
		{"event empty and null", "{\n  \"hooks\": {\"Stop\": [], \"PreCompact\": null}\n}\n", ""},
		{"empty file", ``, ""},
		{"blank file", "\n\n", ""},
		{"empty object", `{}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "settings.local.json")
			os.WriteFile(p, []byte(c.text), 0o644)
			before := snapHooks(t, []byte(strings.TrimSpace(c.text)+map[bool]string{true: "{}"}[strings.TrimSpace(c.text) == ""]))
			res, err := InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Kept, ","); got != c.kept {
				t.Errorf("kept %q, want %q", got, c.kept)
			}
			if len(res.Events)+len(res.Kept) != len(claudeSpecs) {
				t.Errorf("added %v and kept %v: want every event once", res.Events, res.Kept)
			}
			installed, _ := os.ReadFile(p)
			after := snapHooks(t, installed)
			for _, s := range claudeSpecs {
				if want := max(before[s.Event], 1); after[s.Event] != want {
					t.Errorf("%s: %d hooks run snap, want %d:\n%s", s.Event, after[s.Event], want, installed)
				}
			}
			// The user's hooks keep their bytes (command path, timeout).
			var orig struct{ Hooks map[string]json.RawMessage }
			json.Unmarshal([]byte(c.text), &orig)
			for event, raw := range orig.Hooks {
				if string(raw) != "null" && !strings.Contains(string(installed), strings.TrimSuffix(strings.TrimSpace(string(raw)), "]")) {
					t.Errorf("%s: the user's hooks changed:\n%s\nwas\n%s", event, installed, raw)
				}
			}
			if res, err := InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{}); err != nil || res.Changed {
				t.Fatalf("second install: %+v %v", res, err)
			}
			if again, _ := os.ReadFile(p); string(again) != string(installed) {
				t.Fatalf("second install changed the bytes:\n%s", again)
			}
			res, err = InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{Uninstall: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Kept, ","); got != c.kept {
				t.Errorf("uninstall kept %q, want %q", got, c.kept)
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != c.text {
				t.Fatalf("after uninstall (%v):\n%q\nwant the original:\n%q", err, b, c.text)
			}
			if res, err := InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{Uninstall: true}); err != nil || res.Changed {
				t.Fatalf("second uninstall: %+v %v", res, err)
			}
		})
	}
}

// Snap's own entries are recognised whatever their layout, and only they:
// removing them from a file something else changed since (so the backup
// does not match) still leaves every hook of the user's, byte for byte.
func TestUninstallAfterOtherChanges(t *testing.T) {
	const cmd = "snap hook claude-code"
	orig := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code","timeout":99}]}]}}`
	p := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(p, []byte(orig), 0o644)
	if _, err := InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	// Another tool rewrites the file in its own layout and adds a key.
	var v map[string]any
	json.Unmarshal(b, &v)
	v["model"] = "opus"
	b, _ = json.MarshalIndent(v, "", "\t")
	os.WriteFile(p, b, 0o644)
	res, err := InstallHooks(p, "claude-code", cmd, claudeSpecs, InstallOptions{Uninstall: true})
	if err != nil || len(res.Events) != len(claudeSpecs)-1 || strings.Join(res.Kept, ",") != "Stop" {
		t.Fatal(res, err)
	}
	b, _ = os.ReadFile(p)
	var got, want any
	json.Unmarshal(b, &got)
	json.Unmarshal([]byte(`{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code","timeout":99}]}]}}`), &want)
	if g, w := mustMarshal(got), mustMarshal(want); g != w {
		t.Fatalf("after uninstall:\n%s\nwant\n%s", b, w)
	}
}

// A settings file that is a symlink (dotfiles, or a cloned repository's
// link to any file of the user's) is refused, dangling or not, for install
// and uninstall: the error says where it points, nothing is written
// through it, and no backup is made, there or beside the link.
func TestInstallRefusesSymlink(t *testing.T) {
	installed := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code"}]}]}}`
	for _, c := range []struct {
		name, target string // target "": dangling
		uninstall    bool
	}{
		{"install", `{"model":"opus"}`, false},
		{"uninstall", installed, true},
		{"dangling", "", false},
		{"dangling uninstall", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "dotfiles", "settings.json")
			os.MkdirAll(filepath.Dir(target), 0o755)
			if c.target != "" {
				os.WriteFile(target, []byte(c.target), 0o644)
			}
			link := filepath.Join(dir, "proj", ".claude", "settings.json")
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink("../../dotfiles/settings.json", link); err != nil {
				t.Fatal(err)
			}
			_, err := InstallHooks(link, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Uninstall: c.uninstall, Force: true})
			if !errors.Is(err, snap.ErrUsage) || !strings.Contains(fmt.Sprint(err), "symbolic link to ../../dotfiles/settings.json ("+target+")") {
				t.Fatalf("want a usage error naming the target, got %v", err)
			}
			if c.target == "" && !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("a dangling link is not said to be one: %v", err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatal("the symlink was replaced")
			}
			if c.target == "" {
				if _, err := os.Lstat(target); err == nil {
					t.Fatal("the link's target was made")
				}
			} else if b, _ := os.ReadFile(target); string(b) != c.target {
				t.Fatalf("target changed: %s", b)
			}
			if es, _ := os.ReadDir(filepath.Dir(link)); len(es) != 1 {
				t.Fatalf("files made beside the link: %v", es)
			}
			if es, _ := os.ReadDir(filepath.Dir(target)); len(es) != min(len(c.target), 1) {
				t.Fatalf("files made beside the target: %v", es)
			}
		})
	}
}

// A settings file that is read-only to its owner is refused (install and
// uninstall alike), even for root, unless Force; Force keeps its mode.
func TestInstallRefusesReadOnly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	orig := `{"readonly": "on purpose"}` + "\n"
	os.WriteFile(p, []byte(orig), 0o644)
	os.Chmod(p, 0o444)
	_, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{})
	if !errors.Is(err, snap.ErrUsage) || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("want a usage error about a read-only file, got %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != orig {
		t.Fatalf("changed: %s", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("files made: %v", es)
	}
	res, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Force: true})
	if err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Nothing to change: no refusal.
	if res, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{}); err != nil || res.Changed {
		t.Fatal(res, err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Uninstall: true}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("uninstall: want a usage error, got %v", err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Uninstall: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != orig {
		t.Fatalf("after uninstall: %s", b)
	}
}

// Anything but a regular file or a symlink is refused (a FIFO would block
// the read).
func TestInstallRefusesNonRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("want a usage error, got %v", err)
	}
	if _, err := Installed(p, "claude-code", testSpecs); err == nil {
		t.Fatal("status: no error")
	}
}

func mustMarshal(v any) string { b, _ := json.Marshal(v); return string(b) }

// Distinct agent session ids never share a snap session, and every name
// is a legal one.
func TestSessionNameDistinct(t *testing.T) {
	t.Setenv("SNAP_SESSION", "")
	ids := []string{"3f1c2a9e-0b1d-4c5e-9f00-aa11bb22cc33", "a/b", "a:b", "a-b", "会话一", "会话二", "..", ".", "-rf", "", strings.Repeat("x", 300), strings.Repeat("x", 301), "default"}
	seen := map[string]string{}
	for _, id := range ids {
		name := SessionName("claude-code", id)
		if prev, ok := seen[name]; ok {
			t.Errorf("%q and %q both map to %q", prev, id, name)
		}
		seen[name] = id
		if name == "" || len(name) > 100 || strings.ContainsAny(name, "/:. ") && name != id || strings.HasPrefix(name, "-") {
			t.Errorf("%q maps to %q", id, name)
		}
	}
	if SessionName("claude-code", "") != "claude-code" {
		t.Error("no id: want the agent's name")
	}
}

// The settings file of the adversarial report's N8: keys in no particular
// order, one-line arrays and objects, an escape, a foreign hook on an
// event snap also uses.
const n8Settings = `{
  "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
  "model": "claude-sonnet-4",
  "statusLine": {"type": "command", "command": "echo \u003cbranch\u003e"},
  "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write"}]}]},
  "apiKeyHelper": "/bin/key.sh"
}
`

// Install changes only the hooks member: everything else keeps its bytes
// (order, one-line layout, escapes); uninstall gives the original text
// back; the backup is made once, before the first change, and never
// overwritten.
func TestInstallKeepsTheText(t *testing.T) {
	specs := []HookSpec{{Event: "PreToolUse", Matcher: "Edit|Bash"}, {Event: "PostToolUse", Matcher: ".*"}, {Event: "Stop"}}
	p := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(p, []byte(n8Settings), 0o644)
	res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{})
	if err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	b, _ := os.ReadFile(p)
	for _, keep := range []string{
		"{\n  \"permissions\": {\"allow\": [\"Bash(npm run test:*)\"], \"deny\": [\"Read(./.env)\"]},\n  \"model\": \"claude-sonnet-4\",\n",
		`"command": "echo \u003cbranch\u003e"`,
		`"hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write"}]}, `,
		"},\n  \"apiKeyHelper\": \"/bin/key.sh\"\n}\n",
	} {
		if !strings.Contains(string(b), keep) {
			t.Errorf("after install, the text lost %q:\n%s", keep, b)
		}
	}
	if got, err := Installed(p, "claude-code", specs); err != nil || len(got) != len(specs) {
		t.Fatalf("installed: %v %v\n%s", got, err, b)
	}
	if backup, _ := os.ReadFile(res.Backup); string(backup) != n8Settings {
		t.Fatalf("backup %s: %q", res.Backup, backup)
	}
	if res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{}); err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{Uninstall: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != n8Settings {
		t.Fatalf("after uninstall:\n%s\nwant the original:\n%s", b, n8Settings)
	}
	if backup, _ := os.ReadFile(res.Backup); string(backup) != n8Settings {
		t.Fatalf("the uninstall overwrote the backup: %q", backup)
	}
	// A later install (another program path) keeps the first backup.
	if _, err := InstallHooks(p, "claude-code", "/opt/snap hook claude-code", specs, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if backup, _ := os.ReadFile(res.Backup); string(backup) != n8Settings {
		t.Fatalf("a later install overwrote the backup: %q", backup)
	}
}

// A settings file snap created is removed again by the uninstall that
// leaves nothing in it (no backup: there was no file).
func TestInstallNewFileRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".claude", "settings.local.json")
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil || !strings.HasPrefix(string(b), "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Edit|Bash\",") {
		t.Fatalf("new file (%v):\n%s", err, b)
	}
	if _, err := os.Stat(p + ".snap-backup"); err == nil {
		t.Fatal("a backup of no file")
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, InstallOptions{Uninstall: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err == nil {
		b, _ := os.ReadFile(p)
		t.Fatalf("the file snap made is still there: %q", b)
	}
}

// Property: for random settings texts (key orders, whitespace styles,
// escapes, foreign hooks, on other events or on snap's), install keeps
// every byte outside the hooks member and every foreign hook, and
// install then uninstall gives the original bytes back.
func TestInstallRoundTripProperty(t *testing.T) {
	specs := []HookSpec{{Event: "SessionStart"}, {Event: "PreToolUse", Matcher: ".*"}, {Event: "PostToolUse", Matcher: ".*"}, {Event: "Stop"}}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 250
	if testing.Short() {
		n = 60
	}
	dir := t.TempDir()
	for i := range n {
		text, foreign, exact := randomSettings(rng)
		p := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		blank := strings.TrimSpace(text) == ""
		before := map[string]int{}
		if !blank {
			before = snapHooks(t, []byte(text))
		}
		res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{})
		if err != nil {
			t.Fatalf("case %d: install: %v\n%s", i, err, text)
		}
		after, _ := os.ReadFile(p)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(after, &top); err != nil {
			t.Fatalf("case %d: install wrote no JSON object (%v):\n%s\nfrom\n%s", i, err, after, text)
		}
		if got, _ := Installed(p, "claude-code", specs); len(got) != len(specs) || res.Changed != (len(res.Events) > 0) || len(res.Events)+len(res.Kept) != len(specs) {
			t.Fatalf("case %d: installed %v, result %+v:\n%s", i, got, res, after)
		}
		// One hook runs snap on each event: snap's, or the user's own.
		for event, n := range snapHooks(t, after) {
			if want := max(before[event], 1); slices.ContainsFunc(specs, func(s HookSpec) bool { return s.Event == event }) && n != want {
				t.Fatalf("case %d: %s: %d hooks run snap, want %d:\n%s", i, event, n, want, after)
			}
		}
		// Everything before and after the hooks member is the same bytes.
		if pre, post, ok := aroundHooks(text); ok {
			if !strings.HasPrefix(string(after), pre) || !strings.HasSuffix(string(after), post) {
				t.Fatalf("case %d: the text outside \"hooks\" changed:\n%s\nfrom\n%s", i, after, text)
			}
		} else if last := strings.LastIndex(text, "}"); !blank && !strings.HasPrefix(string(after), strings.TrimRight(text[:last], " \t\r\n")) {
			t.Fatalf("case %d: the text before the new \"hooks\" changed:\n%s\nfrom\n%s", i, after, text)
		}
		if got := foreignCommands(t, after, specs); !slices.Equal(got, foreign) {
			t.Fatalf("case %d: foreign hooks after install %v, want %v:\n%s", i, got, foreign, after)
		}
		// Taking snap's entries out of the text is the inverse of adding
		// them (the backup is not needed for that).
		if exact {
			back, removed, _, err := removeHooks(after, "claude-code", "snap hook claude-code", specs)
			if err != nil || string(back) != text || !slices.Equal(removed, res.Events) {
				t.Fatalf("case %d: removeHooks(%v, removed %v):\n%s\nwant the original:\n%s", i, err, removed, back, text)
			}
		}
		if res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{}); err != nil || res.Changed {
			t.Fatalf("case %d: second install changed the file: %v", i, err)
		}
		if again, _ := os.ReadFile(p); string(again) != string(after) {
			t.Fatalf("case %d: second install changed the bytes", i)
		}
		if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, InstallOptions{Uninstall: true}); err != nil {
			t.Fatalf("case %d: uninstall: %v", i, err)
		}
		back, _ := os.ReadFile(p)
		if string(back) != text {
			t.Fatalf("case %d: install+uninstall:\n%s\nwant the original:\n%s\n(installed:\n%s)", i, back, text, after)
		}
		if backup, err := os.ReadFile(p + ".snap-backup"); res.Changed && string(backup) != text || !res.Changed && err == nil {
			t.Fatalf("case %d: backup %q", i, backup)
		}
	}
}

// randomSettings is a settings text in a random style, the commands of the
// hooks it holds, sorted (some run snap, the user's own), and whether
// taking snap's entries out of the installed text gives back its bytes
// (no: it holds an empty or null "hooks" or event list, or is blank, which
// only the backup can tell from nothing).
func randomSettings(rng *rand.Rand) (text string, foreign []string, exact bool) {
	exact = true
	type style struct{ indent, colon, comma string }
	styles := []style{{"  ", ": ", ", "}, {"    ", ": ", ", "}, {"\t", ": ", ", "}, {"", ":", ","}, {"", ": ", ", "}, {" ", " : ", " , "}}
	st := styles[rng.IntN(len(styles))]
	nl := "\n"
	if rng.IntN(5) == 0 {
		nl = "\r\n"
	}
	// w renders an object or array at depth d: multi-line when st.indent
	// is set and the coin says so, else on one line.
	var render func(v any, d int) string
	render = func(v any, d int) string {
		multi := st.indent != "" && rng.IntN(3) != 0
		var items []string
		open, close := "[", "]"
		switch v := v.(type) {
		case [][2]any:
			open, close = "{", "}"
			for _, kv := range v {
				items = append(items, kv[0].(string)+st.colon+render(kv[1], d+1))
			}
		case []any:
			for _, e := range v {
				items = append(items, render(e, d+1))
			}
		case string:
			return v
		}
		if len(items) == 0 {
			return open + close
		}
		if !multi {
			return open + strings.Join(items, st.comma) + close
		}
		in := nl + strings.Repeat(st.indent, d+1)
		return open + in + strings.Join(items, ","+in) + nl + strings.Repeat(st.indent, d) + close
	}
	scalars := []string{`"opus"`, `"a \u003c b \u0026\u0026 c"`, `"\/path\/x"`, `"caf\u00e9 ☕"`, `12345678901234567890123`, `1.50`, `-0.0e+1`, `true`, `null`, `""`, `"tab\there"`}
	var value func(d int) any
	value = func(d int) any {
		switch r := rng.IntN(6); {
		case r < 3 || d > 2:
			return scalars[rng.IntN(len(scalars))]
		case r == 3:
			var a []any
			for range rng.IntN(3) {
				a = append(a, value(d+1))
			}
			return a
		default:
			var o [][2]any
			for j := range rng.IntN(3) {
				o = append(o, [2]any{fmt.Sprintf(`"k%d"`, j), value(d + 1)})
			}
			return o
		}
	}
	handler := func() any {
		c := fmt.Sprintf("tool-%d --flag \u003cx\u003e", len(foreign))
		var extra [][2]any
		// A hook of the user's own that runs snap (never in the exact
		// shape of snap's entry): with a timeout, or another path.
		switch rng.IntN(8) {
		case 0:
			c, extra = "snap hook claude-code", [][2]any{{`"timeout"`, `99`}}
		case 1:
			c = "/usr/local/bin/snap hook claude-code"
		case 2:
			c = "'/opt/my tools/snap' hook claude-code"
		}
		foreign = append(foreign, c)
		cs, _ := json.Marshal(c)
		kv := [][2]any{{`"type"`, `"command"`}, {`"command"`, string(cs)}}
		if rng.IntN(2) == 0 {
			kv[0], kv[1] = kv[1], kv[0]
		}
		return append(kv, extra...)
	}
	var top [][2]any
	keys := []string{`"model"`, `"permissions"`, `"env"`, `"apiKeyHelper"`, `"statusLine"`, `"caf\u00e9"`, `"includeCoAuthoredBy"`}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys[:rng.IntN(len(keys)+1)] {
		top = append(top, [2]any{k, value(0)})
	}
	if rng.IntN(4) != 0 {
		var hooks [][2]any
		events := []string{`"Notification"`, `"PreToolUse"`, `"Stop"`, `"SessionEnd"`, `"PostToolUse"`}
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		for _, e := range events[:1+rng.IntN(len(events))] {
			switch rng.IntN(12) {
			case 0:
				hooks = append(hooks, [2]any{e, "null"})
				exact = false
				continue
			case 1:
				hooks = append(hooks, [2]any{e, []any{}})
				exact = false
				continue
			}
			var entries []any
			for range 1 + rng.IntN(2) {
				var hs []any
				for range 1 + rng.IntN(2) {
					hs = append(hs, handler())
				}
				entry := [][2]any{{`"hooks"`, hs}}
				if rng.IntN(2) == 0 {
					entry = append([][2]any{{`"matcher"`, `"Bash"`}}, entry...)
				}
				entries = append(entries, entry)
			}
			hooks = append(hooks, [2]any{e, entries})
		}
		var value any = hooks
		switch rng.IntN(10) {
		case 0:
			value, foreign, exact = "null", nil, false
		case 1:
			value, foreign, exact = [][2]any{}, nil, false
		}
		at := rng.IntN(len(top) + 1)
		top = slices.Insert(top, at, [2]any{`"hooks"`, value})
	}
	text = render(top, 0)
	if rng.IntN(3) != 0 {
		text += nl
	}
	if rng.IntN(25) == 0 { // an empty or blank file
		text, foreign, exact = []string{"", nl, "  " + nl + nl}[rng.IntN(3)], nil, false
	}
	sort.Strings(foreign)
	return text, foreign, exact
}

// aroundHooks is the text before the top-level "hooks" key and after its
// value, found by the test's own simple scan (its generator writes no
// "hooks" key elsewhere at the top level); false when there is none.
func aroundHooks(text string) (string, string, bool) {
	i := strings.Index(text, `"hooks"`)
	if i < 0 {
		return "", "", false
	}
	// The rest starts with ws ':' ws VALUE.
	var raw json.RawMessage
	j := i + len(`"hooks"`)
	for text[j] != ':' {
		j++
	}
	d := json.NewDecoder(strings.NewReader(text[j+1:]))
	if d.Decode(&raw) != nil {
		return "", "", false
	}
	return text[:i], text[j+1+int(d.InputOffset()):], true
}

// foreignCommands are the hook commands in a settings text that are not in
// snap's own entries for specs, sorted.
func foreignCommands(t *testing.T, text []byte, specs []HookSpec) []string {
	t.Helper()
	var s struct{ Hooks map[string][]map[string]any }
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	var out []string
	for event, entries := range s.Hooks {
		for _, e := range entries {
			i := slices.IndexFunc(specs, func(s HookSpec) bool { return s.Event == event })
			if i >= 0 {
				own := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "snap hook claude-code"}}}
				if specs[i].Matcher != "" {
					own["matcher"] = specs[i].Matcher
				}
				if reflect.DeepEqual(e, own) {
					continue
				}
			}
			hs, _ := e["hooks"].([]any)
			for _, h := range hs {
				c, _ := h.(map[string]any)["command"].(string)
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}
