package snap

import (
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

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
	now, err := r.capture(ctx, w, r.loadCache(), captureSpec{parent: head, foreign: r.isForeign(headID)})
	if err != nil {
		return nil, err
	}
	res := &StatusResult{Session: session, Skipped: now.skipped(), State: []StateChange{}}
	if res.Interrupted, err = r.Interrupted(ctx); err != nil {
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
	// ChangedBy: who recorded the path's changes between the two sides,
	// each session and actor once, oldest first (none: no checkpoint has
	// recorded the change yet).
	ChangedBy []Changer `json:"changed_by,omitempty"`
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

// Diff compares checkpoint from with checkpoint to (nil: the working tree
// and the state documents at their sources), optionally limited to paths.
// State documents are compared message by message when they are
// conversations.
func (r *Repo) Diff(ctx context.Context, from objects.ID, to *objects.ID, paths []string) (*DiffResult, error) {
	return r.diff(ctx, from, to, paths, true)
}

// diff is Diff; without actors it leaves FileDiff.ChangedBy out (a scan of
// the op log between the two sides that ChangedPaths does not need).
func (r *Repo) diff(ctx context.Context, from objects.ID, to *objects.ID, paths []string, actors bool) (*DiffResult, error) {
	fck, err := r.loadCheckpoint(from)
	if err != nil {
		return nil, err
	}
	res := &DiffResult{From: from, Files: []FileDiff{}, State: []StateDiff{}}
	var tr objects.TreeReader = r.objects
	var toTree, toState objects.ID
	read := func(id objects.ID) ([]byte, error) { return r.objects.ReadBlob(id, maxDocSize) }
	var live func(objects.ID) (*convDoc, bool, error) // state documents not in the store
	if to == nil {
		w := r.objects.NewDryWriter()
		now, err := r.capture(ctx, w, r.loadCache(), captureSpec{parent: fck, foreign: r.isForeign(from)})
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
		live = r.liveDocs(pending, fromSource)
		res.Files, err = r.fileDiffs(tr, fck.Tree, toTree, paths, read, true)
		if err != nil {
			return nil, err
		}
	} else {
		tck, err := r.loadCheckpoint(*to)
		if err != nil {
			return nil, err
		}
		toID := *to
		res.To, toTree, toState = &toID, tck.Tree, tck.State
		if res.Files, err = r.fileDiffs(tr, fck.Tree, toTree, paths, read, false); err != nil {
			return nil, err
		}
	}
	var toID objects.ID
	if to != nil {
		toID = *to
	}
	if actors {
		if err := r.changedBy(from, toID, res.Files); err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		if res.State, err = r.stateDiffs(tr, fck.State, toState, read, live); err != nil {
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

func (r *Repo) stateDiffs(tr objects.TreeReader, a, b objects.ID, read func(objects.ID) ([]byte, error), live func(objects.ID) (*convDoc, bool, error)) ([]StateDiff, error) {
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
		if name == ConversationDoc {
			var from, to objects.ID
			if c.Old.Mode != 0 {
				from = c.Old.ID
			}
			if c.New.Mode != 0 {
				to = c.New.ID
			}
			d, err := r.diffConversation(from, to, live, read)
			if err != nil {
				return err
			}
			sd.Conversation = d
			out = append(out, sd)
			return nil
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
		if !isBinary(oldData) && !isBinary(newData) && len(oldData) < maxDiffSize && len(newData) < maxDiffSize {
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

// ChangedPaths lists the paths whose files differ between checkpoints
// from and to (to nil: the working tree, as the session's next checkpoint
// records it; see sourcesNow). The git bridge commits these paths
// (task and edit commits with --git-commit).
func (r *Repo) ChangedPaths(ctx context.Context, from objects.ID, to *objects.ID) ([]string, error) {
	d, err := r.diff(ctx, from, to, nil, false)
	if err != nil {
		return nil, err
	}
	var redo []string
	var now map[string]bool
	if to == nil {
		if redo, now, err = r.sourcesNow(ctx, from); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, f := range d.Files {
		if !underRoots(f.Path, redo) {
			out = append(out, f.Path)
		}
	}
	for p := range now {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// sourcesNow: Diff(from, nil) captures the working tree as a child of
// from, so it leaves out the state-document sources from recorded inside
// the project. A task commit's checkpoint is a child of the session head
// and leaves out only the head's sources (another session's are files to
// it):
// a file at a source of from's that no head names any more (the
// transcript moved out, say) is a tree file to it, and the git bridge
// commits it (model finding M20). And the other way round: a source of the
// head's that from does not name (the transcript moved into the project
// since) is no tree file to the next checkpoint, so whatever from holds
// there is gone from it (M31). sourcesNow returns those sources (redo)
// and the paths at or beneath them that differ between from and the
// working tree captured again there without from's sources left out, or
// with the head's left out (now).
func (r *Repo) sourcesNow(ctx context.Context, from objects.ID) (redo []string, now map[string]bool, err error) {
	node, err := r.loadCheckpoint(from)
	if err != nil {
		return nil, nil, err
	}
	_, head, err := r.head(node.Session)
	if err != nil {
		return nil, nil, err
	}
	var headSources map[string]string
	if head != nil {
		headSources = head.StateSources
	}
	excluded := r.inProject(headSources)
	fromSources := r.inProject(node.StateSources)
	for _, rel := range fromSources {
		if !slices.Contains(excluded, rel) {
			redo = append(redo, rel)
		}
	}
	var gone []string // the head's sources from does not name (M31)
	for _, rel := range excluded {
		if !slices.Contains(fromSources, rel) {
			gone = append(gone, rel)
		}
	}
	if len(redo) == 0 && len(gone) == 0 {
		return nil, nil, nil
	}
	now = map[string]bool{}
	if len(gone) > 0 {
		err := objects.DiffTrees(r.objects, node.Tree, objects.ID{}, func(c objects.Change) error {
			if c.Old.Mode != objects.ModeDir && underRoots(c.Path, gone) {
				now[c.Path] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(redo) == 0 {
		return gone, now, nil
	}
	w := r.objects.NewDryWriter()
	snapshot, err := worktree.CapturePaths(ctx, w, node.Tree, redo, worktree.Options{
		Root: r.Root, StoreDir: r.StoreDir, MaxFileSize: r.MaxFileSize(),
		Parent: node.Tree, ParentSkipped: node.Skipped, Exclude: excluded,
	})
	if err != nil {
		return nil, nil, err
	}
	err = objects.DiffTrees(w, node.Tree, snapshot.Tree, func(c objects.Change) error {
		if underRoots(c.Path, redo) {
			now[c.Path] = true
		}
		return nil
	})
	return append(redo, gone...), now, err
}

// underRoots reports whether p is one of roots or lies beneath one.
func underRoots(p string, roots []string) bool {
	for _, q := range roots {
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}
