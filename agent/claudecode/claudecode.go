// Package claudecode adapts Claude Code's hooks to snap: Parse turns one
// hook payload into an agent.Event, and Hooks, Scopes and SettingsPath say
// what 'snap install claude-code' merges into which Claude Code
// settings.json. The package registers its Adapter with the agent registry
// when it is imported (agent/all imports it).
package claudecode

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/agent"
)

// Name is the adapter's name: 'snap hook claude-code'.
const Name = "claude-code"

// payload is the part of a hook payload snap reads; other fields are
// ignored.
type payload struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	Event          string          `json:"hook_event_name"`
	Source         string          `json:"source"` // SessionStart
	Prompt         string          `json:"prompt"` // UserPromptSubmit
	ToolName       string          `json:"tool_name"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolInput      json.RawMessage `json:"tool_input"`
	Trigger        string          `json:"trigger"`    // PreCompact: manual or auto
	AgentType      string          `json:"agent_type"` // SubagentStop
}

// editTools name the one file they change in tool_input.
var editTools = map[string]string{"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// readOnlyTools change no file: no checkpoint before or after them.
var readOnlyTools = map[string]bool{"Read": true, "Glob": true, "Grep": true, "LS": true, "WebFetch": true,
	"WebSearch": true, "TodoWrite": true, "TodoRead": true, "NotebookRead": true, "ExitPlanMode": true,
	"BashOutput": true, "ListMcpResourcesTool": true, "ReadMcpResourceTool": true}

// Parse turns a Claude Code hook payload into the checkpoint to record:
//
//   - SessionStart: a baseline (kind session-start);
//   - UserPromptSubmit: kind prompt, the summary the prompt's first line;
//   - PreToolUse of Edit, Write, MultiEdit, NotebookEdit: kind pre-tool,
//     only the named path examined, message id the tool_use_id (so
//     'snap rewind msg:<tool_use_id>' is the state before the call);
//     PreToolUse of Bash or any other tool that may write: a full capture;
//   - PostToolUse: kind post-tool (the edited path only, for edit tools);
//   - Stop, SubagentStop: the turn's end (kinds stop, subagent-stop);
//   - PreCompact: kind pre-compact, labelled, since compaction rewrites the
//     context.
//
// Read-only tools and unknown events record nothing (Kind ""). The
// transcript at transcript_path is the conversation document.
func Parse(data []byte) (agent.Event, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return agent.Event{Agent: Name}, fmt.Errorf("malformed payload: %v", err)
	}
	ev := agent.Event{Agent: Name, Name: p.Event, Session: p.SessionID, Cwd: p.Cwd, Transcript: p.TranscriptPath}
	switch p.Event {
	case "SessionStart":
		ev.Kind, ev.Summary = "session-start", strings.TrimSpace("session start "+p.Source)
	case "UserPromptSubmit":
		ev.Kind, ev.Summary = "prompt", agent.FirstLine(p.Prompt)
	case "PreToolUse", "PostToolUse":
		if readOnlyTools[p.ToolName] {
			return ev, nil
		}
		what, paths := agent.ToolPath(p.ToolName, p.ToolInput, editTools)
		ev.SetTool(p.Event == "PreToolUse", what, paths, p.ToolUseID)
	case "Stop":
		ev.Kind, ev.Summary = "stop", "end of turn"
	case "SubagentStop":
		ev.Kind, ev.Summary = "subagent-stop", strings.TrimSpace("end of subagent "+p.AgentType)
	case "PreCompact":
		ev.Kind, ev.Summary = "pre-compact", strings.TrimSpace("before compaction "+p.Trigger)
		ev.Label = fmt.Sprintf("precompact-%s-%d", agent.ShortName(Name, p.SessionID), time.Now().Unix())
	}
	return ev, nil
}

// Hooks are the hooks Install adds to a Claude Code settings file.
var Hooks = []agent.HookSpec{
	{Event: "SessionStart"}, {Event: "UserPromptSubmit"},
	{Event: "PreToolUse", Matcher: "*"}, {Event: "PostToolUse", Matcher: "*"},
	{Event: "Stop"}, {Event: "SubagentStop"}, {Event: "PreCompact"},
}

// Scopes name Claude Code's settings files: user (~/.claude/settings.json),
// project (.claude/settings.json, shared with the team) and local
// (.claude/settings.local.json, this machine only).
var Scopes = []string{"user", "project", "local"}

// DefaultScope is the scope 'snap install claude-code' writes without a
// flag: local, the one that affects only this user in this project
// (Claude Code's file for personal settings, not to be committed);
// --project shares the hooks with everyone who clones the project.
const DefaultScope = "local"

// SettingsPath is the settings file of scope for the project at root.
func SettingsPath(scope, root, home string) (string, error) {
	switch scope {
	case "user":
		return filepath.Join(home, ".claude", "settings.json"), nil
	case "project":
		return filepath.Join(root, ".claude", "settings.json"), nil
	case "local":
		return filepath.Join(root, ".claude", "settings.local.json"), nil
	}
	return "", fmt.Errorf("unknown scope %q (want user, project or local)", scope)
}

// TranscriptDir is where Claude Code keeps its transcripts, under home
// (one directory per project, one JSONL file per session).
func TranscriptDir(home string) string { return filepath.Join(home, ".claude", "projects") }

// Adapter is Claude Code's agent.Adapter.
var Adapter agent.Adapter = adapter{}

func init() { agent.Register(Adapter) }

type adapter struct{}

func (adapter) Name() string                           { return Name }
func (adapter) Title() string                          { return "Claude Code" }
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
	return `claude-code (Claude Code): SessionStart (kind session-start),
UserPromptSubmit (prompt, the summary its first line), PreToolUse (pre-tool;
for Edit, Write, MultiEdit and NotebookEdit only the named file is examined;
the message id is the tool_use_id, so 'snap rewind -s <session_id>
msg:<tool_use_id>' is the state before that call), PostToolUse (post-tool),
Stop, SubagentStop and PreCompact (labelled). Read-only tools (Read, Grep,
Glob, ...) record nothing.`
}

func (adapter) InstallHelp() string {
	return `'snap install claude-code' adds snap's hooks ('snap hook claude-code' on
SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop and
PreCompact) to Claude Code's settings. By default they go where they affect
only you: --local, .claude/settings.local.json at the project root (this
project, only you: Claude Code's file for settings not to be committed).
--project (.claude/settings.json) shares them with everyone who clones the
project (a teammate without snap then gets a failing hook at every event);
--user (~/.claude/settings.json) puts them in every project you open.`
}
