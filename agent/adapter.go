package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Adapter is one agent's side of snap: how its hook payloads read, which
// hook events 'snap install' adds to which of its settings files, and what
// 'snap hook' answers it. An adapter is a package of its own under agent/
// (agent/claudecode, agent/gemini, agent/codex) that calls Register in its
// init; the CLI and the MCP server know agents only through the registry
// (All, Lookup). docs/EXTENDING.md says how to add one, and
// agent/agenttest.Run is the conformance suite every adapter's test calls.
//
// What every adapter shares is not here but in this package: Hook (the
// bounded, never-failing hook run), InstallHooks (the settings file edit:
// the {"hooks": {EVENT: [{"matcher", "hooks": [...]}]}} layout), and
// SessionName (an agent's session id as a snap session, prefixed with the
// adapter's name where the id is no legal session name). No agent differs
// from another in those today; an adapter that must grows a method here.
type Adapter interface {
	// Name is the adapter's name: 'snap hook NAME', 'snap install NAME',
	// Event.Agent, the hook log's lines and the prefix of the sessions
	// SessionName derives. Lower-case letters, digits and '-'.
	Name() string
	// Title is the agent's name for people ("Claude Code").
	Title() string
	// Parse turns one hook payload into the event to record (a zero Kind:
	// nothing to record). Whatever the bytes, it returns (an error for a
	// payload it cannot read, which Hook logs: never one that stops the
	// agent) and never panics; the Event's Agent is Name.
	Parse(payload []byte) (Event, error)
	// Hooks are the events 'snap install NAME' hooks, each with its
	// matcher ("" for events without one). Each of them, with only the
	// payload's common fields, records a checkpoint.
	Hooks() []HookSpec
	// Scopes are the agent's settings files 'snap install' can write, as
	// scope names (ScopeUser, ScopeProject, ScopeLocal).
	Scopes() []string
	// DefaultScope is the scope written without a flag: the one of Scopes
	// that affects only this user (local if the agent has one, else user).
	DefaultScope() string
	// SettingsPath is the settings file of scope for the project at root
	// (absolute), home being the user's home directory; an error for a
	// scope not in Scopes.
	SettingsPath(scope, root, home string) (string, error)
	// HookAnswer is what 'snap hook NAME' prints on stdout once the event
	// is handled: "" for an agent that reads no answer, "{}\n" for one
	// that expects a JSON object (an empty answer: no decision).
	HookAnswer() string
	// TranscriptDirs are the directories under home where the agent keeps
	// its transcripts: a front-end that records a transcript path a model
	// gives it (the MCP server's checkpoint tool) accepts one there.
	TranscriptDirs(home string) []string
	// HookHelp is the paragraph of 'snap help hook' on this agent: what
	// each of its events records (plain text, lines of at most 80
	// characters).
	HookHelp() string
	// InstallHelp is the paragraph of 'snap help install' on this agent:
	// its settings files and why the default is the default.
	InstallHelp() string
}

// The scopes of a settings file: whose it is and who it affects.
const (
	ScopeUser    = "user"    // the user's own file, read in every project
	ScopeProject = "project" // the project's file, shared with everyone who clones it
	ScopeLocal   = "local"   // the project's file for this user only (not committed)
)

// ScopeNames are every scope an adapter may have, in the order the CLI
// offers them (--user, --project, --local).
func ScopeNames() []string { return []string{ScopeUser, ScopeProject, ScopeLocal} }

var registry = struct {
	sync.RWMutex
	m map[string]Adapter
}{m: map[string]Adapter{}}

// Register makes an adapter known by its name. It panics when the name is
// not a legal adapter name or is already taken (as database/sql.Register
// does): both are programming errors, found by the first run of any test.
// Adapters call it in their package's init; agent/all imports them all.
func Register(a Adapter) {
	name := a.Name()
	if !legalName(name) {
		panic(fmt.Sprintf("agent.Register: adapter name %q: want lower-case letters, digits and '-'", name))
	}
	if slices.Contains(reservedNames, name) {
		panic(fmt.Sprintf("agent.Register: adapter name %q is taken by 'snap hook %s'", name, name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic("agent.Register: adapter " + name + " registered twice")
	}
	registry.m[name] = a
}

// Lookup is the adapter registered as name.
func Lookup(name string) (Adapter, bool) {
	registry.RLock()
	defer registry.RUnlock()
	a, ok := registry.m[name]
	return a, ok
}

// All are the registered adapters, sorted by name.
func All() []Adapter {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Adapter, 0, len(registry.m))
	for _, a := range registry.m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Names are the registered adapters' names, sorted.
func Names() []string {
	var out []string
	for _, a := range All() {
		out = append(out, a.Name())
	}
	return out
}

// TranscriptDirs are the registered agents' transcript directories under
// home, in the order of All, without repeats.
func TranscriptDirs(home string) []string {
	var out []string
	for _, a := range All() {
		for _, d := range a.TranscriptDirs(home) {
			if d = filepath.Clean(d); !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// reservedNames are the subcommands of 'snap hook' that are no agent's.
var reservedNames = []string{"log", "help", "h"}

// legalName reports whether name can be an adapter's name: it is a word of
// 'snap hook NAME' (RunsSnapHook) and a prefix of session names.
func legalName(name string) bool {
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
