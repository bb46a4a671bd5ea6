package snap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/epiclabs-io/diff3"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

const kindRevert = "revert"

// RevertOptions describe a revert: the inverse of one checkpoint's change
// (Ref against its parent) or of a range's (From..Ref: from From's tree to
// Ref's), applied to the working tree as it is now.
type RevertOptions struct {
	Session string
	Ref     string   // the checkpoint whose change is reverted (the end of the range)
	From    string   // the start of a range; "" is Ref's parent
	Paths   []string // only these paths (and what lies beneath them)
	DryRun  bool     // report what would be reverted and what conflicts; change nothing
}

// RevertConflict is a path a revert left untouched: what it holds now and
// what the revert would make of it disagree.
type RevertConflict struct {
	Path   string         `json:"path"`
	Reason string         `json:"reason"`
	Hunks  []ConflictHunk `json:"hunks,omitempty"`
}

// ConflictHunk is one region of a text file both changed: Line is its
// first line in the file now (1-based).
type ConflictHunk struct {
	Line     int    `json:"line"`
	Current  string `json:"current"`  // the lines now
	Original string `json:"original"` // the lines the reverted change wrote
	Reverted string `json:"reverted"` // the lines the revert would write
}

// RevertResult reports a revert.
type RevertResult struct {
	From       objects.ID       `json:"from"` // the tree the change started from (REF's parent)
	To         objects.ID       `json:"to"`   // REF
	Checkpoint *objects.ID      `json:"checkpoint"`
	Reverted   []string         `json:"reverted"`
	Conflicts  []RevertConflict `json:"conflicts"`
	Rewind     *RewindResult    `json:"rewind,omitempty"`
	// Nothing: the change touched no file, or every path it touched is
	// already as before it; nothing was done (not an error).
	Nothing bool `json:"nothing_to_revert,omitempty"`
	DryRun  bool `json:"dry_run,omitempty"`
}

// Revert applies the inverse of a checkpoint's change (or a range's) to
// the working tree, keeping everything that happened since: text files are
// merged three ways line by line (the change's result as the base, the
// file now, and the file before the change); a path whose merge conflicts,
// or that changed since in a way that cannot be merged (binary content,
// modes, files deleted or added again), is left untouched and reported,
// and the result is then ErrPartial. It is a move: a safety checkpoint
// first, then the reverted paths written through the journal and a
// "revert" checkpoint recorded; undo puts them back.
func (r *Repo) Revert(ctx context.Context, o RevertOptions) (*RevertResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	h := r.history()
	to, err := r.resolve(h, session, o.Ref)
	if err != nil {
		return nil, err
	}
	tck, err := r.loadCheckpoint(to)
	if err != nil {
		return nil, err
	}
	var from objects.ID
	var fromTree objects.ID
	switch {
	case o.From != "":
		if from, err = r.resolve(h, session, o.From); err != nil {
			return nil, err
		}
		fck, err := r.loadCheckpoint(from)
		if err != nil {
			return nil, err
		}
		fromTree = fck.Tree
	case len(tck.Parents) > 0:
		from = tck.Parents[0]
		fck, err := r.loadCheckpoint(from)
		if err != nil {
			return nil, fmt.Errorf("the parent of %s: %w", to.Short(), err)
		}
		fromTree = fck.Tree
	}
	res := &RevertResult{From: from, To: to, Reverted: []string{}, Conflicts: []RevertConflict{}}
	var changed []string
	err = objects.DiffTrees(r.objects, fromTree, tck.Tree, func(c objects.Change) error {
		if pathMatch(c.Path, o.Paths) && !strings.HasSuffix(c.Path, "/") && c.New.Mode != objects.ModeDir && c.Old.Mode != objects.ModeDir {
			changed = append(changed, c.Path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		if len(o.Paths) == 0 {
			// An empty change (a checkpoint of state documents only,
			// FROM..FROM): nothing to revert, no error (adversarial A10).
			// Under --path it is a path named wrong: ErrNoPath.
			res.Nothing, res.DryRun = true, o.DryRun
			return res, nil
		}
		return nil, fmt.Errorf("%w: %s changed no file%s", ErrNoPath, describeRange(o, to), pathsNote(o.Paths))
	}
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	// The plan against the present first, written nowhere: a dry run
	// answers it; with nothing to revert, or only conflicts, nothing moves.
	_, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	dry := r.objects.NewDryWriter()
	now, err := r.capture(ctx, dry, r.loadCache(), captureSpec{parent: head})
	if err != nil {
		return nil, err
	}
	plan, err := r.planRevert(dry, now.tree, fromTree, tck.Tree, changed)
	if err != nil {
		return nil, err
	}
	if o.DryRun || len(plan.edits) == 0 {
		res.Reverted, res.Conflicts, res.DryRun = plan.reverted, plan.conflicts, o.DryRun
		res.Nothing = len(plan.edits) == 0 && len(plan.conflicts) == 0
		return res, plan.err()
	}
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	headID, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, fmt.Errorf("%w: session %q has no checkpoints yet", ErrNoCheckpoint, session)
	}
	m := &move{Kind: string(OpRevert), Session: session, Target: headID, NewHead: headID,
		Scope:   rewindScope{Files: true, Paths: changed, MovesHead: true, FromPresent: true},
		summary: "revert " + describeRange(o, to),
		build: func(m *move, safety objects.ID, now *captured, _ *objects.Checkpoint) (objects.ID, error) {
			id, err := r.buildRevertChange(m, safety, now, fromTree, tck.Tree, changed, res)
			if err == nil {
				m.Scope.Paths = res.Reverted // the restore writes only these
			}
			return id, err
		}}
	rr, err := r.run(ctx, m, false)
	res.Rewind = rr
	if err != nil {
		return res, err
	}
	id := m.NewHead
	res.Checkpoint = &id
	if len(res.Conflicts) > 0 {
		errs := make([]worktree.PathError, len(res.Conflicts))
		for i, c := range res.Conflicts {
			errs[i] = worktree.PathError{Path: c.Path, Error: c.Reason}
		}
		return res, partial(errs)
	}
	return res, nil
}

func describeRange(o RevertOptions, to objects.ID) string {
	if o.From != "" {
		return o.From + ".." + o.Ref
	}
	return "the change of " + to.Short()
}

func pathsNote(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return " under " + strings.Join(paths, ", ")
}

// revertPlan is what a revert makes of each changed path: the new entries
// (nil: deleted), the paths reverted, and the conflicts.
type revertPlan struct {
	edits     map[string]*objects.TreeEntry
	reverted  []string
	conflicts []RevertConflict
}

// err is ErrPartial naming the conflicts, or nil.
func (p *revertPlan) err() error {
	if len(p.conflicts) == 0 {
		return nil
	}
	errs := make([]worktree.PathError, len(p.conflicts))
	for i, c := range p.conflicts {
		errs[i] = worktree.PathError{Path: c.Path, Error: c.Reason}
	}
	if len(p.edits) == 0 {
		return fmt.Errorf("nothing reverted: %w", partial(errs))
	}
	return partial(errs)
}

// buildRevertChange plans the revert against the safety capture (the
// present may have changed since Revert's own plan) and records the
// mergeable paths in a checkpoint built on it. With nothing to revert it
// fails (ErrPartial) before the journal: nothing is written.
func (r *Repo) buildRevertChange(m *move, safety objects.ID, now *captured, fromTree, toTree objects.ID, changed []string, res *RevertResult) (objects.ID, error) {
	w := r.objects.NewWriter()
	defer w.Abort()
	plan, err := r.planRevert(w, now.tree, fromTree, toTree, changed)
	if err != nil {
		return objects.ID{}, err
	}
	res.Reverted, res.Conflicts = plan.reverted, plan.conflicts
	if len(plan.edits) == 0 {
		if perr := plan.err(); perr != nil {
			return objects.ID{}, perr
		}
		return objects.ID{}, fmt.Errorf("%w: every path is already as before the change (changed since the revert began)", ErrConflict)
	}
	return r.recordEdited(w, m, safety, now, plan.edits, kindRevert, nil)
}

// planRevert merges each changed path of the change fromTree → toTree into
// the tree nowTree: a path untouched since goes back, a text file changed
// since is merged three ways, anything else is a conflict. Merged content
// is put with w.
func (r *Repo) planRevert(w *objects.Writer, nowTree, fromTree, toTree objects.ID, changed []string) (*revertPlan, error) {
	plan := &revertPlan{edits: map[string]*objects.TreeEntry{}, reverted: []string{}, conflicts: []RevertConflict{}}
	edits := plan.edits
	for _, p := range changed {
		entry := func(tree objects.ID) (objects.TreeEntry, bool, error) {
			if tree.IsZero() { // before a session's first checkpoint: nothing
				return objects.TreeEntry{}, false, nil
			}
			return objects.EntryAt(w, tree, "/"+p)
		}
		orig, hadOrig, err := entry(fromTree) // before the change
		if err != nil {
			return nil, err
		}
		base, hadBase, err := entry(toTree) // what the change made
		if err != nil {
			return nil, err
		}
		cur, hasCur, err := entry(nowTree) // now
		if err != nil {
			return nil, err
		}
		same := func(a objects.TreeEntry, ha bool, b objects.TreeEntry, hb bool) bool {
			return ha == hb && (!ha || a.ID == b.ID && a.Mode == b.Mode)
		}
		conflict := func(reason string, hunks ...ConflictHunk) {
			plan.conflicts = append(plan.conflicts, RevertConflict{Path: p, Reason: reason, Hunks: hunks})
		}
		switch {
		case same(cur, hasCur, orig, hadOrig):
			continue // already as before the change
		case !hasCur && !hadBase && r.onDisk(p):
			// Not captured (ignored or unreadable now) yet there: a
			// restore would refuse to overwrite it after recording the
			// revert, so the plan says it first (adversarial A7).
			conflict("the change deleted it; it exists again now, not captured (ignored or unreadable)")
			continue
		case same(cur, hasCur, base, hadBase):
			// Untouched since the change: simply the state before it.
			if hadOrig {
				e := orig
				edits[p] = &e
			} else {
				edits[p] = nil
			}
			plan.reverted = append(plan.reverted, p)
			continue
		case !hasCur:
			conflict("deleted since the change")
			continue
		case !hadBase:
			conflict("the change deleted it; it exists again now")
			continue
		case !hadOrig:
			conflict("the change created it and it was changed since")
			continue
		case cur.Mode != objects.ModeFile && cur.Mode != objects.ModeExec || orig.Mode != base.Mode && cur.Mode != base.Mode:
			conflict("its kind or mode changed since the change")
			continue
		}
		// A text file changed by the change and since: three ways.
		read := func(id objects.ID) ([]byte, error) { return r.objects.ReadBlob(id, maxDocSize) }
		o, err1 := read(base.ID)
		a, err2 := read(cur.ID)
		if errors.Is(err2, objects.ErrNotFound) {
			// The present as a dry capture saw it: on disk only.
			var got string
			if a, got, err2 = r.fileBase(p); err2 == nil && got != cur.ID.String() {
				err2 = fmt.Errorf("%w: %s changed while the revert read it", ErrConflict, p)
			}
		}
		b, err3 := read(orig.ID)
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, err
		}
		if !isText(o) || !isText(a) || !isText(b) {
			conflict("binary content changed since the change")
			continue
		}
		merged, hunks := merge3(a, o, b)
		if len(hunks) > 0 {
			conflict(fmt.Sprintf("%d conflicting region(s) with changes made since", len(hunks)), hunks...)
			continue
		}
		if bytes.Equal(merged, a) && (orig.Mode == base.Mode || cur.Mode == orig.Mode) {
			continue // the change's lines are already gone: nothing to revert here
		}
		id, n, err := w.PutBlob(bytes.NewReader(merged))
		if err != nil {
			return nil, err
		}
		mode := cur.Mode
		if orig.Mode != base.Mode {
			mode = orig.Mode // the change flipped the executable bit: flip it back
		}
		edits[p] = &objects.TreeEntry{Name: filepath.Base(p), Mode: mode, ID: id, Size: n}
		plan.reverted = append(plan.reverted, p)
	}
	slices.Sort(plan.reverted)
	return plan, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// isText: valid UTF-8 without NUL bytes.
func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// merge3 merges, line by line, the changes from o to a and from o to b;
// it returns the merged text, or the conflicting hunks.
func merge3(a, o, b []byte) ([]byte, []ConflictHunk) {
	lines := func(x []byte) []string {
		if len(x) == 0 {
			return nil
		}
		return strings.SplitAfter(string(x), "\n")
	}
	var out strings.Builder
	var hunks []ConflictHunk
	for _, blk := range diff3.Diff3Merge(lines(a), lines(o), lines(b), true) {
		if blk.Conflict == nil {
			out.WriteString(strings.Join(blk.Ok, ""))
			continue
		}
		c := blk.Conflict
		hunks = append(hunks, ConflictHunk{Line: c.AIndex + 1, Current: strings.Join(c.A, ""),
			Original: strings.Join(c.O, ""), Reverted: strings.Join(c.B, "")})
	}
	return []byte(out.String()), hunks
}

// onDisk reports whether something exists at project path p (slashes),
// whatever the captures say of it.
func (r *Repo) onDisk(p string) bool {
	_, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(p)))
	return err == nil
}
