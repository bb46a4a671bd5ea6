package snap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// ConversationDoc is the name of the state document holding the transcript.
const ConversationDoc = "conversation"

// StateDoc is a named state document to record with a checkpoint.
type StateDoc struct {
	Name   string // "conversation", "context", "tasks", ...
	Source string // absolute path it was read from; "" when read from stdin
	Data   []byte
}

// CheckpointOptions describe one checkpoint.
type CheckpointOptions struct {
	Session     string
	MessageID   string
	Summary     string
	Kind        string // why it was taken; "manual" when empty
	Labels      []string
	State       []StateDoc
	Paths       []string // edit-set hint: only these paths are examined; the rest is inherited from the parent
	MaxFileSize int64    // 0: the store's setting
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
}

// captured is a working tree and state documents recorded into a writer.
type captured struct {
	tree    objects.ID
	state   objects.ID
	sources map[string]string
	docs    map[string]objects.TreeEntry
	data    map[string][]byte // content of documents read now
	snap    *worktree.Snapshot
}

func headRef(session string) string { return "sessions/" + session + "/head" }

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
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	if o.Kind == "" {
		o.Kind = "manual"
	}
	if err := refs.ValidComponent(o.Kind); err != nil {
		return nil, fmt.Errorf("%w: kind: %v", ErrUsage, err)
	}
	for _, l := range o.Labels {
		if err := refs.ValidComponent(l); err != nil {
			return nil, fmt.Errorf("%w: label: %v", ErrUsage, err)
		}
	}
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	w := r.objects.NewWriter()
	defer w.Abort()
	// An edit-set checkpoint reads its few paths directly: loading and
	// rewriting the whole stat cache would cost more than the capture.
	var cache *index.Cache
	if len(o.Paths) == 0 {
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
		if c == nil || len(o.Paths) > 0 {
			if c, err = r.capture(ctx, w, cache, captureSpec{parent: parent, docs: o.State, paths: o.Paths, maxSize: o.MaxFileSize}); err != nil {
				return nil, err
			}
		}
		res, ck, err := r.buildCheckpoint(w, session, parentID, parent, c, o)
		if err != nil {
			return nil, err
		}
		if _, err := w.Commit(); err != nil {
			return nil, err
		}
		err = r.refs.Update(headRef(session), parentID, res.ID)
		if errors.Is(err, refs.ErrConflict) && attempt < 100 {
			time.Sleep(time.Duration(rand.N(1000*(attempt+1))) * time.Microsecond)
			continue // the head moved: rebuild on the new head
		}
		if err != nil {
			return nil, err
		}
		op := &refs.Op{Kind: "checkpoint", Session: session, Checkpoint: res.ID,
			Refs: []refs.RefChange{{Name: headRef(session), Old: parentID, New: res.ID}}}
		for _, l := range ck.Labels {
			old, _ := r.refs.Get("labels/" + l)
			if err := r.refs.Update("labels/"+l, old, res.ID); err != nil {
				return nil, err
			}
			op.Refs = append(op.Refs, refs.RefChange{Name: "labels/" + l, Old: old, New: res.ID})
		}
		if err := r.refs.Append(op); err != nil {
			return nil, err
		}
		if cache != nil {
			cache.SaveFS(r.fs, r.cachePath()) // an unsaved cache costs re-hashing only
		}
		return res, nil
	}
}

// head returns the session head and its checkpoint (zero and nil when the
// session has none yet).
func (r *Repo) head(session string) (objects.ID, *objects.Checkpoint, error) {
	id, err := r.refs.Get(headRef(session))
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

// captureSpec says what a capture records.
type captureSpec struct {
	parent  *objects.Checkpoint // the session head: a delta base, and what unreadable paths keep
	docs    []StateDoc          // state documents given now
	paths   []string            // edit-set: only these paths are examined
	maxSize int64               // 0: the store's setting
	// rules are stored trees whose ignore files apply too (a rewind's
	// target): what they ignore is neither recorded nor touched.
	rules []objects.ID
}

// capture records the tree and the state documents. Documents not given
// are carried over from the parent: re-read from their recorded source path
// when it still exists (so they reflect the present), else inherited as they
// were.
func (r *Repo) capture(ctx context.Context, w *objects.Writer, cache *index.Cache, spec captureSpec) (*captured, error) {
	parent, docs, paths, maxSize := spec.parent, spec.docs, spec.paths, spec.maxSize
	if maxSize <= 0 {
		maxSize = r.MaxFileSize()
	}
	wopts := worktree.Options{Root: r.Root, StoreDir: r.StoreDir, MaxFileSize: maxSize, Cache: cache, Sys: r.sys, IgnoreTrees: spec.rules}
	if parent != nil {
		wopts.Parent = parent.Tree
	}
	var snap *worktree.Snapshot
	var err error
	if len(paths) > 0 && parent != nil {
		snap, err = worktree.CapturePaths(ctx, w, parent.Tree, paths, wopts)
		if errors.Is(err, worktree.ErrOutsideRoot) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
	} else {
		snap, err = worktree.Capture(ctx, w, wopts)
	}
	if err != nil {
		return nil, err
	}
	c := &captured{tree: snap.Tree, snap: snap, sources: map[string]string{}, docs: map[string]objects.TreeEntry{}, data: map[string][]byte{}}
	var pstate *objects.Tree
	if parent != nil {
		if pstate, err = r.objects.ReadTree(parent.State); err != nil {
			return nil, err
		}
	}
	// putDoc stores a document, reusing the parent's copy as a prefix when
	// it only grew.
	putDoc := func(name string, data []byte) (objects.ID, error) {
		var base objects.ID
		if pstate != nil {
			if e, ok := pstate.Find(name); ok {
				base = e.ID
			}
		}
		return w.PutBytesAppend(data, base)
	}
	for _, d := range docs {
		if err := validStateName(d.Name); err != nil {
			return nil, err
		}
		if _, dup := c.docs[d.Name]; dup {
			return nil, fmt.Errorf("%w: state document %q given twice", ErrUsage, d.Name)
		}
		id, err := putDoc(d.Name, d.Data)
		if err != nil {
			return nil, err
		}
		c.docs[d.Name] = objects.TreeEntry{Name: d.Name, Mode: objects.ModeFile, ID: id, Size: int64(len(d.Data))}
		c.data[d.Name] = d.Data
		if d.Source != "" {
			c.sources[d.Name] = d.Source
		}
	}
	if pstate != nil {
		for _, e := range pstate.Entries {
			if _, given := c.docs[e.Name]; given {
				continue
			}
			src := parent.StateSources[e.Name]
			if src != "" {
				if data, err := os.ReadFile(src); err == nil {
					id, err := putDoc(e.Name, data)
					if err != nil {
						return nil, err
					}
					e.ID, e.Size = id, int64(len(data))
					c.data[e.Name] = data
				}
				c.sources[e.Name] = src
			}
			c.docs[e.Name] = e
		}
	}
	names := make([]string, 0, len(c.docs))
	for n := range c.docs {
		names = append(names, n)
	}
	sort.Strings(names)
	var st objects.Tree
	for _, n := range names {
		st.Entries = append(st.Entries, c.docs[n])
	}
	var stateBase objects.ID // the parent's state tree: a delta base
	if parent != nil {
		stateBase = parent.State
	}
	if c.state, err = w.PutDelta(objects.TypeTree, st.Encode(), stateBase); err != nil {
		return nil, err
	}
	return c, nil
}

// unreadable lists the paths the capture could not read (see
// objects.Checkpoint.Skipped).
func (c *captured) unreadable() []string {
	var out []string
	for _, s := range c.snap.Skipped {
		if s.Unreadable {
			out = append(out, s.Path)
		}
	}
	return out
}

// buildCheckpoint computes stats against the parent and puts the checkpoint
// object into w.
func (r *Repo) buildCheckpoint(w *objects.Writer, session string, parentID objects.ID, parent *objects.Checkpoint, c *captured, o CheckpointOptions) (*CheckpointResult, *objects.Checkpoint, error) {
	ck := &objects.Checkpoint{
		Tree: c.tree, State: c.state, StateSources: c.sources, Skipped: c.unreadable(), Session: session,
		MessageID: o.MessageID, Kind: o.Kind, Summary: o.Summary, Labels: o.Labels,
		Time: time.Now().UnixNano(),
	}
	if len(ck.StateSources) == 0 {
		ck.StateSources = nil
	}
	res := &CheckpointResult{Session: session, Kind: o.Kind, Skipped: c.snap.Skipped, State: map[string]int64{},
		Files: FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}}}
	if res.Skipped == nil {
		res.Skipped = []worktree.Skipped{}
	}
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
		ck.Stats.Messages = r.countMessages(doc.ID, c.data[ConversationDoc], parent)
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

// countMessages counts the conversation's messages, reusing the parent's
// count when the document did not change.
func (r *Repo) countMessages(doc objects.ID, data []byte, parent *objects.Checkpoint) int {
	if parent != nil && parent.Stats.Messages >= 0 {
		if pstate, err := r.objects.ReadTree(parent.State); err == nil {
			if e, ok := pstate.Find(ConversationDoc); ok && e.ID == doc {
				return parent.Stats.Messages
			}
		}
	}
	if data == nil {
		var err error
		if data, err = r.objects.ReadBlob(doc, maxDocSize); err != nil {
			return -1
		}
	}
	return conversation.Count(data)
}

// maxDocSize bounds how much of a state document views load into memory.
const maxDocSize = 1 << 30

func sessionName(s string) (string, error) {
	if s == "" {
		s = DefaultSession
	}
	if err := refs.ValidComponent(s); err != nil {
		return "", fmt.Errorf("%w: session name: %v", ErrUsage, err)
	}
	return s, nil
}

func validStateName(n string) error {
	if err := refs.ValidComponent(n); err != nil {
		return fmt.Errorf("%w: state document name: %v", ErrUsage, err)
	}
	return nil
}

// ReadStateDoc reads a state document from path, recording its absolute
// path as the source; path "-" reads stdin and records no source.
func ReadStateDoc(name, path string, stdin io.Reader) (StateDoc, error) {
	if err := validStateName(name); err != nil {
		return StateDoc{}, err
	}
	if path == "-" {
		data, err := io.ReadAll(stdin)
		return StateDoc{Name: name, Data: data}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return StateDoc{}, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return StateDoc{}, fmt.Errorf("state document %s: %w", name, err)
	}
	return StateDoc{Name: name, Source: abs, Data: data}, nil
}
