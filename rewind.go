package snap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// RewindOptions describe a rewind.
type RewindOptions struct {
	Session          string
	Target           string   // REF
	FilesOnly        bool     // leave state documents alone
	ConversationOnly bool     // leave the working tree alone
	Paths            []string // restore only these paths (implies FilesOnly)
	DryRun           bool     // report what would change, change nothing
	StateOut         string   // write state documents into this directory instead of their source paths
}

// StateRestored is a state document a rewind wrote.
type StateRestored struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// RewindResult is what Rewind reports.
type RewindResult struct {
	Target           objects.ID           `json:"target"`
	SafetyCheckpoint *objects.ID          `json:"safety_checkpoint"` // checkpoint holding the state from before; null in a dry run
	SafetyCreated    bool                 `json:"safety_created"`    // false when the state from before was already checkpointed
	Restored         []string             `json:"restored"`
	Deleted          []string             `json:"deleted"`
	State            []StateRestored      `json:"state"`
	Skipped          []worktree.Skipped   `json:"skipped"`
	Errors           []worktree.PathError `json:"errors"`
	DryRun           bool                 `json:"dry_run"`
}

// rewindScope is what a rewind (and so its undo and redo) touches; it is
// stored in the op log.
type rewindScope struct {
	Files    bool     `json:"files"`
	State    bool     `json:"state"`
	Paths    []string `json:"paths,omitempty"`
	StateOut string   `json:"state_out,omitempty"`
}

// Rewind moves the working tree and/or the state documents back (or
// forward) to a checkpoint. Before changing anything it records the current
// tree and state as a pre-rewind checkpoint (unless they equal the head's),
// so the rewind can be undone and no work is lost. Then only differing
// paths are written (see worktree.Restore), state documents go back to their
// recorded source paths, and the session head moves to the target. The
// result lists per-path errors; when there are any the error is ErrPartial.
func (r *Repo) Rewind(ctx context.Context, o RewindOptions) (*RewindResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	if o.FilesOnly && o.ConversationOnly {
		return nil, fmt.Errorf("%w: --files-only and --conversation-only exclude each other", ErrUsage)
	}
	target, err := r.Resolve(session, o.Target)
	if err != nil {
		return nil, err
	}
	scope := rewindScope{Files: !o.ConversationOnly, State: !o.FilesOnly && len(o.Paths) == 0, Paths: o.Paths, StateOut: o.StateOut}
	if o.StateOut != "" {
		if scope.StateOut, err = filepath.Abs(o.StateOut); err != nil {
			return nil, err
		}
	}
	if o.DryRun {
		return r.move(ctx, session, target, target, objects.ID{}, scope, true, nil)
	}
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := r.move(ctx, session, target, target, objects.ID{}, scope, false, func(old, safety objects.ID) error {
		detail, _ := json.Marshal(scope)
		return r.refs.Append(&refs.Op{Kind: "rewind", Session: session, Target: target, Safety: safety,
			Refs: []refs.RefChange{{Name: headRef(session), Old: old, New: target}}, Detail: detail})
	})
	return res, err
}

// move is the shared core of rewind, undo and redo: take a safety
// checkpoint, restore target within scope, move the head to newHead and call
// record(previous head, safety checkpoint) to log the operation. The safety
// checkpoint is the head, or known (a checkpoint that already holds exactly
// the current tree and state, as when redoing right after an undo), when
// either matches; otherwise a new pre-rewind checkpoint.
func (r *Repo) move(ctx context.Context, session string, target, newHead, known objects.ID, scope rewindScope, dryRun bool, record func(old, safety objects.ID) error) (*RewindResult, error) {
	tck, err := r.objects.ReadCheckpoint(target)
	if err != nil {
		return nil, fmt.Errorf("rewind target %s: %w", target.Short(), err)
	}
	headID, head, err := r.head(session)
	if err != nil {
		return nil, err
	}
	var w *objects.Writer
	if dryRun {
		w = r.objects.NewDryWriter()
	} else {
		w = r.objects.NewWriter()
	}
	defer w.Abort()
	cache := r.loadCache()
	now, err := r.capture(ctx, w, cache, head, nil, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("safety checkpoint: %w", err)
	}
	res := &RewindResult{Target: target, DryRun: dryRun, Restored: []string{}, Deleted: []string{},
		State: []StateRestored{}, Skipped: now.snap.Skipped, Errors: []worktree.PathError{}}
	if res.Skipped == nil {
		res.Skipped = []worktree.Skipped{}
	}
	safety, current := headID, headID // current: the head once the safety checkpoint is taken
	if !dryRun && head != nil && (now.tree != head.Tree || now.state != head.State) && !known.IsZero() {
		if kck, err := r.objects.ReadCheckpoint(known); err == nil && kck.Tree == now.tree && kck.State == now.state {
			safety = known
		}
	}
	if !dryRun && safety == headID && (head == nil || now.tree != head.Tree || now.state != head.State) {
		cres, _, err := r.buildCheckpoint(w, session, headID, head, now, CheckpointOptions{Kind: "pre-rewind", Summary: "before rewind to " + target.Short()})
		if err != nil {
			return nil, err
		}
		if _, err := w.Commit(); err != nil {
			return nil, err
		}
		if err := r.refs.Update(headRef(session), headID, cres.ID); err != nil {
			return nil, fmt.Errorf("safety checkpoint: %w", err)
		}
		safety, current = cres.ID, cres.ID
		res.SafetyCreated = true
	}
	if !dryRun {
		s := safety
		res.SafetyCheckpoint = &s
	}

	if scope.Files {
		rr, err := worktree.Restore(ctx, w, now.tree, tck.Tree, worktree.RestoreOptions{
			Root: r.Root, StoreDir: r.StoreDir, Paths: scope.Paths, DryRun: dryRun, Cache: cache})
		if err != nil {
			return res, err
		}
		res.Restored, res.Deleted, res.Errors = rr.Restored, rr.Deleted, rr.Errors
	}
	if scope.State {
		if err := r.restoreState(tck, now, scope.StateOut, dryRun, res); err != nil {
			return res, err
		}
	}
	if dryRun {
		return res, nil
	}
	if err := r.refs.Update(headRef(session), current, newHead); err != nil {
		return res, err
	}
	if record != nil {
		if err := record(headID, safety); err != nil {
			return res, err
		}
	}
	cache.Save(r.cachePath())
	if len(res.Errors) > 0 {
		return res, ErrPartial
	}
	return res, nil
}

// restoreState writes the target's state documents back to their source
// paths (or into stateOut), skipping those already equal.
func (r *Repo) restoreState(tck *objects.Checkpoint, now *captured, stateOut string, dryRun bool, res *RewindResult) error {
	st, err := r.objects.ReadTree(tck.State)
	if err != nil {
		return err
	}
	for _, e := range st.Entries {
		dest := tck.StateSources[e.Name]
		if stateOut != "" {
			dest = filepath.Join(stateOut, e.Name)
		}
		if dest == "" {
			res.Errors = append(res.Errors, worktree.PathError{Path: "state:" + e.Name,
				Error: "no recorded source path (read from stdin); use --state-out DIR"})
			continue
		}
		if err := r.safeStatePath(dest); err != nil {
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error()})
			continue
		}
		if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID && now.sources[e.Name] == dest {
			continue // already as in the target
		}
		if !dryRun {
			if err := r.writeDoc(e.ID, dest); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error()})
				continue
			}
		}
		res.State = append(res.State, StateRestored{Name: e.Name, Path: dest})
	}
	sort.Slice(res.State, func(i, j int) bool { return res.State[i].Name < res.State[j].Name })
	return nil
}

// safeStatePath refuses state-document destinations inside the store or a
// .git directory, and relative ones.
func (r *Repo) safeStatePath(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("state path %q is not absolute and clean", p)
	}
	if p == r.StoreDir || strings.HasPrefix(p, r.StoreDir+string(filepath.Separator)) {
		return fmt.Errorf("state path %q lies inside the store", p)
	}
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if objects.IsReservedName(c) && strings.EqualFold(strings.TrimRight(c, ". "), ".git") {
			return fmt.Errorf("state path %q lies inside a .git directory", p)
		}
	}
	return nil
}

// writeDoc writes a stored document to dest by temporary file and rename.
func (r *Repo) writeDoc(id objects.ID, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dest), ".snap-tmp-*")
	if err != nil {
		return err
	}
	_, err = r.objects.WriteBlob(id, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if fi, serr := os.Stat(dest); serr == nil {
			os.Chmod(f.Name(), fi.Mode().Perm())
		} else {
			os.Chmod(f.Name(), 0o644)
		}
		err = os.Rename(f.Name(), dest)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
