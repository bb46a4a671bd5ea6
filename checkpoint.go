package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

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
	Name   string // "conversation", "context", ... ("tasks" is snap's own: TaskDoc)
	Source string // absolute path it is read from and written back to; "" when read from stdin
	// Data is the content; nil with a Source: read from Source when the
	// checkpoint is taken, streamed through the chunker (memory stays
	// bounded whatever its size).
	Data []byte
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
	// Tree, when not zero, is recorded as the checkpoint's files instead of
	// a capture of the working tree: a tree already stored (an Importer's,
	// committed). The working tree is not read. Paths must be empty.
	Tree ID
	// AllowEmpty records a checkpoint even when it would be identical to
	// the head (same tree, state documents and sources; no label). Without
	// it such a checkpoint records nothing and returns the head, Unchanged.
	AllowEmpty bool
}

// Skipped is a path (or "state:NAME" for a state document) that a capture
// did not record, and why.
type Skipped = worktree.Skipped

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
}

// captured is a working tree and state documents recorded into a writer.
type captured struct {
	tree    objects.ID
	state   objects.ID
	sources map[string]string            // every document's source path; one with no entry in docs is absent
	docs    map[string]objects.TreeEntry // the documents recorded
	data    map[string][]byte            // content of documents given in memory
	files   map[string]string            // documents streamed from their source now: name → path
	snap    *worktree.Snapshot
	// stateSkipped: documents whose source could not be read ("state:NAME").
	stateSkipped []worktree.Skipped
	// excluded: project paths that are state-document sources, not files.
	excluded []string
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
	o.Summary = strings.ToValidUTF8(o.Summary, "\uFFFD")
	if o.Kind == "" {
		o.Kind = "manual"
	}
	if err := checkName("kind", o.Kind); err != nil {
		return nil, err
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
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	// A rewind moving files in this project would be captured half done:
	// wait for it (checkpoints do not exclude one another).
	unlock, err := r.waitMoves(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w := r.objects.NewWriter()
	defer w.Abort()
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
			return r.unchanged(session, parentID, parent, c, o)
		}
		res, ck, err := r.buildCheckpoint(w, session, parentID, parent, c, o)
		if err != nil {
			return nil, err
		}
		if _, err := w.Commit(); err != nil {
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
		// The head, the labels and the record, all or none.
		err = r.commitOp(ctx, op)
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
		return res, nil
	}
}

// same reports whether c records exactly what checkpoint ck does: tree,
// state documents and their sources, unreadable paths.
func (c *captured) same(ck *objects.Checkpoint) bool {
	return c.tree == ck.Tree && c.state == ck.State && maps.Equal(c.sources, ck.StateSources) &&
		slices.Equal(c.unreadable(), ck.Skipped)
}

// unchanged answers a checkpoint identical to the head without recording
// a new node: the head's id, Unchanged set. A message id the head does not
// carry is recorded in the op log, so msg:ID still finds the head.
func (r *Repo) unchanged(session string, headID objects.ID, head *objects.Checkpoint, c *captured, o CheckpointOptions) (*CheckpointResult, error) {
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
		if err := r.appendOp(&refs.Op{Kind: string(OpMessage), Session: session, Checkpoint: headID, Detail: detail}); err != nil {
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

// captureSpec says what a capture records.
type captureSpec struct {
	parent *objects.Checkpoint // the session head: a delta base, and what unreadable paths keep
	docs   []StateDoc          // state documents given now
	// sources are more documents to read from their source paths (a
	// rewind target's), beside the parent's; they win over the parent's.
	sources map[string]string
	// exclude: more state-document sources (a rewind target's, whatever
	// its scope) that are not tree files.
	exclude map[string]string
	paths   []string   // edit-set: only these paths are examined
	tree    objects.ID // not zero: these files, nothing captured
	// foreign: the parent was taken in another store (Importer): the
	// paths it read its documents from are not this machine's, so none
	// is read again; its documents are inherited as stored.
	foreign bool
	maxSize int64 // 0: the store's setting
	// rules are stored trees whose ignore files apply too (a rewind's
	// target): what they ignore is neither recorded nor touched.
	rules []worktree.IgnoreTree
	// task: a task operation, applied to the parent's task document.
	task *Step
}

// capture records the tree and the state documents. A document not given
// now but recorded with a source path (by the parent, or in
// spec.sources) is read from there again, so it reflects the present; one
// whose source no longer exists is recorded as absent (its source kept, no
// entry), so status shows it and a rewind to the head brings it back; one
// whose source cannot be read is inherited as it was and reported. A
// document read from stdin (no source) is inherited. State documents whose
// source lies inside the project are not tree files.
func (r *Repo) capture(ctx context.Context, w *objects.Writer, cache *index.Cache, spec captureSpec) (*captured, error) {
	parent, docs, paths, maxSize := spec.parent, spec.docs, spec.paths, spec.maxSize
	if maxSize <= 0 {
		maxSize = r.MaxFileSize()
	}
	wopts := worktree.Options{Root: r.Root, StoreDir: r.StoreDir, MaxFileSize: maxSize, Cache: cache, Sys: r.sys, IgnoreTrees: spec.rules}
	if parent != nil {
		wopts.Parent, wopts.ParentSkipped = parent.Tree, parent.Skipped
	}
	// Every document's source path, by name: a rewind target's, then the
	// head's, which wins (the document as it is now, where the agent
	// writes; the target's copy at another path is not overwritten, see
	// restoreState).
	sources := maps.Clone(spec.sources)
	if sources == nil {
		sources = map[string]string{}
	}
	if parent != nil && !spec.foreign {
		maps.Copy(sources, parent.StateSources)
	}
	for _, d := range docs {
		if d.Source != "" {
			sources[d.Name] = d.Source
		} else {
			delete(sources, d.Name)
		}
	}
	wopts.Exclude = r.inProject(sources, spec.exclude, r.sessionSources())
	var snap *worktree.Snapshot
	var err error
	switch {
	case !spec.tree.IsZero():
		t, terr := w.ReadTree(spec.tree)
		if terr != nil {
			return nil, fmt.Errorf("checkpoint tree %s: %w", spec.tree.Short(), terr)
		}
		snap = &worktree.Snapshot{Tree: spec.tree, Files: -1} // Files: derived from the parent's
		for _, e := range t.Entries {
			snap.Bytes += e.Size
		}
	case len(paths) > 0 && parent != nil:
		snap, err = worktree.CapturePaths(ctx, w, parent.Tree, paths, wopts)
		if errors.Is(err, worktree.ErrOutsideRoot) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
	default:
		snap, err = worktree.Capture(ctx, w, wopts)
	}
	if err != nil {
		return nil, err
	}
	c := &captured{tree: snap.Tree, snap: snap, sources: map[string]string{}, docs: map[string]objects.TreeEntry{},
		data: map[string][]byte{}, files: map[string]string{}, excluded: wopts.Exclude}
	var pstate *objects.Tree
	if parent != nil {
		if pstate, err = r.objects.ReadTree(parent.State); err != nil {
			return nil, err
		}
	}
	// putDoc stores a document, reusing the parent's copy as a prefix when
	// it only grew.
	base := func(name string) objects.ID {
		if pstate != nil {
			if e, ok := pstate.Find(name); ok {
				return e.ID
			}
		}
		return objects.ID{}
	}
	putDoc := func(name string, data []byte) (objects.ID, error) { return w.PutBytesAppend(data, base(name)) }
	// putFile streams a document from its source: a file that grew costs
	// its new bytes, and memory stays bounded.
	putFile := func(name, src string) (objects.TreeEntry, error) {
		f, err := openSource(src)
		if err != nil {
			return objects.TreeEntry{}, err
		}
		defer f.Close()
		id, n, err := w.PutFileAppend(f, base(name))
		if err != nil {
			return objects.TreeEntry{}, &storeError{err}
		}
		c.files[name] = src
		return objects.TreeEntry{Name: name, Mode: objects.ModeFile, ID: id, Size: n}, nil
	}
	for _, d := range docs {
		if err := validStateName(d.Name); err != nil {
			return nil, err
		}
		if _, dup := c.docs[d.Name]; dup {
			return nil, fmt.Errorf("%w: state document %q given twice", ErrUsage, d.Name)
		}
		if d.Source != "" {
			c.sources[d.Name] = d.Source
		}
		if d.Data == nil && d.Source != "" {
			e, err := putFile(d.Name, d.Source)
			if err != nil {
				if se, ok := err.(*storeError); ok {
					return nil, se.err
				}
				return nil, fmt.Errorf("%w: state document %s: %v", ErrUsage, d.Name, err)
			}
			c.docs[d.Name] = e
			continue
		}
		id, err := putDoc(d.Name, d.Data)
		if err != nil {
			return nil, err
		}
		c.docs[d.Name] = objects.TreeEntry{Name: d.Name, Mode: objects.ModeFile, ID: id, Size: int64(len(d.Data))}
		c.data[d.Name] = d.Data
	}
	inherited := map[string]objects.TreeEntry{}
	if pstate != nil {
		for _, e := range pstate.Entries {
			inherited[e.Name] = e
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		if _, known := inherited[name]; !known {
			inherited[name] = objects.TreeEntry{} // read below: present or absent
		}
	}
	for name, e := range inherited {
		if _, given := c.docs[name]; given {
			continue
		}
		src := sources[name]
		if src == "" {
			c.docs[name] = e // from stdin: kept as it was
			continue
		}
		c.sources[name] = src
		doc, err := putFile(name, src)
		var se *storeError
		switch {
		case errors.As(err, &se):
			return nil, se.err
		case errors.Is(err, fs.ErrNotExist):
			continue // absent now: recorded as such
		case err != nil:
			c.stateSkipped = append(c.stateSkipped, worktree.Skipped{Path: "state:" + name, Kept: true,
				Reason: fmt.Sprintf("cannot read %s: %v; kept as it was", src, errors.Unwrap(err))})
			if e.Mode != 0 {
				c.docs[name] = e
			}
			continue
		}
		c.docs[name] = doc
	}
	if spec.task != nil {
		data, err := r.applyStep(spec.task, c, parent)
		if err != nil {
			return nil, err
		}
		id, err := putDoc(TaskDoc, data)
		if err != nil {
			return nil, err
		}
		c.docs[TaskDoc] = objects.TreeEntry{Name: TaskDoc, Mode: objects.ModeFile, ID: id, Size: int64(len(data))}
		c.data[TaskDoc] = data
		delete(c.sources, TaskDoc)
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

// skipped lists what the capture did not record: paths, then state
// documents ("state:NAME"); never nil.
func (c *captured) skipped() []worktree.Skipped {
	return append(append([]worktree.Skipped{}, c.snap.Skipped...), c.stateSkipped...)
}

// unreadable lists the paths the capture could not read (see
// objects.Checkpoint.Skipped).
func (c *captured) unreadable() []string {
	var out []string
	for _, s := range c.snap.Skipped {
		if s.Kept {
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
		MessageID: o.MessageID, Kind: o.Kind, Summary: strings.ToValidUTF8(o.Summary, "\uFFFD"), Labels: o.Labels,
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

// countMessages counts the conversation's messages, reusing the parent's
// count when the document did not change. A document read from its source
// is counted by streaming the file again, a stored one by streaming it from
// the store: memory stays bounded (-1 when it cannot be counted).
func (r *Repo) countMessages(doc objects.ID, c *captured, parent *objects.Checkpoint) int {
	if parent != nil && parent.Stats.Messages >= 0 {
		if pstate, err := r.objects.ReadTree(parent.State); err == nil {
			if e, ok := pstate.Find(ConversationDoc); ok && e.ID == doc {
				return parent.Stats.Messages
			}
		}
	}
	if data, ok := c.data[ConversationDoc]; ok {
		return conversation.Count(data)
	}
	var n int
	var err error
	if src, ok := c.files[ConversationDoc]; ok {
		var f *os.File
		if f, err = openSource(src); err == nil {
			n, err = conversation.CountReader(f)
			f.Close()
		}
	} else {
		n, err = conversation.CountReader(r.blobReader(doc))
	}
	if err != nil {
		return -1
	}
	return n
}

// blobReader streams stored content (verified as it is read).
func (r *Repo) blobReader(id objects.ID) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := r.objects.WriteBlob(id, pw)
		pw.CloseWithError(err)
	}()
	return pr
}

// storeError marks an error of the object store (not of a document's
// source) while a document is streamed in.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }

// maxDocSize bounds how much of a state document views load into memory.
const maxDocSize = 1 << 30

func sessionName(s string) (string, error) {
	if s == "" {
		s = DefaultSession
	}
	return s, checkName("session name", s)
}

func validStateName(n string) error { return checkName("state document name", n) }

// checkName checks a name (a session, label, kind or state document) is a
// legal component: ErrUsage saying what is wrong with it otherwise.
func checkName(what, s string) error {
	if reason := refs.ComponentProblem(s); reason != "" {
		return fmt.Errorf("%w: %s %q: %s", ErrUsage, what, s, reason)
	}
	return nil
}

// validLabel checks a label name: a legal name that cannot be mistaken for
// another REF form — not 6 or more hex digits (an id prefix) and not
// HEAD (the head's alias).
func validLabel(l string) error {
	if err := checkName("label", l); err != nil {
		return err
	}
	if len(l) >= 6 && isHex(l) {
		return fmt.Errorf("%w: label %q looks like a checkpoint id; add a letter outside a-f", ErrUsage, l)
	}
	if strings.EqualFold(l, "HEAD") {
		return fmt.Errorf("%w: label %q is reserved (an alias of @)", ErrUsage, l)
	}
	return nil
}

// kindPreRewind is the kind of a rewind's safety checkpoint.
const kindPreRewind = "pre-rewind"

// ReadStateDoc reads a state document from path (relative paths are taken
// from the current directory), recording its absolute path as the source
// that later checkpoints re-read and a rewind writes back to. Path "-"
// reads stdin and records no source; so does a path under /dev or /proc
// (/dev/stdin, /proc/self/fd/N: a stream, read once, never re-read or
// written). Anything else must be a regular file, or a symlink to one (the
// link is recorded, and a rewind writes through it to the file the agent
// appends to); a missing file, a directory or a FIFO is ErrUsage.
func ReadStateDoc(name, path string, stdin io.Reader) (StateDoc, error) {
	if err := validStateName(name); err != nil {
		return StateDoc{}, err
	}
	abs := path
	if path != "-" {
		var err error
		if abs, err = filepath.Abs(path); err != nil {
			return StateDoc{}, err
		}
	}
	stream := path == "-" || isStream(abs)
	if !stream {
		if _, err := followLinks(abs); err != nil {
			stream = true // a link (chain) to /dev/stdin and the like: a stream too
		}
	}
	if stream {
		if path != "-" {
			f, err := os.Open(abs)
			if err != nil {
				return StateDoc{}, fmt.Errorf("%w: state document %s: %v", ErrUsage, name, err)
			}
			defer f.Close()
			stdin = f
		}
		if stdin == nil {
			return StateDoc{}, fmt.Errorf("%w: state document %s: no stdin", ErrUsage, name)
		}
		data, err := io.ReadAll(stdin)
		return StateDoc{Name: name, Data: data}, err
	}
	f, err := openSource(abs)
	if err != nil {
		return StateDoc{}, fmt.Errorf("%w: state document %s: %v", ErrUsage, name, err)
	}
	f.Close()
	return StateDoc{Name: name, Source: abs}, nil // read, streamed, by the checkpoint
}

// isStream reports whether p names a process's stream rather than a file
// (/dev/stdin, /dev/fd/N, /proc/self/fd/N): read once, never recorded as a
// source. Other paths are files only when they are regular files (a
// device or FIFO is refused by openSource); a file under /dev/shm is a
// file.
func isStream(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/")
}

// errNotRegular: a state document's source is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openSource opens a state document's source path for reading: a regular
// file, or a symlink to one, opened without blocking (a FIFO put there is
// refused, not waited on; so is a link chain to a stream).
func openSource(p string) (*os.File, error) {
	if _, err := followLinks(p); isStream(p) || err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errNotRegular}
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &fs.PathError{Op: "read", Path: p, Err: errNotRegular}
		}
		return nil, err
	}
	return f, nil
}

// inProject returns the source paths that lie inside the project, relative
// to its root: they are state documents, not tree files. A path is compared
// as written and as the file system resolves its directory (a transcript
// recorded through a symlinked project path is the same file).
func (r *Repo) inProject(sources ...map[string]string) []string {
	seen := map[string]bool{}
	realRoot := realPath(r.Root)
	for _, m := range sources {
		for _, src := range m {
			real := filepath.Join(realPath(filepath.Dir(src)), filepath.Base(src))
			for _, pair := range [][2]string{{r.Root, src}, {realRoot, real}} {
				if rel, err := filepath.Rel(pair[0], pair[1]); err == nil && filepath.IsLocal(rel) {
					seen[filepath.ToSlash(rel)] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// sessionSources returns the state-document sources of every session's
// head: a transcript one session keeps in the project is not a tree file
// for another either, so no other session's rewind deletes it.
func (r *Repo) sessionSources() map[string]string {
	out := map[string]string{}
	heads, _ := r.refs.List(refs.SessionsPrefix)
	for _, h := range heads {
		if ck, err := r.objects.ReadCheckpoint(h.ID); err == nil {
			for name, src := range ck.StateSources {
				out[h.Name+":"+name] = src
			}
		}
	}
	return out
}
