// Package agent is what every agent hook adapter shares: an Event (what one
// hook payload asks snap to record) and Hook, which records it through the
// engine and never blocks or breaks the agent. The adapters
// (agent/claudecode, ...) only turn their agent's payloads into Events and
// say which hooks go into which of their agent's settings files: each is an
// Adapter its package registers (Register; adapter.go), and front-ends know
// agents only through the registry (All, Lookup). agent/agenttest is the
// conformance suite every adapter passes.
//
// # The hooks snap owns in a settings file
//
// InstallHooks adds, for each event, one entry of its own to the event's
// list: {"matcher": M, "hooks": [{"type": "command", "command": C}]}, where
// M is the adapter's matcher for the event (no "matcher" member when it
// has none) and C is the command line of this install ("snap hook NAME",
// or the running program's path when the snap on PATH is another one).
// That shape is snap's mark: an entry is snap's when it is exactly that,
// the same members with the same values (whatever its layout or member
// order), and only such an entry is ever removed. Every other hook that
// runs snap's hook (RunsSnapHook: a program named snap, then "hook NAME")
// is the user's: one with a timeout, a matcher of its own, another path to
// snap, or sharing its entry with another command. It is never rewritten
// or removed, and its event counts as installed: install adds no second
// hook beside it (that would record two checkpoints per event) and reports
// it (InstallResult.Kept). An entry written by snap at another path (the
// program moved, or was run from elsewhere) is therefore left alone as
// well: it still counts as installed, and an uninstall run by that program
// removes it. An entry the user wrote that is exactly snap's cannot be told
// from snap's, and is taken for it.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/snapcore-dev/snap"
)

// Event is what one hook payload asks snap to record. A zero Kind records
// nothing (an event snap does not act on).
type Event struct {
	Agent      string // "claude-code", ...: names the log lines
	Name       string // the agent's event name, for the log
	Session    string // the agent's session id (a snap session name is derived from it)
	Cwd        string // where the agent runs: the project is found from here
	Transcript string // the transcript's absolute path: the conversation document ("" = none)
	Kind       string // checkpoint kind: session-start, prompt, pre-tool, post-tool, stop, ...
	Summary    string
	MessageID  string // msg:ID finds the checkpoint (a tool call's id)
	Call       string // the tool call whose changes a post-tool event records
	// Paths, when not nil, are the only paths that can have changed (the
	// edit-set hint of a file-editing tool), absolute or relative to Cwd.
	// A path outside the project makes the event a full capture.
	Paths []string
	Label string // a label to set ("" = none)
}

// SetTool makes ev the checkpoint around a tool call: before it (kind
// pre-tool, message id = the call's id, so msg:ID finds it) or after it
// (post-tool); what describes the call, paths is its edit-set hint (nil:
// a full capture).
func (ev *Event) SetTool(before bool, what string, paths []string, id string) {
	ev.Paths = paths
	if before {
		ev.Kind, ev.Summary, ev.MessageID = "pre-tool", "before "+what, id
	} else {
		ev.Kind, ev.Summary, ev.Call = "post-tool", "after "+what, id
	}
}

// actorOf is who made what an event's capture finds changed since the
// session's previous capture. A hook brackets every tool call that may
// write: what a post-tool capture finds, or the end of a turn's, is the
// agent's doing; what one before a tool call, at a prompt or at the
// session's start finds was done outside the agent's tool calls: the
// user's (unless another session recorded it first). Other events say
// nothing ("": unknown).
func actorOf(kind string) string {
	switch kind {
	case "post-tool", "stop", "subagent-stop":
		return snap.ActorAgent
	case "pre-tool", "prompt", "session-start":
		return snap.ActorUser
	}
	return ""
}

// Options bound a hook's run.
type Options struct {
	// Timeout bounds the whole hook (default 10 s; SNAP_HOOK_TIMEOUT).
	Timeout time.Duration
	// LockTimeout bounds each wait for another snap process (default 2 s,
	// unless SNAP_LOCK_TIMEOUT says otherwise).
	LockTimeout time.Duration
	// MaxPayload bounds what is read of stdin (default 16 MiB).
	MaxPayload int64
	// Maintain, when set, runs after an event was recorded, before the
	// hook returns: the CLI starts its detached background gc there when
	// the store needs one (an agent's hooks may be all that writes to it).
	Maintain func(context.Context, *snap.Repo)
}

// LogName is the hook log's file name in the store.
const LogName = "hook.log"

// logMax is the size past which the log keeps only its newer half.
const logMax = 1 << 20

// Hook runs one hook invocation: it reads the payload from stdin, parses it
// with parse, records the event, and returns. It never returns an error and
// writes nothing on stdout: whatever happens (malformed JSON, no store, a
// busy store, a full disk, a path outside the project), the problem goes to
// the store's hook log (when a store can be found) and to stderr, and the
// agent goes on. The first event in a project with no store creates one.
func Hook(ctx context.Context, stdin io.Reader, stderr io.Writer, o Options, parse func([]byte) (Event, error)) {
	o = o.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	done := make(chan struct{})
	var ev Event
	var res *snap.CheckpointResult
	var repo *snap.Repo
	var warn string
	var err error
	// The store's log file, published as soon as it is known, so that a
	// hook that gives up while the goroutine still works can say so there.
	var logPath atomic.Pointer[string]
	opened := func(r *snap.Repo) {
		if r != nil {
			p := filepath.Join(r.StoreDir, LogName)
			logPath.Store(&p)
		}
	}
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		var payload []byte
		payload, err = io.ReadAll(io.LimitReader(stdin, o.MaxPayload+1))
		if err == nil && int64(len(payload)) > o.MaxPayload {
			err = fmt.Errorf("payload over %d bytes: ignored", o.MaxPayload)
		}
		if err == nil {
			ev, err = parse(payload)
		}
		if err == nil && ev.Kind != "" {
			repo, res, warn, err = record(ctx, ev, o, opened)
			return
		}
		// Nothing to record: the log goes to the store of the payload's
		// cwd, else of the directory the agent runs us in.
		for _, dir := range []string{ev.Cwd, "."} {
			if dir == "" {
				continue
			}
			if repo, _ = open(dir, o, false); repo != nil {
				opened(repo)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("gave up after %s (a capture of a big tree can take longer: SNAP_HOOK_TIMEOUT raises the bound): %w", o.Timeout, ctx.Err())
		// The goroutine may still hold the repo; the process exits soon.
		repo = nil
	}
	line := logLine(ev, res, warn, err)
	if err != nil || warn != "" {
		fmt.Fprintln(stderr, "snap hook: "+line)
	}
	if p := logPath.Load(); p != nil {
		appendLog(*p, line)
	}
	if repo != nil {
		if err == nil && res != nil && o.Maintain != nil {
			o.Maintain(ctx, repo)
		}
		repo.Close()
	}
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
		if d, err := snap.ParseDuration(os.Getenv("SNAP_HOOK_TIMEOUT")); err == nil && d > 0 {
			o.Timeout = d
		}
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 2 * time.Second
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = 16 << 20
	}
	return o
}

// InitProject makes the store of the project holding dir, as the first
// hook event does (see open), when there is none, and returns the
// project's root: a front-end that an agent starts on its own (snap mcp)
// needs no 'snap init' first, and then opens the store as it opens any
// (a server: Options.LongRunning).
func InitProject(dir string) (root string, err error) {
	repo, err := open(dir, Options{}.withDefaults(), true)
	if err != nil {
		return "", err
	}
	defer repo.Close()
	return repo.Root, nil
}

// open opens the store of the project holding dir; with create, a project
// with none gets one (at the root of the git repository holding dir, else
// at dir). A store in an ancestor directory is not the project's when a
// git repository lies between (a repository below a store someone made in
// a parent directory is a project of its own), and no store is ever made
// in the home directory or the file system root: an agent started there
// is not working on a project.
func open(dir string, o Options, create bool) (*snap.Repo, error) {
	opts := snap.Options{Dir: dir, LockTimeout: o.LockTimeout}.FromEnv()
	repo, err := snap.Open(opts)
	root := projectRoot(dir)
	if err == nil && opts.Store == "" && root != dir && below(root, repo.Root) {
		repo.Close()
		repo, err = nil, snap.ErrNoStore
	}
	if errors.Is(err, snap.ErrNoStore) && create {
		if home, _ := os.UserHomeDir(); root == filepath.Dir(root) || home != "" && sameDir(root, home) {
			return nil, fmt.Errorf("the agent runs in %s, which is not a project (the home directory or the file system root): no store made; start the agent in a project directory, or run 'snap init' where you want one", root)
		}
		opts.Dir = root
		if opts.Store == "" {
			opts.Store = filepath.Join(root, snap.StoreDirName) // there, not in an ancestor
		}
		repo, _, err = snap.Init(opts)
	}
	return repo, err
}

// ProjectRoot is the root of the project holding dir (absolute) as a hook
// run there finds it: the root of its store (see open), else the top of
// the git work tree holding dir, else dir. Nothing is created. 'snap
// install' writes a project's settings there, where the agent started in
// the project reads them.
func ProjectRoot(dir string) (string, error) {
	repo, err := open(dir, Options{}.withDefaults(), false)
	if err == nil {
		defer repo.Close()
		return repo.Root, nil
	}
	if errors.Is(err, snap.ErrNoStore) {
		return projectRoot(dir), nil
	}
	return "", err
}

// projectRoot is the top of the git work tree holding dir (a directory
// holding a .git directory: a repository of its own, not a submodule or
// linked worktree, whose .git is a file), else dir.
func projectRoot(dir string) string {
	for d := dir; ; {
		if fi, err := os.Lstat(filepath.Join(d, ".git")); err == nil && fi.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// below reports whether dir lies strictly inside ancestor (both absolute;
// symlinks resolved when they exist).
func below(dir, ancestor string) bool {
	dir, ancestor = realPath(dir), realPath(ancestor)
	rel, err := filepath.Rel(ancestor, dir)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

func sameDir(a, b string) bool { return realPath(a) == realPath(b) }

// realPath is p with symlinks resolved, or p when it cannot be.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// record checkpoints ev. warn says what was left out (a transcript that
// is not a regular file, hinted paths outside the project) while the rest
// was recorded.
func record(ctx context.Context, ev Event, o Options, opened func(*snap.Repo)) (repo *snap.Repo, res *snap.CheckpointResult, warn string, err error) {
	if ev.Cwd == "" || !filepath.IsAbs(ev.Cwd) {
		return nil, nil, "", fmt.Errorf("no absolute cwd in the payload")
	}
	if repo, err = open(ev.Cwd, o, true); err != nil {
		return nil, nil, "", err
	}
	opened(repo)
	co := snap.CheckpointOptions{Session: SessionName(ev.Agent, ev.Session), Kind: ev.Kind, Summary: ev.Summary, MessageID: ev.MessageID,
		Actor: actorOf(ev.Kind), Call: ev.Call, Agent: ev.Agent}
	if ev.Label != "" {
		co.Labels = []string{ev.Label}
	}
	var warns []string
	if ev.Transcript != "" {
		if !filepath.IsAbs(ev.Transcript) {
			return repo, nil, "", fmt.Errorf("transcript_path %q is not absolute", ev.Transcript)
		}
		if fi, err := os.Stat(ev.Transcript); err == nil && fi.Mode().IsRegular() {
			co.State = []snap.StateDoc{{Name: snap.ConversationDoc, Source: ev.Transcript}}
		} else if err == nil {
			warns = append(warns, fmt.Sprintf("transcript %s is not a regular file: files recorded without it", ev.Transcript))
		}
	}
	if ev.Paths != nil {
		co.Paths = []string{}
		for _, p := range ev.Paths {
			rel, ok := projectPath(repo.Root, ev.Cwd, p)
			if !ok {
				// A full capture then: the hint is not the whole change.
				warns = append(warns, fmt.Sprintf("%s is outside the project %s: the whole tree examined", p, repo.Root))
				co.Paths = nil
				break
			}
			co.Paths = append(co.Paths, rel)
		}
	}
	res, err = repo.Checkpoint(ctx, co)
	return repo, res, strings.Join(warns, "; "), err
}

// projectPath is p (absolute, or relative to cwd) relative to the project
// root, through symlinks when the spellings differ (/tmp and /private/tmp);
// false when it lies outside the project or is its root.
func projectPath(root, cwd, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	try := func(root, p string) (string, bool) {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	if rel, ok := try(root, p); ok {
		return rel, true
	}
	// The parent resolved (the file itself may not exist yet, or be a
	// symlink that is itself the change).
	return try(realPath(root), filepath.Join(realPath(filepath.Dir(p)), filepath.Base(p)))
}

// SessionName is the snap session of an agent's session id: the id when it
// is a legal session name; else the agent's name, what can be kept of the
// id, and a short hash of the whole id, so that two ids never share a
// session ("a/b" and "a:b" differ). No id: $SNAP_SESSION, else the agent's
// name (never the user's own default session).
func SessionName(agent, id string) string {
	if id == "" {
		if s := os.Getenv(snap.EnvSession); s != "" {
			return s
		}
		return agent
	}
	ok := len(id) <= 100
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			ok = false
		}
	}
	if ok && id[0] != '.' && id[0] != '-' {
		return id
	}
	var b strings.Builder
	b.WriteString(agent + "-")
	for _, c := range id {
		if b.Len() >= len(agent)+40 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else if !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return strings.TrimSuffix(b.String(), "-") + "-" + hex.EncodeToString(sum[:4])
}

// logLine describes what the hook did: the agent's session id and the
// snap session it went to, what was recorded, and what was left out.
func logLine(ev Event, res *snap.CheckpointResult, warn string, err error) string {
	what := strings.TrimSpace(ev.Agent + " " + ev.Name)
	if what == "" {
		what = "hook"
	}
	who := "session=" + ev.Session
	if ev.Kind != "" {
		if s := SessionName(ev.Agent, ev.Session); s != ev.Session {
			who += " (snap session " + s + ")"
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var out string
	switch {
	case err != nil:
		out = fmt.Sprintf("%s %s %s: error: %v", now, what, who, err)
	case res == nil:
		out = fmt.Sprintf("%s %s %s: nothing to record", now, what, who)
	case res.Unchanged:
		out = fmt.Sprintf("%s %s %s: %s unchanged", now, what, who, res.ID.Short())
	default:
		out = fmt.Sprintf("%s %s %s: recorded %s (%s)", now, what, who, res.ID.Short(), ev.Kind)
	}
	if warn != "" {
		out += "; warning: " + warn
	}
	return out
}

// appendLog appends line to the log, keeping its newer half once it is over
// logMax. Failures are ignored: the log is a courtesy.
func appendLog(path, line string) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > logMax {
		if data, err := os.ReadFile(path); err == nil {
			half := data[len(data)/2:]
			if i := strings.IndexByte(string(half), '\n'); i >= 0 {
				half = half[i+1:]
			}
			tmp := path + ".tmp"
			if os.WriteFile(tmp, half, 0o644) == nil {
				os.Rename(tmp, path)
			}
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.WriteString(strings.ReplaceAll(line, "\n", " ") + "\n")
	f.Close()
}

// ReadLog returns the last n lines of the hook log of the project holding
// dir (all with n <= 0).
func ReadLog(repo *snap.Repo, n int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(repo.StoreDir, LogName))
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = []string{}
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// FirstLine is s's first non-empty line, at most 200 characters: the
// summary of a prompt.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 200 {
				l = string(r[:200]) + "…"
			}
			return l
		}
	}
	return ""
}

// ToolPath describes a tool call ("Edit /p/a.go") and, for a tool that
// edits one file (editTools maps its name to the tool_input field naming
// the file), that file as the event's only path; nil paths otherwise (a
// full capture).
func ToolPath(tool string, input json.RawMessage, editTools map[string]string) (string, []string) {
	field, ok := editTools[tool]
	if !ok {
		return tool, nil
	}
	var in map[string]any
	json.Unmarshal(input, &in)
	p, _ := in[field].(string)
	if p == "" {
		return tool, nil
	}
	return tool + " " + p, []string{p}
}

// ShortName is a short label-safe form of a session id, for labels.
func ShortName(agent, session string) string {
	s := SessionName(agent, session)
	if len(s) > 12 {
		s = s[:12]
	}
	return strings.Trim(s, "-.")
}
