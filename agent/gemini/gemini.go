// Package gemini adapts Gemini CLI's hooks to snap: Parse turns one hook
// payload into an agent.Event, and Hooks are what 'snap install gemini'
// adds to a Gemini CLI settings.json (the same layout as Claude Code's).
// The package registers its Adapter with the agent registry when it is
// imported (agent/all imports it).
package gemini

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/agent"
)

// Name is the adapter's name: 'snap hook gemini'.
const Name = "gemini"

type payload struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	Event          string          `json:"hook_event_name"`
	Trigger        string          `json:"trigger"`
	Source         string          `json:"source"`
	Prompt         string          `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolCallID     string          `json:"tool_call_id"`
}

// editTools name the one file they change in tool_input.
var editTools = map[string]string{"write_file": "file_path", "replace": "file_path", "edit": "file_path"}

// readOnlyTools change no file.
var readOnlyTools = map[string]bool{"read_file": true, "read_many_files": true, "list_directory": true, "glob": true,
	"search_file_content": true, "grep": true, "google_web_search": true, "web_fetch": true, "ls": true}

// Parse turns a Gemini CLI hook payload into the checkpoint to record:
// SessionStart (session-start), BeforeAgent (prompt), BeforeTool of
// write_file/replace (pre-tool, only the named file examined) or of any
// other tool that may write, such as run_shell_command (a full capture),
// AfterTool (post-tool), AfterAgent (stop: the turn's end), PreCompress
// (labelled). Read-only tools and other events record nothing.
func Parse(data []byte) (agent.Event, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return agent.Event{Agent: Name}, fmt.Errorf("malformed payload: %v", err)
	}
	ev := agent.Event{Agent: Name, Name: p.Event, Session: p.SessionID, Cwd: p.Cwd, Transcript: p.TranscriptPath}
	switch p.Event {
	case "SessionStart":
		ev.Kind, ev.Summary = "session-start", strings.TrimSpace("session start "+p.Trigger+p.Source)
	case "BeforeAgent":
		ev.Kind, ev.Summary = "prompt", agent.FirstLine(p.Prompt)
	case "BeforeTool", "AfterTool":
		if readOnlyTools[p.ToolName] {
			return ev, nil
		}
		what, paths := agent.ToolPath(p.ToolName, p.ToolInput, editTools)
		ev.SetTool(p.Event == "BeforeTool", what, paths, p.ToolCallID)
	case "AfterAgent":
		ev.Kind, ev.Summary = "stop", "end of turn"
	case "PreCompress":
		ev.Kind, ev.Summary = "pre-compact", "before compression"
		ev.Label = fmt.Sprintf("precompress-%s-%d", agent.ShortName(Name, p.SessionID), time.Now().Unix())
	}
	return ev, nil
}

// Hooks are the hooks Install adds.
var Hooks = []agent.HookSpec{
	{Event: "SessionStart"}, {Event: "BeforeAgent"},
	{Event: "BeforeTool", Matcher: ".*"}, {Event: "AfterTool", Matcher: ".*"},
	{Event: "AfterAgent"}, {Event: "PreCompress"},
}

// Scopes: user (~/.gemini/settings.json) and project (.gemini/settings.json).
var Scopes = []string{"user", "project"}

// DefaultScope is the scope 'snap install gemini' writes without a flag:
// user. Gemini CLI has no settings file for one user in one project (its
// settings files are the system's, the user's and the project's), so the
// user's own file is the one scope that affects nobody else; --project
// shares the hooks with everyone who clones the project.
const DefaultScope = "user"

// SettingsPath is the settings file of scope for the project at root.
func SettingsPath(scope, root, home string) (string, error) {
	switch scope {
	case "user":
		return filepath.Join(home, ".gemini", "settings.json"), nil
	case "project":
		return filepath.Join(root, ".gemini", "settings.json"), nil
	}
	return "", fmt.Errorf("unknown scope %q (want user or project)", scope)
}

// TranscriptDir is where Gemini CLI keeps its sessions, under home.
func TranscriptDir(home string) string { return filepath.Join(home, ".gemini") }

// Adapter is Gemini CLI's agent.Adapter.
var Adapter agent.Adapter = adapter{}

func init() { agent.Register(Adapter) }

type adapter struct{}

func (adapter) Name() string                           { return Name }
func (adapter) Title() string                          { return "Gemini CLI" }
func (adapter) Parse(data []byte) (agent.Event, error) { return Parse(data) }
func (adapter) Hooks() []agent.HookSpec                { return Hooks }
func (adapter) Scopes() []string                       { return Scopes }
func (adapter) DefaultScope() string                   { return DefaultScope }
func (adapter) SettingsPath(scope, root, home string) (string, error) {
	return SettingsPath(scope, root, home)
}

// HookAnswer: Gemini CLI reads a hook's stdout as JSON; an empty object is
// no decision.
func (adapter) HookAnswer() string                  { return "{}\n" }
func (adapter) TranscriptDirs(home string) []string { return []string{TranscriptDir(home)} }

func (adapter) HookHelp() string {
	return `gemini (Gemini CLI): SessionStart, BeforeAgent (prompt), BeforeTool and
AfterTool (write_file and replace are the edit tools: only the named file is
examined; run_shell_command and other tools that may write: a full capture),
AfterAgent (stop: the turn's end) and PreCompress (labelled). 'snap hook
gemini' prints {} on stdout: Gemini CLI reads the answer as JSON.`
}

func (adapter) InstallHelp() string {
	return `'snap install gemini' adds 'snap hook gemini' on SessionStart, BeforeAgent,
BeforeTool, AfterTool, AfterAgent and PreCompress. Gemini CLI has no settings
file for one user in one project, so the default is --user, its one scope that
affects only you: ~/.gemini/settings.json, read in every project you run it in
(the first event in a git repository makes its store there). --project writes
.gemini/settings.json at the project root, shared with the team.`
}
