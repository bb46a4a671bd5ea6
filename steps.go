package snap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// The engine API the agent workflow (package workflow: the task stack,
// staged edits, the revert of one change, compaction) is built on. The
// workflow decides what an operation does; the engine records it: every
// object, ref and op-log record below is written on the engine's one write
// path, under its locks (taken in the order locks.go states: a session's
// staged edits, OpenEdits, before Record's or Move's).

// Steps is the engine API package workflow is built on; Repo.Steps
// returns it.
type Steps struct{ r *Repo }

// Steps returns the API the agent workflow is built on.
func (r *Repo) Steps() *Steps { return &Steps{r: r} }

// Step is a workflow operation's change to the session's task document
// (TaskDoc), which snap writes and no caller gives.
type Step struct {
	Op   OpKind // the kind the op log records
	Kind string // the kind of the checkpoint it records
	// Apply derives the new task document from the one the checkpoint
	// inherits (nil: none yet) and the number of messages of its
	// conversation (0 when it has none or cannot be counted), and returns
	// it with the task the op log names. It is called again each time the
	// checkpoint is rebuilt on a head that moved meanwhile.
	Apply func(doc []byte, messages int) ([]byte, int, error)
	task  int // the task the last application named
}

// Record records a checkpoint of a workflow operation: as Checkpoint, of
// kind step.Kind, with step deriving the task document and naming the op.
func (st *Steps) Record(ctx context.Context, o CheckpointOptions, step *Step) (*CheckpointResult, error) {
	r := st.r
	if step == nil || step.Apply == nil || step.Op == "" {
		return nil, fmt.Errorf("%w: a workflow checkpoint needs its step", ErrUsage)
	}
	if err := checkTaskDocs(o.State); err != nil {
		return nil, err
	}
	o.Kind = step.Kind
	return r.checkpoint(ctx, o, step)
}

// checkTaskDocs refuses the task stack given as a state document.
func checkTaskDocs(docs []StateDoc) error {
	for _, d := range docs {
		if d.Name == TaskDoc {
			return fmt.Errorf("%w: state document %q is snap's task stack; give yours another name", ErrUsage, TaskDoc)
		}
	}
	return nil
}

// Head returns the session's head and its checkpoint (zero and nil when
// the session has none yet).
func (r *Repo) Head(ctx context.Context, session string) (ID, *Node, error) {
	session, err := sessionName(session)
	if err != nil {
		return ID{}, nil, err
	}
	return r.head(session)
}

// ReadState reads state document name of checkpoint id whole (ErrNoPath,
// naming those it has, when it has none of that name).
func (r *Repo) ReadState(ctx context.Context, id ID, name string) ([]byte, error) {
	_, e, err := r.stateDoc(id, name)
	if err != nil {
		return nil, err
	}
	return r.readDoc(e)
}

// MoveSpec is a move a workflow operation makes: the working tree goes to
// an end the workflow computes, and a checkpoint of that end is recorded.
// As for a rewind, a safety checkpoint of the present comes first (so undo
// brings it back), the move is journalled (a killed one is completed by
// the next command), and the head and the op-log record follow.
type MoveSpec struct {
	Session string
	Summary string // the end checkpoint's
	Step    *Step  // its op and checkpoint kinds, and its change to the task document
	// Files: the checkpoint whose files the end holds (a task revert: the
	// task's begin); every path is restored. Zero: End computes the end
	// from the present.
	Files ID
	// End computes the end's files from the present (the safety
	// capture): the present's tree with some paths changed. It returns
	// the tree and the paths the restore writes (nil: Paths).
	End   func(p *Present) (ID, []string, error)
	Paths []string // the paths End may change
	// Edits: the session's staged edits (held open) that the move
	// consumes, recorded so its undo stages them again, and cleared once
	// it is done. Commit: the move writes them (an edit commit), so a
	// move killed part way is settled by the next OpenEdits.
	Edits  *Edits
	Commit bool
	// All: a move to Files changes every path, whoever changed it since;
	// without it, only what the session's own actors changed (Kept).
	All bool
	// SpareIgnored: the move's deletions spare what its end's own rules
	// ignore (rewindScope.SpareIgnored): a revert's are implied by the
	// change reverted; an edit commit's were asked for.
	SpareIgnored bool
}

// Move makes the move s describes and returns what its restore did and
// the checkpoint it ended on (zero when it stopped before recording one).
func (st *Steps) Move(ctx context.Context, s MoveSpec) (*RewindResult, ID, error) {
	r := st.r
	session, err := sessionName(s.Session)
	if err != nil {
		return nil, ID{}, err
	}
	if s.Step == nil || s.Files.IsZero() == (s.End == nil) || s.Commit && s.Edits == nil {
		return nil, ID{}, fmt.Errorf("%w: a move needs its step, either the files of a checkpoint or an end, and the edits it commits", ErrUsage)
	}
	if err := r.checkNotArchived(session); err != nil {
		return nil, ID{}, err
	}
	t, err := r.begin(ctx, writer)
	if err != nil {
		return nil, ID{}, err
	}
	defer t.end()
	headID, head, err := r.head(session)
	if err != nil {
		return nil, ID{}, err
	}
	if head == nil {
		return nil, ID{}, fmt.Errorf("%w: session %q has no checkpoints yet", ErrNoCheckpoint, session)
	}
	m := &move{Kind: string(s.Step.Op), Session: session, Target: headID, NewHead: headID, summary: s.Summary,
		Scope: rewindScope{Files: true, Paths: s.Paths, All: s.All, SpareIgnored: s.SpareIgnored}}
	var p *edits.Pending
	if s.Edits != nil {
		p = s.Edits.Pending
		if len(p.Changes) > 0 {
			m.Scope.Edits, _ = json.Marshal(p) // its undo stages them again
		}
	}
	if s.Commit {
		// The txn goes into the pending changes before any file moves, so
		// a commit killed at any point is settled by the next OpenEdits.
		p.Committing = newTxn()
		if err := s.Edits.Save(); err != nil {
			return nil, ID{}, err
		}
		m.Scope.Txn = p.Committing
	}
	if s.End != nil {
		m.Scope.MovesHead, m.Scope.FromPresent = true, true
	} else {
		m.Target, m.NewHead = s.Files, s.Files
	}
	built := false
	// The end, recorded once the safety checkpoint holds the present: the
	// files of s.Files, or what End makes of the present (tck is then the
	// head).
	m.build = func(t *tx, m *move, safety objects.ID, now *captured, tck *objects.Checkpoint) (objects.ID, error) {
		tree, snap, kept := tck.Tree, &worktree.Snapshot{Files: tck.Stats.Files, Bytes: tck.Stats.Bytes}, tck.Skipped
		if s.End != nil {
			var paths []string
			var err error
			// (unread: what the safety capture could not read, as Plan's
			// Present says it: model finding M34.)
			if tree, paths, err = s.End(&Present{Tree: now.tree, r: r, w: t.objects(), unread: now.unreadable()}); err != nil {
				return objects.ID{}, err
			}
			if paths != nil {
				m.Scope.Paths = paths
			}
			snap, kept = &worktree.Snapshot{Files: -1}, now.unreadable()
		}
		if s.End == nil && len(now.targetDocs) > 0 {
			// A path where the target keeps a document is left alone by
			// the move: the end, whose documents are the session's, holds
			// it as the file it is now (seed 905).
			var err error
			if tree, err = r.carryPresent(t.objects(), tree, now.tree, slices.Sorted(maps.Keys(now.targetDocs)), snap); err != nil {
				return objects.ID{}, err
			}
		}
		for _, q := range kept {
			snap.Skipped = append(snap.Skipped, worktree.Skipped{Path: q, Kept: true})
		}
		id, err := r.recordMoveEnd(ctx, t, m, safety, tree, snap, s.Step)
		built = err == nil
		return id, err
	}
	rr, err := r.run(ctx, t, m, false)
	var end ID
	if built {
		end = m.NewHead
	}
	switch {
	case s.Edits == nil:
	case s.Commit && err != nil:
		if done, rerr := r.history().recorded(p.Committing); rerr == nil && !done && !r.refs.JournalPending() {
			p.Committing = "" // nothing moved: the changes stay pending
			err = errors.Join(err, s.Edits.Save())
		}
	case built && (err == nil || !s.Commit && errors.Is(err, ErrPartial)):
		// Done: so are the staged edits (those recorded above: nothing
		// was staged since, under the edits lock).
		s.Edits.Pending = edits.New()
		if serr := s.Edits.Save(); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return rr, end, err
}

// Present is the working tree as a move's safety capture (or Plan's dry
// capture) recorded it, and the means to compute a move's end from it.
type Present struct {
	Tree   ID // the working tree's files
	r      *Repo
	w      *objects.Writer
	unread []string // paths the capture could not read (their entries are their previous ones)
}

// Plan captures the working tree as the session's next checkpoint would,
// recording nothing, and calls f with it: a plan made before a move (or
// instead of one, in a dry run).
func (st *Steps) Plan(ctx context.Context, session string, f func(p *Present) error) error {
	r := st.r
	session, err := sessionName(session)
	if err != nil {
		return err
	}
	if err := r.checkNotArchived(session); err != nil {
		return err
	}
	_, head, err := r.head(session)
	if err != nil {
		return err
	}
	t, err := r.begin(ctx, dry)
	if err != nil {
		return err
	}
	defer t.end()
	now, err := r.capture(ctx, t.objects(), r.loadCache(), captureSpec{parent: head})
	if err != nil {
		return err
	}
	return f(&Present{Tree: now.tree, r: r, w: t.objects(), unread: now.unreadable()})
}

// Unreadable reports whether the capture could not read path p now (too
// large, no permission), or a directory above it: its entry in Tree is
// the one recorded before, not what the file holds.
func (p *Present) Unreadable(path string) bool {
	return slices.ContainsFunc(p.unread, func(u string) bool {
		// (Beneath a directory that could not be listed, nothing is known;
		// beneath a file, nothing can be.)
		return u == path || strings.HasSuffix(u, "/") && strings.HasPrefix(path, u)
	})
}

// Entry finds path (slashes, no leading slash) in tree (any stored tree,
// or the present's; the zero tree is empty).
func (p *Present) Entry(tree ID, path string) (TreeEntry, bool, error) {
	if tree.IsZero() { // before a session's first checkpoint: nothing
		return TreeEntry{}, false, nil
	}
	return objects.EntryAt(p.w, tree, "/"+path)
}

// Read reads the content of entry e. With path, e is the present's entry
// at path: a dry capture stored nothing, so it is read from the file,
// which must still hold it (else ErrConflict).
func (p *Present) Read(e TreeEntry, path string) ([]byte, error) {
	data, err := p.r.objects.ReadBlob(e.ID, maxDocSize)
	if path != "" && errors.Is(err, objects.ErrNotFound) {
		var got string
		if data, got, err = p.r.fileBase(path); err == nil && got != e.ID.String() {
			err = fmt.Errorf("%w: %s changed while it was read", ErrConflict, path)
		}
	}
	return data, err
}

// Put stores content for the end's tree.
func (p *Present) Put(data []byte) (ID, int64, error) {
	return p.w.PutBlob(bytes.NewReader(data))
}

// Edit returns the present's tree with changes applied (path → new entry;
// nil: deleted). A directory left empty stays when it is there on disk.
func (p *Present) Edit(changes map[string]*TreeEntry) (ID, error) {
	return p.r.editTree(p.w, p.Tree, changes)
}

// editTree returns tree with changes applied (path → new entry; nil:
// deleted); a directory left empty stays when it is there on disk.
func (r *Repo) editTree(w *objects.Writer, tree ID, changes map[string]*TreeEntry) (ID, error) {
	return worktree.EditTree(w, tree, changes, func(dir string) bool {
		fi, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(dir)))
		return err == nil && fi.IsDir()
	})
}

// carryPresent returns tree with paths as they are in the present's tree
// (absent there: removed), and snap's counts made to match (Files: -1,
// derived from the parent's).
func (r *Repo) carryPresent(w *objects.Writer, tree, present ID, paths []string, snap *worktree.Snapshot) (ID, error) {
	changes := map[string]*TreeEntry{}
	for _, q := range paths {
		changes[q] = nil
		if old, ok, err := objects.EntryAt(w, tree, q); err != nil {
			return ID{}, err
		} else if ok {
			snap.Bytes -= old.Size
		}
		e, ok, err := objects.EntryAt(w, present, q)
		if err != nil {
			return ID{}, err
		}
		if ok {
			e.Name = pathpkg.Base(q)
			changes[q] = &e
			snap.Bytes += e.Size
		}
	}
	snap.Files = -1
	return r.editTree(w, tree, changes)
}

// OnDisk reports whether something exists at project path (slashes),
// whatever the capture says of it (ignored, unreadable).
func (p *Present) OnDisk(path string) bool {
	_, err := os.Lstat(filepath.Join(p.r.Root, filepath.FromSlash(path)))
	return err == nil
}

// Blocked reports whether a file or a symlink stands on disk where one of
// path's directories must be: a restore of path would fail there.
func (p *Present) Blocked(path string) bool {
	for d := pathpkg.Dir(path); d != "."; d = pathpkg.Dir(d) {
		fi, err := os.Lstat(filepath.Join(p.r.Root, filepath.FromSlash(d)))
		if err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// TaskMarks is what the op log records of a session's tasks.
type TaskMarks struct {
	h       *history
	session string
}

// TaskMarks reads the op log's record of session's tasks (when first
// asked).
func (st *Steps) TaskMarks(ctx context.Context, session string) (*TaskMarks, error) {
	r := st.r
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	return &TaskMarks{h: r.history(), session: session}, nil
}

// Next is one past the highest task id the session's history has seen (1
// when none), so that no id is given out twice, even after a rewind or an
// undo took a task out of the stack.
func (m *TaskMarks) Next() (int, error) { return m.h.nextTask(m.session) }

// Checkpoints returns the checkpoints where task began and where it was
// last committed or reverted (zero when none is recorded, or when the op
// log cannot be read).
func (m *TaskMarks) Checkpoints(task int) (begin, end ID) {
	return m.h.taskCheckpoints(m.session, task)
}

// Expired reports whether retention removed checkpoint id.
func (m *TaskMarks) Expired(id ID) bool { return m.h.isExpired(id) }

// DiffPaths lists the paths that differ between stored trees from (zero:
// empty, before a session's first checkpoint) and to, under paths (none:
// all), in tree order; a path that is a directory on either side ends
// with a slash.
func (r *Repo) DiffPaths(ctx context.Context, from, to ID, paths []string) ([]string, error) {
	var out []string
	err := objects.DiffTrees(r.objects, from, to, func(c objects.Change) error {
		if pathMatch(c.Path, paths) {
			if c.Old.Mode == objects.ModeDir || c.New.Mode == objects.ModeDir {
				out = append(out, c.Path+"/")
			} else {
				out = append(out, c.Path)
			}
		}
		return nil
	})
	return out, err
}
