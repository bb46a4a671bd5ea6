package snap

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// The checkpoint node: a session's head read, and a node built on a parent
// from a capture (by a checkpoint, a move's safety checkpoint, the
// workflow's ends and the completion of an interrupted move).

// head returns the session head and its checkpoint (zero and nil when the
// session has none yet).
func (r *Repo) head(session string) (objects.ID, *objects.Checkpoint, error) {
	id, err := r.refs.Get(refs.SessionHead(session))
	if errors.Is(err, refs.ErrNotFound) {
		return objects.ID{}, nil, nil
	}
	if err != nil {
		return objects.ID{}, nil, err
	}
	ck, err := r.objects.ReadCheckpoint(id)
	if err != nil {
		return id, nil, fmt.Errorf("session %s head %s: %w", session, id.Short(), err)
	}
	return id, ck, nil
}

// buildCheckpoint computes stats against the parent and puts the checkpoint
// object into w.
func (r *Repo) buildCheckpoint(w *objects.Writer, session string, parentID objects.ID, parent *objects.Checkpoint, c *captured, o CheckpointOptions) (*CheckpointResult, *objects.Checkpoint, error) {
	ck := &objects.Checkpoint{
		Tree: c.tree, State: c.state, StateSources: c.sources, Skipped: c.unreadable(), Session: session,
		MessageID: o.MessageID, Actor: o.Actor, Call: o.Call, Agent: o.Agent, Kind: o.Kind, Summary: strings.ToValidUTF8(o.Summary, "\uFFFD"), Labels: o.Labels,
		Time: r.clock().UnixNano(),
	}
	if len(ck.StateSources) == 0 {
		ck.StateSources = nil
	}
	res := &CheckpointResult{Session: session, Kind: o.Kind, Skipped: c.skipped(), State: map[string]int64{},
		Files: FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}}}
	var parentTree objects.ID
	if parent != nil {
		ck.Parents = []objects.ID{parentID}
		p := parentID
		res.Parent = &p
		parentTree = parent.Tree
	}
	var err error
	if res.Files, err = changes(w, parentTree, c.tree, nil); err != nil {
		return nil, nil, err
	}
	ck.Stats = objects.Stats{Files: c.snap.Files, Bytes: c.snap.Bytes,
		Added: len(res.Files.Added), Modified: len(res.Files.Modified), Deleted: len(res.Files.Deleted), Messages: -1}
	if ck.Stats.Files < 0 { // edit-set capture: derive the count from the parent's
		ck.Stats.Files = ck.Stats.Added - ck.Stats.Deleted
		if parent != nil {
			ck.Stats.Files += parent.Stats.Files
		}
	}
	if doc, ok := c.docs[ConversationDoc]; ok {
		ck.Stats.Messages = r.countMessages(doc.ID, c, parent)
	}
	for n, d := range c.docs {
		res.State[n] = d.Size
	}
	// new_bytes: compressed bytes of content this checkpoint added (files,
	// state documents, trees); its own metadata record is not counted.
	ck.Stats.NewBytes = w.NewBytes()
	id, err := w.Put(objects.TypeCheckpoint, ck.Encode())
	if err != nil {
		return nil, nil, err
	}
	res.ID, res.Stats, res.NewBytes = id, ck.Stats, ck.Stats.NewBytes
	return res, ck, nil
}

// capturedOf is what a capture of tree and of ck's state documents would
// have recorded: the makings of a node no capture took (a move's end).
func (r *Repo) capturedOf(ck *objects.Checkpoint, tree objects.ID, snap *worktree.Snapshot) (*captured, error) {
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, err
	}
	c := &captured{tree: tree, state: ck.State, sources: maps.Clone(ck.StateSources), docs: map[string]objects.TreeEntry{},
		data: map[string][]byte{}, files: map[string]string{}, snap: snap}
	if c.sources == nil {
		c.sources = map[string]string{}
	}
	for _, e := range st.Entries {
		c.docs[e.Name] = e
	}
	return c, nil
}
