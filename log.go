package snap

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// LogEntry is one checkpoint as log lists it.
type LogEntry struct {
	Seq       int         `json:"seq"` // 1 = oldest in the session
	ID        objects.ID  `json:"id"`
	Session   string      `json:"session"`
	Parent    *objects.ID `json:"parent"`
	Time      time.Time   `json:"time"`
	Kind      string      `json:"kind"`
	MessageID string      `json:"message_id,omitempty"`
	// Actor is who made the checkpoint's change (agent, user; "" unknown)
	// and Call the agent's tool call it records, as the capture said.
	Actor     string        `json:"actor,omitempty"`
	Call      string        `json:"call,omitempty"`
	Agent     string        `json:"agent,omitempty"` // the program that took it for the agent (Checkpoint.Agent)
	Summary   string        `json:"summary,omitempty"`
	Labels    []string      `json:"labels,omitempty"`
	Stats     objects.Stats `json:"stats"`
	Head      bool          `json:"head"`      // the session head
	Abandoned bool          `json:"abandoned"` // not an ancestor of the head: a future a rewind left behind
}

// LogOptions select what Log lists.
type LogOptions struct {
	Session string
	N       int    // at most N entries (after Kind); 0: all
	All     bool   // every session, one after the other
	Kind    string // only checkpoints of this kind ("pre-call", "task-commit", ...)
}

// Log lists every checkpoint of the session, newest first, including those
// on branches a rewind abandoned, which are marked.
func (r *Repo) Log(ctx context.Context, o LogOptions) ([]LogEntry, error) {
	session, n, all := o.Session, o.N, o.All
	h := r.history()
	sessions := []string{}
	if all {
		infos, err := r.sessions(h)
		if err != nil {
			return nil, err
		}
		for _, s := range infos {
			sessions = append(sessions, s.Name)
		}
	} else {
		s, err := sessionName(session)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, s)
	}
	labels, err := r.labelsByID()
	if err != nil {
		return nil, err
	}
	var out []LogEntry
	for _, s := range sessions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		list, err := r.sessionCheckpoints(h, s)
		if err != nil {
			return nil, err
		}
		head, _, err := r.head(s)
		if err != nil {
			return nil, err
		}
		// Newest first, reading only the checkpoints listed.
		var entries []LogEntry
		read := map[objects.ID]*objects.Checkpoint{}
		for i := list.Len() - 1; i >= 0 && (n <= 0 || all || len(entries) < n); i-- {
			e := list.At(i)
			ck, err := r.load(e)
			if err != nil {
				return nil, err
			}
			if ck == nil {
				continue // expired by retention
			}
			read[e.ID] = ck
			if o.Kind != "" && ck.Kind != o.Kind {
				continue // not asked for
			}
			le := LogEntry{Seq: i + 1, ID: e.ID, Session: s, Time: ck.When(), Kind: ck.Kind, MessageID: ck.MessageID, Actor: ck.Actor, Call: ck.Call, Agent: ck.Agent,
				Summary: ck.Summary, Labels: labels[e.ID], Stats: ck.Stats, Head: e.ID == head}
			if len(ck.Parents) > 0 {
				p := ck.Parents[0]
				le.Parent = &p
			}
			entries = append(entries, le)
		}
		if len(entries) > 0 {
			onBranch := r.ancestorsSince(head, entries[len(entries)-1].Time.UnixNano(), read)
			for i := range entries {
				entries[i].Abandoned = !onBranch[entries[i].ID]
			}
		}
		out = append(out, entries...)
	}
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// ancestorsSince returns the checkpoints reachable from id by parents, not
// going further back than those made before since (Unix ns): enough to
// tell which checkpoints from since on lie on the head's branch. read
// holds checkpoints the caller has read already (nil: none).
func (r *Repo) ancestorsSince(id objects.ID, since int64, read map[objects.ID]*objects.Checkpoint) map[objects.ID]bool {
	set := map[objects.ID]bool{}
	queue := []objects.ID{id}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id.IsZero() || set[id] {
			continue
		}
		set[id] = true
		ck, err := read[id], error(nil)
		if ck == nil {
			ck, err = r.objects.ReadCheckpoint(id)
		}
		if err == nil && ck.Time >= since {
			queue = append(queue, ck.Parents...)
		}
	}
	return set
}

func (r *Repo) labelsByID() (map[objects.ID][]string, error) {
	list, err := r.refs.List(refs.LabelsPrefix)
	if err != nil && len(list) == 0 && !errors.Is(err, refs.ErrCorrupt) {
		return nil, err
	}
	m := map[objects.ID][]string{}
	for _, l := range list {
		if name, ok := refs.LabelOf(l.Name); ok {
			m[l.ID] = append(m[l.ID], name)
		}
	}
	return m, nil
}

// StateInfo describes one state document of a checkpoint.
type StateInfo struct {
	Name   string     `json:"name"`
	Size   int64      `json:"size"`
	ID     objects.ID `json:"id"`
	Source string     `json:"source,omitempty"`
}

// ShowResult is one checkpoint in detail.
type ShowResult struct {
	LogEntry
	Tree objects.ID `json:"tree"`
	// ParentExpired: retention removed the parent, so Files is empty;
	// Stats still counts the changes against it.
	ParentExpired bool        `json:"parent_expired"`
	Files         FileChanges `json:"files"`
	State         []StateInfo `json:"state"`
	// Conversation: its first user message and last assistant message
	// (a rollback's detail view); null without a conversation document.
	Conversation *ConversationPreview `json:"conversation_preview"`
	// Context: the fields of a "context" document in the recommended shape
	// (README, "API-call context snapshots"); null otherwise.
	Context *ContextSummary `json:"context"`
}

// ShowOptions tune Show.
type ShowOptions struct {
	// NoPreview leaves out the conversation's preview and the context's
	// summary (Conversation, Context nil), which read those documents: a
	// caller that pages the conversation itself (snap ui) skips two reads
	// of a transcript that may be large.
	NoPreview bool
}

// Show describes checkpoint id: metadata, files changed against its
// parent, state documents with sizes.
func (r *Repo) Show(ctx context.Context, id objects.ID, opts ...ShowOptions) (*ShowResult, error) {
	var o ShowOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return nil, err
	}
	labels, err := r.labelsByID()
	if err != nil {
		return nil, err
	}
	res := &ShowResult{Tree: ck.Tree, State: []StateInfo{}}
	res.LogEntry = LogEntry{ID: id, Session: ck.Session, Time: ck.When(), Kind: ck.Kind, MessageID: ck.MessageID, Actor: ck.Actor, Call: ck.Call,
		Summary: ck.Summary, Labels: labels[id], Stats: ck.Stats}
	if list, err := r.sessionCheckpoints(r.history(), ck.Session); err == nil {
		res.Seq = list.Index(id) + 1
	}
	if head, _, err := r.head(ck.Session); err == nil {
		res.Head = head == id
		res.Abandoned = !r.ancestorsSince(head, ck.Time, map[objects.ID]*objects.Checkpoint{id: ck})[id]
	}
	var parentTree objects.ID
	if len(ck.Parents) > 0 {
		p := ck.Parents[0]
		res.Parent = &p
		pck, err := r.loadCheckpoint(p)
		switch {
		case errors.Is(err, ErrExpired):
			// The file list needs the parent's tree; the counts are
			// stored in the checkpoint itself.
			res.ParentExpired = true
		case err != nil:
			return nil, err
		default:
			parentTree = pck.Tree
		}
	}
	res.Files = FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	if !res.ParentExpired {
		if res.Files, err = changes(r.objects, parentTree, ck.Tree, nil); err != nil {
			return nil, err
		}
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, err
	}
	for _, e := range st.Entries {
		res.State = append(res.State, StateInfo{Name: e.Name, Size: e.Size, ID: e.ID, Source: ck.StateSources[e.Name]})
		if o.NoPreview {
			continue
		}
		switch e.Name {
		case ConversationDoc:
			res.Conversation = r.previewConversation(e)
		case ContextDoc:
			res.Context = r.summarizeContext(e)
		}
	}
	return res, nil
}

// changes lists the paths that differ from tree a to tree b (limited to
// paths, when given); an empty directory's path ends in "/".
func changes(tr objects.TreeReader, a, b objects.ID, paths []string) (FileChanges, error) {
	fc := FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	err := objects.DiffTrees(tr, a, b, func(c objects.Change) error {
		if !pathMatch(c.Path, paths) {
			return nil
		}
		p := c.Path
		if c.Old.Mode == objects.ModeDir || c.New.Mode == objects.ModeDir {
			p += "/"
		}
		switch {
		case c.Added():
			fc.Added = append(fc.Added, p)
		case c.Deleted():
			fc.Deleted = append(fc.Deleted, p)
		default:
			fc.Modified = append(fc.Modified, p)
		}
		return nil
	})
	return fc, err
}

// pathMatch reports whether p is one of paths or lies beneath one (all
// paths match when none are given).
func pathMatch(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, q := range paths {
		q = strings.Trim(q, "/")
		if q == "" || q == "." || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// Ops returns the last n operations of the op log (all when n <= 0), newest
// first.
func (r *Repo) Ops(ctx context.Context, n int) ([]refs.Op, error) { return r.history().recent(n) }
