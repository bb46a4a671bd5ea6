package snap

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// restoreState writes the target's state documents back to their source
// paths (or into scope.StateOut), skipping those already equal; a document
// the target records as absent (a source and no content) is removed from
// its source path, and so is, by an undo, a copy the rewind it undoes
// created (scope.UndoCreatedState) while it holds what that rewind wrote.
func (r *Repo) restoreState(tck *objects.Checkpoint, now *captured, scope rewindScope, dryRun bool, res *RewindResult) error {
	st, err := r.objects.ReadTree(tck.State)
	if err != nil {
		return err
	}
	stateOut := scope.StateOut
	wanted := func(name string) bool { return len(scope.Docs) == 0 || slices.Contains(scope.Docs, name) }
	if stateOut == "" && !scope.Foreign {
		r.removeCreatedState(tck, scope, dryRun, res)
		for _, name := range slices.Sorted(maps.Keys(tck.StateSources)) {
			if !wanted(name) {
				continue
			}
			dest := tck.StateSources[name]
			if _, ok := st.Find(name); ok || now.sources[name] != dest {
				continue
			}
			if _, present := now.docs[name]; !present {
				continue // absent now too
			}
			if err := r.safeStatePath(dest); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
				continue
			}
			real, err := r.docPath(dest) // a link stays; the file it leads to goes
			if err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
				continue
			}
			if !dryRun {
				if err := r.removeDoc(real); err != nil {
					res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
					continue
				}
			}
			res.State = append(res.State, StateRestored{Name: name, Path: dest, Deleted: true})
		}
	}
	for _, e := range st.Entries {
		if !wanted(e.Name) {
			continue
		}
		dest := tck.StateSources[e.Name]
		if scope.Foreign && stateOut == "" {
			// Taken elsewhere: only where this machine's head reads it.
			if dest = now.sources[e.Name]; dest == "" && e.Name != TaskDoc {
				res.Errors = append(res.Errors, stateOutError("state:"+e.Name, "taken in another store: its recorded path is not this machine's"))
				continue
			}
		}
		if stateOut != "" {
			dest = filepath.Join(stateOut, e.Name)
		}
		if dest == "" && e.Name == TaskDoc {
			continue // the task stack has no file: it travels with the head
		}
		if dest == "" {
			if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID {
				continue // from stdin, and as in the target already
			}
			res.Errors = append(res.Errors, stateOutError("state:"+e.Name, "no recorded source path (read from stdin)"))
			continue
		}
		if err := r.safeStatePath(dest); err != nil {
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
			continue
		}
		if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID && now.sources[e.Name] == dest {
			continue // already as in the target
		}
		created := false
		if stateOut == "" && now.sources[e.Name] != dest {
			// The head keeps this document elsewhere, so the safety
			// checkpoint holds that copy, not the file here: a file here
			// that differs is not overwritten; where nothing is, the file
			// written is listed as created.
			if real, err := r.docPath(dest); err == nil {
				_, lerr := os.Lstat(real)
				created = errors.Is(lerr, fs.ErrNotExist)
				if f, err := os.Open(real); err == nil {
					fi, serr := f.Stat()
					same := serr == nil && worktree.SameBlob(r.objects, e.ID, f, fi.Size())
					f.Close()
					if same {
						continue
					}
					res.Errors = append(res.Errors, stateOutError(dest,
						fmt.Sprintf("holds another version of %s, which the session now keeps at %s: not overwritten", e.Name, now.sources[e.Name])))
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
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
			continue
		}
		res.State = append(res.State, StateRestored{Name: e.Name, Path: dest, Created: created})
	}
	sort.SliceStable(res.State, func(i, j int) bool { return res.State[i].Name < res.State[j].Name })
	return nil
}

// removeCreatedState removes, for an undo, each state document the rewind
// it undoes created where the target (its safety checkpoint) keeps no
// document, while the file holds what that rewind wrote.
func (r *Repo) removeCreatedState(tck *objects.Checkpoint, scope rewindScope, dryRun bool, res *RewindResult) {
	if len(scope.UndoCreatedState) == 0 || scope.UndoFrom == nil {
		return
	}
	from, err := r.objects.ReadCheckpoint(*scope.UndoFrom)
	if err != nil {
		return // expired or damaged: nothing to compare with, so it stays
	}
	fst, err := r.objects.ReadTree(from.State)
	if err != nil {
		return
	}
	for _, c := range scope.UndoCreatedState {
		e, ok := fst.Find(c.Name)
		if !ok || slices.Contains(slices.Collect(maps.Values(tck.StateSources)), c.Path) || r.safeStatePath(c.Path) != nil {
			continue
		}
		real, err := r.docPath(c.Path)
		if err != nil {
			continue
		}
		f, err := os.Open(real)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		same := err == nil && fi.Mode().IsRegular() && worktree.SameBlob(r.objects, e.ID, f, fi.Size())
		f.Close()
		if !same {
			continue // changed since: it stays
		}
		if !dryRun {
			if err := r.removeDoc(real); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: c.Path, Error: err.Error(), Err: err})
				continue
			}
		}
		res.State = append(res.State, StateRestored{Name: c.Name, Path: c.Path, Deleted: true})
	}
}

// safeStatePath refuses state-document destinations inside the store or a
// .git directory, streams and devices (/dev, /proc), and relative ones.
func (r *Repo) safeStatePath(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("state path %q is not absolute and clean", p)
	}
	if isStream(p) || strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/dev/") && !strings.HasPrefix(p, "/dev/shm/") {
		return Advise(fmt.Errorf("state path %q is a device or stream, not a file", p), Advice{Do: DoStateOut})
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
			return Advise(fmt.Errorf("state path %q leads to a device or stream, not a file", p), Advice{Do: DoStateOut})
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
		return "", Advise(fmt.Errorf("%s: %v", dest, err), Advice{Do: DoStateOut})
	}
	if _, err := os.Stat(real); err != nil {
		if fi, derr := os.Stat(filepath.Dir(real)); !errors.Is(err, fs.ErrNotExist) || derr != nil || !fi.IsDir() {
			return "", Advise(fmt.Errorf("%s is a symlink to %s, which cannot be written (%v)", dest, real, err), Advice{Do: DoStateOut})
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
	if err == nil {
		err = f.Sync() // durable before the move is recorded (design §4)
	}
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
		return err
	}
	return r.fs.SyncDir(filepath.Dir(dest))
}

// removeDoc removes a state document's file (absent is fine), durably.
func (r *Repo) removeDoc(real string) error {
	if err := os.Remove(real); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return r.fs.SyncDir(filepath.Dir(real))
}

// stateOutError is a state document a rewind could not put at path p, for
// reason: writing the documents to a directory of one's choice does.
func stateOutError(p, reason string) worktree.PathError {
	return worktree.PathError{Path: p, Error: reason, Err: Advise(errors.New(reason), Advice{Do: DoStateOut})}
}
