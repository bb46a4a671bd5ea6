// Command snap is the command-line interface of the snap snapshot engine:
// checkpoints of a working tree and an agent's state documents, rewind,
// undo and redo. Every command accepts --json; exit codes are listed in
// exit.go.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	snap "github.com/snapcore-dev/snap"
)

func main() {
	if os.Getenv(handshakeEnv) != "" {
		fmt.Println(handshake()) // (before anything else: see core.go checkFull)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if isTerminal(os.Stderr) {
		ctx = snap.WithLockNotice(ctx, func(path string, max time.Duration) {
			fmt.Fprintf(os.Stderr, "snap: waiting for %s, held by another snap process (at most %v; Ctrl-C stops)\n", filepath.Base(path), max)
		})
	}
	tuneGC()
	stopProfile := startProfile(os.Getenv("SNAP_CPUPROFILE"))
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func init() {
	// --version only: -v is too easily meant as "verbose".
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version of snap and exit"}
}

// version describes this build: the module version ("(devel)" for a build
// from a checkout), the VCS revision it was built from (+dirty when the
// checkout had changes) and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	rev, dirty := "", ""
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	return v + " " + bi.GoVersion
}

// tuneGC trades memory for time: a run lives for milliseconds, so the
// collector runs at 4× the live heap instead of 2× (it took a tenth of a
// no-change checkpoint's CPU), under a soft limit of 160 MiB. Measured: a
// no-change checkpoint of 20,000 files peaks at ~30 MiB RSS, of 200,000
// files at ~150 MiB (165 MiB with Go's defaults, same time); a 1 GiB file's
// first checkpoint at ~130 MiB (277 MiB with a 512 MiB limit, over the
// 256 MiB bound). A tree much larger than 200,000 files would make the
// collector run often near the limit: GOMEMLIMIT (or GOGC), when set, wins.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(160 << 20)
	}
}

// startProfile writes a CPU profile of the whole run to path when it is
// set (SNAP_CPUPROFILE: how bench/README.md profiles the CLI as agents run
// it, process start included); a file that cannot be created is reported
// and ignored.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "snap: SNAP_CPUPROFILE:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// invocation is what one run of the CLI shares between its commands: the
// standard streams, and where "--" stood among the positional arguments.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// dashPos is the number of positional arguments of the command that
	// came before a "--" (everything after it is positional too), or -1
	// when there was none.
	dashPos int
}

// run runs the CLI with args (args[0] is the program name) and returns the
// process exit code. It is the whole program minus os.Exit, so tests run the
// CLI in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv := &invocation{stdin: stdin, stdout: stdout, stderr: stderr, dashPos: -1}
	var err error
	if a, ok := hookFastPath(args); ok {
		err = recovered(func() error { runHook(ctx, inv, a); return nil })
	} else if err = handOff(ctx, args); err == nil { // (the core build's snap-full, for some commands)
		app := appOf(inv, commandOf(args))
		args, inv.dashPos = normalizeArgs(app, args)
		err = recovered(func() error { return app.RunContext(ctx, args) })
	}
	if err == nil {
		return 0
	}
	return reportError(stderr, wantsJSON(args), err)
}

// recovered calls fn and turns a panic into an *internalError, so that even
// a bug in snap ends in an error of the documented shape and exit code.
func recovered(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &internalError{value: p, stack: debug.Stack()}
		}
	}()
	return fn()
}

// handshakeEnv set in its environment, snap prints handshake() and exits:
// before a core build hands a command over to snap-full, it asks snap-full
// so, and runs it only when the answer is its own build's (core.go
// checkFull).
const handshakeEnv = "SNAP_HANDSHAKE"

// handshake names this build: complete or core, its version, and the
// version of what passes between the two builds (the arguments,
// environment and standard streams of a hand-over), raised when that
// changes.
func handshake() string {
	build := "core"
	if completeBuild {
		build = "complete"
	}
	return "snap " + build + " build, " + version() + ", hand-over 1"
}

// execMark is set in the environment of the snap-full a core build runs
// (core.go), which would otherwise run itself for ever were snap-full a
// core build too.
const execMark = "SNAP_FULL_RUN_BY_CORE"

// globalOptions are the options every command accepts.
type globalOptions struct {
	JSON    bool   // one JSON document on stdout
	Session string // session name; "" means $SNAP_SESSION, else "default"
	Dir     string // -C: the project directory, or one inside it; "" = current directory
	Store   string // --store: explicit store path; "" means $SNAP_STORE, else found from Dir

	stderr io.Writer // for warnings; nil: none
	// longRunning: a server or daemon (ui, mcp, watch): see
	// snap.Options.LongRunning.
	longRunning bool
}

func (g globalOptions) session() string { return snap.SessionFromEnv(g.Session) }

// repoOptions: SNAP_STORE and SNAP_LOCK_TIMEOUT (a hook that must not
// block its agent sets a short one) as every front-end reads them.
func (g globalOptions) repoOptions() snap.Options {
	o := snap.Options{Dir: g.Dir, Store: g.Store, LongRunning: g.longRunning}.FromEnv()
	if g.stderr != nil {
		o.OnComplete = func(m snap.InterruptedMove) {
			fmt.Fprintf(g.stderr, "snap: first completed the %s of session %s to %s that an interrupted snap left part way", m.Kind, m.Session, m.Target.Short())
			if !m.Found.IsZero() {
				fmt.Fprintf(g.stderr, "; what was on disk before (changed since the interruption) is checkpoint %s: 'snap -s %s rewind %s' brings it back",
					m.Found.Short(), m.Session, m.Found.Short())
			}
			fmt.Fprintln(g.stderr)
		}
	}
	return o
}

// open opens the project's store; the caller closes it. A rewind that a
// killed or interrupted process left part way is announced on stderr (a
// command that changes the store completes it first).
func (g globalOptions) open(ctx context.Context) (*snap.Repo, error) {
	repo, err := snap.Open(g.repoOptions())
	if err != nil {
		return nil, err
	}
	if m, err := repo.Interrupted(ctx); err == nil && m != nil && g.stderr != nil {
		fmt.Fprintf(g.stderr, "snap: warning: a %s of session %s to %s was interrupted and left the working tree part way; "+
			"the next command that changes the store (checkpoint, rewind, undo...) completes it, recording first anything changed since; "+
			"then 'snap -s %s rewind %s' returns to the state before it\n",
			m.Kind, m.Session, m.Target.Short(), m.Session, m.Safety.Short())
	}
	return repo, nil
}

// base is the directory relative paths given on the command line are
// resolved against: -C DIR, as if snap had been started there, else the
// current directory.
func (g globalOptions) base() (string, error) {
	if g.Dir != "" {
		return filepath.Abs(g.Dir)
	}
	return os.Getwd()
}

// absPath makes a path given on the command line absolute (see base).
func (g globalOptions) absPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	base, err := g.base()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, p), nil
}

// projectPaths turns paths given on the command line into slash-separated
// paths relative to the project root, as the engine wants them. "" stands
// for the whole tree.
func (g globalOptions) projectPaths(repo *snap.Repo, paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		abs, err := g.absPath(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(repo.Root, abs)
		if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
			return nil, usageErrorf("path %q is outside the project %s", p, repo.Root)
		}
		if rel == "." {
			rel = ""
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// globalFlags returns fresh instances of the flags every command accepts
// (fresh, because urfave/cli records "has been set" in the flag itself).
func globalFlags() []cli.Flag {
	const cat = "global options (every command)"
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Category: cat,
			Usage: "print one JSON document on stdout; errors as {\"error\":{\"code\",\"message\"}} on stderr"},
		&cli.StringFlag{Name: "session", Aliases: []string{"s"}, Category: cat,
			Usage: "session `ID` (default: $SNAP_SESSION, else \"default\")"},
		&cli.StringFlag{Name: "C", Category: cat,
			Usage: "run as if snap was started in `DIR` (the project is the nearest ancestor holding .snap/)"},
		&cli.StringFlag{Name: "store", Category: cat,
			Usage: "use the store at `PATH` (default: $SNAP_STORE, else .snap/ at the project root)"},
	}
}

// isGlobalFlag reports whether name (without dashes) is one of globalFlags.
func isGlobalFlag(name string) bool {
	switch name {
	case "json", "session", "s", "C", "store":
		return true
	}
	return false
}

// globals reads the global options of a command. A global flag given at
// several levels (before and after the command name) takes the innermost
// value.
func globals(c *cli.Context) globalOptions {
	var g globalOptions
	for _, cc := range c.Lineage() {
		if cc.IsSet("json") {
			g.JSON = cc.Bool("json")
			break
		}
	}
	g.Session = lookupString(c, "session")
	g.Dir = lookupString(c, "C")
	g.Store = lookupString(c, "store")
	g.stderr = c.App.ErrWriter
	return g
}

func lookupString(c *cli.Context, name string) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet(name) {
			return cc.String(name)
		}
	}
	return ""
}

// withGlobals appends the global flags to a command's own.
func withGlobals(flags ...cli.Flag) []cli.Flag {
	return append(flags, globalFlags()...)
}

// commands are the top-level commands, in the order 'snap help' lists
// them, each made only when needed (newApp).
var commands = []struct {
	name string
	make func(*invocation) *cli.Command
}{
	{"init", initCommand},
	{"checkpoint", checkpointCommand},
	{"log", logCommand},
	{"show", showCommand},
	{"status", statusCommand},
	{"diff", diffCommand},
	{"cat", catCommand},
	{"blame", blameCommand},
	{"trace", traceCommand},
	{"conversation", conversationCommand},
	{"rewind", rewindCommand},
	{"undo", undoCommand},
	{"redo", redoCommand},
	{"op", opCommand},
	{"label", labelCommand},
	{"task", taskCommand},
	{"edit", editCommand},
	{"revert", revertCommand},
	{"git", gitCommand},
	{"push", pushCommand},
	{"pull", pullCommand},
	{"redact", redactCommand},
	{"hook", hookCommand},
	{"install", installCommand},
	{"mcp", mcpCommand},
	{"ui", uiCommand},
	{"watch", watchCommand},
	{"config", configCommand},
	{"sessions", sessionsCommand},
	{"session", sessionCommand},
	{"gc", gcCommand},
	{"fsck", fsckCommand},
}

// newApp builds the command-line interface with every command.
func newApp(inv *invocation) *cli.App { return appOf(inv, nil) }

// appOf builds the command-line interface with the commands named in only
// (nil: all), the one the arguments run (commandOf): making all of them,
// their flags and help, and urfave/cli's setup of them was a sixth of the
// CPU of a command's start (bench/README.md, W10).
func appOf(inv *invocation, only []string) *cli.App {
	var cmds []*cli.Command
	for _, c := range commands {
		if only == nil || slices.Contains(only, c.name) {
			cmds = append(cmds, c.make(inv))
		}
	}
	app := &cli.App{
		Commands:  cmds,
		Name:      "snap",
		Usage:     "content-addressed snapshots of a project and its agent's state",
		UsageText: "snap [global options] command [command options] [arguments...]",
		Description: `snap keeps a shadow store (.snap/) beside a project and records checkpoints:
the whole working tree plus the agent's state documents (the conversation
transcript, task state...). Any checkpoint can be rewound to, and a rewind
can be undone.

A typical session:

   snap init
   snap checkpoint -m msg_01 --summary "add parser" --conversation transcript.jsonl
   snap checkpoint -m msg_02 --summary "add tests"
   snap log
   snap diff '#1' '#2'
   snap rewind '#1'      # a safety checkpoint is taken first
   snap undo             # and everything is back

(transcript.jsonl is the agent's transcript: to try these, make one first,
echo '{"role":"user","content":"add a parser"}' > transcript.jsonl, and
change a file, or the transcript, before the second checkpoint.)

REF, wherever a checkpoint is named:
   @            the session head           @~N   N checkpoints before the head
   #N           N-th checkpoint of the session, as 'snap log' numbers them
                (quote it in shells, where # starts a comment: '#3')
   msg:ID       latest checkpoint with that message id
   LABEL        a label set with 'snap label' or 'checkpoint --label'
   HEX          a checkpoint id or a unique prefix of at least 6 hex digits

Exit codes: 0 ok, 1 error (a conflict among them), 2 usage, 3 partial (some
paths failed), 4 no such checkpoint/ref, 10 no store, 11 store busy, 12 store
corrupt, 130 interrupted (Ctrl-C).

Environment: SNAP_SESSION, SNAP_STORE (see the global options);
SNAP_LOCK_TIMEOUT=DUR bounds every wait for another snap process's lock
(default 60s, then exit 11); SNAP_NO_AUTO_GC=1 stops the background gc.`,
		Version:                   version(),
		DisableSliceFlagSeparator: true,
		Reader:                    inv.stdin,
		Writer:                    inv.stdout,
		ErrWriter:                 inv.stderr,
		Flags:                     globalFlags(),
		ExitErrHandler:            func(*cli.Context, error) {}, // exit codes are mapped in run
		OnUsageError:              onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("unknown command %q (see 'snap help')", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
	installHelp(app, inv)
	var setUsage func(cmds []*cli.Command)
	setUsage = func(cmds []*cli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil {
				c.OnUsageError = onUsageError
			}
			setUsage(c.Subcommands)
		}
	}
	setUsage(app.Commands)
	return app
}

// subcommandAction is the action of a command that only groups
// subcommands.
func subcommandAction(c *cli.Context) error {
	if c.Args().Present() {
		return usageErrorf("unknown subcommand %q of 'snap %s' (see 'snap %s --help')", c.Args().First(), c.Command.Name, c.Command.Name)
	}
	return cli.ShowSubcommandHelp(c)
}

// normalizeArgs lets flags follow positional arguments ("snap rewind #2
// --dry-run", "snap cat @ --state conversation") and global flags appear
// anywhere ("snap --json log", "snap log --json"), which urfave/cli v2 does
// not do by itself: Go's flag package stops at the first positional
// argument.
//
// It finds the command (and subcommand) named in args, then rewrites args as
//
//	prog cmd [sub] GLOBAL-FLAGS CMD-FLAGS -- POSITIONALS [AFTER-DASHDASH...]
//
// and returns how many positionals came before a "--" in the original (-1:
// there was no "--"). When args name no known command, or a non-global flag
// comes before the command name, args are returned as they were and
// urfave/cli reports what is wrong.
func normalizeArgs(app *cli.App, args []string) ([]string, int) {
	if len(args) < 2 {
		return args, -1
	}
	var path, globalToks, localToks, pos, after []string
	var leaf *cli.Command
	cmds := app.Commands
	dash := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			after = args[i+1:]
			dash = len(pos)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			var def cli.Flag
			if isGlobalFlag(name) {
				def = findFlag(app.Flags, name)
			} else if leaf != nil {
				def = findFlag(leaf.Flags, name)
			} else {
				return args, -1 // a command's flag before the command: leave it to urfave/cli
			}
			toks := []string{a}
			// A flag's value is the next argument, unless that is one of
			// the command's flags ("--path --json": --path lacks its value;
			// a path that starts with a dash is given as --path=-x).
			if !hasValue && takesValue(def) && i+1 < len(args) && !isFlagOf(app, leaf, args[i+1]) {
				toks = append(toks, args[i+1])
				i++
			}
			if isGlobalFlag(name) {
				globalToks = append(globalToks, toks...)
			} else {
				localToks = append(localToks, toks...)
			}
			continue
		}
		if leaf == nil {
			cmd := findCommand(cmds, a)
			if cmd == nil {
				return args, -1
			}
			path = append(path, a)
			if len(cmd.Subcommands) > 0 {
				cmds = cmd.Subcommands
			} else {
				leaf = cmd
			}
			continue
		}
		pos = append(pos, a)
	}
	if leaf == nil {
		return args, -1
	}
	out := append([]string{args[0]}, path...)
	out = append(out, globalToks...)
	out = append(out, localToks...)
	out = append(out, "--")
	out = append(out, pos...)
	out = append(out, after...)
	return out, dash
}

// isFlagOf reports whether a is a flag of the command leaf or a global one.
func isFlagOf(app *cli.App, leaf *cli.Command, a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if findFlag(app.Flags, name) != nil {
		return true
	}
	return leaf != nil && findFlag(leaf.Flags, name) != nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return false // unknown flags (--help, typos) take no value
}

// wantsJSON reports whether --json was given anywhere before a "--", so that
// even a usage error is reported as JSON.
func wantsJSON(args []string) bool {
	for _, a := range args[min(1, len(args)):] {
		if a == "--" {
			break
		}
		switch a {
		case "--json", "-json", "--json=true", "-json=true", "--json=1", "-json=1":
			return true
		}
	}
	return false
}

// commandOf names the commands args need built: the top-level command
// they run; none for 'snap --version' alone; all (nil) when that cannot
// be told from the arguments (no command, an unknown one, 'snap help',
// a flag before the command that is not a global one).
func commandOf(args []string) []string {
	if len(args) == 2 && args[1] == "--version" {
		return []string{}
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if strings.HasPrefix(a, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !isGlobalFlag(name) || name == "help" || name == "h" {
				return nil
			}
			if def := findFlag(globalFlags(), name); !hasValue && takesValue(def) {
				i++
			}
			continue
		}
		for _, c := range commands {
			if c.name == a {
				return []string{a}
			}
		}
		return nil
	}
	return nil
}
