package snap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// Staged edits (package workflow stages, previews and commits them): the
// pending changes of a session live in the store (edits/SESSION.json,
// replaced atomically under edits/SESSION.lock), so a crash or another
// process loses none. Their commit is a move (MoveSpec.Commit): a safety
// checkpoint of the present, then the changed paths written through the
// move journal (all or, after a crash, completed by the next command), and
// an edit-commit checkpoint of the result; undo puts those paths back and
// stages the changes again.

// Edits is a session's staged edits, held under the session's edits lock
// from OpenEdits until Close.
type Edits struct {
	Session string
	Pending *edits.Pending
	r       *Repo
	unlock  func()
}

// OpenEdits takes the session's edits lock (bounded by the lock timeout,
// then ErrBusy) and reads its pending changes, settling first a commit a
// killed process left.
func (st *Steps) OpenEdits(ctx context.Context, session string) (*Edits, error) {
	r := st.r
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	unlock, err := r.lockEdits(ctx, session)
	if err != nil {
		return nil, err
	}
	p, err := r.loadEdits(session)
	if err != nil {
		unlock()
		return nil, err
	}
	return &Edits{Session: session, Pending: p, r: r, unlock: unlock}, nil
}

// Save replaces the session's pending changes with e.Pending, durably
// (none: the file goes).
func (e *Edits) Save() error { return e.r.saveEdits(e.Session, e.Pending) }

// Close releases the edits lock.
func (e *Edits) Close() { e.unlock() }

// PeekEdits reads the session's pending changes without the lock (a
// glance: OpenEdits reads them for a change).
func (st *Steps) PeekEdits(ctx context.Context, session string) (*edits.Pending, error) {
	r := st.r
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	return r.readEdits(session)
}

// ProjectPath is p (project-relative with slashes, or absolute inside the
// project) relative to the project root, refused (ErrUsage) when it lies
// outside it, in .git or in the store, has a name snap cannot record, or
// goes through a symlink or a file: the path of a project file snap may
// write.
func (st *Steps) ProjectPath(p string) (string, error) { return st.r.editPath(p) }

// Ignored reports whether the ignore rules in force (.gitignore,
// .snapignore, git's excludes) ignore project path rel: checkpoints do not
// record it.
func (st *Steps) Ignored(rel string) bool { return worktree.Ignored(st.r.Root, rel, false) }

// ProjectFile reads project file rel (see ProjectPath) as it is now: its
// content and content id ("" and nil when it does not exist). Only a
// regular file no larger than capture.max-file-size is read; anything
// else is ErrUsage.
func (st *Steps) ProjectFile(rel string) ([]byte, string, error) { return st.r.fileBase(rel) }

// editPath is a request path relative to the project root, refused when
// it lies outside it, in .git or in the store.
func (r *Repo) editPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: no path given", ErrUsage)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.Root, filepath.FromSlash(p))
	}
	rel, err := filepath.Rel(r.Root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		// The root reached through a symlink: the same file by its real path.
		if real, rerr := filepath.EvalSymlinks(r.Root); rerr == nil {
			rel, err = filepath.Rel(real, abs)
		}
	}
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s is outside the project %s", ErrUsage, p, r.Root)
	}
	if s, err := filepath.Rel(r.StoreDir, abs); err == nil && filepath.IsLocal(s) || abs == r.StoreDir {
		return "", fmt.Errorf("%w: %s is inside the store", ErrUsage, p)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, c := range parts {
		if objects.IsReservedName(c) {
			return "", fmt.Errorf("%w: %s is inside a .git directory", ErrUsage, p)
		}
		if err := objects.ValidName(c); err != nil {
			return "", fmt.Errorf("%w: %s: %v (snap cannot record such a name)", ErrUsage, p, err)
		}
	}
	// No symlink on the way: an edit reads and writes the project's own
	// files, never what a link leads to (outside the project, perhaps).
	dir := r.Root
	for _, c := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, c)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return filepath.ToSlash(rel), nil // a new directory: nothing beneath exists
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			rd, _ := filepath.Rel(r.Root, dir)
			return "", fmt.Errorf("%w: %s goes through the symlink %s: edits follow no symlink (edit the file at its own path)", ErrUsage, p, filepath.ToSlash(rd))
		case !fi.IsDir():
			rd, _ := filepath.Rel(r.Root, dir)
			kind := "file"
			if !fi.Mode().IsRegular() {
				kind = fileKind(fi.Mode())
			}
			return "", fmt.Errorf("%w: %s: %s is a %s, not a directory", ErrUsage, p, filepath.ToSlash(rd), kind)
		}
	}
	return filepath.ToSlash(rel), nil
}

// fileBase reads a project file as a change's base: its content and its
// content id ("" and nil when it does not exist). Only regular files are
// edited.
func (r *Repo) fileBase(rel string) ([]byte, string, error) {
	p := filepath.Join(r.Root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%w: %s is not a regular file (a %s)", ErrUsage, rel, fileKind(fi.Mode()))
	}
	if fi.Size() > r.MaxFileSize() {
		return nil, "", fmt.Errorf("%w: %s is larger than capture.max-file-size", ErrUsage, rel)
	}
	// Read from what was checked: a file swapped meanwhile for a symlink
	// or a FIFO is refused, never followed or waited on.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s changed while it was read: %v", ErrConflict, rel, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%w: %s is not a regular file any more", ErrConflict, rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, r.MaxFileSize()+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > r.MaxFileSize() {
		return nil, "", fmt.Errorf("%w: %s is larger than capture.max-file-size", ErrUsage, rel)
	}
	w := r.objects.NewDryWriter()
	defer w.Abort()
	id, _, err := w.PutBlob(bytes.NewReader(data))
	if err != nil {
		return nil, "", err
	}
	return data, id.String(), nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func (r *Repo) editsFile(session string) string {
	return filepath.Join(r.StoreDir, "edits", session+".json")
}

// loadEdits reads the session's pending changes (the caller holds the
// edits lock) and settles a commit a killed process left: when the op log
// records its txn, it completed and the changes are gone; when its move is
// still journalled, it is completed first (the writer lock runs the
// recovery); otherwise it never moved a file and the changes stay.
func (r *Repo) loadEdits(session string) (*edits.Pending, error) {
	p, err := r.readEdits(session)
	if err != nil || p.Committing == "" {
		return p, err
	}
	ctx := context.Background()
	if r.refs.JournalPending() {
		t, err := r.begin(ctx, writer) // completes the journalled move
		if err != nil {
			return nil, err
		}
		t.end()
	}
	done, err := r.history().recorded(p.Committing)
	if err != nil {
		return nil, err
	}
	if done {
		p = edits.New()
	} else {
		p.Committing = ""
	}
	return p, r.saveEdits(session, p)
}

func (r *Repo) readEdits(session string) (*edits.Pending, error) {
	data, err := os.ReadFile(r.editsFile(session))
	if errors.Is(err, fs.ErrNotExist) {
		return edits.New(), nil
	}
	if err != nil {
		return nil, err
	}
	p := edits.New()
	if err := json.Unmarshal(data, p); err != nil || p.Version != edits.Version {
		return nil, fmt.Errorf("%w: %s: not a pending-changes document of this snap (%v)", ErrCorrupt, r.editsFile(session), err)
	}
	return p, nil
}

// saveEdits replaces the session's pending changes durably (none: the file
// goes).
func (r *Repo) saveEdits(session string, p *edits.Pending) error {
	if len(p.Changes) == 0 {
		if err := os.Remove(r.editsFile(session)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return fsys.WriteFileAtomic(r.fs, r.editsFile(session), append(data, '\n'))
}

// restageEdits, for the undo of an operation that committed or dropped
// staged edits (recorded), stages them again when none are pending; for
// its redo, drops them again when they are still exactly what is pending.
func (r *Repo) restageEdits(ctx context.Context, session string, recorded json.RawMessage, undo bool) error {
	unlock, err := r.lockEdits(ctx, session)
	if err != nil {
		return err
	}
	defer unlock()
	was := edits.New()
	if err := json.Unmarshal(recorded, was); err != nil {
		return fmt.Errorf("%w: staged edits in the op log: %v", ErrCorrupt, err)
	}
	was.Committing = ""
	now, err := r.loadEdits(session)
	if err != nil {
		return err
	}
	switch {
	case undo && len(now.Changes) == 0:
		return r.saveEdits(session, was)
	case !undo && slices.EqualFunc(now.Changes, was.Changes, func(a, b edits.Change) bool { return a == b }):
		return r.saveEdits(session, edits.New())
	}
	return nil
}
