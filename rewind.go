package snap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/index"
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
	Paths            []string // restore only these paths (implies FilesOnly; the head stays; each must exist in the target or the tree: else ErrNoPath)
	DryRun           bool     // report what would change, change nothing
	StateOut         string   // write state documents into this directory instead of their source paths
}

// StateRestored is a state document a rewind wrote, or removed (Deleted:
// the target records it as absent).
type StateRestored struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Deleted bool   `json:"deleted,omitempty"`
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
	// Created: what the rewind created though the ignore rules in force
	// ignored it (see worktree.RestoreResult.Created); its undo removes
	// these again while they are as it wrote them.
	Created []string `json:"created,omitempty"`
	DryRun  bool     `json:"dry_run"`
}

// rewindScope is what a rewind (and so its undo and redo) touches; it is
// stored in the op log.
type rewindScope struct {
	Files    bool     `json:"files"`
	State    bool     `json:"state"`
	Paths    []string `json:"paths,omitempty"`
	StateOut string   `json:"state_out,omitempty"`
	Txn      string   `json:"txn,omitempty"` // identifies the operation, for crash recovery
	// An undo's: what the rewind it undoes created though the ignore
	// rules ignored it, and that rewind's target, which it was written
	// from (worktree.RestoreOptions.UndoCreated).
	UndoCreated []string    `json:"undo_created,omitempty"`
	UndoFrom    *objects.ID `json:"undo_from,omitempty"`
}

// moveDetail is the op-log detail of a move: its scope, and what its
// restore created though the ignore rules ignored it (RewindResult.Created).
type moveDetail struct {
	rewindScope
	Created []string `json:"created,omitempty"`
}

// move describes one rewind, undo or redo of a rewind: what to restore,
// where the head goes and how the operation is recorded. It is also the
// journal written before the working tree is touched, so a move killed half
// way is completed by the next command (see recoverMove).
type move struct {
	Kind    string      `json:"kind"` // op kind: rewind, undo, redo
	Session string      `json:"session"`
	Target  objects.ID  `json:"target"`   // checkpoint whose content is restored
	NewHead objects.ID  `json:"new_head"` // where the head ends
	Known   objects.ID  `json:"known"`    // a checkpoint that may already hold the current state (redo)
	Undoes  int64       `json:"undoes,omitempty"`
	Scope   rewindScope `json:"scope"`
	// Set once the safety checkpoint is taken:
	OldHead objects.ID `json:"old_head"` // the head before the move
	Safety  objects.ID `json:"safety"`   // the checkpoint holding the state from before
	Current objects.ID `json:"current"`  // the head once the safety checkpoint is taken
	// Found: the state a recovery found, recorded before it completed the
	// move (work done after the interruption); zero when there was none.
	Found objects.ID `json:"found,omitempty"`
	// Created: set from the restore (RewindResult.Created), for the op log.
	Created []string `json:"created,omitempty"`
}

// op is the op-log record of a completed move.
func (m *move) op() *refs.Op {
	detail, _ := json.Marshal(moveDetail{m.Scope, m.Created})
	return &refs.Op{Kind: m.Kind, Session: m.Session, Target: m.Target, Safety: m.Safety, Checkpoint: m.Found, Undoes: m.Undoes,
		Refs: []refs.RefChange{{Name: refs.SessionHead(m.Session), Old: m.OldHead, New: m.NewHead}}, Detail: detail}
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
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	m := &move{Kind: string(OpRewind), Session: session, Target: target, NewHead: target, Scope: scope}
	if o.DryRun {
		return r.run(ctx, m, true)
	}
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.run(ctx, m, false)
}

// run is the shared core of rewind, undo and redo: take a safety
// checkpoint, journal the move, restore m.Target within m.Scope, move the
// head to m.NewHead and record the operation. The safety checkpoint is the
// head, or m.Known (a checkpoint that already holds exactly the current
// tree and state, as when redoing right after an undo), when either
// matches; otherwise a new pre-rewind checkpoint.
func (r *Repo) run(ctx context.Context, m *move, dryRun bool) (*RewindResult, error) {
	session, target, known, scope := m.Session, m.Target, m.Known, m.Scope
	if !dryRun {
		unlock, err := r.lockMoves(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
		m.Scope.Txn = newTxn()
	}
	tck, err := r.loadCheckpoint(target)
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
	// The safety checkpoint must hold every state document the move may
	// change, as it is now (absence included): the head's, re-read from
	// their sources, and those the target will write back to its source
	// paths.
	spec := captureSpec{parent: head, rules: []objects.ID{tck.Tree}, exclude: tck.StateSources}
	if scope.State && scope.StateOut == "" {
		spec.sources = tck.StateSources
	}
	// Captured under the target's ignore rules as well as today's: what
	// either ignores is neither pulled into the store nor touched.
	now, err := r.capture(ctx, w, cache, spec)
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
	res := &RewindResult{Target: target, DryRun: dryRun, Restored: []string{}, Deleted: []string{},
		State: []StateRestored{}, Skipped: now.skipped(), Errors: []worktree.PathError{}}
	// A --path that names nothing, in the target or in the tree now, is a
	// typo: refused before anything is recorded.
	for _, p := range scope.Paths {
		if !inTree(w, now.tree, p) && !inTree(w, tck.Tree, p) {
			return nil, fmt.Errorf("%w: %s is neither in checkpoint %s nor in the working tree", ErrNoPath, p, target.Short())
		}
	}
	safety, current := headID, headID // current: the head once the safety checkpoint is taken
	if !dryRun && head != nil && !now.same(head) && !known.IsZero() {
		if kck, err := r.objects.ReadCheckpoint(known); err == nil && now.same(kck) {
			safety = known
		}
	}
	if !dryRun && safety == headID && (head == nil || !now.same(head)) {
		cres, _, err := r.buildCheckpoint(w, session, headID, head, now, CheckpointOptions{Kind: kindPreRewind, Summary: "before rewind to " + target.Short()})
		if err != nil {
			return nil, err
		}
		if _, err := w.Commit(); err != nil {
			return nil, err
		}
		if err := r.refs.Update(refs.SessionHead(session), headID, cres.ID); err != nil {
			return nil, fmt.Errorf("safety checkpoint: %w", err)
		}
		safety, current = cres.ID, cres.ID
		res.SafetyCreated = true
	}
	if (len(scope.Paths) > 0 || scope.StateOut != "" && !scope.Files) && m.Kind != "undo" {
		// Restoring some paths, like 'git checkout REF -- PATH', or
		// exporting the state documents elsewhere leaves the head where it
		// is: the session did not go back.
		m.NewHead = current
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
		return res, fmt.Errorf("the %s to %s stopped part way (%w; %d paths changed), so the working tree is between the two; "+
			"the next snap command that changes the store completes it (recording first anything changed meanwhile); "+
			"then 'snap rewind %s' returns to the state before it",
			m.Kind, target.Short(), err, len(res.Restored)+len(res.Deleted), m.Safety.Short())
	}
	if dryRun {
		if len(res.Errors) > 0 {
			return res, partial(res.Errors) // as the real rewind would
		}
		return res, nil
	}
	m.Created = res.Created
	if err := r.finishMove(m); err != nil {
		if len(res.Errors) > 0 {
			// Report the paths that failed first, as well.
			return res, errors.Join(partial(res.Errors), err)
		}
		return res, err
	}
	if saveCache {
		cache.SaveFS(r.fs, r.cachePath())
	}
	if len(res.Errors) > 0 {
		return res, partial(res.Errors)
	}
	return res, nil
}

// inTree reports whether path p ("" is the root) names an entry of tree.
func inTree(tr objects.TreeReader, tree objects.ID, p string) bool {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return true
	}
	e := objects.TreeEntry{Mode: objects.ModeDir, ID: tree}
	for _, name := range strings.Split(p, "/") {
		if e.Mode != objects.ModeDir {
			return false
		}
		t, err := tr.ReadTree(e.ID)
		if err != nil {
			return false
		}
		var ok bool
		if e, ok = t.Find(name); !ok {
			return false
		}
	}
	return true
}

// partial is ErrPartial wrapping the per-path errors, so that errors.Is
// finds their causes (syscall.ENOSPC, worktree.ErrUntracked, ...) and the
// message says which call failed on which path.
func partial(errs []worktree.PathError) error {
	es := make([]error, len(errs))
	for i, e := range errs {
		if e.Err != nil {
			es[i] = fmt.Errorf("%s: %w", e.Path, e.Err)
		} else {
			es[i] = fmt.Errorf("%s: %s", e.Path, e.Error)
		}
	}
	return fmt.Errorf("%w: %w", ErrPartial, errors.Join(es...))
}

// restore puts the files and state documents of tck in place of the
// captured state now, within scope.
func (r *Repo) restore(ctx context.Context, src worktree.Source, cache *index.Cache, tck *objects.Checkpoint, now *captured, scope rewindScope, dryRun bool, res *RewindResult) error {
	if scope.Files {
		// Paths that could not be read, now or when the target was
		// captured, are left as they are: neither side knows their content.
		keep := slices.Concat(now.unreadable(), tck.Skipped, now.excluded)
		var undoFrom objects.ID // the tree the undone rewind wrote its created paths from
		if scope.UndoFrom != nil {
			if ck, err := r.objects.ReadCheckpoint(*scope.UndoFrom); err == nil {
				undoFrom = ck.Tree
			}
		}
		rr, err := worktree.Restore(ctx, src, now.tree, tck.Tree, worktree.RestoreOptions{
			Root: r.Root, StoreDir: r.StoreDir, Paths: scope.Paths, Keep: keep, DryRun: dryRun, Cache: cache, Sys: r.sys, Trash: r.trashDir(),
			UndoCreated: scope.UndoCreated, UndoFrom: undoFrom})
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
						return (dryRun || errors.Is(err, fs.ErrNotExist)) &&
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
				res.Skipped = append(res.Skipped, worktree.Skipped{Path: p, Kept: true,
					Reason: "could not be read when the target was checkpointed"})
			}
		}
	}
	if scope.State {
		return r.restoreState(tck, now, scope.StateOut, dryRun, res)
	}
	return nil
}

// restoreState writes the target's state documents back to their source
// paths (or into stateOut), skipping those already equal; a document the
// target records as absent (a source and no content) is removed from its
// source path.
func (r *Repo) restoreState(tck *objects.Checkpoint, now *captured, stateOut string, dryRun bool, res *RewindResult) error {
	st, err := r.objects.ReadTree(tck.State)
	if err != nil {
		return err
	}
	if stateOut == "" {
		for _, name := range slices.Sorted(maps.Keys(tck.StateSources)) {
			dest := tck.StateSources[name]
			if _, ok := st.Find(name); ok || now.sources[name] != dest {
				continue
			}
			if _, present := now.docs[name]; !present {
				continue // absent now too
			}
			if err := r.safeStatePath(dest); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error()})
				continue
			}
			real, err := r.docPath(dest) // a link stays; the file it leads to goes
			if err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error()})
				continue
			}
			if !dryRun {
				if err := os.Remove(real); err != nil && !errors.Is(err, fs.ErrNotExist) {
					res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
					continue
				}
			}
			res.State = append(res.State, StateRestored{Name: name, Path: dest, Deleted: true})
		}
	}
	for _, e := range st.Entries {
		dest := tck.StateSources[e.Name]
		if stateOut != "" {
			dest = filepath.Join(stateOut, e.Name)
		}
		if dest == "" {
			if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID {
				continue // from stdin, and as in the target already
			}
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
		if stateOut == "" && now.sources[e.Name] != dest {
			// The head keeps this document elsewhere, so the safety
			// checkpoint holds that copy, not the file here: a file here
			// that differs is not overwritten.
			if real, err := r.docPath(dest); err == nil {
				if f, err := os.Open(real); err == nil {
					fi, serr := f.Stat()
					same := serr == nil && worktree.SameBlob(r.objects, e.ID, f, fi.Size())
					f.Close()
					if same {
						continue
					}
					res.Errors = append(res.Errors, worktree.PathError{Path: dest,
						Error: fmt.Sprintf("holds another version of %s, which the session now keeps at %s: not overwritten; use --state-out DIR", e.Name, now.sources[e.Name])})
					continue
				}
			}
		}
		if dryRun {
			_, err = r.docPath(dest)
		} else {
			err = r.writeDoc(e.ID, dest)
		}
		if err != nil {
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error()})
			continue
		}
		res.State = append(res.State, StateRestored{Name: e.Name, Path: dest})
	}
	sort.Slice(res.State, func(i, j int) bool { return res.State[i].Name < res.State[j].Name })
	return nil
}

// safeStatePath refuses state-document destinations inside the store or a
// .git directory, streams and devices (/dev, /proc), and relative ones.
func (r *Repo) safeStatePath(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("state path %q is not absolute and clean", p)
	}
	if isStream(p) || strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/dev/") && !strings.HasPrefix(p, "/dev/shm/") {
		return fmt.Errorf("state path %q is a device or stream, not a file; use --state-out DIR", p)
	}
	// Checked as written and as the file system resolves it: a directory
	// on the way may be a symlink into the store, /dev or a .git.
	real := p
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		real = filepath.Join(dir, filepath.Base(p))
	}
	store := r.StoreDir
	if s, err := filepath.EvalSymlinks(store); err == nil {
		store = s
	}
	for _, q := range []string{p, real} {
		if isStream(q) || strings.HasPrefix(q, "/sys/") || strings.HasPrefix(q, "/dev/") && !strings.HasPrefix(q, "/dev/shm/") {
			return fmt.Errorf("state path %q leads to a device or stream, not a file; use --state-out DIR", p)
		}
		for _, s := range []string{r.StoreDir, store} {
			if q == s || strings.HasPrefix(q, s+string(filepath.Separator)) {
				return fmt.Errorf("state path %q lies inside the store", p)
			}
		}
		for _, c := range strings.Split(q, string(filepath.Separator)) {
			if objects.IsReservedName(c) && strings.EqualFold(strings.TrimRight(c, ". "), ".git") {
				return fmt.Errorf("state path %q lies inside a .git directory", p)
			}
		}
	}
	return nil
}

// followLinks follows the symlink at p, and the one it leads to, and so on,
// to the path of what is not a symlink (which may not exist), refusing a
// chain that passes through a stream or device (/dev/stdin, /proc/self/fd
// — where a write would land on whatever the process's descriptor is).
func followLinks(p string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if p = filepath.Clean(target); isStream(p) {
			return "", fmt.Errorf("%s leads to %s, a stream or device", p, target)
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

// docPath is the file a state document recorded at dest is written to
// or removed from: dest, or, when dest is a symlink, the file the chain of
// links leads to (the one an agent appends to; the links stay). That file
// may be missing, its directory may not: a link leading into a missing
// directory, a stream or a protected place is refused. A rewind and its
// dry run make the same checks.
func (r *Repo) docPath(dest string) (string, error) {
	fi, err := os.Lstat(dest)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return dest, nil
	}
	real, err := followLinks(dest)
	if err != nil {
		return "", fmt.Errorf("%s: %v; use --state-out DIR", dest, err)
	}
	if _, err := os.Stat(real); err != nil {
		if fi, derr := os.Stat(filepath.Dir(real)); !errors.Is(err, fs.ErrNotExist) || derr != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s is a symlink to %s, which cannot be written (%v); use --state-out DIR", dest, real, err)
		}
	}
	if err := r.safeStatePath(real); err != nil {
		return "", err
	}
	return real, nil
}

// writeDoc writes a stored document to dest (see docPath) by temporary
// file and rename.
func (r *Repo) writeDoc(id objects.ID, dest string) error {
	dest, err := r.docPath(dest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(dest), worktree.TempName()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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

// Journal of the move in progress; moves in one store run one at a time.
const (
	journalName  = gc.MoveJournal
	moveLockName = "move.lock"
)

// waitMoves waits for a rewind, undo or redo moving files in this project
// (bounded by gc.LockTimeout, then refs.ErrBusy) and holds further ones off
// until the returned function is called; any number of holders share it.
func (r *Repo) waitMoves(ctx context.Context) (func(), error) {
	f, err := gc.LockFile(ctx, filepath.Join(r.StoreDir, moveLockName), unix.LOCK_SH, gc.LockTimeout)
	if err != nil {
		return nil, fmt.Errorf("waiting for a rewind in progress: %w", err)
	}
	return func() { f.Close() }, nil
}

// lockMoves serialises rewinds, undos and redos of the working tree.
func (r *Repo) lockMoves(ctx context.Context) (func(), error) {
	f, err := gc.LockFile(ctx, filepath.Join(r.StoreDir, moveLockName), unix.LOCK_EX, gc.LockTimeout)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

func newTxn() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeJournal durably records m before the working tree is touched.
func (r *Repo) writeJournal(m *move) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeFileAtomic(r.fs, filepath.Join(r.StoreDir, journalName), data)
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

// finishMove moves the head to m.NewHead, records the operation and removes
// the journal. It is idempotent, so a recovery may repeat what a killed
// move already did.
func (r *Repo) finishMove(m *move) error {
	head, err := r.refs.Get(refs.SessionHead(m.Session))
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return err
	}
	switch {
	case head == m.NewHead:
	case m.NewHead.IsZero(): // undoing a rewind made before the session's first checkpoint
		if err := r.refs.Delete(refs.SessionHead(m.Session), m.Current); err != nil {
			return err
		}
	default:
		if err := r.refs.Update(refs.SessionHead(m.Session), m.Current, m.NewHead); err != nil {
			return err
		}
	}
	done, err := r.recorded(m.Scope.Txn)
	if err != nil {
		return err
	}
	if !done {
		if err := r.refs.Append(m.op()); err != nil {
			return err
		}
	}
	if err := r.fs.Remove(filepath.Join(r.StoreDir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// recorded reports whether the op log holds the move with this txn.
func (r *Repo) recorded(txn string) (bool, error) {
	ops, err := r.refs.Ops()
	if err != nil && len(ops) == 0 {
		return false, err
	}
	for i := len(ops) - 1; i >= 0; i-- {
		var sc rewindScope
		if len(ops[i].Detail) > 0 && json.Unmarshal(ops[i].Detail, &sc) == nil && sc.Txn == txn {
			return true, nil
		}
	}
	return false, nil
}

// InterruptedMove is a rewind, undo or redo that was killed or interrupted
// after it began to change the working tree: the tree is part way between
// the state before (Safety) and Target. The next command that changes the
// store completes it (after which 'snap undo' returns to Safety).
type InterruptedMove struct {
	Kind    string     `json:"kind"` // rewind, undo, redo
	Session string     `json:"session"`
	Target  objects.ID `json:"target"`
	Safety  objects.ID `json:"safety"`
}

// Interrupted reports the move a killed or interrupted process left
// unfinished (nil when there is none, or when its process still runs).
// Read-only commands use it to say so; they never complete it.
func (r *Repo) Interrupted() (*InterruptedMove, error) {
	data, err := r.fs.ReadFile(filepath.Join(r.StoreDir, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lock, err := gc.LockFile(context.Background(), filepath.Join(r.StoreDir, moveLockName), unix.LOCK_SH, 0)
	if err != nil {
		return nil, nil // its process still runs: a move in progress, not an interrupted one
	}
	lock.Close()
	var m move
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", objects.ErrCorrupt, journalName, err)
	}
	return &InterruptedMove{Kind: m.Kind, Session: m.Session, Target: m.Target, Safety: m.Safety}, nil
}

// recoverMove completes a rewind, undo or redo that was killed after its
// safety checkpoint: the journal says where it was going, so the working
// tree (which may hold a mix of old and new files, never a torn one) is
// brought to the target, the head moved and the operation recorded, and
// 'snap undo' then returns to the safety checkpoint. It does nothing when
// there is no journal or when the move's own process still runs.
func (r *Repo) recoverMove(ctx context.Context) error {
	path := filepath.Join(r.StoreDir, journalName)
	if _, err := r.fs.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lock, err := gc.LockFile(ctx, filepath.Join(r.StoreDir, moveLockName), unix.LOCK_EX, 0)
	if err != nil {
		return nil // a live move holds it: not ours to finish
	}
	defer lock.Close()
	data, err := r.fs.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var m move
	if err := json.Unmarshal(data, &m); err != nil {
		// writeJournal replaces the file atomically, so this is damage.
		return fmt.Errorf("%w: %s: %v", objects.ErrCorrupt, path, err)
	}
	tck, err := r.objects.ReadCheckpoint(m.Target)
	var head *objects.Checkpoint
	if err == nil && !m.Current.IsZero() {
		head, err = r.objects.ReadCheckpoint(m.Current)
	}
	if err != nil && !errors.Is(err, objects.ErrNotFound) && !errors.Is(err, objects.ErrCorrupt) {
		// Unreadable for now (I/O): the journal stays, a gc root, and the
		// next command tries again.
		return fmt.Errorf("completing an interrupted %s: %w", m.Kind, err)
	}
	if err != nil {
		// Its checkpoints are gone (damage): completing it is impossible,
		// and retrying at every command would block the store. Set the
		// journal aside for inspection; fsck reports the damage.
		r.fs.Rename(path, path+".abandoned")
		return nil
	}
	w := r.objects.NewWriter()
	defer w.Abort()
	cache := r.loadCache()
	spec := captureSpec{parent: head, rules: []objects.ID{tck.Tree}, exclude: tck.StateSources}
	if m.Scope.State && m.Scope.StateOut == "" {
		spec.sources = tck.StateSources
	}
	now, err := r.capture(ctx, w, cache, spec)
	if err != nil {
		return err
	}
	// What is there now may hold work done since the interruption: unless
	// it is what the move started from or where it was going, it is
	// recorded first (listed by log, kept by gc through the op log), so
	// completing the move loses nothing.
	// (The head is where the move left it: its safety checkpoint, or
	// already the target when it was killed while recording itself.)
	curID, cur, err := r.head(m.Session)
	if err != nil {
		return err
	}
	if cur != nil && !now.same(cur) && !now.same(tck) && (head == nil || !now.same(head)) {
		found, _, err := r.buildCheckpoint(w, m.Session, curID, cur, now, CheckpointOptions{Kind: kindPreRewind,
			Summary: "found when completing the interrupted " + m.Kind + " to " + m.Target.Short()})
		if err != nil {
			return err
		}
		if _, err := w.Commit(); err != nil {
			return err
		}
		if err := r.refs.Update(refs.SessionHead(m.Session), curID, found.ID); err != nil {
			return fmt.Errorf("completing an interrupted %s: %w", m.Kind, err)
		}
		m.Current, m.Found = found.ID, found.ID
		if err := r.writeJournal(&m); err != nil {
			return err
		}
	}
	res := &RewindResult{}
	if err := r.restore(ctx, w, cache, tck, now, m.Scope, false, res); err != nil {
		return err
	}
	cache.SaveFS(r.fs, r.cachePath())
	return r.finishMove(&m)
}
