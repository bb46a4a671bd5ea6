// Package agent is what every agent hook adapter shares: an Event (what one
// hook payload asks snap to record) and Hook, which records it through the
// engine and never blocks or breaks the agent. The adapters
// (agent/claudecode, ...) only turn their agent's payloads into Events and
// edit their agent's settings files.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	// Paths, when not nil, are the only paths that can have changed (the
	// edit-set hint of a file-editing tool), absolute or relative to Cwd.
	// A path outside the project makes the event record nothing.
	Paths []string
	Label string // a label to set ("" = none)
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
	var err error
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		var payload []byte
		payload, err = io.ReadAll(io.LimitReader(stdin, o.MaxPayload+1))
		if err != nil {
			return
		}
		if int64(len(payload)) > o.MaxPayload {
			err = fmt.Errorf("payload over %d bytes: ignored", o.MaxPayload)
			return
		}
		if ev, err = parse(payload); err != nil || ev.Kind == "" {
			// Nothing to record: the log goes to the store of the
			// payload's cwd, else of the directory the agent runs us in.
			dir := ev.Cwd
			if dir == "" {
				dir, _ = os.Getwd()
			}
			if dir != "" {
				repo, _ = open(dir, o, false)
			}
			return
		}
		repo, res, err = record(ctx, ev, o)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("gave up after %s: %w", o.Timeout, ctx.Err())
		// The goroutine may still hold the repo; the process exits soon.
		repo = nil
	}
	line := logLine(ev, res, err)
	if err != nil {
		fmt.Fprintln(stderr, "snap hook: "+line)
	}
	if repo != nil {
		appendLog(filepath.Join(repo.StoreDir, LogName), line)
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

// open opens the store of the project holding dir; with create, a project
// with none gets one (at the root of the git repository holding dir, else
// at dir).
func open(dir string, o Options, create bool) (*snap.Repo, error) {
	opts := snap.Options{Dir: dir, LockTimeout: o.LockTimeout}.FromEnv()
	repo, err := snap.Open(opts)
	if errors.Is(err, snap.ErrNoStore) && create {
		opts.Dir = projectRoot(dir)
		repo, _, err = snap.Init(opts)
	}
	return repo, err
}

// projectRoot is the top of the git work tree holding dir, else dir.
func projectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// record checkpoints ev.
func record(ctx context.Context, ev Event, o Options) (*snap.Repo, *snap.CheckpointResult, error) {
	if ev.Cwd == "" || !filepath.IsAbs(ev.Cwd) {
		return nil, nil, fmt.Errorf("no absolute cwd in the payload")
	}
	repo, err := open(ev.Cwd, o, true)
	if err != nil {
		return nil, nil, err
	}
	co := snap.CheckpointOptions{Session: SessionName(ev.Agent, ev.Session), Kind: ev.Kind, Summary: ev.Summary, MessageID: ev.MessageID}
	if ev.Label != "" {
		co.Labels = []string{ev.Label}
	}
	if ev.Transcript != "" {
		if !filepath.IsAbs(ev.Transcript) {
			return repo, nil, fmt.Errorf("transcript_path %q is not absolute", ev.Transcript)
		}
		if _, err := os.Stat(ev.Transcript); err == nil {
			co.State = []snap.StateDoc{{Name: snap.ConversationDoc, Source: ev.Transcript}}
		}
	}
	if ev.Paths != nil {
		for _, p := range ev.Paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(ev.Cwd, p)
			}
			rel, err := filepath.Rel(repo.Root, filepath.Clean(p))
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || rel == "." {
				return repo, nil, fmt.Errorf("%s is outside the project %s: nothing recorded", p, repo.Root)
			}
			co.Paths = append(co.Paths, filepath.ToSlash(rel))
		}
	}
	res, err := repo.Checkpoint(ctx, co)
	return repo, res, err
}

// SessionName is the snap session of an agent's session id: the id when it
// is a legal session name, else a name derived from it.
func SessionName(agent, id string) string {
	if id == "" {
		return snap.SessionFromEnv("")
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
	for _, c := range id {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	return strings.Trim(agent+"-"+b.String(), "-")
}

// logLine describes what the hook did.
func logLine(ev Event, res *snap.CheckpointResult, err error) string {
	what := strings.TrimSpace(ev.Agent + " " + ev.Name)
	if what == "" {
		what = "hook"
	}
	now := time.Now().UTC().Format(time.RFC3339)
	switch {
	case err != nil:
		return fmt.Sprintf("%s %s session=%s: error: %v", now, what, ev.Session, err)
	case res == nil:
		return fmt.Sprintf("%s %s session=%s: nothing to record", now, what, ev.Session)
	case res.Unchanged:
		return fmt.Sprintf("%s %s session=%s: %s unchanged", now, what, ev.Session, res.ID.Short())
	default:
		return fmt.Sprintf("%s %s session=%s: recorded %s (%s)", now, what, ev.Session, res.ID.Short(), ev.Kind)
	}
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
