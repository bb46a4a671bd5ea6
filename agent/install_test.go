package agent

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var testSpecs = []HookSpec{{Event: "PreToolUse", Matcher: "Edit|Bash"}, {Event: "Stop"}}

func TestIsOurs(t *testing.T) {
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
		if got := IsOurs(cmd, "claude-code"); got != want {
			t.Errorf("IsOurs(%q) = %v, want %v", cmd, got, want)
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
	if !IsOurs(cmd, "claude-code") {
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
			if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, false); err == nil {
				t.Fatal("installed")
			}
			if b, _ := os.ReadFile(p); string(b) != content {
				t.Fatalf("the file changed: %s", b)
			}
		})
	}
}

// Another tool's hook that merely ends like snap's is neither taken for
// snap's at install nor removed at uninstall; a stale path of snap's own
// is updated; characters like & stay as they are.
func TestInstallOnlyTouchesSnapsHooks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	orig := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"npx @acme/audit-trail hook claude-code"}]},` +
		`{"hooks":[{"type":"command","command":"/opt/old/snap hook claude-code"}]}],` +
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"make lint && echo ok > /dev/null"}]}]}}`
	os.WriteFile(p, []byte(orig), 0o644)
	res, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Events, ",") != "PreToolUse,Stop" {
		t.Fatalf("events %v", res.Events)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "make lint && echo ok > /dev/null") || !strings.Contains(string(b), "npx @acme/audit-trail") || strings.Contains(string(b), "/opt/old/snap") {
		t.Fatalf("after install:\n%s", b)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, true); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(p)
	var got, want any
	json.Unmarshal(b, &got)
	json.Unmarshal([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"npx @acme/audit-trail hook claude-code"}]}],`+
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"make lint && echo ok > /dev/null"}]}]}}`), &want)
	if g, w := mustMarshal(got), mustMarshal(want); g != w {
		t.Fatalf("after uninstall:\n%s\nwant\n%s", g, w)
	}
}

// A settings file that is a symlink (dotfiles) is written where it points.
func TestInstallThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "settings.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.WriteFile(target, []byte(`{"model":"opus"}`), 0o644)
	link := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.Symlink(target, link)
	if _, err := InstallHooks(link, "claude-code", "snap hook claude-code", testSpecs, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), "snap hook claude-code") || !strings.Contains(string(b), "opus") {
		t.Fatalf("target: %s", b)
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
