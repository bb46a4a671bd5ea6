package snap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// LogEntry is one checkpoint as log lists it.
type LogEntry struct {
	Seq       int           `json:"seq"` // 1 = oldest in the session
	ID        objects.ID    `json:"id"`
	Session   string        `json:"session"`
	Parent    *objects.ID   `json:"parent"`
	Time      time.Time     `json:"time"`
	Kind      string        `json:"kind"`
	MessageID string        `json:"message_id,omitempty"`
	Summary   string        `json:"summary,omitempty"`
	Labels    []string      `json:"labels,omitempty"`
	Stats     objects.Stats `json:"stats"`
	Head      bool          `json:"head"`      // the session head
	Abandoned bool          `json:"abandoned"` // not an ancestor of the head: a future a rewind left behind
}

// Log lists every checkpoint of the session, newest first (at most n when
// n > 0), including those on branches a rewind abandoned, which are marked.
// With all, every session is listed, one after the other.
func (r *Repo) Log(session string, n int, all bool) ([]LogEntry, error) {
	sessions := []string{}
	if all {
		infos, err := r.Sessions()
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
		list, err := r.sessionCheckpoints(s)
		if err != nil {
			return nil, err
		}
		head, _, err := r.head(s)
		if err != nil {
			return nil, err
		}
		// Newest first, reading only the checkpoints listed.
		var entries []LogEntry
		for i := len(list) - 1; i >= 0 && (n <= 0 || all || len(entries) < n); i-- {
			ck, err := r.load(&list[i])
			if err != nil {
				return nil, err
			}
			if ck == nil {
				continue // expired by retention
			}
			le := LogEntry{Seq: i + 1, ID: list[i].ID, Session: s, Time: ck.When(), Kind: ck.Kind, MessageID: ck.MessageID,
				Summary: ck.Summary, Labels: labels[list[i].ID], Stats: ck.Stats, Head: list[i].ID == head}
			if len(ck.Parents) > 0 {
				p := ck.Parents[0]
				le.Parent = &p
			}
			entries = append(entries, le)
		}
		if len(entries) > 0 {
			onBranch := r.ancestorsSince(head, entries[len(entries)-1].Time.UnixNano())
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
// tell which checkpoints from since on lie on the head's branch.
func (r *Repo) ancestorsSince(id objects.ID, since int64) map[objects.ID]bool {
	set := map[objects.ID]bool{}
	queue := []objects.ID{id}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id.IsZero() || set[id] {
			continue
		}
		set[id] = true
		if ck, err := r.objects.ReadCheckpoint(id); err == nil && ck.Time >= since {
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
}

// Show describes one checkpoint: metadata, files changed against its
// parent, state documents with sizes.
func (r *Repo) Show(session, ref string) (*ShowResult, error) {
	id, ck, err := r.resolveCheckpoint(session, ref)
	if err != nil {
		return nil, err
	}
	labels, err := r.labelsByID()
	if err != nil {
		return nil, err
	}
	res := &ShowResult{Tree: ck.Tree, State: []StateInfo{}}
	res.LogEntry = LogEntry{ID: id, Session: ck.Session, Time: ck.When(), Kind: ck.Kind, MessageID: ck.MessageID,
		Summary: ck.Summary, Labels: labels[id], Stats: ck.Stats}
	if list, err := r.sessionCheckpoints(ck.Session); err == nil {
		for i, e := range list {
			if e.ID == id {
				res.Seq = i + 1
			}
		}
	}
	if head, _, err := r.head(ck.Session); err == nil {
		res.Head = head == id
		res.Abandoned = !r.ancestorsSince(head, ck.Time)[id]
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

// StatusResult compares the working tree and state documents with the
// session head.
type StatusResult struct {
	Session string             `json:"session"`
	Head    *objects.ID        `json:"head"`
	Files   FileChanges        `json:"files"`
	State   []StateChange      `json:"state_changed"` // state documents at their sources that differ from the head's
	Skipped []worktree.Skipped `json:"skipped"`
	Clean   bool               `json:"clean"`
	// Interrupted: a rewind, undo or redo a dead process left part way
	// (null when none): the working tree is between two states.
	Interrupted *InterruptedMove `json:"interrupted"`
}

// StateChange is a state document that differs between two states:
// added, modified or deleted (its source no longer exists).
type StateChange struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Source string `json:"source,omitempty"`
}

// Status compares the working tree (and state documents at their source
// paths) with the session head. It writes nothing to the store.
func (r *Repo) Status(ctx context.Context, session string) (*StatusResult, error) {
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	headID, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	w := r.objects.NewDryWriter()
	now, err := r.capture(ctx, w, r.loadCache(), captureSpec{parent: head})
	if err != nil {
		return nil, err
	}
	res := &StatusResult{Session: session, Skipped: now.skipped(), State: []StateChange{}}
	if res.Interrupted, err = r.Interrupted(); err != nil {
		return nil, err
	}
	var headTree objects.ID
	if head != nil {
		res.Head = &headID
		headTree = head.Tree
		pstate, err := r.objects.ReadTree(head.State)
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		for _, e := range pstate.Entries {
			names[e.Name] = true
		}
		for n := range now.docs {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			was, inHead := pstate.Find(n)
			cur, inNow := now.docs[n]
			sc := StateChange{Name: n, Source: now.sources[n]}
			switch {
			case inHead && !inNow:
				sc.Status = "deleted"
			case !inHead && inNow:
				sc.Status = "added"
			case was.ID != cur.ID:
				sc.Status = "modified"
			default:
				continue
			}
			res.State = append(res.State, sc)
		}
	}
	if res.Files, err = changes(w, headTree, now.tree, nil); err != nil {
		return nil, err
	}
	res.Clean = len(res.Files.Added)+len(res.Files.Modified)+len(res.Files.Deleted)+len(res.State) == 0
	return res, nil
}

// FileDiff is one file's difference.
type FileDiff struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // added, modified, deleted
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
	Binary  bool   `json:"binary,omitempty"`
	Added   int    `json:"lines_added"`
	Removed int    `json:"lines_removed"`
	Patch   string `json:"patch,omitempty"` // unified diff
}

// StateDiff is one state document's difference.
type StateDiff struct {
	Name         string                   `json:"name"`
	Status       string                   `json:"status"`
	Conversation *conversation.DiffResult `json:"conversation,omitempty"` // message by message, for the conversation
	Patch        string                   `json:"patch,omitempty"`        // unified diff, for other documents
}

// DiffResult compares two checkpoints, or a checkpoint and the working tree.
type DiffResult struct {
	From  objects.ID  `json:"from"`
	To    *objects.ID `json:"to"` // null: the working tree
	Files []FileDiff  `json:"files"`
	State []StateDiff `json:"state"`
}

// maxDiffSize is the largest file diffed line by line.
const maxDiffSize = 8 << 20

// Diff compares checkpoint from (default: the head) with checkpoint to
// (default: the working tree and the state documents at their sources),
// optionally limited to paths. State documents are compared message by
// message when they are conversations.
func (r *Repo) Diff(ctx context.Context, session, from, to string, paths []string) (*DiffResult, error) {
	fromID, fck, err := r.resolveCheckpoint(session, from)
	if err != nil {
		return nil, err
	}
	res := &DiffResult{From: fromID, Files: []FileDiff{}, State: []StateDiff{}}
	var tr objects.TreeReader = r.objects
	var toTree, toState objects.ID
	read := func(id objects.ID) ([]byte, error) { return r.objects.ReadBlob(id, maxDocSize) }
	if to == "" {
		w := r.objects.NewDryWriter()
		now, err := r.capture(ctx, w, r.loadCache(), captureSpec{parent: fck})
		if err != nil {
			return nil, err
		}
		tr, toTree, toState = w, now.tree, now.state
		// Content that is not in the store yet is read from disk (files)
		// or from what capture read (state documents).
		pending := map[objects.ID][]byte{}
		for name, d := range now.data {
			pending[now.docs[name].ID] = d
		}
		fromSource := map[objects.ID]string{}
		for name, src := range now.files {
			fromSource[now.docs[name].ID] = src
		}
		read = func(id objects.ID) ([]byte, error) {
			if d, ok := pending[id]; ok {
				return d, nil
			}
			if src, ok := fromSource[id]; ok && !r.objects.Has(id) {
				f, err := openSource(src)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				return io.ReadAll(io.LimitReader(f, maxDocSize))
			}
			return r.objects.ReadBlob(id, maxDocSize)
		}
		res.Files, err = r.fileDiffs(tr, fck.Tree, toTree, paths, read, true)
		if err != nil {
			return nil, err
		}
	} else {
		toID, tck, err := r.resolveCheckpoint(session, to)
		if err != nil {
			return nil, err
		}
		res.To, toTree, toState = &toID, tck.Tree, tck.State
		if res.Files, err = r.fileDiffs(tr, fck.Tree, toTree, paths, read, false); err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		if res.State, err = r.stateDiffs(tr, fck.State, toState, read); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (r *Repo) fileDiffs(tr objects.TreeReader, a, b objects.ID, paths []string, read func(objects.ID) ([]byte, error), fromDisk bool) ([]FileDiff, error) {
	out := []FileDiff{}
	err := objects.DiffTrees(tr, a, b, func(c objects.Change) error {
		if !pathMatch(c.Path, paths) {
			return nil
		}
		fd := FileDiff{Path: c.Path, Status: "modified"}
		switch {
		case c.Added():
			fd.Status = "added"
		case c.Deleted():
			fd.Status = "deleted"
		}
		if c.Old.Mode != 0 {
			fd.OldMode = c.Old.Mode.String()
		}
		if c.New.Mode != 0 {
			fd.NewMode = c.New.Mode.String()
		}
		if c.Old.Mode == objects.ModeDir || c.New.Mode == objects.ModeDir {
			out = append(out, fd) // an empty directory: no content to compare
			return nil
		}
		var oldData, newData []byte
		var err error
		if c.Old.Mode != 0 {
			if c.Old.Size > maxDiffSize {
				fd.Binary = true
			} else if oldData, err = read(c.Old.ID); err != nil {
				return err
			}
		}
		if c.New.Mode != 0 && !fd.Binary {
			if c.New.Size > maxDiffSize {
				fd.Binary = true
			} else if fromDisk && !r.objects.Has(c.New.ID) {
				if newData, err = r.readWorktree(c.Path, c.New.Mode); err != nil {
					return err
				}
			} else if newData, err = read(c.New.ID); err != nil {
				return err
			}
		}
		if fd.Binary || isBinary(oldData) || isBinary(newData) {
			fd.Binary = true
		} else {
			fd.Patch, fd.Added, fd.Removed = unified("a/"+c.Path, "b/"+c.Path, oldData, newData, c.Old.Mode == 0, c.New.Mode == 0)
		}
		out = append(out, fd)
		return nil
	})
	return out, err
}

func (r *Repo) readWorktree(p string, mode objects.Mode) ([]byte, error) {
	w := &bytes.Buffer{}
	if err := worktree.ReadFile(r.Root, p, mode == objects.ModeSymlink, w); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func (r *Repo) stateDiffs(tr objects.TreeReader, a, b objects.ID, read func(objects.ID) ([]byte, error)) ([]StateDiff, error) {
	out := []StateDiff{}
	err := objects.DiffTrees(tr, a, b, func(c objects.Change) error {
		name := c.Path
		sd := StateDiff{Name: name, Status: "modified"}
		switch {
		case c.Added():
			sd.Status = "added"
		case c.Deleted():
			sd.Status = "deleted"
		}
		var oldData, newData []byte
		var err error
		if c.Old.Mode != 0 {
			if oldData, err = read(c.Old.ID); err != nil {
				return err
			}
		}
		if c.New.Mode != 0 {
			if newData, err = read(c.New.ID); err != nil {
				return err
			}
		}
		if name == ConversationDoc {
			d := conversation.Diff(conversation.Parse(oldData), conversation.Parse(newData))
			sd.Conversation = &d
		} else if !isBinary(oldData) && !isBinary(newData) && len(oldData) < maxDiffSize && len(newData) < maxDiffSize {
			sd.Patch, _, _ = unified("a/"+name, "b/"+name, oldData, newData, c.Old.Mode == 0, c.New.Mode == 0)
		}
		out = append(out, sd)
		return nil
	})
	return out, err
}

func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

// unified returns a unified diff and the lines added and removed.
func unified(from, to string, a, b []byte, added, deleted bool) (string, int, int) {
	if added {
		from = "/dev/null"
	}
	if deleted {
		to = "/dev/null"
	}
	edits := udiff.Lines(string(a), string(b))
	patch, err := udiff.ToUnified(from, to, string(a), edits, udiff.DefaultContextLines)
	if err != nil {
		return "", 0, 0
	}
	plus, minus := 0, 0
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			plus++
		case strings.HasPrefix(l, "-"):
			minus++
		}
	}
	return patch, plus, minus
}

// Cat writes a file of a checkpoint to w.
func (r *Repo) Cat(session, ref, path string, w io.Writer) error {
	id, ck, err := r.resolveCheckpoint(session, ref)
	if err != nil {
		return err
	}
	e, err := r.lookupPath(ck.Tree, path)
	if err != nil {
		return err
	}
	if e.Mode == objects.ModeDir {
		return fmt.Errorf("%w: %s is a directory in %s", ErrUsage, path, id.Short())
	}
	_, err = r.objects.WriteBlob(e.ID, w)
	return err
}

func (r *Repo) lookupPath(tree objects.ID, p string) (objects.TreeEntry, error) {
	p = strings.Trim(p, "/")
	e := objects.TreeEntry{Mode: objects.ModeDir, ID: tree}
	for _, name := range strings.Split(p, "/") {
		if e.Mode != objects.ModeDir {
			return e, fmt.Errorf("%w: %s", ErrNoPath, p)
		}
		t, err := r.objects.ReadTree(e.ID)
		if err != nil {
			return e, err
		}
		var ok bool
		if e, ok = t.Find(name); !ok {
			return e, fmt.Errorf("%w: %s", ErrNoPath, p)
		}
	}
	return e, nil
}

// CatState writes a state document of a checkpoint to w.
func (r *Repo) CatState(session, ref, name string, w io.Writer) error {
	id, ck, err := r.resolveCheckpoint(session, ref)
	if err != nil {
		return err
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return err
	}
	e, ok := st.Find(name)
	if !ok {
		return fmt.Errorf("%w: state document %q (checkpoint %s has %s)", ErrNoPath, name, id.Short(), stateNames(st))
	}
	_, err = r.objects.WriteBlob(e.ID, w)
	return err
}

func stateNames(t *objects.Tree) string {
	if len(t.Entries) == 0 {
		return "none"
	}
	var names []string
	for _, e := range t.Entries {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}

// ConversationPage is a page of a checkpoint's conversation.
type ConversationPage struct {
	Checkpoint objects.ID             `json:"checkpoint"`
	Format     conversation.Format    `json:"format"`
	Total      int                    `json:"total"`
	Offset     int                    `json:"offset"`
	Messages   []conversation.Message `json:"messages"`
	Problems   []conversation.Problem `json:"problems"`
}

// Conversation returns messages [offset, offset+limit) of the conversation
// recorded at ref (limit <= 0: all).
//
// The document is streamed from the store and only the page is kept in
// memory (conversation.ParsePage), whatever the transcript's size.
func (r *Repo) Conversation(session, ref string, offset, limit int) (*ConversationPage, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: negative offset", ErrUsage)
	}
	id, ck, err := r.resolveCheckpoint(session, ref)
	if err != nil {
		return nil, err
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, err
	}
	e, ok := st.Find(ConversationDoc)
	if !ok {
		return nil, fmt.Errorf("%w: state document %q (checkpoint %s has %s)", ErrNoPath, ConversationDoc, id.Short(), stateNames(st))
	}
	rd := r.blobReader(e.ID)
	defer rd.Close()
	c, total, err := conversation.ParsePage(rd, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("conversation of %s: %w", id.Short(), err)
	}
	page := &ConversationPage{Checkpoint: id, Format: c.Format, Total: total, Offset: offset,
		Messages: c.Messages, Problems: c.Problems}
	if page.Messages == nil {
		page.Messages = []conversation.Message{}
	}
	if page.Problems == nil {
		page.Problems = []conversation.Problem{}
	}
	return page, nil
}

// SessionInfo describes a session.
type SessionInfo struct {
	Name        string     `json:"name"`
	Head        objects.ID `json:"head"`
	Checkpoints int        `json:"checkpoints"`
	Updated     time.Time  `json:"updated"`
	Archived    bool       `json:"archived"`
}

// Sessions lists sessions (active first, then archived), by name, with the
// number of checkpoints log lists for each (those retention expired are
// not counted).
func (r *Repo) Sessions() ([]SessionInfo, error) {
	out := []SessionInfo{}
	for _, kind := range []string{refs.SessionsPrefix, refs.ArchivePrefix} {
		list, err := r.refs.List(kind)
		if err != nil && len(list) == 0 && !errors.Is(err, refs.ErrCorrupt) {
			return nil, err
		}
		for _, ref := range list {
			name, archived, ok := refs.SessionOf(ref.Name)
			if !ok {
				continue
			}
			info := SessionInfo{Name: name, Head: ref.ID, Archived: archived}
			// Counted as log lists them: every checkpoint of the session
			// that retention has not expired.
			if list, err := r.sessionCheckpoints(name); err == nil {
				for _, e := range list {
					if !e.expired {
						info.Checkpoints++
					}
				}
			}
			if ck, err := r.objects.ReadCheckpoint(ref.ID); err == nil {
				info.Updated = ck.When()
			}
			out = append(out, info)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Archived != out[j].Archived {
			return !out[i].Archived
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Label names a checkpoint (moving the label if it exists).
func (r *Repo) Label(session, ref, name string) (objects.ID, error) {
	session, err := sessionName(session)
	if err != nil {
		return objects.ID{}, err
	}
	if err := validLabel(name); err != nil {
		return objects.ID{}, err
	}
	release, err := r.writing(context.Background())
	if err != nil {
		return objects.ID{}, err
	}
	defer release()
	id, err := r.Resolve(session, ref)
	if err != nil {
		return id, err
	}
	old, err := r.refs.Get(refs.Label(name))
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return id, err
	}
	if old == id {
		return id, nil
	}
	if err := r.refs.Update(refs.Label(name), old, id); err != nil {
		return id, err
	}
	return id, r.refs.Append(&refs.Op{Kind: string(OpLabel), Session: session,
		Refs: []refs.RefChange{{Name: refs.Label(name), Old: old, New: id}}})
}

// ArchiveSession moves a session out of the active list (its checkpoints
// stay until retention expires them). RemoveSession deletes its head; both
// are recorded in the op log.
//
// Both are undoable: 'snap undo' in that session puts the session back.
func (r *Repo) ArchiveSession(session string) error {
	return r.moveSession(session, refs.ArchivedHead(session), OpSessionArchive)
}

// RemoveSession deletes a session's head ref (an active session's, else an
// archived one's).
func (r *Repo) RemoveSession(session string) error {
	return r.moveSession(session, "", OpSessionRemove)
}

// checkNotArchived refuses to start a session whose name an archived
// session holds: two sessions of one name would be listed twice and
// could not both be archived.
func (r *Repo) checkNotArchived(session string) error {
	if _, err := r.refs.Get(refs.ArchivedHead(session)); err == nil {
		return fmt.Errorf("%w: session %q is archived: 'snap -s %s undo' brings it back if archiving it was its last operation, 'snap session rm %s' deletes it; or use another session name",
			ErrUsage, session, session, session)
	}
	return nil
}

func (r *Repo) moveSession(session, to string, kind OpKind) error {
	session, err := sessionName(session)
	if err != nil {
		return err
	}
	release, err := r.writing(context.Background())
	if err != nil {
		return err
	}
	defer release()
	from := refs.SessionHead(session)
	id, err := r.refs.Get(from)
	if errors.Is(err, refs.ErrNotFound) {
		if to == "" { // removing an archived session
			from = refs.ArchivedHead(session)
			id, err = r.refs.Get(from)
		} else if _, aerr := r.refs.Get(to); aerr == nil {
			return fmt.Errorf("%w: session %q is archived already", ErrUsage, session)
		}
	}
	if errors.Is(err, refs.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNoSession, session)
	}
	if err != nil {
		return err
	}
	if to != "" {
		if _, err := r.refs.Get(to); err == nil {
			return fmt.Errorf("%w: session %q has an archived copy already: remove it first ('snap session rm %s' removes the active one first, so archive or rename this one's work instead)", ErrUsage, session, session)
		}
	}
	op := &refs.Op{Kind: string(kind), Session: session}
	if to != "" {
		if err := r.refs.Update(to, objects.ID{}, id); err != nil {
			return err
		}
		op.Refs = append(op.Refs, refs.RefChange{Name: to, New: id})
	}
	if err := r.refs.Delete(from, id); err != nil {
		return err
	}
	op.Refs = append(op.Refs, refs.RefChange{Name: from, Old: id})
	return r.refs.Append(op)
}

// Ops returns the last n operations of the op log (all when n <= 0), newest
// first.
func (r *Repo) Ops(n int) ([]refs.Op, error) {
	ops, err := r.refs.Ops()
	if err != nil && len(ops) == 0 {
		return nil, err
	}
	out := []refs.Op{}
	for i := len(ops) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		out = append(out, ops[i])
	}
	return out, nil
}

// CaptureStats walks the working tree as a checkpoint would, without
// writing anything, and reports what it found (files read, skipped).
func (r *Repo) CaptureStats(ctx context.Context) (*worktree.Snapshot, error) {
	cache := r.loadCache()
	snap, err := worktree.Capture(ctx, r.objects.NewDryWriter(), worktree.Options{Root: r.Root, StoreDir: r.StoreDir, MaxFileSize: r.MaxFileSize(), Cache: cache, Sys: r.sys})
	return snap, err
}

// AutoGCPacks is the number of packs past which NeedsGC asks for a
// `gc --auto` (which merges them into one).
const AutoGCPacks = 50

// NeedsGC reports whether the store has accumulated enough packs that an
// automatic gc is worth running.
func (r *Repo) NeedsGC() bool {
	return r.objects.Packs() >= AutoGCPacks
}
