package agent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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
	res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, false)
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
	if res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, false); err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != n8Settings {
		t.Fatalf("after uninstall:\n%s\nwant the original:\n%s", b, n8Settings)
	}
	if backup, _ := os.ReadFile(res.Backup); string(backup) != n8Settings {
		t.Fatalf("the uninstall overwrote the backup: %q", backup)
	}
	// A later install (another program path) keeps the first backup.
	if _, err := InstallHooks(p, "claude-code", "/opt/snap hook claude-code", specs, false); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, false); err != nil {
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
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, false); err != nil {
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
	if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", testSpecs, true); err != nil {
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
		text, foreign := randomSettings(rng)
		p := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, false)
		if err != nil {
			t.Fatalf("case %d: install: %v\n%s", i, err, text)
		}
		after, _ := os.ReadFile(p)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(after, &top); err != nil {
			t.Fatalf("case %d: install wrote no JSON object (%v):\n%s\nfrom\n%s", i, err, after, text)
		}
		if got, _ := Installed(p, "claude-code", specs); len(got) != len(specs) || !res.Changed {
			t.Fatalf("case %d: installed %v:\n%s", i, got, after)
		}
		// Everything before and after the hooks member is the same bytes.
		if pre, post, ok := aroundHooks(text); ok {
			if !strings.HasPrefix(string(after), pre) || !strings.HasSuffix(string(after), post) {
				t.Fatalf("case %d: the text outside \"hooks\" changed:\n%s\nfrom\n%s", i, after, text)
			}
		} else if last := strings.LastIndex(text, "}"); !strings.HasPrefix(string(after), strings.TrimRight(text[:last], " \t\r\n")) {
			t.Fatalf("case %d: the text before the new \"hooks\" changed:\n%s\nfrom\n%s", i, after, text)
		}
		if got := foreignCommands(t, after); !slices.Equal(got, foreign) {
			t.Fatalf("case %d: foreign hooks after install %v, want %v:\n%s", i, got, foreign, after)
		}
		if res, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, false); err != nil || res.Changed {
			t.Fatalf("case %d: second install changed the file: %v", i, err)
		}
		if _, err := InstallHooks(p, "claude-code", "snap hook claude-code", specs, true); err != nil {
			t.Fatalf("case %d: uninstall: %v", i, err)
		}
		back, _ := os.ReadFile(p)
		if string(back) != text {
			t.Fatalf("case %d: install+uninstall:\n%s\nwant the original:\n%s\n(installed:\n%s)", i, back, text, after)
		}
		if backup, _ := os.ReadFile(p + ".snap-backup"); string(backup) != text {
			t.Fatalf("case %d: backup %q", i, backup)
		}
	}
}

// randomSettings is a settings text in a random style, and the commands of
// the foreign hooks it holds, sorted.
func randomSettings(rng *rand.Rand) (string, []string) {
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
	var foreign []string
	handler := func() any {
		c := fmt.Sprintf("tool-%d --flag \u003cx\u003e", len(foreign))
		foreign = append(foreign, c)
		cs, _ := json.Marshal(c)
		kv := [][2]any{{`"type"`, `"command"`}, {`"command"`, string(cs)}}
		if rng.IntN(2) == 0 {
			kv[0], kv[1] = kv[1], kv[0]
		}
		return kv
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
		at := rng.IntN(len(top) + 1)
		top = slices.Insert(top, at, [2]any{`"hooks"`, hooks})
	}
	text := render(top, 0)
	if rng.IntN(3) != 0 {
		text += nl
	}
	sort.Strings(foreign)
	return text, foreign
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

// foreignCommands are the hook commands in a settings text that are not
// snap's, sorted.
func foreignCommands(t *testing.T, text []byte) []string {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	var out []string
	for _, entries := range s.Hooks {
		for _, e := range entries {
			for _, h := range e.Hooks {
				if !IsOurs(h.Command, "claude-code") {
					out = append(out, h.Command)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
