package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// CheckpointOptions describe one checkpoint.
type CheckpointOptions struct {
	Session   string
	MessageID string
	// Actor is who made the changes since the head: ActorAgent (the
	// session's agent, in a tool call or its turn), ActorUser (the person,
	// or anything outside the agent's tool calls), or "" when the caller
	// cannot say (unknown). It decides what the session's actor-scoped
	// moves treat as its own (Kept).
	Actor string
	// Call is the tool call (or message) whose changes an ActorAgent
	// checkpoint records, for blame.
	Call string
	// Agent names the program taking the checkpoint for the session's
	// agent ("claude-code", "gemini", "codex", an MCP client), as a name
	// (what a session name may be); "" when not one.
	Agent       string
	Summary     string
	Kind        string // why it was taken; "manual" when empty
	Labels      []string
	State       []StateDoc
	Paths       []string // edit-set hint: only these paths are examined; the rest is inherited from the parent
	MaxFileSize int64    // 0: the store's setting
	// Tree, when not zero, is recorded as the checkpoint's files instead of
	// a capture of the working tree: a tree already stored (an Importer's,
	// committed). The working tree is not read. Paths must be empty.
	Tree ID
	// AllowEmpty records a checkpoint even when it would be identical to
	// the head (same tree, state documents and sources; no label). Without
	// it such a checkpoint records nothing and returns the head, Unchanged.
	AllowEmpty bool
}

// FileChanges lists paths that differ from the parent checkpoint.
type FileChanges struct {
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
}

// CheckpointResult is what Checkpoint reports.
type CheckpointResult struct {
	ID       objects.ID         `json:"id"`
	Session  string             `json:"session"`
	Parent   *objects.ID        `json:"parent"`
	Kind     string             `json:"kind"`
	Files    FileChanges        `json:"files"`
	State    map[string]int64   `json:"state"` // document name → size
	Skipped  []worktree.Skipped `json:"skipped"`
	NewBytes int64              `json:"new_bytes"`
	Stats    objects.Stats      `json:"stats"`
	// Unchanged: nothing differed from the head, so no checkpoint was
	// recorded; ID is the head's.
	Unchanged bool `json:"unchanged"`
	// Monitored: the capture read only what the watch daemon said may
	// have changed (snap watch), the rest taken from an earlier one.
	Monitored bool `json:"monitored,omitempty"`
}

// Checkpoint records the working tree and state documents as a new
// checkpoint of the session and moves the session head to it.
//
// Durability: when Checkpoint returns nil, every object the checkpoint
// reaches and the checkpoint itself are fsync'd in one pack, then the
// session head was moved by compare-and-swap (fsync'd), then the operation
// was appended to the op log (fsync'd). If another process moved the head
// meanwhile, the checkpoint is rebuilt on the new head and retried, so
// concurrent checkpoints of one session are all kept.
func (r *Repo) Checkpoint(ctx context.Context, o CheckpointOptions) (*CheckpointResult, error) {
	if !utf8.ValidString(o.MessageID) {
		return nil, fmt.Errorf("%w: message id %q is not valid UTF-8", ErrUsage, o.MessageID)
	}
	if !utf8.ValidString(o.Call) {
		return nil, fmt.Errorf("%w: tool call id %q is not valid UTF-8", ErrUsage, o.Call)
	}
	switch o.Actor {
	case "", ActorAgent, ActorUser:
	default:
		return nil, fmt.Errorf("%w: actor %q: want %q or %q (or none: unknown)", ErrUsage, o.Actor, ActorAgent, ActorUser)
	}
	o.Summary = strings.ToValidUTF8(o.Summary, "\uFFFD")
	if o.Kind == "" {
		o.Kind = "manual"
	}
	if err := checkName("kind", o.Kind); err != nil {
		return nil, err
	}
	if o.Agent != "" {
		if err := checkName("agent", o.Agent); err != nil {
			return nil, err
		}
	}
	switch o.Kind {
	case kindPreRewind:
		return nil, fmt.Errorf("%w: kind %q is snap's own (the safety checkpoint of a rewind)", ErrUsage, o.Kind)
	case KindTaskBegin, KindTaskCommit, KindTaskRevert, KindEditCommit, KindRevert:
		return nil, fmt.Errorf("%w: kind %q is snap's own (the task and edit operations record it)", ErrUsage, o.Kind)
	}
	if err := checkTaskDocs(o.State); err != nil {
		return nil, err
	}
	return r.checkpoint(ctx, o, nil)
}

// checkpoint records a checkpoint; step, for a task operation, derives the
// task document from the head it is built on and names the op recorded.
func (r *Repo) checkpoint(ctx context.Context, o CheckpointOptions, step *Step) (*CheckpointResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	for _, l := range o.Labels {
		if err := validLabel(l); err != nil {
			return nil, err
		}
	}
	// A source a rewind could never write back (inside the store or a
	// .git directory, a device) is refused now, not at every later rewind.
	for _, d := range o.State {
		if !utf8.ValidString(d.Source) {
			return nil, fmt.Errorf("%w: state document %s: source path %q is not valid UTF-8", ErrUsage, d.Name, d.Source)
		}
		if d.Source == "" {
			continue
		}
		if err := r.safeStatePath(d.Source); err != nil {
			return nil, fmt.Errorf("%w: state document %s: %v", ErrUsage, d.Name, err)
		}
	}
	// A rewind moving files in this project would be captured half done:
	// the tx waits for it (checkpoints do not exclude one another).
	t, err := r.begin(ctx, capturing)
	if err != nil {
		return nil, err
	}
	defer t.end()
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	w := t.objects()
	// An edit-set checkpoint reads its few paths directly: loading and
	// rewriting the whole stat cache would cost more than the capture.
	if !o.Tree.IsZero() && len(o.Paths) > 0 {
		return nil, fmt.Errorf("%w: a checkpoint of a given tree takes no paths", ErrUsage)
	}
	var cache *index.Cache
	if len(o.Paths) == 0 && o.Tree.IsZero() {
		cache = r.loadCache()
	}
	// The working tree is captured once; when another writer of the
	// session moves the head first, only the checkpoint node is rebuilt on
	// the new head (an edit-set capture, relative to its parent, is redone).
	var c *captured
	for attempt := 0; ; attempt++ {
		parentID, parent, err := r.head(session)
		if err != nil {
			return nil, err
		}
		// (On a retry the state documents snap keeps, the task stack, are
		// inherited again from the new head.)
		if c == nil || len(o.Paths) > 0 || step != nil || attempt > 0 {
			spec := captureSpec{parent: parent, docs: o.State, paths: o.Paths, maxSize: o.MaxFileSize, task: step, tree: o.Tree, foreign: r.isForeign(parentID)}
			if c, err = r.capture(ctx, w, cache, spec); err != nil {
				return nil, err
			}
		}
		if parent != nil && !o.AllowEmpty && len(o.Labels) == 0 && c.same(parent) && r.history().headRecorded(session, parentID) {
			if cache != nil && cache.Dirty() {
				cache.SaveFS(r.fs, r.cachePath()) // what the scan learned spares the next one
			}
			res, err := r.unchanged(ctx, t, session, parentID, parent, c, o)
			if res != nil {
				res.Monitored = r.noteMonitor(c, parentID)
			}
			return res, err
		}
		res, ck, err := r.buildCheckpoint(w, session, parentID, parent, c, o)
		if err != nil {
			return nil, err
		}
		op := &refs.Op{Kind: string(OpCheckpoint), Session: session, Checkpoint: res.ID,
			Refs: []refs.RefChange{{Name: refs.SessionHead(session), Old: parentID, New: res.ID}}}
		if step != nil {
			op.Kind, op.Detail = taskOp(step.Op, step.task)
		}
		for _, l := range ck.Labels {
			old, _ := r.refs.Get(refs.Label(l))
			op.Refs = append(op.Refs, refs.RefChange{Name: refs.Label(l), Old: old, New: res.ID})
		}
		// The pack, then the head, the labels and the record, all or none.
		err = t.commit(ctx, op)
		if errors.Is(err, refs.ErrConflict) && attempt < 100 {
			time.Sleep(time.Duration(rand.N(1000*(attempt+1))) * time.Microsecond)
			continue // the head (or a label) moved: rebuild on the new head
		}
		if err != nil {
			return nil, err
		}
		if cache != nil {
			cache.SaveFS(r.fs, r.cachePath()) // an unsaved cache costs re-hashing only
		}
		res.Monitored = r.noteMonitor(c, res.ID)
		return res, nil
	}
}

// unchanged answers a checkpoint identical to the head without recording
// a new node: the head's id, Unchanged set. A message id the head does not
// carry is recorded in the op log, so msg:ID still finds the head.
func (r *Repo) unchanged(ctx context.Context, t *tx, session string, headID objects.ID, head *objects.Checkpoint, c *captured, o CheckpointOptions) (*CheckpointResult, error) {
	res := &CheckpointResult{ID: headID, Session: session, Kind: head.Kind, Unchanged: true, Skipped: c.skipped(),
		State: map[string]int64{}, Files: FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}},
		Stats: head.Stats}
	if len(head.Parents) > 0 {
		p := head.Parents[0]
		res.Parent = &p
	}
	for n, d := range c.docs {
		res.State[n] = d.Size
	}
	res.Stats.NewBytes = 0
	if o.MessageID != "" && o.MessageID != head.MessageID {
		detail, _ := json.Marshal(messageDetail{MessageID: o.MessageID})
		if err := t.commit(ctx, &refs.Op{Kind: string(OpMessage), Session: session, Checkpoint: headID, Detail: detail}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// messageDetail is the detail of an OpMessage record: msg:ID resolves to its
// checkpoint.
type messageDetail struct {
	MessageID string `json:"message_id"`
}

// kindPreRewind is the kind of a rewind's safety checkpoint.
const kindPreRewind = "pre-rewind"
