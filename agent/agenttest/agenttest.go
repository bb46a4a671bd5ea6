// Package agenttest is the conformance suite of agent adapters: every
// adapter's own test calls Run with its adapter and its fixtures, and so
// passes the same checks as every other (the shape of restic's
// internal/backend/test and kopia's blobtesting, for agents):
//
//   - registered: the adapter is the one agent.Lookup finds by its name;
//     its hook events are distinct; its scopes are among agent.ScopeNames,
//     its default scope is local when it has one, else user; each scope's
//     settings file lies under the project (project, local) or the home
//     directory (user), and a scope it lacks is an error; its hook answer
//     is nothing or one JSON object; its transcript directories lie under
//     home; its help names it and each event it hooks.
//   - events: each hooked event, with only the payload's common fields,
//     parses to an Event of the adapter's, with the session, cwd and
//     transcript, that records a checkpoint; agent.Hook records each one in
//     the session agent.SessionName derives, and logs it under the
//     adapter's name, with the actor its kind implies (the agent's after a
//     tool call or a turn, the user's before a tool call, at a prompt or
//     at the session's start); an event it does not hook records nothing.
//   - garbage: no payload makes Parse panic or forget whose event it is
//     (empty, not JSON, not an object, deeply nested, huge, every field
//     missing or of the wrong type, hostile strings and paths in every
//     field, nested ones too); and agent.Hook, given such payloads with
//     hostile cwds and transcripts (relative, the home directory, a file, a
//     directory, a FIFO, a NUL byte), returns within its bound without a
//     panic: the agent is never blocked.
//   - install: for each scope, installing into a missing file, twice,
//     then uninstalling, twice, leaves no file; and for random settings
//     texts (key orders, layouts, escapes, the user's own hooks on the
//     adapter's events, some running snap's hook themselves), install
//     keeps every foreign hook, puts exactly one hook running snap on each
//     event, changes nothing the second time, and uninstall gives the
//     original bytes back.
//   - replay: the adapter's real-data replay (Fixtures.Replay).
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
)

// Fixtures are what an adapter's test gives the suite.
type Fixtures struct {
	// Payload is a minimal payload of the agent's for event (one of its
	// Hooks): the event's name, the session id, the cwd and the transcript
	// path ("" for none), in the agent's field names, and nothing else.
	Payload func(event, session, cwd, transcript string) []byte
	// Samples are fuller payloads of the agent's real shapes (a prompt, a
	// file-editing tool call with its input, a shell call), for a project
	// at cwd: the garbage checks mutate them field by field, nested
	// objects too.
	Samples func(cwd, transcript string) [][]byte
	// Replay replays the agent's real sessions (../shared/realdata) or
	// real payloads through agent.Hook and checks that every rewind gives
	// the files and the transcript back. It may skip when the real data
	// is not on the machine; it must not be nil.
	Replay func(t *testing.T)
}

// Run runs the conformance suite on a.
func Run(t *testing.T, a agent.Adapter, f Fixtures) {
	if f.Payload == nil {
		t.Fatal("agenttest.Fixtures.Payload is nil: the suite needs the agent's payloads")
	}
	t.Run("registered", func(t *testing.T) { registered(t, a) })
	t.Run("events", func(t *testing.T) { events(t, a, f) })
	t.Run("garbage", func(t *testing.T) { garbage(t, a, f) })
	t.Run("install", func(t *testing.T) { install(t, a) })
	t.Run("replay", func(t *testing.T) {
		if f.Replay == nil {
			t.Fatal("no replay: every adapter replays real sessions or real payloads of its agent")
		}
		f.Replay(t)
	})
}

func registered(t *testing.T, a agent.Adapter) {
	name := a.Name()
	got, ok := agent.Lookup(name)
	if !ok || reflect.TypeOf(got) != reflect.TypeOf(a) {
		t.Fatalf("agent.Lookup(%q) = %T, %v: the adapter's package registers it in its init (agent.Register)", name, got, ok)
	}
	if !slices.Contains(agent.Names(), name) {
		t.Errorf("agent.Names() %v lacks %s", agent.Names(), name)
	}
	if strings.TrimSpace(a.Title()) == "" {
		t.Error("no Title")
	}
	hooks := a.Hooks()
	if len(hooks) == 0 {
		t.Fatal("no Hooks: 'snap install' would add nothing")
	}
	seen := map[string]bool{}
	for _, h := range hooks {
		if h.Event == "" || seen[h.Event] {
			t.Errorf("hook event %q empty or repeated in %v", h.Event, hooks)
		}
		seen[h.Event] = true
	}
	scopes := a.Scopes()
	if len(scopes) == 0 {
		t.Fatal("no Scopes")
	}
	root, home := "/r/proj", "/h/me"
	paths := map[string]string{}
	for _, s := range scopes {
		if !slices.Contains(agent.ScopeNames(), s) {
			t.Errorf("scope %q is none of %v (the CLI's flags)", s, agent.ScopeNames())
		}
		p, err := a.SettingsPath(s, root, home)
		if err != nil {
			t.Errorf("SettingsPath(%s): %v", s, err)
			continue
		}
		under := root
		if s == agent.ScopeUser {
			under = home
		}
		if rel, err := filepath.Rel(under, p); !filepath.IsAbs(p) || err != nil || !filepath.IsLocal(rel) {
			t.Errorf("SettingsPath(%s) = %s, not under %s", s, p, under)
		}
		for other, q := range paths {
			if q == p {
				t.Errorf("scopes %s and %s share %s", s, other, p)
			}
		}
		paths[s] = p
	}
	want := agent.ScopeUser
	if slices.Contains(scopes, agent.ScopeLocal) {
		want = agent.ScopeLocal
	}
	if d := a.DefaultScope(); d != want {
		t.Errorf("DefaultScope %q, want %q: the scope that affects only this user", d, want)
	}
	for _, s := range append(slices.DeleteFunc(agent.ScopeNames(), func(s string) bool { return slices.Contains(scopes, s) }), "nosuch", "") {
		if p, err := a.SettingsPath(s, root, home); err == nil {
			t.Errorf("SettingsPath(%q) = %s: a scope the agent lacks must be an error", s, p)
		}
	}
	if ans := a.HookAnswer(); ans != "" {
		var obj map[string]any
		if !strings.HasSuffix(ans, "\n") || json.Unmarshal([]byte(ans), &obj) != nil {
			t.Errorf("HookAnswer %q: nothing, or one JSON object and a newline", ans)
		}
	}
	for _, d := range a.TranscriptDirs(home) {
		if rel, err := filepath.Rel(home, d); err != nil || !filepath.IsLocal(rel) {
			t.Errorf("transcript directory %s is not under the home directory %s", d, home)
		}
	}
	for what, text := range map[string]string{"HookHelp": a.HookHelp(), "InstallHelp": a.InstallHelp()} {
		if !strings.Contains(text, name) {
			t.Errorf("%s does not name %s", what, name)
		}
		for _, h := range hooks {
			if !strings.Contains(text, h.Event) {
				t.Errorf("%s does not name the event %s", what, h.Event)
			}
		}
		for _, l := range strings.Split(text, "\n") {
			if len([]rune(l)) > 80 {
				t.Errorf("%s: a line over 80 characters: %q", what, l)
			}
		}
	}
}

// project is a project directory with a file, a transcript beside it and
// a home directory of the test's own.
func project(t *testing.T) (proj, transcript string) {
	t.Helper()
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv(snap.EnvSession, "")
	os.MkdirAll(filepath.Join(base, "home"), 0o755)
	proj = filepath.Join(base, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	transcript = filepath.Join(base, "transcript.jsonl")
	os.WriteFile(transcript, []byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o644)
	// A hook that finds no cwd looks for a store in its own directory.
	t.Chdir(base)
	return proj, transcript
}

func hook(t *testing.T, a agent.Adapter, payload []byte, o agent.Options) (stderr string, took time.Duration) {
	t.Helper()
	var e bytes.Buffer
	start := time.Now()
	agent.Hook(context.Background(), bytes.NewReader(payload), &e, o, a.Parse)
	return e.String(), time.Since(start)
}

func events(t *testing.T, a agent.Adapter, f Fixtures) {
	proj, transcript := project(t)
	const session = "conf-1"
	for i, h := range a.Hooks() {
		p := f.Payload(h.Event, session, proj, transcript)
		ev, err := a.Parse(p)
		if err != nil {
			t.Fatalf("%s: %v\n%s", h.Event, err, p)
		}
		if ev.Agent != a.Name() || ev.Name != h.Event || ev.Session != session || ev.Cwd != proj || ev.Transcript != transcript {
			t.Errorf("%s: %+v: want Agent %s, Name %s, Session %s, Cwd %s, Transcript %s", h.Event, ev, a.Name(), h.Event, session, proj, transcript)
		}
		if ev.Kind == "" {
			t.Errorf("%s records nothing: 'snap install' hooks no event for nothing", h.Event)
		}
		os.WriteFile(filepath.Join(proj, "a.txt"), []byte(fmt.Sprintf("change %d\n", i)), 0o644)
		if e, _ := hook(t, a, p, agent.Options{}); e != "" {
			t.Fatalf("%s: %s", h.Event, e)
		}
	}
	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatalf("no store after the events: %v", err)
	}
	defer repo.Close()
	ctx := context.Background()
	log, err := repo.Log(ctx, snap.LogOptions{Session: agent.SessionName(a.Name(), session)})
	if err != nil || len(log) != len(a.Hooks()) {
		t.Fatalf("%d checkpoints (%v) for %d events, each after a change", len(log), err, len(a.Hooks()))
	}
	// Who made each event's change (issue 22): what a capture after a
	// tool call or at the end of a turn finds is the agent's, what one
	// before a tool call, at a prompt or at the session's start finds is
	// the user's.
	wantActor := map[string]string{"post-tool": snap.ActorAgent, "stop": snap.ActorAgent, "subagent-stop": snap.ActorAgent,
		"pre-tool": snap.ActorUser, "prompt": snap.ActorUser, "session-start": snap.ActorUser}
	for _, e := range log {
		if e.Actor != wantActor[e.Kind] {
			t.Errorf("a %s checkpoint records actor %q, want %q", e.Kind, e.Actor, wantActor[e.Kind])
		}
	}
	lines, _ := agent.ReadLog(repo, 0)
	for i, h := range a.Hooks() {
		if i >= len(lines) || !strings.Contains(lines[i], " "+a.Name()+" "+h.Event+" session="+session+": recorded") {
			t.Errorf("hook log line %d: %q, want %s %s recorded", i, lines, a.Name(), h.Event)
		}
	}
	// An event the adapter does not know records nothing.
	if ev, err := a.Parse(f.Payload("NoSuchEvent", session, proj, transcript)); err != nil || ev.Kind != "" || ev.Agent != a.Name() {
		t.Errorf("an unknown event: %+v %v, want nothing to record", ev, err)
	}
	// A session id that is no legal session name goes to the session
	// SessionName derives, under the adapter's name.
	odd := "conf/2 :x"
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("odd\n"), 0o644)
	if e, _ := hook(t, a, f.Payload(a.Hooks()[0].Event, odd, proj, transcript), agent.Options{}); e != "" {
		t.Fatal(e)
	}
	s := agent.SessionName(a.Name(), odd)
	if l, err := repo.Log(ctx, snap.LogOptions{Session: s}); err != nil || len(l) != 1 || !strings.HasPrefix(s, a.Name()+"-") {
		t.Errorf("session id %q: session %s holds %d checkpoints (%v)", odd, s, len(l), err)
	}
}

// wrongTypes replace a field's value.
var wrongTypes = []any{nil, 0, -1, 1e308, true, "", []any{}, map[string]any{}, []any{1, "a", nil}, map[string]any{"a": map[string]any{"b": []any{}}}}

// hostile are strings put in every string field.
var hostile = []string{".", "..", "../../../../../../etc/passwd", "/etc/passwd", "relative/dir", "/", "~", "$HOME", "`touch pwned`",
	"a\x00b", "\u202e\ufeff", strings.Repeat("a/", 3000), strings.Repeat("é", 5000), "C:\\Windows\\system32", "\n\n\n", "*** Begin Patch"}

func garbage(t *testing.T, a agent.Adapter, f Fixtures) {
	proj, transcript := project(t)
	home := os.Getenv("HOME")
	var samples [][]byte
	for _, h := range a.Hooks() {
		samples = append(samples, f.Payload(h.Event, "g-1", proj, transcript))
	}
	if f.Samples != nil {
		samples = append(samples, f.Samples(proj, transcript)...)
	}
	huge := append(append([]byte(`{"prompt":"`), bytes.Repeat([]byte("x"), 17<<20)...), `"}`...)
	generic := [][]byte{nil, {}, []byte("   \n"), []byte("garbage"), []byte("{"), []byte("}"), []byte("null"), []byte("[]"), []byte(`"s"`),
		[]byte("123"), []byte("true"), []byte(`{"hook_event_name": 5}`), []byte(`{"hook_event_name": null, "cwd": []}`),
		bytes.Repeat([]byte("["), 100000), bytes.Repeat([]byte(`{"a":`), 20000), []byte("\xff\xfe\x00{}"), []byte("\ufeff{}"),
		[]byte(`{"a":1}{"b":2}`), []byte(`{"session_id":"x","session_id":{"y":1}}`), huge}

	// Parse: never a panic, always the adapter's event.
	parse := func(p []byte) {
		t.Helper()
		var ev agent.Event
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Parse panicked on %.300q: %v", p, r)
				}
			}()
			ev, err = a.Parse(p)
		}()
		if ev.Agent != a.Name() {
			t.Errorf("Parse(%.200q) = %+v, %v: the event's Agent is not %s (the hook log would not say whose event it was)", p, ev, err, a.Name())
		}
	}
	for _, p := range generic {
		parse(p)
	}
	for _, s := range samples {
		for _, m := range mutations(s) {
			parse(m)
		}
		var obj map[string]any
		json.Unmarshal(s, &obj)
		obj["prompt"] = strings.Repeat("a very long prompt ", 200000)
		big, _ := json.Marshal(obj)
		parse(big)
	}

	// Hook: within its bound, no panic, whatever the payload, the cwd and
	// the transcript.
	o := agent.Options{Timeout: 5 * time.Second, LockTimeout: time.Second}
	run := func(what string, p []byte) {
		t.Helper()
		e, took := hook(t, a, p, o)
		if took > o.Timeout+3*time.Second {
			t.Errorf("%s: the hook took %s", what, took)
		}
		if strings.Contains(e, "internal error") {
			t.Errorf("%s: the hook panicked: %s", what, e)
		}
	}
	for i, p := range generic {
		run(fmt.Sprintf("generic payload %d", i), p)
	}
	afile := filepath.Join(proj, "a.txt")
	adir := filepath.Join(proj, "dir")
	os.MkdirAll(adir, 0o755)
	fifo := filepath.Join(filepath.Dir(proj), "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		fifo = adir
	}
	badCwd := []string{"", "relative", "..", home, afile, filepath.Join(proj, "missing"), proj + "\x00x", filepath.Join(proj, "..", "proj", ".snap")}
	badTranscript := []string{"relative.jsonl", adir, fifo, filepath.Join(proj, "missing.jsonl"), transcript + "\x00x", "/dev/zero", proj}
	for i, s := range samples {
		var obj map[string]any
		if json.Unmarshal(s, &obj) != nil {
			t.Fatalf("sample %d is no JSON object: %s", i, s)
		}
		cwdKey, trKey := keyOf(obj, proj), keyOf(obj, transcript)
		if cwdKey == "" || trKey == "" {
			t.Fatalf("sample %d holds no cwd %s and transcript %s: %s", i, proj, transcript, s)
		}
		for _, c := range badCwd {
			run(fmt.Sprintf("sample %d, cwd %q", i, c), with(obj, cwdKey, c))
		}
		for _, tr := range badTranscript {
			run(fmt.Sprintf("sample %d, transcript %q", i, tr), with(obj, trKey, tr))
		}
		// Every field at once of the wrong type, then hostile.
		for j, v := range []any{0, []any{}, map[string]any{}, hostile[2], hostile[9]} {
			all := map[string]any{}
			for k := range obj {
				all[k] = v
			}
			if _, ok := v.(string); ok {
				all[cwdKey] = proj // the paths inside reach the project
			}
			b, _ := json.Marshal(all)
			run(fmt.Sprintf("sample %d, every field %d", i, j), b)
		}
		// Each nested string hostile, recorded in the project.
		for _, m := range nestedHostile(obj, cwdKey, trKey) {
			run(fmt.Sprintf("sample %d, hostile %.80s", i, m), m)
		}
	}
	if fi, err := os.Stat(filepath.Join(home, snap.StoreDirName)); err == nil {
		t.Errorf("a store was made in the home directory (%v)", fi.Mode())
	}
}

// keyOf is the top-level key of obj whose value is v.
func keyOf(obj map[string]any, v string) string {
	for k, x := range obj {
		if x == v {
			return k
		}
	}
	return ""
}

func with(obj map[string]any, key string, v any) []byte {
	c := map[string]any{}
	for k, x := range obj {
		c[k] = x
	}
	c[key] = v
	b, _ := json.Marshal(c)
	return b
}

// mutations of a payload: each field missing, of each wrong type, or
// (for strings, at any depth) each hostile string.
func mutations(p []byte) [][]byte {
	var obj map[string]any
	if json.Unmarshal(p, &obj) != nil {
		return nil
	}
	var out [][]byte
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				y := x[k]
				delete(x, k)
				b, _ := json.Marshal(obj)
				out = append(out, b)
				for _, w := range wrongTypes {
					x[k] = w
					b, _ := json.Marshal(obj)
					out = append(out, b)
				}
				x[k] = y
				walk(y, func(n any) { x[k] = n })
				x[k] = y
			}
		case []any:
			for i, y := range x {
				walk(y, func(n any) { x[i] = n })
				x[i] = y
			}
		case string:
			for _, h := range hostile {
				set(h)
				b, _ := json.Marshal(obj)
				out = append(out, b)
			}
			set(x)
		}
	}
	walk(obj, func(any) {})
	return out
}

// nestedHostile are obj with one string below the top level (a tool's
// input) set to a hostile path, the cwd and transcript kept.
func nestedHostile(obj map[string]any, cwdKey, trKey string) [][]byte {
	var out [][]byte
	for k, v := range obj {
		if k == cwdKey || k == trKey {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for ik, iv := range m {
			if _, ok := iv.(string); !ok {
				continue
			}
			for _, h := range []string{"/etc/passwd", "../../../../etc/passwd", "a\x00b", strings.Repeat("a/", 3000)} {
				m[ik] = h
				b, _ := json.Marshal(obj)
				out = append(out, b)
			}
			m[ik] = iv
		}
	}
	return out
}

func install(t *testing.T, a agent.Adapter) {
	base := t.TempDir()
	root, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	name := a.Name()
	command := "snap hook " + name
	var events []string
	for _, h := range a.Hooks() {
		events = append(events, h.Event)
	}
	// A missing file: install makes it, uninstall removes it again.
	for _, scope := range a.Scopes() {
		p, err := a.SettingsPath(scope, root, home)
		if err != nil {
			t.Fatal(err)
		}
		res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{})
		if err != nil || !res.Changed || !slices.Equal(res.Events, events) {
			t.Fatalf("%s: install into no file: %+v %v, want events %v", scope, res, err, events)
		}
		made, _ := os.ReadFile(p)
		if n := snapHooks(t, made, name); !reflect.DeepEqual(n, ones(events)) {
			t.Errorf("%s: hooks running snap %v, want one on each of %v:\n%s", scope, n, events, made)
		}
		if got, err := agent.Installed(p, name, a.Hooks()); err != nil || !slices.Equal(got, events) {
			t.Errorf("%s: Installed %v %v", scope, got, err)
		}
		if res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{}); err != nil || res.Changed {
			t.Errorf("%s: second install: %+v %v", scope, res, err)
		}
		if res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{Uninstall: true}); err != nil || !res.Changed {
			t.Errorf("%s: uninstall: %+v %v", scope, res, err)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: %s is left after the uninstall of the install that made it", scope, p)
		}
		if _, err := os.Lstat(p + ".snap-backup"); err == nil {
			t.Errorf("%s: a backup of no file", scope)
		}
		if res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{Uninstall: true}); err != nil || res.Changed {
			t.Errorf("%s: second uninstall: %+v %v", scope, res, err)
		}
	}

	// Property: random settings texts round-trip.
	p, err := a.SettingsPath(a.DefaultScope(), root, home)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	rng := rand.New(rand.NewPCG(uint64(len(name)), 7))
	n := 150
	if testing.Short() {
		n = 40
	}
	for i := range n {
		os.Remove(p)
		os.Remove(p + ".snap-backup")
		text, foreign := randomSettings(rng, name, events)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		before := map[string]int{}
		if strings.TrimSpace(text) != "" {
			before = snapHooks(t, []byte(text), name)
		}
		res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{})
		if err != nil {
			t.Fatalf("case %d: install: %v\n%s", i, err, text)
		}
		after, _ := os.ReadFile(p)
		if got, _ := agent.Installed(p, name, a.Hooks()); len(got) != len(events) || len(res.Events)+len(res.Kept) != len(events) || res.Changed != (len(res.Events) > 0) {
			t.Fatalf("case %d: installed %v, result %+v:\n%s", i, got, res, after)
		}
		for _, e := range events {
			if got, want := snapHooks(t, after, name)[e], max(before[e], 1); got != want {
				t.Fatalf("case %d: %s: %d hooks run snap, want %d (the user's own are kept, none is added beside one):\n%s\nfrom\n%s", i, e, got, want, after, text)
			}
		}
		if got := foreignCommands(t, after, name, a.Hooks()); !slices.Equal(got, foreign) {
			t.Fatalf("case %d: foreign hooks after install %v, want %v:\n%s", i, got, foreign, after)
		}
		if res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{}); err != nil || res.Changed {
			t.Fatalf("case %d: second install changed the file: %+v %v", i, res, err)
		}
		if again, _ := os.ReadFile(p); !bytes.Equal(again, after) {
			t.Fatalf("case %d: second install changed the bytes", i)
		}
		if _, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{Uninstall: true}); err != nil {
			t.Fatalf("case %d: uninstall: %v", i, err)
		}
		if back, _ := os.ReadFile(p); string(back) != text {
			t.Fatalf("case %d: install+uninstall:\n%q\nwant the original:\n%q\n(installed:\n%s)", i, back, text, after)
		}
		if res, err := agent.InstallHooks(p, name, command, a.Hooks(), agent.InstallOptions{Uninstall: true}); err != nil || res.Changed {
			t.Fatalf("case %d: second uninstall: %+v %v", i, res, err)
		}
	}
}

func ones(events []string) map[string]int {
	m := map[string]int{}
	for _, e := range events {
		m[e] = 1
	}
	return m
}

// snapHooks counts, per event, the hooks in a settings text that run
// snap's hook for name.
func snapHooks(t *testing.T, text []byte, name string) map[string]int {
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
				if agent.RunsSnapHook(h.Command, name) {
					n[event]++
				}
			}
		}
	}
	return n
}

// foreignCommands are the hook commands in a settings text that are not in
// snap's own entries, sorted.
func foreignCommands(t *testing.T, text []byte, name string, specs []agent.HookSpec) []string {
	t.Helper()
	var s struct{ Hooks map[string][]map[string]any }
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	var out []string
	for event, entries := range s.Hooks {
		for _, e := range entries {
			if i := slices.IndexFunc(specs, func(s agent.HookSpec) bool { return s.Event == event }); i >= 0 {
				own := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "snap hook " + name}}}
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

// randomSettings is a settings text in a random style with hooks on some
// of events and on other events, and the commands of the hooks it holds,
// sorted: other tools', the user's own that run snap's hook for name (a
// timeout, another path: never snap's exact entry), and snap's hook for
// another agent.
func randomSettings(rng *rand.Rand, name string, events []string) (text string, foreign []string) {
	type style struct{ indent, colon, comma string }
	styles := []style{{"  ", ": ", ", "}, {"    ", ": ", ", "}, {"\t", ": ", ", "}, {"", ":", ","}, {"", ": ", ", "}, {" ", " : ", " , "}}
	st := styles[rng.IntN(len(styles))]
	nl := "\n"
	if rng.IntN(5) == 0 {
		nl = "\r\n"
	}
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
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	scalars := []string{`"opus"`, `"a \u003c b \u0026\u0026 c"`, `"\/path\/x"`, `"caf\u00e9 ☕"`, `12345678901234567890123`, `1.50`, `-0.0e+1`, `true`, `null`, `""`}
	handler := func() any {
		c := fmt.Sprintf("tool-%d --flag \u003cx\u003e", len(foreign))
		var extra [][2]any
		switch rng.IntN(10) {
		case 0:
			c, extra = "snap hook "+name, [][2]any{{`"timeout"`, `99`}}
		case 1:
			c = "/usr/local/bin/snap hook " + name
		case 2:
			c = "'/opt/my tools/snap' hook " + name
		case 3:
			c = "snap hook someone-else"
		}
		foreign = append(foreign, c)
		kv := [][2]any{{`"type"`, `"command"`}, {`"command"`, quote(c)}}
		if rng.IntN(2) == 0 {
			kv[0], kv[1] = kv[1], kv[0]
		}
		return append(kv, extra...)
	}
	var top [][2]any
	keys := []string{`"model"`, `"permissions"`, `"env"`, `"theme"`, `"caf\u00e9"`}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys[:rng.IntN(len(keys)+1)] {
		top = append(top, [2]any{k, scalars[rng.IntN(len(scalars))]})
	}
	if rng.IntN(4) != 0 {
		var hooks [][2]any
		names := append([]string{"Notification", "SessionEnd"}, events...)
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, e := range names[:1+rng.IntN(len(names))] {
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
			hooks = append(hooks, [2]any{quote(e), entries})
		}
		top = slices.Insert(top, rng.IntN(len(top)+1), [2]any{`"hooks"`, hooks})
	}
	text = render(top, 0)
	if rng.IntN(3) != 0 {
		text += nl
	}
	if rng.IntN(25) == 0 {
		text, foreign = []string{"", nl, "{}"}[rng.IntN(3)], nil
	}
	sort.Strings(foreign)
	return text, foreign
}
