package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/merge"
)

// RevertOptions describe a revert: the inverse of one checkpoint's change
// (Ref against its parent) or of a range's (From..Ref: from From's tree to
// Ref's), applied to the working tree as it is now.
type RevertOptions struct {
	Session string
	Ref     string   // the checkpoint whose change is reverted (the end of the range)
	From    string   // the start of a range; "" is Ref's parent
	Paths   []string // only these paths (and what lies beneath them)
	DryRun  bool     // report what would be reverted and what conflicts; change nothing
	// All reverts every path of the change; without it, a path whose
	// change another actor made (another session, the user) is left
	// (RevertResult.Kept), as a rewind leaves it.
	All bool
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
	From       snap.ID            `json:"from"` // the tree the change started from (REF's parent)
	To         snap.ID            `json:"to"`   // REF
	Checkpoint *snap.ID           `json:"checkpoint"`
	Reverted   []string           `json:"reverted"`
	Conflicts  []RevertConflict   `json:"conflicts"`
	Kept       []snap.Kept        `json:"kept"` // paths of the change another actor made: left as they are
	Rewind     *snap.RewindResult `json:"rewind,omitempty"`
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
// and the result is then snap.ErrPartial. It is a move: a safety checkpoint
// first, then the reverted paths written through the journal and a
// "revert" checkpoint recorded; undo puts them back.
func (f *Flow) Revert(ctx context.Context, o RevertOptions) (*RevertResult, error) {
	session := o.Session
	if session == "" {
		session = snap.DefaultSession
	}
	to, err := f.r.Resolve(ctx, session, o.Ref)
	if err != nil {
		return nil, err
	}
	tck, _, err := f.r.ReadNode(ctx, to)
	if err != nil {
		return nil, err
	}
	var from, fromTree snap.ID
	switch {
	case o.From != "":
		if from, err = f.r.Resolve(ctx, session, o.From); err != nil {
			return nil, err
		}
		fck, _, err := f.r.ReadNode(ctx, from)
		if err != nil {
			return nil, err
		}
		fromTree = fck.Tree
	case len(tck.Parents) > 0:
		from = tck.Parents[0]
		fck, _, err := f.r.ReadNode(ctx, from)
		if err != nil {
			return nil, fmt.Errorf("the parent of %s: %w", to.Short(), err)
		}
		fromTree = fck.Tree
	}
	res := &RevertResult{From: from, To: to, Reverted: []string{}, Conflicts: []RevertConflict{}, Kept: []snap.Kept{}}
	diff, err := f.r.DiffPaths(ctx, fromTree, tck.Tree, o.Paths)
	if err != nil {
		return nil, err
	}
	var changed []string // the files it changed
	for _, p := range diff {
		if !strings.HasSuffix(p, "/") {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 && !o.All {
		kept, err := f.r.ChangedByOthers(ctx, session, from, to, changed)
		if err != nil {
			return nil, err
		}
		res.Kept = append(res.Kept, kept...)
		changed = slices.DeleteFunc(changed, func(p string) bool {
			return slices.ContainsFunc(kept, func(k snap.Kept) bool { return k.Path == p })
		})
		if len(changed) == 0 {
			res.Nothing, res.DryRun = true, o.DryRun // every path of it is another actor's
			return res, nil
		}
	}
	if len(changed) == 0 {
		if len(o.Paths) == 0 {
			// An empty change (a checkpoint of state documents only,
			// FROM..FROM): nothing to revert, no error (adversarial A10).
			// Under --path it is a path named wrong: ErrNoPath.
			res.Nothing, res.DryRun = true, o.DryRun
			return res, nil
		}
		return nil, fmt.Errorf("%w: %s changed no file%s", snap.ErrNoPath, describeRange(o, to), pathsNote(o.Paths))
	}
	// The plan against the present first, written nowhere: a dry run
	// answers it; with nothing to revert, or only conflicts, nothing moves.
	var plan *revertPlan
	err = f.s.Plan(ctx, session, func(p *snap.Present) (err error) {
		plan, err = planRevert(p, fromTree, tck.Tree, changed)
		return err
	})
	if err != nil {
		return nil, err
	}
	if o.DryRun || len(plan.edits) == 0 {
		res.Reverted, res.Conflicts, res.DryRun = plan.reverted, plan.conflicts, o.DryRun
		res.Nothing = len(plan.edits) == 0 && len(plan.conflicts) == 0
		return res, plan.err()
	}
	// The move plans again against its safety capture (the present may
	// have changed since) and records the mergeable paths in a checkpoint
	// built on it. With nothing left to revert it fails (ErrPartial)
	// before the journal: nothing is written.
	rr, end, err := f.s.Move(ctx, snap.MoveSpec{Session: session, Summary: "revert " + describeRange(o, to),
		Step: &snap.Step{Op: snap.OpRevert, Kind: snap.KindRevert}, Paths: changed, SpareIgnored: true,
		End: func(p *snap.Present) (snap.ID, []string, error) {
			plan, err := planRevert(p, fromTree, tck.Tree, changed)
			if err != nil {
				return snap.ID{}, nil, err
			}
			res.Reverted, res.Conflicts = plan.reverted, plan.conflicts
			if len(plan.edits) == 0 {
				if perr := plan.err(); perr != nil {
					return snap.ID{}, nil, perr
				}
				return snap.ID{}, nil, fmt.Errorf("%w: every path is already as before the change (changed since the revert began)", snap.ErrConflict)
			}
			tree, err := p.Edit(plan.edits)
			return tree, res.Reverted, err // the restore writes only these
		}})
	res.Rewind = rr
	if err != nil {
		if errors.Is(err, snap.ErrPartial) && !end.IsZero() {
			res.Checkpoint = &end // recorded, the head on it: said even when partial (M33)
		}
		return res, err
	}
	res.Checkpoint = &end
	if len(res.Conflicts) > 0 {
		errs := make([]snap.PathError, len(res.Conflicts))
		for i, c := range res.Conflicts {
			errs[i] = snap.PathError{Path: c.Path, Error: c.Reason}
		}
		return res, snap.Partial(errs)
	}
	return res, nil
}

func describeRange(o RevertOptions, to snap.ID) string {
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
	edits     map[string]*snap.TreeEntry
	reverted  []string
	conflicts []RevertConflict
}

// err is snap.ErrPartial naming the conflicts, or nil.
func (p *revertPlan) err() error {
	if len(p.conflicts) == 0 {
		return nil
	}
	errs := make([]snap.PathError, len(p.conflicts))
	for i, c := range p.conflicts {
		errs[i] = snap.PathError{Path: c.Path, Error: c.Reason}
	}
	if len(p.edits) == 0 {
		return fmt.Errorf("nothing reverted: %w", snap.Partial(errs))
	}
	return snap.Partial(errs)
}

// planRevert merges each changed path of the change fromTree → toTree into
// the tree nowTree: a path untouched since goes back, a text file changed
// since is merged three ways, anything else is a conflict. Merged content
// is put with w.
// isFileMode reports whether m is a regular file's (executable or not).
func isFileMode(m snap.Mode) bool { return m == snap.ModeFile || m == snap.ModeExec }

func planRevert(pr *snap.Present, fromTree, toTree snap.ID, changed []string) (*revertPlan, error) {
	nowTree := pr.Tree
	plan := &revertPlan{edits: map[string]*snap.TreeEntry{}, reverted: []string{}, conflicts: []RevertConflict{}}
	edits := plan.edits
	for _, p := range changed {
		entry := func(tree snap.ID) (snap.TreeEntry, bool, error) { return pr.Entry(tree, p) }
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
		same := func(a snap.TreeEntry, ha bool, b snap.TreeEntry, hb bool) bool {
			return ha == hb && (!ha || a.ID == b.ID && a.Mode == b.Mode)
		}
		conflict := func(reason string, hunks ...ConflictHunk) {
			plan.conflicts = append(plan.conflicts, RevertConflict{Path: p, Reason: reason, Hunks: hunks})
		}
		switch {
		case pr.Unreadable(p):
			// Its entry is the one recorded before, not what it holds
			// now: a revert cannot know it (model finding M32).
			conflict("it cannot be read now (too large, or no permission): what it holds is not known")
			continue
		case same(cur, hasCur, orig, hadOrig):
			continue // already as before the change
		case hadOrig && pr.Blocked(p):
			// The restore could not write it: known before anything is
			// written (model finding M33, as A7 for the path itself).
			conflict("a file or link stands where its directory must be")
			continue
		case !hasCur && !hadBase && pr.OnDisk(p):
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
		case cur.Mode != snap.ModeFile && cur.Mode != snap.ModeExec || orig.Mode != base.Mode && cur.Mode != base.Mode:
			conflict("its kind or mode changed since the change")
			continue
		case !isFileMode(orig.Mode) || !isFileMode(base.Mode):
			// The change made a directory or link a file (or the other
			// way), and the file was changed since: no three-way merge of
			// lines can undo a change of kind (model finding M41: the
			// merge read a directory's tree as content).
			conflict("the change changed its kind, and it was changed since")
			continue
		}
		// A text file changed by the change and since: three ways.
		o, err1 := pr.Read(base, "")
		a, err2 := pr.Read(cur, p) // (a dry capture's: on disk only)
		b, err3 := pr.Read(orig, "")
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, err
		}
		if !merge.IsText(o) || !merge.IsText(a) || !merge.IsText(b) {
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
		id, n, err := pr.Put(merged)
		if err != nil {
			return nil, err
		}
		mode := cur.Mode
		if orig.Mode != base.Mode {
			mode = orig.Mode // the change flipped the executable bit: flip it back
		}
		edits[p] = &snap.TreeEntry{Name: filepath.Base(p), Mode: mode, ID: id, Size: n}
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

// merge3 merges, line by line, the changes from o to a and from o to b;
// it returns the merged text, or the conflicting hunks.
func merge3(a, o, b []byte) ([]byte, []ConflictHunk) {
	out, hs := merge.Lines(a, o, b)
	var hunks []ConflictHunk
	for _, h := range hs {
		hunks = append(hunks, ConflictHunk{Line: h.Line, Current: h.A, Original: h.O, Reverted: h.B})
	}
	return out, hunks
}
