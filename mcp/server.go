// Package mcp serves snap over the Model Context Protocol (the official Go
// SDK): checkpoints, history, rewinds and the agent-workflow verbs (tasks
// and staged edits, under the memo_* names agents know from memory-editing
// tools), each a tool with a JSON schema, a description written for an LLM
// and the engine's result types as structured output. A failure is a tool
// error whose message says what to do, never a crash of the server.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

// Options configure a server.
type Options struct {
	Session string // the default session (-s); a tool's session argument wins
	Version string // the server version clients see
	// ConversationDirs are the directories besides the project and
	// TranscriptDirs where the checkpoint tool's conversation_path may
	// point: the server runs with the user's rights, and a recorded path
	// is read by every later checkpoint and written back by a rewind, so a
	// model must not be able to name any file it likes.
	ConversationDirs []string
	// TranscriptDirs are the agents' own transcript directories, where a
	// conversation_path may point as well: the CLI passes those of the
	// agent adapters it links (agent.TranscriptDirs: ~/.claude/projects,
	// ~/.gemini, ~/.codex/sessions).
	TranscriptDirs []string
	// Maintain, when set, runs after every tool call that succeeded: the
	// CLI starts its background gc there when the store needs one or a
	// rewind left files in the trash (a server lives long; nothing else
	// would).
	Maintain func(context.Context)
}

// Server serves one project's store.
type Server struct {
	repo *snap.Repo
	flow *workflow.Flow
	o    Options
}

// New returns the MCP server for repo.
func New(repo *snap.Repo, o Options) *sdk.Server {
	s := &Server{repo: repo, flow: workflow.New(repo), o: o}
	srv := sdk.NewServer(&sdk.Implementation{Name: "snap", Version: o.Version}, &sdk.ServerOptions{
		Instructions: "snap checkpoints this project's files and your conversation at every step. " +
			"Work in tasks (memo_begin_task, then memo_commit or memo_revert); stage edits with memo_replace and " +
			"apply them together with memo_commit; 'rewind' is a dry run unless confirm is true, and 'undo' reverses it.",
	})
	s.register(srv)
	return srv
}

// sessionArg is the session argument every tool takes.
type sessionArg struct {
	Session string `json:"session,omitempty" jsonschema:"the snap session (default: the server's)"`
}

func (s *Server) sess(a sessionArg) string {
	if a.Session != "" {
		return a.Session
	}
	return snap.SessionFromEnv(s.o.Session)
}

type checkpointIn struct {
	sessionArg
	Summary          string `json:"summary,omitempty" jsonschema:"one line saying what the step did"`
	MessageID        string `json:"message_id,omitempty" jsonschema:"your message or tool-call id; rewind to msg:ID finds this checkpoint"`
	Kind             string `json:"kind,omitempty" jsonschema:"why it was taken (default manual)"`
	ConversationPath string `json:"conversation_path,omitempty" jsonschema:"absolute path of your transcript, recorded as the conversation"`
}

type refIn struct {
	sessionArg
	Ref string `json:"ref" jsonschema:"a checkpoint: @ (the head), @~N, #N, msg:ID, a label or an id prefix"`
}

type logIn struct {
	sessionArg
	N int `json:"n,omitempty" jsonschema:"at most this many checkpoints, newest first (default 20)"`
}

type diffIn struct {
	sessionArg
	From     string   `json:"from,omitempty" jsonschema:"the checkpoint to compare from (default @)"`
	To       string   `json:"to,omitempty" jsonschema:"the checkpoint to compare to (default: the working tree)"`
	Paths    []string `json:"paths,omitempty" jsonschema:"only these files or directories (relative to the project root)"`
	MaxBytes int      `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of patches (default 65536); files past it are listed with their line counts only"`
}

// diffOut is a diff whose patches were cut to a budget.
type diffOut struct {
	*snap.DiffResult
	Truncated      bool   `json:"truncated"`
	OmittedPatches int    `json:"omitted_patches,omitempty"`
	Hint           string `json:"hint,omitempty"`
}

// defaultDiffBytes bounds a diff's patches: a tool result is read by a
// model whose context is finite.
const defaultDiffBytes = 64 << 10

// budget keeps the patches of res within max bytes (files in order) and
// the conversation's message-by-message diff when there is room.
func budget(res *snap.DiffResult, max int) *diffOut {
	out := &diffOut{DiffResult: res}
	used := 0
	for i := range res.Files {
		f := &res.Files[i]
		if f.Patch == "" {
			continue
		}
		if used+len(f.Patch) > max {
			f.Patch = ""
			out.OmittedPatches++
			continue
		}
		used += len(f.Patch)
	}
	for i := range res.State {
		if c := res.State[i].Conversation; c != nil {
			if b, _ := json.Marshal(c); used+len(b) > max {
				res.State[i].Conversation = nil
				out.OmittedPatches++
			} else {
				used += len(b)
			}
		}
	}
	if out.OmittedPatches > 0 {
		out.Truncated = true
		out.Hint = fmt.Sprintf("%d patches left out past max_bytes=%d: ask again with paths (a few files) or a larger max_bytes", out.OmittedPatches, max)
	}
	return out
}

type rewindIn struct {
	sessionArg
	Ref              string `json:"ref" jsonschema:"the checkpoint to go back (or forward) to"`
	FilesOnly        bool   `json:"files_only,omitempty" jsonschema:"leave the conversation as it is"`
	ConversationOnly bool   `json:"conversation_only,omitempty" jsonschema:"leave the files as they are"`
	Confirm          bool   `json:"confirm,omitempty" jsonschema:"false (default): only report what would change; true: do it"`
	All              bool   `json:"all,omitempty" jsonschema:"also put back what other sessions or the user changed since ref (default false: only this session's own changes go back; the others' are kept and listed in kept)"`
}

// undoIn is the argument of undo and redo.
type undoIn struct {
	sessionArg
	All bool `json:"all,omitempty" jsonschema:"also put back what other sessions or the user changed since (default false: they are kept and listed in rewind.kept)"`
}

type conversationIn struct {
	sessionArg
	Ref     string `json:"ref,omitempty" jsonschema:"the checkpoint (default @)"`
	Offset  int    `json:"offset,omitempty"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many messages (default 50)"`
	Compact bool   `json:"compact,omitempty" jsonschema:"replace each finished task's messages by its summary"`
}

type beginIn struct {
	sessionArg
	Goal         string `json:"goal" jsonschema:"what the task is to achieve"`
	ParentTaskID *int   `json:"parent_task_id,omitempty" jsonschema:"the open task it belongs to, 0 for the top level (default: the current task)"`
}

type replaceIn struct {
	sessionArg
	Path           string `json:"path" jsonschema:"the file, relative to the project root"`
	OldText        string `json:"old_text" jsonschema:"the exact text to replace"`
	NewText        string `json:"new_text" jsonschema:"its replacement"`
	MatchID        string `json:"match_id,omitempty" jsonschema:"when old_text occurs more than once: the letter of the candidate to replace"`
	SearchAfter    string `json:"search_after,omitempty" jsonschema:"only matches after the first occurrence of this text"`
	ShowAllMatches bool   `json:"show_all_matches,omitempty" jsonschema:"offer up to 26 candidates instead of 5"`
	PreviewOnly    bool   `json:"preview_only,omitempty" jsonschema:"show the change without staging it"`
}

type previewIn struct {
	sessionArg
	Format string `json:"format,omitempty" jsonschema:"compact (default), full or stats"`
}

type commitIn struct {
	sessionArg
	Summary     string `json:"summary" jsonschema:"what the change does, for the history"`
	AutoPopTask *bool  `json:"auto_pop_task,omitempty" jsonschema:"when a task is open, complete it with this summary (default true)"`
}

type revertIn struct {
	sessionArg
	Reason string `json:"reason" jsonschema:"why the attempt is abandoned"`
	All    bool   `json:"all,omitempty" jsonschema:"with a task open: also put back what other sessions or the user changed since it began (default false: kept and listed)"`
}

// tool registers a tool whose result is the engine's answer.
func tool[In any](s *Server, srv *sdk.Server, name, desc string, h func(context.Context, In) (any, error)) {
	sdk.AddTool(srv, &sdk.Tool{Name: name, Description: desc}, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		if req != nil && req.Session != nil {
			if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
				ctx = context.WithValue(ctx, clientKey{}, p.ClientInfo.Name)
			}
		}
		out, err := safe(func() (any, error) { return h(ctx, in) })
		if err != nil {
			return nil, nil, errors.New(withAdvice(err))
		}
		if ans, ok := out.(*workflow.EditAnswer); ok {
			out = forAgent(ans)
		}
		if s.o.Maintain != nil {
			s.o.Maintain(ctx)
		}
		return nil, out, nil
	})
}

// clientKey holds, in a tool call's context, the name the MCP client gave
// for itself when it connected.
type clientKey struct{}

// agentName is what a checkpoint taken through this server records as its
// agent: the client's name as it gave it ("claude-code", ...), reduced to
// a name's letters (lower case, digits, '.', '_', '-'; at most 40), else
// "mcp".
func agentName(ctx context.Context) string {
	name, _ := ctx.Value(clientKey{}).(string)
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		case c == '.' && b.Len() > 0:
			b.WriteRune(c)
		case c == ' ' && b.Len() > 0:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), ".-")
	if out == "" {
		return "mcp"
	}
	return out
}

// forAgent is an edit answer with its hint completed and its next actions
// in tool terms.
func forAgent(ans *workflow.EditAnswer) *workflow.EditAnswer {
	a := *ans
	a.Hint += snap.AdviceWords(ans.Advice, adviceText)
	switch {
	case a.Status == "needs_match":
		a.NextActions = []string{"memo_replace with the same old_text and new_text and match_id set to a candidate's letter"}
	case len(a.Pending) > 0:
		a.NextActions = []string{"memo_preview", "memo_replace (stage another change)", "memo_commit(summary)", "memo_revert(reason)"}
	default:
		a.NextActions = []string{"memo_replace(path, old_text, new_text)"}
	}
	return &a
}

// safe turns a panic into an error: the server never crashes.
func safe(f func() (any, error)) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return f()
}

func (s *Server) register(srv *sdk.Server) {
	r := s.repo
	tool(s, srv, "checkpoint", "Record the project's files (and your transcript, with conversation_path) as a checkpoint you can rewind to. Returns its id; unchanged: true when nothing differed from the last one.",
		func(ctx context.Context, in checkpointIn) (any, error) {
			o := snap.CheckpointOptions{Session: s.sess(in.sessionArg), Summary: in.Summary, MessageID: in.MessageID, Kind: in.Kind, Agent: agentName(ctx)}
			if in.ConversationPath != "" {
				if err := s.conversationPathAllowed(in.ConversationPath); err != nil {
					return nil, err
				}
				o.State = []snap.StateDoc{{Name: snap.ConversationDoc, Source: in.ConversationPath}}
			}
			return r.Checkpoint(ctx, o)
		})
	tool(s, srv, "log", "List the session's checkpoints, newest first: id, kind, summary, message id, what changed.",
		func(ctx context.Context, in logIn) (any, error) {
			n := in.N
			if n <= 0 {
				n = 20
			}
			entries, err := r.Log(ctx, snap.LogOptions{Session: s.sess(in.sessionArg), N: n})
			if entries == nil {
				entries = []snap.LogEntry{}
			}
			return map[string]any{"checkpoints": entries}, err
		})
	tool(s, srv, "show", "Show one checkpoint in detail: the files it changed, its state documents, a preview of its conversation.",
		func(ctx context.Context, in refIn) (any, error) {
			id, err := r.Resolve(ctx, s.sess(in.sessionArg), in.Ref)
			if err != nil {
				return nil, err
			}
			return r.Show(ctx, id)
		})
	tool(s, srv, "diff", "Compare two checkpoints, or a checkpoint (default @) with the working tree: unified diffs of the files, and the conversation's new messages. Patches are cut at max_bytes (truncated: true); narrow with paths.",
		func(ctx context.Context, in diffIn) (any, error) {
			sess := s.sess(in.sessionArg)
			from := in.From
			if from == "" {
				from = "@"
			}
			f, err := r.Resolve(ctx, sess, from)
			if err != nil {
				return nil, err
			}
			var to *snap.ID
			if in.To != "" {
				t, err := r.Resolve(ctx, sess, in.To)
				if err != nil {
					return nil, err
				}
				to = &t
			}
			res, err := r.Diff(ctx, f, to, in.Paths)
			if err != nil {
				return nil, err
			}
			max := in.MaxBytes
			if max <= 0 {
				max = defaultDiffBytes
			}
			return budget(res, max), nil
		})
	tool(s, srv, "status", "What changed in the working tree and the state documents since the last checkpoint.",
		func(ctx context.Context, in sessionArg) (any, error) { return r.Status(ctx, s.sess(in)) })
	tool(s, srv, "rewind", "Move the files and/or the conversation back (or forward) to a checkpoint. A dry run that reports what would change unless confirm is true; when done, a safety checkpoint of the present was taken first, so 'undo' returns. Only this session's own changes go back: files another session or the user changed since are kept and listed in kept (all: true puts them back too).",
		func(ctx context.Context, in rewindIn) (any, error) {
			return r.Rewind(ctx, snap.RewindOptions{Session: s.sess(in.sessionArg), Target: in.Ref, FilesOnly: in.FilesOnly,
				ConversationOnly: in.ConversationOnly, DryRun: !in.Confirm, All: in.All})
		})
	tool(s, srv, "undo", "Undo the session's last operation (a rewind, a checkpoint, a task or edit commit, a revert). Files another session or the user changed since are kept (all: true puts them back too).",
		func(ctx context.Context, in undoIn) (any, error) {
			return r.Undo(ctx, s.sess(in.sessionArg), snap.UndoOptions{All: in.All})
		})
	tool(s, srv, "redo", "Redo the operation the last undo reversed.",
		func(ctx context.Context, in undoIn) (any, error) {
			return r.Redo(ctx, s.sess(in.sessionArg), snap.UndoOptions{All: in.All})
		})
	tool(s, srv, "conversation", "Read the conversation recorded at a checkpoint as messages (paged); with compact, each finished task's messages are replaced by its summary.",
		func(ctx context.Context, in conversationIn) (any, error) {
			ref := in.Ref
			if ref == "" {
				ref = "@"
			}
			id, err := r.Resolve(ctx, s.sess(in.sessionArg), ref)
			if err != nil {
				return nil, err
			}
			if in.Compact {
				return s.flow.CompactConversation(ctx, id)
			}
			limit := in.Limit
			if limit <= 0 {
				limit = 50
			}
			return r.Conversation(ctx, id, in.Offset, limit)
		})
	tool(s, srv, "memo_begin_task", "Begin a task (pushed on the session's task stack; a task-begin checkpoint records the files as it starts). Finish it with memo_commit or abandon it with memo_revert.",
		func(ctx context.Context, in beginIn) (any, error) {
			return s.flow.TaskBegin(ctx, workflow.TaskOptions{Session: s.sess(in.sessionArg), Text: in.Goal, Parent: in.ParentTaskID})
		})
	tool(s, srv, "memo_replace", "Stage a replacement of old_text by new_text in a file, without touching the file; the staged changes are applied together by memo_commit. When old_text occurs more than once nothing is staged and the answer lists lettered candidates (status needs_match): call again with match_id.",
		func(ctx context.Context, in replaceIn) (any, error) {
			sess := s.sess(in.sessionArg)
			ans, err := s.flow.EditStage(ctx, workflow.EditRequest{Session: sess, Path: in.Path, Old: in.OldText, New: in.NewText,
				Match: strings.ToUpper(in.MatchID), After: in.SearchAfter, AllMatches: in.ShowAllMatches})
			if err != nil || !in.PreviewOnly || ans.Staged == nil {
				return ans, err
			}
			// Preview only: show it, then take it back.
			pv, err := s.flow.EditPreview(ctx, sess, "", 3)
			if err != nil {
				return nil, err
			}
			if _, err := s.flow.EditDrop(ctx, sess, ans.Staged.ChangeID); err != nil {
				return nil, err
			}
			return map[string]any{"status": "preview", "preview": pv}, nil
		})
	tool(s, srv, "memo_preview", "Show the staged changes: compact (lines around each change), full (each file's whole changed region) or stats.",
		func(ctx context.Context, in previewIn) (any, error) {
			return s.flow.EditPreview(ctx, s.sess(in.sessionArg), in.Format, 3)
		})
	tool(s, srv, "memo_commit", "Apply every staged change to every file at once (all or nothing) and record it with the summary; with a task open (and auto_pop_task, the default) the task is completed too.",
		func(ctx context.Context, in commitIn) (any, error) {
			return s.commit(ctx, s.sess(in.sessionArg), in.Summary, in.AutoPopTask)
		})
	tool(s, srv, "memo_commit_auto", "memo_commit with a summary made from the staged changes (files and sizes).",
		func(ctx context.Context, in sessionArg) (any, error) {
			sess := s.sess(in)
			st, err := s.flow.EditStatus(ctx, sess)
			if err != nil {
				return nil, err
			}
			if len(st.Pending) == 0 {
				return nil, fmt.Errorf("no staged changes to commit: stage some with memo_replace")
			}
			files := map[string]int{}
			var order []string
			for _, c := range st.Pending {
				if files[c.Path] == 0 {
					order = append(order, c.Path)
				}
				files[c.Path]++
			}
			parts := make([]string, len(order))
			for i, p := range order {
				parts[i] = fmt.Sprintf("%s (%d)", p, files[p])
			}
			return s.commit(ctx, sess, fmt.Sprintf("edit %s", strings.Join(parts, ", ")), nil)
		})
	tool(s, srv, "memo_revert", "Abandon the current attempt with a reason: with a task open, the files go back to where the task began (undo brings the attempt back) and the task is recorded as reverted; staged changes are dropped.",
		func(ctx context.Context, in revertIn) (any, error) {
			sess := s.sess(in.sessionArg)
			if tree, err := s.flow.Tasks(ctx, sess, nil); err == nil && tree.Current != nil {
				res, err := s.flow.TaskRevert(ctx, workflow.TaskOptions{Session: sess, Text: in.Reason, All: in.All})
				return withStatus("reverted", res), err
			}
			res, err := s.flow.EditRevert(ctx, sess, in.Reason)
			return withStatus("reverted", res), err
		})
	tool(s, srv, "memo_task_tree", "Show the task stack and the tree of finished tasks with their summaries and reasons; text is a compact rendering for your next prompt.",
		func(ctx context.Context, in sessionArg) (any, error) {
			tree, err := s.flow.Tasks(ctx, s.sess(in), nil)
			if err != nil {
				return nil, err
			}
			return map[string]any{"tree": tree, "text": tree.Prompt()}, nil
		})
}

// conversationPathAllowed refuses a conversation_path that is not an
// agent's transcript: it must be an absolute path to a regular .jsonl or
// .json file (not a symlink) inside the project, an agent's transcript
// directory or one of Options.ConversationDirs.
func (s *Server) conversationPathAllowed(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("conversation_path %q: give the transcript's absolute path", p)
	}
	p = filepath.Clean(p)
	if ext := filepath.Ext(p); ext != ".jsonl" && ext != ".json" {
		return fmt.Errorf("conversation_path %s: a transcript is a .jsonl or .json file", p)
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("conversation_path %s: not a regular file (a symlink, a directory, or missing)", p)
	}
	dirs := append(append([]string{s.repo.Root}, s.o.ConversationDirs...), s.o.TranscriptDirs...)
	real := p
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		real = filepath.Join(r, filepath.Base(p))
	}
	for _, d := range dirs {
		for _, cand := range []string{p, real} {
			if rel, err := filepath.Rel(d, cand); err == nil && filepath.IsLocal(rel) && !strings.HasPrefix(filepath.ToSlash(rel), snap.StoreDirName+"/") && !strings.HasPrefix(filepath.ToSlash(rel), ".git/") {
				return nil
			}
		}
	}
	return fmt.Errorf("conversation_path %s is outside the project and the agents' transcript directories (%s); "+
		"the server's user can allow more with 'snap mcp --conversation-dir DIR'", p, homeList(s.o.TranscriptDirs))
}

// commit applies the staged changes: a task commit when a task is open
// (and autoPop is not false), else an edit commit.
func (s *Server) commit(ctx context.Context, sess, summary string, autoPop *bool) (any, error) {
	c, err := s.flow.Commit(ctx, sess, summary, autoPop == nil || *autoPop)
	if c.Task != nil {
		return withStatus("committed", c.Task), err
	}
	return withStatus("committed", c.Edits), err
}

// withStatus wraps a result with the status an agent's loop keys on.
func withStatus(status string, res any) map[string]any {
	return map[string]any{"status": status, "result": res}
}
