package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/claudecode"
)

// Hooks: a session driven as Claude Code drives snap. The op hook-turn is
// one turn of an agent: perhaps a session start, a prompt, one to three
// tool calls (Edit, Write, Bash, and Read, which records nothing), each
// bracketed by its PreToolUse and PostToolUse events, the end of the turn
// (Stop, perhaps SubagentStop first); the user edits files before the
// prompt and between tool calls. Each event is a real Claude Code payload
// (the fields of /work/shared/realdata/README.md and agent/claudecode's
// tests: session_id, transcript_path, cwd, permission_mode,
// hook_event_name, and the event's own) given to agent.Hook with
// claudecode.Parse, as 'snap hook claude-code' runs it; the session_id is
// the model's session name (a legal id is its own snap session).
//
// The model's side is its own reading of what the hook documents say an
// event records (agent.actorOf, claudecode.Parse's comment): a checkpoint
// of the session (checked as a checkpoint op is: record-*, checkpoint-
// unchanged, head) of kind session-start, prompt, pre-tool, post-tool,
// stop or subagent-stop; what a pre-tool, prompt or session-start capture
// finds is the user's (actor user), what a post-tool, stop or
// subagent-stop capture finds the agent's (actor agent, a post-tool one
// with the tool_use_id as its Call) [record-actor]; a pre-tool checkpoint
// carries the tool_use_id as its message id, so msg:ID finds it; Edit and
// Write examine only the file they name (an edit set); a Read records
// nothing; the transcript is the conversation document when it is a
// file; the hook prints nothing and never fails [hook]. The actors' and
// blame's models then read these checkpoints like any other.

// HookEv is one step of a hook turn: a file written (Write, Data: the
// agent's tool at work, or the user editing), then an event sent (Event).
type HookEv struct {
	Write string `json:"write,omitempty"`
	Data  string `json:"data,omitempty"`
	Event string `json:"event,omitempty"` // SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop
	Tool  string `json:"tool,omitempty"`  // Edit, Write, Bash, Read
	ID    string `json:"id,omitempty"`    // tool_use_id
	Path  string `json:"path,omitempty"`  // the file the tool names (project-relative)
	Text  string `json:"text,omitempty"`  // the prompt, the Bash command, the session start's source
}

func (e HookEv) String() string {
	var parts []string
	if e.Write != "" {
		parts = append(parts, fmt.Sprintf("write %s %q", e.Write, clip(e.Data, 30)))
	}
	if e.Event != "" {
		s := e.Event
		if e.Tool != "" {
			s += " " + e.Tool
		}
		if e.Path != "" {
			s += " " + e.Path
		}
		if e.ID != "" {
			s += " " + e.ID
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// genHookTurn makes one agent turn of op.Session.
func genHookTurn(rng *rand.Rand, g *genState, op *Op) {
	op.Session = randSession(rng)
	disk := map[string]string{} // what the turn wrote so far
	content := func(q string) (string, bool) {
		if d, ok := disk[q]; ok {
			return d, true
		}
		if e, ok := g.disk[q]; ok && (e.K == 'f' || e.K == 'x') {
			return e.Data, true
		}
		return "", false
	}
	write := func(q, data string) HookEv {
		disk[q] = data
		return HookEv{Write: q, Data: data}
	}
	textFile := func() string {
		var c []string
		for _, q := range g.disk.paths() {
			if e := g.disk[q]; (e.K == 'f' || e.K == 'x') && isText(e.Data) && len(e.Data) < 2000 && !hasGit(q) && q != "chat.jsonl" {
				c = append(c, q)
			}
		}
		if len(c) == 0 || rng.IntN(5) == 0 {
			return randPath(rng, 2)
		}
		return c[rng.IntN(len(c))]
	}
	userEdit := func() HookEv {
		q := textFile()
		old, _ := content(q)
		if rng.IntN(2) == 0 {
			return write(q, old+tagLines(rng, g, fmt.Sprintf("user edit %d\n", rng.IntN(100))))
		}
		return write(q, tagLines(rng, g, randContent(rng)))
	}
	if rng.IntN(4) == 0 {
		op.Hooks = append(op.Hooks, HookEv{Event: "SessionStart", Text: []string{"startup", "resume", "clear"}[rng.IntN(3)]})
	}
	if rng.IntN(2) == 0 {
		op.Hooks = append(op.Hooks, userEdit())
	}
	op.Hooks = append(op.Hooks, HookEv{Event: "UserPromptSubmit", Text: fmt.Sprintf("fix the bug %d\nplease", rng.IntN(1000))})
	for n := 1 + rng.IntN(3); n > 0; n-- {
		if rng.IntN(3) == 0 {
			op.Hooks = append(op.Hooks, userEdit())
		}
		id := fmt.Sprintf("toolu_01%08d", rng.IntN(100_000_000))
		pre := HookEv{Event: "PreToolUse", ID: id}
		var work []HookEv
		switch k := rng.IntN(20); {
		case k < 10:
			pre.Tool, pre.Path = "Edit", textFile()
			old, _ := content(pre.Path)
			lines := strings.SplitAfter(old, "\n")
			if old == "" {
				lines = nil
			}
			i := rng.IntN(len(lines) + 1)
			added := tagLines(rng, g, fmt.Sprintf("agent line %d\n", rng.IntN(100)))
			if i > 0 && !strings.HasSuffix(lines[i-1], "\n") {
				added = "\n" + added
			}
			if i < len(lines) && rng.IntN(3) == 0 {
				lines = append(lines[:i], lines[i+1:]...) // the line replaced
			}
			work = append(work, write(pre.Path, strings.Join(lines[:i], "")+added+strings.Join(lines[i:], "")))
		case k < 15:
			pre.Tool, pre.Path = "Write", textFile()
			work = append(work, write(pre.Path, tagLines(rng, g, randContent(rng))))
		case k < 18:
			pre.Tool = "Bash"
			for m := 1 + rng.IntN(2); m > 0; m-- {
				q := textFile()
				work = append(work, write(q, tagLines(rng, g, randContent(rng))))
				pre.Text += fmt.Sprintf("printf ... > %s; ", q)
			}
		default:
			pre.Tool, pre.Path = "Read", textFile()
		}
		post := pre
		post.Event = "PostToolUse"
		op.Hooks = append(op.Hooks, pre)
		op.Hooks = append(op.Hooks, work...)
		op.Hooks = append(op.Hooks, post)
	}
	if rng.IntN(5) == 0 {
		op.Hooks = append(op.Hooks, HookEv{Event: "SubagentStop"})
	}
	op.Hooks = append(op.Hooks, HookEv{Event: "Stop"})
}

// hookPayload is the payload Claude Code sends for ev.
func (p *project) hookPayload(session string, ev HookEv) []byte {
	m := map[string]any{"session_id": session, "transcript_path": p.convPath(), "cwd": p.root,
		"permission_mode": "default", "hook_event_name": ev.Event}
	abs := filepath.Join(p.root, ev.Path)
	input := func() map[string]any {
		switch ev.Tool {
		case "Edit":
			return map[string]any{"file_path": abs, "old_string": "", "new_string": "agent line", "replace_all": false}
		case "Write":
			return map[string]any{"file_path": abs, "content": "..."}
		case "Bash":
			return map[string]any{"command": ev.Text, "description": "write files"}
		}
		return map[string]any{"file_path": abs}
	}
	switch ev.Event {
	case "SessionStart":
		m["source"], m["model"] = ev.Text, "claude-sonnet-4-5"
	case "UserPromptSubmit":
		m["prompt"] = ev.Text
	case "PreToolUse":
		m["tool_name"], m["tool_input"], m["tool_use_id"] = ev.Tool, input(), ev.ID
	case "PostToolUse":
		m["tool_name"], m["tool_input"], m["tool_use_id"] = ev.Tool, input(), ev.ID
		m["tool_response"], m["duration_ms"] = map[string]any{"filePath": abs, "success": true}, 12
	case "Stop":
		m["stop_hook_active"], m["last_assistant_message"] = false, "Done."
	case "SubagentStop":
		m["stop_hook_active"], m["agent_id"], m["agent_type"] = false, "a1b2c3", "general-purpose"
	}
	b, _ := json.Marshal(m)
	return b
}

// opHookTurn runs an agent turn through the hooks.
func (r *runner) opHookTurn(p *project, op *Op) {
	for _, ev := range op.Hooks {
		if ev.Write != "" {
			if err := writeFileAt(p.root, ev.Write, ev.Data, false); err != nil {
				r.stats["fs op failed"]++
			}
		}
		if ev.Event == "" {
			continue
		}
		r.hookEvent(p, op.Session, ev)
		r.checkHeads(p)
		if len(r.fails) > 0 {
			return
		}
	}
}

// hookEvent sends one event and checks what it recorded.
func (r *runner) hookEvent(p *project, session string, ev HookEv) {
	payload := p.hookPayload(session, ev)
	send := func() (string, error) {
		var stderr bytes.Buffer
		agent.Hook(r.ctx, bytes.NewReader(payload), &stderr, agent.Options{Timeout: 2 * time.Minute, LockTimeout: 10 * time.Second}, claudecode.Parse)
		if stderr.Len() > 0 {
			return stderr.String(), fmt.Errorf("the hook reported: %s", strings.TrimSpace(stderr.String()))
		}
		return "", nil
	}
	// What the event amounts to (the hook documents' words).
	c := &Op{Kind: "checkpoint", Session: session}
	hk := &viaHook{}
	switch ev.Event {
	case "SessionStart":
		hk.kind = "session-start"
	case "UserPromptSubmit":
		hk.kind = "prompt"
	case "PreToolUse":
		hk.kind, hk.msgID = "pre-tool", ev.ID
	case "PostToolUse":
		hk.kind, c.Call = "post-tool", ev.ID
	case "Stop":
		hk.kind = "stop"
	case "SubagentStop":
		hk.kind = "subagent-stop"
	}
	switch hk.kind {
	case "post-tool", "stop", "subagent-stop":
		c.Actor = snap.ActorAgent
	default:
		c.Actor = snap.ActorUser
	}
	what := fmt.Sprintf("hook %s (session %s)", ev, session)
	if ev.Tool == "Read" {
		// A read-only tool records nothing.
		d0, o0 := r.mustScan(p), p.scanOut()
		before := p.heads[session]
		if _, err := send(); err != nil {
			r.failf("hook", "%s: %v", what, err)
		}
		r.checkUnchanged(p, d0, o0, what)
		if id, _ := p.repo.Resolve(r.ctx, session, "@"); id != before {
			r.failf("hook", "%s recorded %s; a read-only tool records nothing", what, id.Short())
		}
		r.stats["hook: read-only tool"]++
		return
	}
	if ev.Tool == "Edit" || ev.Tool == "Write" {
		c.Paths = []string{ev.Path}
	}
	if fi, err := os.Stat(p.convPath()); err == nil && fi.Mode().IsRegular() {
		c.Conv = true
	}
	hk.record = func() (snap.ID, bool, error) {
		before := p.heads[session]
		if _, err := send(); err != nil {
			return snap.ID{}, false, err
		}
		id, err := p.repo.Resolve(r.ctx, session, "@")
		if err != nil {
			return snap.ID{}, false, fmt.Errorf("after the hook, the session's head: %w", err)
		}
		return id, id == before, nil
	}
	n := len(r.fails)
	r.checkpointVia(p, c, hk)
	r.stats["hook: "+hk.kind]++
	if len(r.fails) > n {
		return
	}
	if hk.msgID != "" && p.heads[session] != (snap.ID{}) {
		h := p.head(session)
		if h != nil && h.msgID == hk.msgID {
			if id, err := p.repo.Resolve(r.ctx, session, "msg:"+hk.msgID); err != nil || id != h.id {
				r.failf("hook", "%s: msg:%s resolves to %s (%v), not the pre-tool checkpoint %s", what, hk.msgID, id.Short(), err, h)
			}
		}
	}
}
