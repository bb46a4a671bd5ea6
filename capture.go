package snap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

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
	// excluded: project paths that are this session's state-document
	// sources, not files.
	excluded []string
	// targetDocs: project paths where a move's target keeps a state
	// document (path → its name) that are files now: recorded as they
	// are, and left alone by the move, whose target says nothing of them
	// as files (seed 905).
	targetDocs map[string]string
	// othersDocs: project paths that another session keeps a state
	// document at (path → "session S's state document NAME"): files here,
	// which no move of this session changes.
	othersDocs map[string]string
	// monitor: what the watch daemon said, kept once the tree is recorded
	// (Repo.noteMonitor); nil when no daemon answered.
	monitor *monitorNote
}

// same reports whether c records exactly what checkpoint ck does: tree,
// state documents and their sources, unreadable paths.
func (c *captured) same(ck *objects.Checkpoint) bool {
	return c.tree == ck.Tree && c.state == ck.State && maps.Equal(c.sources, ck.StateSources) &&
		slices.Equal(c.unreadable(), ck.Skipped)
}

// captureSpec says what a capture records.
type captureSpec struct {
	parent *objects.Checkpoint // the session head: a delta base, and what unreadable paths keep
	docs   []StateDoc          // state documents given now
	// sources are more documents to read from their source paths (a
	// rewind target's), beside the parent's; they win over the parent's.
	sources map[string]string
	// exclude: more state-document sources (a rewind target's, whatever
	// its scope), which the move leaves alone; one that is not this
	// session's own is recorded as the file it is now (targetDocs).
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
	// Another session's documents are files here (N1): recorded, never
	// recorded as deleted while on disk, and left alone by this session's
	// moves.
	wopts.Exclude = r.inProject(sources)
	others := r.othersDocs(wopts.Exclude)
	targetDocs := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(spec.exclude)) {
		for _, rel := range r.inProject(map[string]string{name: spec.exclude[name]}) {
			if _, seen := targetDocs[rel]; !seen && !slices.Contains(wopts.Exclude, rel) {
				targetDocs[rel] = name
			}
		}
	}
	var snap *worktree.Snapshot
	var mon *monitorNote
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
		mon = r.askMonitor(&wopts)
		snap, err = worktree.Capture(ctx, w, wopts)
	}
	if err != nil {
		return nil, err
	}
	if mon != nil {
		mon.captured(snap)
	}
	c := &captured{tree: snap.Tree, snap: snap, sources: map[string]string{}, docs: map[string]objects.TreeEntry{},
		data: map[string][]byte{}, files: map[string]string{}, excluded: wopts.Exclude, othersDocs: others, targetDocs: targetDocs, monitor: mon}
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

// leftAlone lists the paths a move to tck leaves as they are, whoever
// changed them: unreadable now or when tck was taken, and state documents
// (this session's, another's, the target's).
func (c *captured) leftAlone(tck *objects.Checkpoint) []string {
	return slices.Concat(c.unreadable(), tck.Skipped, c.excluded, slices.Collect(maps.Keys(c.othersDocs)), slices.Collect(maps.Keys(c.targetDocs)))
}

// storeError marks an error of the object store (not of a document's
// source) while a document is streamed in.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
