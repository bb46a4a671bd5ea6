package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// A move: the shared core of rewind, undo and redo, and of the workflow's
// moves (Steps.Move): safety checkpoint, journal, restore, head and record.

// rewindScope is what a rewind (and so its undo and redo) touches; it is
// stored in the op log.
type rewindScope struct {
	Files    bool     `json:"files"`
	State    bool     `json:"state"`
	Paths    []string `json:"paths,omitempty"`
	StateOut string   `json:"state_out,omitempty"`
	Txn      string   `json:"txn,omitempty"`  // identifies the operation, for crash recovery
	Task     int      `json:"task,omitempty"` // a task revert's task
	// MovesHead: the head goes to the target even when Paths limit the
	// restore (an edit commit), instead of staying as for 'rewind --path'.
	MovesHead bool `json:"moves_head,omitempty"`
	// FromPresent: the move's end is made from the present (an edit
	// commit, a revert), not an older checkpoint, so its captures honour
	// the rules on disk only (M11); its undo and redo, moves to older
	// checkpoints, honour theirs.
	FromPresent bool `json:"from_present,omitempty"`
	// SpareIgnored: its deletions spare what the end's own rules ignore
	// (a revert, whose deletions are implied, as its redo would: M40; not
	// an edit commit, whose staged deletions were asked for).
	SpareIgnored bool `json:"spare_ignored,omitempty"`
	// Docs limits the state documents restored to these names.
	Docs []string `json:"docs,omitempty"`
	// Edits: the staged edits the operation committed or dropped (an
	// edits.Pending document); its undo stages them again.
	Edits json.RawMessage `json:"edits,omitempty"`
	// An undo's: what the rewind it undoes created though the ignore
	// rules ignored it (worktree.RestoreOptions.UndoCreated), the state
	// documents it created (StateRestored.Created), and that rewind's
	// target, which they were written from.
	UndoCreated      []string        `json:"undo_created,omitempty"`
	UndoCreatedState []StateRestored `json:"undo_created_state,omitempty"`
	UndoFrom         *objects.ID     `json:"undo_from,omitempty"`
	// Foreign: the target was taken in another store; its state documents
	// are written only to the paths this machine's head reads them from.
	Foreign bool `json:"foreign,omitempty"`
	// Excludes: the exclude rules in force when the move began (git's
	// global excludes file and .git/info/exclude, which no tree holds), so
	// the rules its safety checkpoint was taken under; TargetExcludes: an
	// undo's, those of the move it undoes, under which its target's rules
	// are read (A14). Nil: not recorded (an older store), those in force.
	Excludes       *string `json:"excludes,omitempty"`
	TargetExcludes *string `json:"target_excludes,omitempty"`
	// RulesFrom: the target a move that kept what other actors changed
	// was asked for (its recorded end is its Target): a redo reads that
	// target's ignore rules too, as the move did (M27).
	RulesFrom *objects.ID `json:"rules_from,omitempty"`
	// All: the move changes every path back, whoever changed it since
	// its target; without it, only what the session's own actors changed
	// (Kept).
	All bool `json:"all,omitempty"`
	// recovering: completing a move a killed process began (its writes
	// are made durable too, even when nothing is left to write).
	recovering bool
}

// run is the shared core of rewind, undo and redo: take a safety
// checkpoint, journal the move, restore m.Target within m.Scope, move the
// head to m.NewHead and record the operation. The safety checkpoint is the
// head, or m.Known (a checkpoint that already holds exactly the current
// tree and state, as when redoing right after an undo), when either
// matches; otherwise a new pre-rewind checkpoint.
func (r *Repo) run(ctx context.Context, t *tx, m *move, dryRun bool) (*RewindResult, error) {
	session, target, known, scope := m.Session, m.Target, m.Known, m.Scope
	if !dryRun {
		if err := t.lockMoves(ctx); err != nil {
			return nil, err
		}
		if m.Scope.Txn == "" { // an edit commit names its txn beforehand
			m.Scope.Txn = newTxn()
		}
	}
	tck, err := r.loadCheckpoint(target)
	if err != nil {
		return nil, fmt.Errorf("rewind target %s: %w", target.Short(), err)
	}
	headID, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	w := t.objects()
	cache := r.loadCache()
	// The safety checkpoint must hold every state document the move may
	// change, as it is now (absence included): the head's, re-read from
	// their sources, and those the target will write back to its source
	// paths.
	// A target taken in another store names paths of that machine: its
	// documents go only where this machine's head reads them (restoreState).
	m.Scope.Foreign = r.isForeign(target)
	scope.Foreign = m.Scope.Foreign
	ex := worktree.Excludes(r.Root)
	m.Scope.Excludes = &ex
	now, err := r.capture(ctx, w, cache, r.safetySpec(head, tck, scope, r.isForeign(headID)))
	if err != nil {
		return nil, fmt.Errorf("safety checkpoint: %w", err)
	}
	// What the restore records in the cache is racy (the files were just
	// written), so re-read by the next capture anyway: the cache is worth
	// saving (~6 ms for 20k paths) only when the capture changed it.
	saveCache := cache.Dirty()
	// Everything the move will write must be readable and intact before
	// anything is changed: a damaged store refuses the move (exit 12)
	// rather than leaving the tree half rewound.
	if err := r.verifyTarget(w, now, tck, scope); err != nil {
		return nil, err
	}
	res := &RewindResult{Target: target, DryRun: dryRun, Restored: []string{}, Deleted: []string{}, Kept: []Kept{},
		State: []StateRestored{}, Skipped: now.skipped(), Errors: []worktree.PathError{}}
	// A --path that names nothing, in the target or in the tree now, is a
	// typo: refused before anything is recorded. (An edit commit's paths
	// are its own, and may be new files.)
	for _, p := range scope.Paths {
		if !scope.MovesHead && !inTree(w, now.tree, p) && !inTree(w, tck.Tree, p) {
			return nil, fmt.Errorf("%w: %s is neither in checkpoint %s nor in the working tree", ErrNoPath, p, target.Short())
		}
	}
	if len(scope.Docs) > 0 {
		st, err := r.objects.ReadTree(tck.State)
		if err != nil {
			return nil, err
		}
		for _, n := range scope.Docs {
			if _, ok := st.Find(n); !ok && tck.StateSources[n] == "" && now.sources[n] == "" {
				return nil, fmt.Errorf("%w: state document %q is in neither checkpoint %s (it has %s) nor the session's head",
					ErrNoPath, n, target.Short(), stateNames(st))
			}
		}
	}
	// Only what the session's own actors changed since the target moves
	// back: what another actor changed since is kept (and the end, which
	// is then no stored checkpoint, recorded once the present is safe).
	if scope.Files && !scope.FromPresent && !scope.All {
		end, kept, idle, err := r.scopeToActors(w, session, now, target, tck, scope.Paths)
		if err != nil {
			return nil, fmt.Errorf("finding what other actors changed: %w", err)
		}
		if len(kept) > 0 {
			res.Kept = kept
			if idle && !scope.State && len(scope.Paths) > 0 && !scope.MovesHead && m.Kind != string(OpUndo) && m.Kind != string(OpRedo) {
				// Every path the move would restore is kept, and the head
				// stays (a rewind of some paths): nothing to do, so
				// nothing is recorded (adversarial A4). Not so for an
				// undo or redo, which moves its stacks and is recorded
				// even when it keeps everything (M38).
				return res, nil
			}
			if m.Scope.RulesFrom == nil {
				asked := target
				m.Scope.RulesFrom = &asked
			}
			scoped := *tck
			scoped.Tree = end
			tck = &scoped
			if m.build == nil {
				m.build, m.scoped = r.recordScopedEnd, true
			}
		}
	}
	safety, current := headID, headID // current: the head once the safety checkpoint is taken
	if !dryRun && head != nil && !now.same(head) && !known.IsZero() {
		if kck, err := r.objects.ReadCheckpoint(known); err == nil && now.same(kck) {
			safety = known
		}
	}
	if !dryRun && safety == headID && (head == nil || !now.same(head)) {
		summary := "before " + m.Kind + " to " + target.Short()
		if m.build != nil && !m.scoped {
			summary = "before " + m.Kind // its target is recorded after this
		}
		cres, _, err := r.buildCheckpoint(w, session, headID, head, now, CheckpointOptions{Kind: kindPreRewind, Summary: summary})
		if err != nil {
			return nil, err
		}
		// (Its record is the move's own, below; the wait for the locks
		// ends with ctx: a Ctrl-C then leaves nothing moved.)
		if err := t.write(ctx, []refs.RefChange{{Name: refs.SessionHead(session), Old: headID, New: cres.ID}}, nil); err != nil {
			return nil, fmt.Errorf("safety checkpoint: %w", err)
		}
		safety, current = cres.ID, cres.ID
		res.SafetyCreated = true
	}
	if !dryRun {
		res.SafetyMonitored = r.noteMonitor(now, safety) // (the tree a safety capture records)
	}
	if (len(scope.Paths) > 0 || len(scope.Docs) > 0 || scope.StateOut != "" && !scope.Files) && m.Kind != "undo" && !scope.MovesHead {
		// Restoring some paths, like 'git checkout REF -- PATH', or
		// exporting the state documents elsewhere leaves the head where it
		// is: the session did not go back.
		m.NewHead = current
	}
	if !dryRun && m.build != nil {
		// The move's own end: recorded now that the present is safe, and
		// before the journal, which then names it (a recovery needs
		// nothing more).
		id, err := m.build(t, m, safety, now, tck)
		if err != nil {
			if res.SafetyCreated {
				// The head moved onto the safety checkpoint: recorded, so
				// that undo and the session's history know it.
				err = errors.Join(err, t.write(ctx, nil, &refs.Op{Kind: string(OpCheckpoint), Session: session, Checkpoint: safety,
					Refs: []refs.RefChange{{Name: refs.SessionHead(session), Old: headID, New: safety}}}))
			}
			return nil, err
		}
		if tck, err = r.objects.ReadCheckpoint(id); err != nil {
			return nil, err
		}
		if m.NewHead == m.Target {
			m.NewHead = id
		}
		if m.scoped {
			m.Built = id // (the result still names the target asked for)
		} else {
			res.Target = id
		}
		m.Target = id
	}
	if !dryRun {
		s := safety
		res.SafetyCheckpoint = &s
		m.OldHead, m.Safety, m.Current = headID, safety, current
		if err := r.writeJournal(m); err != nil {
			return res, err
		}
	}
	if err := r.restore(ctx, w, cache, tck, now, scope, dryRun, res); err != nil {
		if dryRun {
			return res, err
		}
		return res, Advise(fmt.Errorf("the %s to %s stopped part way (%w; %d paths changed), so the working tree is between the two; "+
			"the next snap command that changes the store completes it (recording first anything changed meanwhile); "+
			"then a rewind to %s returns to the state before it",
			m.Kind, target.Short(), err, len(res.Restored)+len(res.Deleted), m.Safety.Short()), Advice{Do: DoRewind, Arg: m.Safety.String()})
	}
	if dryRun {
		if len(res.Errors) > 0 {
			return res, Partial(res.Errors) // as the real rewind would
		}
		return res, nil
	}
	m.Created, m.CreatedState = res.Created, res.createdState()
	if err := r.finishMove(t, m, false); err != nil {
		if len(res.Errors) > 0 {
			// Report the paths that failed first, as well.
			return res, errors.Join(Partial(res.Errors), err)
		}
		return res, err
	}
	if saveCache {
		cache.SaveFS(r.fs, r.cachePath())
	}
	if len(res.Errors) > 0 {
		return res, Partial(res.Errors)
	}
	return res, nil
}

// recordScopedEnd records the end of an actor-scoped move that kept what
// other actors changed (tck: the target with their paths as they are), as
// a child of the target: its state documents and the kept tree, so that
// the node's change is what was kept. It is durable when it returns,
// before the journal names it.
func (r *Repo) recordScopedEnd(t *tx, m *move, safety objects.ID, now *captured, tck *objects.Checkpoint) (objects.ID, error) {
	target, err := r.objects.ReadCheckpoint(m.Target)
	if err != nil {
		return objects.ID{}, err
	}
	snapshot := &worktree.Snapshot{Files: -1} // (its files: counted from the target's)
	if t, err := t.objects().ReadTree(tck.Tree); err == nil {
		for _, e := range t.Entries {
			snapshot.Bytes += e.Size // a directory's size is all beneath it (A3)
		}
	}
	c, err := r.capturedOf(tck, tck.Tree, snapshot)
	if err != nil {
		return objects.ID{}, err
	}
	for _, q := range tck.Skipped {
		c.snap.Skipped = append(c.snap.Skipped, worktree.Skipped{Path: q, Kept: true})
	}
	summary := fmt.Sprintf("%s to %s, keeping what other actors changed since", m.Kind, m.Target.Short())
	res, _, err := r.buildCheckpoint(t.objects(), m.Session, m.Target, target, c, CheckpointOptions{Kind: m.Kind, Summary: summary})
	if err != nil {
		return objects.ID{}, err
	}
	return res.ID, t.write(context.Background(), nil, nil)
}

// inTree reports whether path p ("" is the root) names an entry of tree.
func inTree(tr objects.TreeReader, tree objects.ID, p string) bool {
	_, ok, _ := objects.EntryAt(tr, tree, path.Clean("/"+p))
	return ok
}

// Partial is ErrPartial wrapping the per-path errors, so that errors.Is
// finds their causes (syscall.ENOSPC, worktree.ErrUntracked, ...) and the
// message says which call failed on which path.
func Partial(errs []PathError) error {
	return fmt.Errorf("%w: %w", ErrPartial, worktree.JoinPathErrors(errs))
}

// restore puts the files and state documents of tck in place of the
// captured state now, within scope.
func (r *Repo) restore(ctx context.Context, src worktree.Source, cache *index.Cache, tck *objects.Checkpoint, now *captured, scope rewindScope, dryRun bool, res *RewindResult) error {
	if scope.Files {
		// Paths that could not be read, now or when the target was
		// captured, are left as they are: neither side knows their content.
		keep := now.leftAlone(tck)
		var undoFrom objects.ID // the tree the undone rewind wrote its created paths from
		if scope.UndoFrom != nil {
			if ck, err := r.objects.ReadCheckpoint(*scope.UndoFrom); err == nil {
				undoFrom = ck.Tree
			}
		}
		rr, err := worktree.Restore(ctx, src, now.tree, tck.Tree, worktree.RestoreOptions{
			Root: r.Root, StoreDir: r.StoreDir, Paths: scope.Paths, Keep: keep, DryRun: dryRun, Cache: cache, Sys: r.sys, Trash: r.trashDir(),
			UndoCreated: scope.UndoCreated, UndoFrom: undoFrom, SpareIgnored: scope.SpareIgnored, SyncAll: scope.recovering})
		if rr != nil {
			res.Restored, res.Deleted, res.Errors, res.Created = rr.Restored, rr.Deleted, rr.Errors, rr.Created
			if len(scope.UndoCreated) > 0 {
				// What the undo removed is no longer "left as it is".
				res.Skipped = slices.DeleteFunc(res.Skipped, func(s worktree.Skipped) bool {
					if !s.Kept {
						return false
					}
					if dir, ok := strings.CutSuffix(s.Path, "/"); ok {
						_, err := os.Lstat(filepath.Join(r.Root, dir))
						return (dryRun || errors.Is(err, fs.ErrNotExist) || slices.Contains(rr.Restored, dir)) &&
							slices.ContainsFunc(rr.Deleted, func(d string) bool { return strings.HasPrefix(d, s.Path) })
					}
					return slices.Contains(rr.Deleted, s.Path)
				})
			}
		}
		if err != nil {
			return err
		}
		for _, p := range rr.Kept {
			if !slices.ContainsFunc(res.Skipped, func(s worktree.Skipped) bool { return s.Path == p }) {
				reason := "could not be read when the target was checkpointed"
				switch {
				case now.othersDocs[p] != "":
					reason = now.othersDocs[p]
				case slices.Contains(now.excluded, p):
					reason = "a state document of this session (restored as one, not as a file)"
				case now.targetDocs[p] != "":
					reason = fmt.Sprintf("the target's state document %s, not a file there: left as it is", now.targetDocs[p])
				}
				res.Skipped = append(res.Skipped, worktree.Skipped{Path: p, Kept: true, Reason: reason})
			}
		}
	}
	if scope.State {
		return r.restoreState(tck, now, scope, dryRun, res)
	}
	return nil
}

// createdState is the state documents the rewind created (for the op log).
func (res *RewindResult) createdState() []StateRestored {
	var out []StateRestored
	for _, s := range res.State {
		if s.Created {
			out = append(out, s)
		}
	}
	return out
}

// verifyTarget reads and verifies every content object the move will write.
func (r *Repo) verifyTarget(tr objects.TreeReader, now *captured, tck *objects.Checkpoint, scope rewindScope) error {
	check := func(what string, id objects.ID) error {
		_, err := r.objects.WriteBlob(id, io.Discard)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, objects.ErrCorrupt) || errors.Is(err, objects.ErrNotFound):
			return fmt.Errorf("%w: refusing to rewind: %s cannot be restored: %v", objects.ErrCorrupt, what, err)
		}
		// An I/O error is not damage: say so, and keep it (errors.Is).
		return fmt.Errorf("refusing to rewind: %s cannot be read: %w", what, err)
	}
	if scope.Files {
		var todo []objects.Change
		err := objects.DiffTrees(tr, now.tree, tck.Tree, func(c objects.Change) error {
			if c.New.Mode != 0 && c.New.Mode != objects.ModeDir && pathMatch(c.Path, scope.Paths) {
				todo = append(todo, c)
			}
			return nil
		})
		if err != nil {
			if errors.Is(err, objects.ErrCorrupt) || errors.Is(err, objects.ErrNotFound) {
				return fmt.Errorf("%w: refusing to rewind: %v", objects.ErrCorrupt, err)
			}
			return err
		}
		// Decoding and hashing is CPU work: spread it over the cores. The
		// error reported is the first path's, whatever order they finish in.
		errs := make([]error, len(todo))
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(len(todo), runtime.GOMAXPROCS(0)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
					func() {
						defer func() {
							if p := recover(); p != nil { // a bug is an error, not a crash
								errs[i] = fmt.Errorf("internal error verifying %s: %v", todo[i].Path, p)
							}
						}()
						errs[i] = check(todo[i].Path, todo[i].New.ID)
					}()
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	if scope.State {
		st, err := r.objects.ReadTree(tck.State)
		if err != nil {
			if !errors.Is(err, objects.ErrCorrupt) && !errors.Is(err, objects.ErrNotFound) {
				return fmt.Errorf("refusing to rewind: state documents: %w", err)
			}
			return fmt.Errorf("%w: refusing to rewind: state documents: %v", objects.ErrCorrupt, err)
		}
		for _, e := range st.Entries {
			if err := check("state document "+e.Name, e.ID); err != nil {
				return err
			}
		}
	}
	return nil
}
