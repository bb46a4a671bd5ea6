package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/claudecode"
	"github.com/snapcore-dev/snap/agent/codex"
	"github.com/snapcore-dev/snap/agent/gemini"
)

// adapters are the agents 'snap hook' and 'snap install' know.
var adapters = map[string]struct {
	parse        func([]byte) (agent.Event, error)
	hooks        []agent.HookSpec
	scopes       []string
	defaultScope string // the scope that affects only this user
	path         func(scope, root, home string) (string, error)
	title        string
	ack          string // printed on stdout: an empty answer, where the agent expects JSON
}{
	claudecode.Name: {claudecode.Parse, claudecode.Hooks, claudecode.Scopes, claudecode.DefaultScope, claudecode.SettingsPath, "Claude Code", ""},
	gemini.Name:     {gemini.Parse, gemini.Hooks, gemini.Scopes, gemini.DefaultScope, gemini.SettingsPath, "Gemini CLI", "{}\n"},
	codex.Name:      {codex.Parse, codex.Hooks, codex.Scopes, codex.DefaultScope, codex.SettingsPath, "Codex CLI", ""},
}

// hookSubcommands are 'snap hook AGENT', one per adapter.
func hookSubcommands(inv *invocation) []*cli.Command {
	var out []*cli.Command
	for _, name := range sortedKeys(adapters) {
		a := adapters[name]
		out = append(out, &cli.Command{
			Name: name, Usage: "record a " + a.title + " hook event (payload on stdin)",
			Description: `Reads one ` + a.title + ` hook payload on stdin and records the checkpoint its
event calls for (see 'snap help hook'). Always exits 0 and prints nothing on
stdout that the agent reads as a decision; problems go to stderr and to
'snap hook log'.`,
			Flags: withGlobals(),
			Action: func(c *cli.Context) error {
				agent.Hook(c.Context, inv.stdin, c.App.ErrWriter, agent.Options{Maintain: startAutoGC}, a.parse)
				io.WriteString(inv.stdout, a.ack)
				return nil
			},
		})
	}
	return out
}

func hookCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "hook",
		Usage: "record the checkpoint an agent's hook event calls for (never blocks the agent)",
		Description: `'snap hook claude-code' is what Claude Code runs at each hook event ('snap
install claude-code' sets it up); 'snap hook gemini' and 'snap hook codex' do
the same for Gemini CLI (SessionStart, BeforeAgent, BeforeTool/AfterTool with
write_file and replace as edit tools, AfterAgent, PreCompress) and Codex CLI
(PreToolUse/PostToolUse, whose apply_patch names its files in the patch). It reads one hook payload on stdin and records
the checkpoint the event calls for in the session named by the payload's
session_id, with the transcript at transcript_path as the conversation:
SessionStart (kind session-start), UserPromptSubmit (prompt, the summary its
first line), PreToolUse (pre-tool; for Edit, Write, MultiEdit and NotebookEdit
only the named file is examined; the message id is the tool_use_id, so 'snap
rewind -s <session_id> msg:<tool_use_id>' is the state before that call; ids
that are not legal session names are rewritten, and 'snap hook log' names the
session each event went to), PostToolUse
(post-tool), Stop, SubagentStop and PreCompact (labelled). Read-only tools and
unknown events record nothing.

A hook never blocks or breaks the agent: whatever happens it exits 0 and
prints nothing on stdout; problems go to stderr and to the store's hook log
('snap hook log'). The first event in a project with no store creates one.
It gives up after SNAP_HOOK_TIMEOUT (default 10s) and waits at most 2s for
another snap process's lock (SNAP_LOCK_TIMEOUT).

Examples:
   snap hook log -n 20`,
		Subcommands: append(hookSubcommands(inv),
			&cli.Command{
				Name: "log", Usage: "show the hook log of the project's store",
				Description: `Prints the last N lines (default 50) of the hook log: one line per hook
event, saying what was recorded or why nothing was. --json answers {lines}.`,
				Flags: withGlobals(&cli.IntFlag{Name: "n", Usage: "the last `N` lines (0: all)", Value: 50}),
				Action: func(c *cli.Context) error {
					g := globals(c)
					repo, err := g.open(c.Context)
					if err != nil {
						return err
					}
					defer repo.Close()
					lines, err := agent.ReadLog(repo, c.Int("n"))
					if err != nil {
						return err
					}
					return emit(inv.stdout, g.JSON, map[string]any{"lines": lines}, func(w io.Writer) error {
						if len(lines) == 0 {
							_, err := fmt.Fprintln(w, "the hook log is empty")
							return err
						}
						for _, l := range lines {
							fmt.Fprintln(w, printable(l))
						}
						return nil
					})
				},
			},
		),
	}
}

// installResult is the answer of 'snap install'.
type installResult struct {
	Agent  string               `json:"agent"`
	Scope  string               `json:"scope"`
	Result *agent.InstallResult `json:"result"`
}

// installStatus is one settings file 'snap install --status' looked at.
type installStatus struct {
	Agent  string   `json:"agent"`
	Scope  string   `json:"scope"`
	Path   string   `json:"path"`
	Events []string `json:"events"` // the events whose hooks run snap
	Error  string   `json:"error,omitempty"`
}

func installCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name: "install", Usage: "add snap's hooks to an agent's settings (or remove them)", ArgsUsage: "AGENT (claude-code, gemini, codex)",
		Description: `'snap install claude-code' adds snap's hooks ('snap hook claude-code' on
SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop and
PreCompact) to Claude Code's settings. By default they go where they affect
only you: --local, .claude/settings.local.json at the project root (this
project, only you: Claude Code's file for settings not to be committed).
--project (.claude/settings.json) shares them with everyone who clones the
project (a teammate without snap then gets a failing hook at every event);
--user (~/.claude/settings.json) puts them in every project you open.

Gemini CLI and Codex have no settings file for one user in one project, so
for them the default is --user, their one scope that affects only you:
~/.gemini/settings.json and ~/.codex/hooks.json, read in every project you
run them in (the first event in a git repository makes its store there).
--project writes .gemini/settings.json or .codex/hooks.json at the project
root, shared with the team. Codex runs hooks only with [features]
codex_hooks = true in its config.toml.

The project root is the one every snap command finds from any directory
inside it: the store's, else the top of the git work tree; snap says which
file it wrote. Only snap's own hooks change: every other byte of the file
stays as it was (key order, layout, escapes); installing twice changes
nothing; before the first change to an existing file, its content is copied
to FILE.snap-backup, which is never overwritten. --uninstall removes exactly
the hooks snap added, giving back the original text when nothing else
changed the file (a file snap made is removed when nothing else is left in
it). --status says what is installed where.

Snap's hooks are the entries it writes: {"matcher": M, "hooks": [{"type":
"command", "command": "snap hook AGENT"}]} (M the event's matcher, none for
events without one; the command names snap's path when the snap on PATH is
another program), exactly so. Any other hook that runs 'snap hook AGENT'
(any path to a program named snap) is yours: one with a timeout or a
matcher of its own, or in an entry shared with another command. Install
never rewrites it, counts its event as installed (no second hook there,
which would record two checkpoints per event) and says so; --uninstall
leaves it. An entry snap wrote from another path (snap since moved) is
left alone the same way: --uninstall run by that program removes it.

A settings file that is a symbolic link is refused (snap names where it
points: edit that file yourself, or replace the link with a file); so is a
file that is read-only to you (no write permission for its owner), unless
--force.

Examples:
   snap install claude-code
   snap install claude-code --project
   snap install claude-code --uninstall
   snap install gemini
   snap install codex --project
   snap install --status`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "user", Usage: "the user's settings, read in every project (the default for gemini and codex)"},
			&cli.BoolFlag{Name: "project", Usage: "the project's settings, shared with everyone who clones it"},
			&cli.BoolFlag{Name: "local", Usage: "the project's settings for you only (claude-code; its default)"},
			&cli.BoolFlag{Name: "uninstall", Usage: "remove snap's hooks"},
			&cli.BoolFlag{Name: "status", Usage: "say where snap's hooks are installed"},
			&cli.BoolFlag{Name: "force", Usage: "write a settings file that is read-only to you (its mode is kept)"},
		),
		Action: func(c *cli.Context) error {
			g := globals(c)
			root, home, err := installDirs(g)
			if err != nil {
				return err
			}
			if c.Bool("status") {
				if c.NArg() > 0 {
					return usageErrorf("install --status takes no AGENT")
				}
				var out []installStatus
				for _, name := range sortedKeys(adapters) {
					a := adapters[name]
					for _, scope := range a.scopes {
						p, _ := a.path(scope, root, home)
						st := installStatus{Agent: name, Scope: scope, Path: p}
						st.Events, err = agent.Installed(p, name, a.hooks)
						if err != nil {
							st.Error = err.Error()
						}
						out = append(out, st)
					}
				}
				return emit(inv.stdout, g.JSON, out, func(w io.Writer) error {
					for _, s := range out {
						state := "not installed"
						switch {
						case s.Error != "":
							state = "unreadable: " + s.Error
						case len(s.Events) == len(adapters[s.Agent].hooks):
							state = "installed"
						case len(s.Events) > 0:
							state = fmt.Sprintf("partly installed (%d of %d events)", len(s.Events), len(adapters[s.Agent].hooks))
						}
						fmt.Fprintf(w, "%s %s (%s): %s\n", s.Agent, s.Scope, s.Path, state)
					}
					return nil
				})
			}
			if c.NArg() != 1 {
				return usageErrorf("install takes AGENT (one of: %s), or --status", joinKeys(adapters))
			}
			name := c.Args().First()
			a, ok := adapters[name]
			if !ok {
				return usageErrorf("unknown agent %q (known: %s)", name, joinKeys(adapters))
			}
			scope := a.defaultScope
			n := 0
			for _, s := range []string{"user", "project", "local"} {
				if c.Bool(s) {
					scope = s
					n++
				}
			}
			if n > 1 {
				return usageErrorf("--user, --project and --local: choose one")
			}
			p, err := a.path(scope, root, home)
			if err != nil {
				return usageErrorf("%v", err)
			}
			res, err := agent.InstallHooks(p, name, hookCommandLine(name), a.hooks, agent.InstallOptions{Uninstall: c.Bool("uninstall"), Force: c.Bool("force")})
			if err != nil {
				return err
			}
			return emit(inv.stdout, g.JSON, installResult{Agent: name, Scope: scope, Result: res}, func(w io.Writer) error {
				verb := "installed"
				if c.Bool("uninstall") {
					verb = "removed"
				}
				var err error
				if !res.Changed {
					_, err = fmt.Fprintf(w, "%s: nothing to change (%s)\n", p, map[bool]string{true: "not installed", false: "already installed"}[c.Bool("uninstall")])
				} else {
					_, err = fmt.Fprintf(w, "%s snap's hooks for %d events in %s\n", verb, len(res.Events), p)
				}
				if err == nil && len(res.Kept) > 0 {
					_, err = fmt.Fprintf(w, "%s %s: your own hook running snap, left as it is\n",
						map[bool]string{true: "not removed from", false: "already present on"}[c.Bool("uninstall")], strings.Join(res.Kept, ", "))
				}
				return err
			})
		},
	}
}

// installDirs are the project root, as the hooks find it from -C (else the
// current directory): the root of the store, else the top of the git work
// tree (agent.ProjectRoot); and the user's home.
func installDirs(g globalOptions) (string, string, error) {
	dir, err := g.base()
	if err != nil {
		return "", "", err
	}
	root, err := agent.ProjectRoot(dir)
	if err != nil {
		return "", "", err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("no home directory: %w", err)
	}
	return root, home, nil
}

// hookCommandLine is the command the agent runs: "snap hook NAME" when
// the snap on PATH is this program, else this program's absolute path.
func hookCommandLine(name string) string {
	self, err := os.Executable()
	if err == nil {
		self, _ = filepath.EvalSymlinks(self)
	}
	if onPath, err := exec.LookPath("snap"); err == nil {
		if p, err := filepath.EvalSymlinks(onPath); err == nil && p == self {
			return "snap hook " + name
		}
	}
	if self == "" {
		return "snap hook " + name
	}
	return agent.QuoteCommand(self) + " hook " + name
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinKeys[V any](m map[string]V) string {
	s := ""
	for i, k := range sortedKeys(m) {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}
