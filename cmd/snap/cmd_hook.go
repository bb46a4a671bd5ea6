package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/agent"
	_ "github.com/snapcore-dev/snap/agent/all" // the agents 'snap hook' and 'snap install' know
)

// The agents 'snap hook' and 'snap install' know are the agent registry's
// (agent.All): every adapter package under agent/ registers itself, and
// agent/all, imported above, links them all in. Nothing here names one.

// hookSubcommands are 'snap hook AGENT', one per registered adapter.
func hookSubcommands(inv *invocation) []*cli.Command {
	var out []*cli.Command
	for _, a := range agent.All() {
		a := a
		out = append(out, &cli.Command{
			Name: a.Name(), Usage: "record a " + a.Title() + " hook event (payload on stdin)",
			Description: `Reads one ` + a.Title() + ` hook payload on stdin and records the checkpoint its
event calls for (see 'snap help hook'). Always exits 0 and prints nothing on
stdout that the agent reads as a decision; problems go to stderr and to
'snap hook log'.`,
			Flags: withGlobals(),
			Action: func(c *cli.Context) error {
				runHook(c.Context, inv, a)
				return nil
			},
		})
	}
	return out
}

// runHook is 'snap hook AGENT': one event of a's, read from stdin, recorded;
// a's answer on stdout.
func runHook(ctx context.Context, inv *invocation, a agent.Adapter) {
	agent.Hook(ctx, inv.stdin, inv.stderr, agent.Options{Maintain: maintain}, a.Parse)
	io.WriteString(inv.stdout, a.HookAnswer())
}

// hookFastPath returns the adapter when args are exactly "snap hook AGENT",
// what an agent runs at every hook event (twice per tool call): run then
// records the event without building the command-line interface. Building
// it (~30 commands, their flags and help, ~3,200 allocations) took three
// times the CPU of a hook event that records nothing (bench/README.md,
// W10). Any other arguments (a flag, --help) take the ordinary path, which
// ends in the same runHook.
func hookFastPath(args []string) (agent.Adapter, bool) {
	if len(args) != 3 || args[1] != "hook" {
		return nil, false
	}
	return agent.Lookup(args[2])
}

// agentParagraphs are each registered adapter's help paragraph, one blank
// line apart.
func agentParagraphs(help func(agent.Adapter) string) string {
	var ps []string
	for _, a := range agent.All() {
		ps = append(ps, strings.TrimSpace(help(a)))
	}
	return strings.Join(ps, "\n\n")
}

func hookCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "hook",
		Usage: "record the checkpoint an agent's hook event calls for (never blocks the agent)",
		Description: `'snap hook AGENT' is what an agent runs at each of its hook events ('snap
install AGENT' sets it up). It reads one hook payload on stdin and records
the checkpoint the event calls for in the session named by the payload's
session id, with the transcript the payload names as the conversation; ids
that are not legal session names are rewritten, and 'snap hook log' names the
session each event went to. Read-only tools and unknown events record
nothing. The agents and their events:

` + agentParagraphs(agent.Adapter.HookHelp) + `

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
		Name: "install", Usage: "add snap's hooks to an agent's settings (or remove them)", ArgsUsage: "AGENT (" + strings.Join(agent.Names(), ", ") + ")",
		Description: agentParagraphs(agent.Adapter.InstallHelp) + `

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
` + installExamples(),
		Flags: withGlobals(append(scopeFlags(),
			&cli.BoolFlag{Name: "uninstall", Usage: "remove snap's hooks"},
			&cli.BoolFlag{Name: "status", Usage: "say where snap's hooks are installed"},
			&cli.BoolFlag{Name: "force", Usage: "write a settings file that is read-only to you (its mode is kept)"},
		)...),
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
				for _, a := range agent.All() {
					for _, scope := range a.Scopes() {
						p, _ := a.SettingsPath(scope, root, home)
						st := installStatus{Agent: a.Name(), Scope: scope, Path: p}
						st.Events, err = agent.Installed(p, a.Name(), a.Hooks())
						if err != nil {
							st.Error = err.Error()
						}
						out = append(out, st)
					}
				}
				return emit(inv.stdout, g.JSON, out, func(w io.Writer) error {
					for _, s := range out {
						a, _ := agent.Lookup(s.Agent)
						state := "not installed"
						switch {
						case s.Error != "":
							state = "unreadable: " + s.Error
						case len(s.Events) == len(a.Hooks()):
							state = "installed"
						case len(s.Events) > 0:
							state = fmt.Sprintf("partly installed (%d of %d events)", len(s.Events), len(a.Hooks()))
						}
						fmt.Fprintf(w, "%s %s (%s): %s\n", s.Agent, s.Scope, s.Path, state)
					}
					return nil
				})
			}
			if c.NArg() != 1 {
				return usageErrorf("install takes AGENT (one of: %s), or --status", strings.Join(agent.Names(), ", "))
			}
			name := c.Args().First()
			a, ok := agent.Lookup(name)
			if !ok {
				return usageErrorf("unknown agent %q (known: %s)", name, strings.Join(agent.Names(), ", "))
			}
			scope := a.DefaultScope()
			n := 0
			for _, s := range agent.ScopeNames() {
				if c.Bool(s) {
					scope = s
					n++
				}
			}
			if n > 1 {
				return usageErrorf("%s: choose one", scopeFlagList())
			}
			p, err := a.SettingsPath(scope, root, home)
			if err != nil {
				return usageErrorf("%v", err)
			}
			res, err := agent.InstallHooks(p, name, hookCommandLine(name), a.Hooks(), agent.InstallOptions{Uninstall: c.Bool("uninstall"), Force: c.Bool("force")})
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

// scopeUsage is what each scope flag of 'snap install' says, before the
// agents that lack it or take it as their default.
var scopeUsage = map[string]string{
	agent.ScopeUser:    "the user's settings, read in every project",
	agent.ScopeProject: "the project's settings, shared with everyone who clones it",
	agent.ScopeLocal:   "the project's settings for you only",
}

// scopeFlags are 'snap install --user', '--project' and '--local', each
// saying which registered agents have it (when not all do) and whose
// default it is.
func scopeFlags() []cli.Flag {
	var flags []cli.Flag
	all := agent.All()
	for _, s := range agent.ScopeNames() {
		var have, defaults []string
		for _, a := range all {
			if contains(a.Scopes(), s) {
				have = append(have, a.Name())
			}
			if a.DefaultScope() == s {
				defaults = append(defaults, a.Name())
			}
		}
		usage := scopeUsage[s]
		switch {
		case len(have) == 0:
			continue
		case len(have) < len(all) && len(defaults) == len(have):
			usage += " (" + andList(have) + "; " + map[bool]string{true: "its", false: "their"}[len(have) == 1] + " default)"
		case len(have) < len(all) && len(defaults) > 0:
			usage += " (" + andList(have) + "; the default for " + andList(defaults) + ")"
		case len(have) < len(all):
			usage += " (" + andList(have) + ")"
		case len(defaults) > 0:
			usage += " (the default for " + andList(defaults) + ")"
		}
		flags = append(flags, &cli.BoolFlag{Name: s, Usage: usage})
	}
	return flags
}

// scopeFlagList is "--user, --project and --local".
func scopeFlagList() string {
	var fs []string
	for _, s := range agent.ScopeNames() {
		fs = append(fs, "--"+s)
	}
	return andList(fs)
}

// installExamples are the examples of 'snap help install', for the
// registered agents.
func installExamples() string {
	var ex []string
	for i, a := range agent.All() {
		ex = append(ex, "   snap install "+a.Name())
		if i == 0 {
			ex = append(ex, "   snap install "+a.Name()+" --project", "   snap install "+a.Name()+" --uninstall")
		}
	}
	return strings.Join(append(ex, "   snap install --status"), "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// andList is "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
