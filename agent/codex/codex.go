// Package codex adapts Codex CLI's hooks to snap: Parse turns one hook
// payload into an agent.Event (an apply_patch call names its files in the
// patch), and Hooks are what 'snap install codex' adds to a Codex
// hooks.json (the same layout as Claude Code's settings). The package
// registers its Adapter with the agent registry when it is imported
// (agent/all imports it).
package codex

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/agent"
)

// Name is the adapter's name: 'snap hook codex'.
const Name = "codex"

type payload struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	Event          string          `json:"hook_event_name"`
	Source         string          `json:"source"`
	Prompt         string          `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	CallID         string          `json:"call_id"`
}

// Parse turns a Codex CLI hook payload into the checkpoint to record:
// SessionStart, UserPromptSubmit (prompt), PreToolUse (pre-tool: for
// apply_patch only the files its patch names are examined, else a full
// capture), PostToolUse (post-tool), Stop, SubagentStop, PreCompact
// (labelled). Other events record nothing.
func Parse(data []byte) (agent.Event, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return agent.Event{Agent: Name}, fmt.Errorf("malformed payload: %v", err)
	}
	ev := agent.Event{Agent: Name, Name: p.Event, Session: p.SessionID, Cwd: p.Cwd, Transcript: p.TranscriptPath}
	id := p.ToolUseID
	if id == "" {
		id = p.CallID
	}
	switch p.Event {
	case "SessionStart":
		ev.Kind, ev.Summary = "session-start", strings.TrimSpace("session start "+p.Source)
	case "UserPromptSubmit":
		ev.Kind, ev.Summary = "prompt", agent.FirstLine(p.Prompt)
	case "PreToolUse", "PostToolUse":
		what, paths := p.ToolName, []string(nil)
		if pp, ok := PatchPaths(p.ToolInput); ok {
			what, paths = p.ToolName+" "+strings.Join(pp, " "), pp
		}
		ev.SetTool(p.Event == "PreToolUse", what, paths, id)
	case "Stop":
		ev.Kind, ev.Summary = "stop", "end of turn"
	case "SubagentStop":
		ev.Kind, ev.Summary = "subagent-stop", "end of subagent"
	case "PreCompact":
		ev.Kind, ev.Summary = "pre-compact", "before compaction"
		ev.Label = fmt.Sprintf("precompact-%s-%d", agent.ShortName(Name, p.SessionID), time.Now().Unix())
	}
	return ev, nil
}

// PatchPaths returns the files an apply_patch call changes, read from its
// patch ("*** Add File: P", "*** Update File: P", "*** Delete File: P",
// "*** Move to: P"), whether the patch is tool_input.patch, .input, or
// the last argument of tool_input.command. A relative path is joined to
// tool_input.workdir when there is one (the shell tool runs the command
// there; a relative workdir is itself relative to the payload's cwd), so
// the paths are absolute or relative to cwd as agent.Event.Paths wants
// them; one that lands outside the project makes the event a full
// capture. false: no patch found (a full capture is needed).
func PatchPaths(input json.RawMessage) ([]string, bool) {
	var in struct {
		Patch   string          `json:"patch"`
		Input   string          `json:"input"`
		Command json.RawMessage `json:"command"`
		Workdir string          `json:"workdir"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil, false
	}
	patch := in.Patch
	if patch == "" {
		patch = in.Input
	}
	if patch == "" {
		var argv []string
		var line string
		if json.Unmarshal(in.Command, &argv) == nil {
			patch = commandPatch(argv)
		} else if json.Unmarshal(in.Command, &line) == nil {
			patch = scriptPatch(line)
		}
	}
	if !strings.Contains(patch, "*** Begin Patch") {
		return nil, false
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(patch, "\n") {
		for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			p, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), prefix)
			if p = strings.TrimSpace(p); !ok || p == "" {
				continue
			}
			if !filepath.IsAbs(p) && in.Workdir != "" {
				p = filepath.Join(in.Workdir, p)
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, len(out) > 0
}

// commandPatch is the patch of a command that only applies one:
// ["apply_patch", PATCH], or a shell running a script that is only an
// apply_patch heredoc (["bash", "-lc", "apply_patch <<'EOF'\n...\nEOF"]).
// Anything else the command does could change other files: "" then.
func commandPatch(argv []string) string {
	switch {
	case len(argv) == 2 && path.Base(argv[0]) == "apply_patch":
		return argv[1]
	case len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") && strings.HasSuffix(argv[0], "sh"):
		return scriptPatch(argv[2])
	}
	return ""
}

// heredocPatch matches a script that is one apply_patch with its patch in
// a heredoc and nothing else. Compiled on first use, not at the start of
// every snap process.
var heredocPatch = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^\s*apply_patch\s*<<-?\s*['"]?(\w+)['"]?\n(.*)\n(\w+)\s*$`)
})

func scriptPatch(script string) string {
	if strings.HasPrefix(strings.TrimSpace(script), "*** Begin Patch") {
		return script // the patch itself
	}
	m := heredocPatch().FindStringSubmatch(script)
	if m == nil || m[1] != m[3] {
		return ""
	}
	return m[2]
}

// Hooks are the hooks Install adds.
var Hooks = []agent.HookSpec{
	{Event: "SessionStart"}, {Event: "UserPromptSubmit"},
	{Event: "PreToolUse", Matcher: ".*"}, {Event: "PostToolUse", Matcher: ".*"},
	{Event: "Stop"}, {Event: "PreCompact"},
}

// Scopes: user (~/.codex/hooks.json) and project (.codex/hooks.json).
// Codex runs hooks only with [features] codex_hooks = true in config.toml.
var Scopes = []string{"user", "project"}

// DefaultScope is the scope 'snap install codex' writes without a flag:
// user. Codex reads hooks next to its config layers (~/.codex and the
// project's .codex/, both shared by whoever uses them) and has no file for
// one user in one project, so the user's own file is the one scope that
// affects nobody else; --project shares the hooks with the team.
const DefaultScope = "user"

// SettingsPath is the hooks file of scope for the project at root.
func SettingsPath(scope, root, home string) (string, error) {
	switch scope {
	case "user":
		return filepath.Join(home, ".codex", "hooks.json"), nil
	case "project":
		return filepath.Join(root, ".codex", "hooks.json"), nil
	}
	return "", fmt.Errorf("unknown scope %q (want user or project)", scope)
}

// TranscriptDir is where Codex CLI keeps its session rollouts, under home.
func TranscriptDir(home string) string { return filepath.Join(home, ".codex", "sessions") }

// Adapter is Codex CLI's agent.Adapter.
var Adapter agent.Adapter = adapter{}

func init() { agent.Register(Adapter) }

type adapter struct{}

func (adapter) Name() string                           { return Name }
func (adapter) Title() string                          { return "Codex CLI" }
func (adapter) Parse(data []byte) (agent.Event, error) { return Parse(data) }
func (adapter) Hooks() []agent.HookSpec                { return Hooks }
func (adapter) Scopes() []string                       { return Scopes }
func (adapter) DefaultScope() string                   { return DefaultScope }
func (adapter) SettingsPath(scope, root, home string) (string, error) {
	return SettingsPath(scope, root, home)
}
func (adapter) HookAnswer() string                  { return "" }
func (adapter) TranscriptDirs(home string) []string { return []string{TranscriptDir(home)} }

func (adapter) HookHelp() string {
	return `codex (Codex CLI): SessionStart, UserPromptSubmit (prompt), PreToolUse and
PostToolUse (an apply_patch call names its files in the patch: only those are
examined; any other tool is a full capture; the message id is the call's id),
Stop and PreCompact (labelled).`
}

func (adapter) InstallHelp() string {
	return `'snap install codex' adds 'snap hook codex' on SessionStart, UserPromptSubmit,
PreToolUse, PostToolUse, Stop and PreCompact. Codex has no hooks file for one
user in one project, so the default is --user: ~/.codex/hooks.json, read in
every project you run it in. --project writes .codex/hooks.json at the project
root, shared with the team. Codex runs hooks only with [features]
codex_hooks = true in its config.toml.`
}
