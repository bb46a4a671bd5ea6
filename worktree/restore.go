package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
)

// Source is what a restore reads: trees and file contents, verified.
type Source interface {
	objects.TreeReader
	WriteBlob(id objects.ID, out io.Writer) (int64, error)
}

// RestoreOptions configure a restore.
type RestoreOptions struct {
	Root     string       // project root (absolute)
	StoreDir string       // never written
	Paths    []string     // when set, only these paths and what lies beneath them
	DryRun   bool         // compute and report, change nothing
	Cache    *index.Cache // updated with the stat of every file written
}

// PathError is a path a restore refused or failed to write.
type PathError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// RestoreResult lists what a restore changed (or, in a dry run, would).
type RestoreResult struct {
	Restored []string    `json:"restored"` // written: added or modified
	Deleted  []string    `json:"deleted"`
	Errors   []PathError `json:"errors"`
}

// Restore changes the working tree whose captured view is the tree current
// into the tree target. Only differing paths are touched; each file is
// written to a temporary file in its directory and renamed into place, so no
// file is ever seen half-written. Files captured in current and absent from
// target are deleted; directories they leave empty are removed. Nothing
// outside opts.Root, in .git or the store, or reached through a symlink is
// ever written: leading path components are opened with O_NOFOLLOW and a
// symlink at the leaf is replaced, not followed. A path already present on
// disk that current did not capture (an ignored file) is never overwritten.
// Entries whose names collide on a case-insensitive or normalising
// filesystem are refused. Per-path problems go to Errors and do not stop the
// other paths.
func Restore(ctx context.Context, src Source, current, target objects.ID, opts RestoreOptions) (*RestoreResult, error) {
	r := &restorer{src: src, opts: opts, res: &RestoreResult{Restored: []string{}, Deleted: []string{}, Errors: []PathError{}},
		trees: map[string]*objects.Tree{}, collisions: map[string]map[string]bool{}, target: target, start: time.Now()}
	if rel, err := filepath.Rel(opts.Root, opts.StoreDir); err == nil && rel != "." && filepath.IsLocal(rel) {
		r.storeRel = filepath.ToSlash(rel)
	}
	var writes, deletes []objects.Change
	err := objects.DiffTrees(src, current, target, func(c objects.Change) error {
		if !inPaths(c.Path, opts.Paths) {
			return nil
		}
		if c.New.Mode == 0 {
			deletes = append(deletes, c)
		} else {
			writes = append(writes, c)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	rootfd, err := unix.Open(opts.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: opts.Root, Err: err}
	}
	defer unix.Close(rootfd)
	r.rootfd = rootfd

	// 1. Delete captured files the target does not have.
	emptied := map[string]bool{}
	for _, c := range deletes {
		if opts.DryRun {
			r.res.Deleted = append(r.res.Deleted, c.Path)
			continue
		}
		if err := r.remove(c.Path); err != nil {
			r.fail(c.Path, err)
			continue
		}
		r.res.Deleted = append(r.res.Deleted, c.Path)
		for d := path.Dir(c.Path); d != "."; d = path.Dir(d) {
			emptied[d] = true
		}
	}
	// 2. Remove directories left empty that the target does not have as
	// directories. Deepest first; a directory still holding ignored files
	// stays.
	if !opts.DryRun {
		dirs := make([]string, 0, len(emptied))
		for d := range emptied {
			dirs = append(dirs, d)
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if r.targetIsDir(d) {
				continue
			}
			if pfd, name, err := r.openParent(d, false); err == nil {
				unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR) // fails harmlessly when not empty
				unix.Close(pfd)
			}
		}
	}
	// 3. Write added and modified files.
	for _, c := range writes {
		if err := ctx.Err(); err != nil {
			return r.res, err
		}
		if err := r.refused(c.Path); err != nil {
			r.fail(c.Path, err)
			continue
		}
		if opts.DryRun {
			r.res.Restored = append(r.res.Restored, c.Path)
			continue
		}
		if err := r.write(c); err != nil {
			r.fail(c.Path, err)
			continue
		}
		r.res.Restored = append(r.res.Restored, c.Path)
	}
	return r.res, nil
}

type restorer struct {
	src        Source
	opts       RestoreOptions
	res        *RestoreResult
	rootfd     int
	storeRel   string
	target     objects.ID
	trees      map[string]*objects.Tree   // target trees by directory path ("" = root)
	collisions map[string]map[string]bool // per target directory: names that collide
	start      time.Time
}

func (r *restorer) fail(p string, err error) {
	r.res.Errors = append(r.res.Errors, PathError{Path: p, Error: errText(err)})
}

// inPaths reports whether p is one of paths or beneath one.
func inPaths(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, q := range paths {
		q = strings.Trim(path.Clean("/"+filepath.ToSlash(q)), "/")
		if q == "" || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// Errors of a refused or failed restore path.
var (
	ErrCollision = errors.New("name collides with another entry on case-insensitive or normalising filesystems")
	ErrNotDir    = errors.New("a path component is not a directory (or is a symlink)")
	ErrUntracked = errors.New("exists on disk but was not captured (ignored or skipped); left untouched")
	ErrStorePath = errors.New("path lies inside the store")
	ErrBadPath   = errors.New("illegal path")
)

// refused checks a path to be written against the rules that do not depend
// on the disk: legal names, not the store, no colliding names.
func (r *restorer) refused(p string) error {
	if r.storeRel != "" && (p == r.storeRel || strings.HasPrefix(p, r.storeRel+"/")) {
		return ErrStorePath
	}
	dir := ""
	for _, name := range strings.Split(p, "/") {
		if err := objects.ValidName(name); err != nil {
			return fmt.Errorf("%w: %v", ErrBadPath, err)
		}
		col, err := r.collisionsIn(dir)
		if err != nil {
			return err
		}
		if col[name] {
			return fmt.Errorf("%w: %q", ErrCollision, name)
		}
		dir = path.Join(dir, name)
	}
	return nil
}

var folder = cases.Fold()

// foldName is the key under which case-insensitive, normalising
// filesystems compare names.
func foldName(name string) string {
	return folder.String(norm.NFC.String(name))
}

func (r *restorer) collisionsIn(dir string) (map[string]bool, error) {
	if c, ok := r.collisions[dir]; ok {
		return c, nil
	}
	t, err := r.targetTree(dir)
	if err != nil {
		return nil, err
	}
	c := map[string]bool{}
	if t != nil {
		first := map[string]string{}
		for _, e := range t.Entries {
			k := foldName(e.Name)
			if other, ok := first[k]; ok {
				c[other], c[e.Name] = true, true
			} else {
				first[k] = e.Name
			}
		}
	}
	r.collisions[dir] = c
	return c, nil
}

// targetTree returns the target's tree at dir, nil if dir is not a
// directory in the target.
func (r *restorer) targetTree(dir string) (*objects.Tree, error) {
	if t, ok := r.trees[dir]; ok {
		return t, nil
	}
	var t *objects.Tree
	var err error
	if dir == "" {
		t, err = r.src.ReadTree(r.target)
	} else {
		pdir := path.Dir(dir)
		if pdir == "." {
			pdir = ""
		}
		parent, perr := r.targetTree(pdir)
		if perr != nil {
			return nil, perr
		}
		if parent != nil {
			if e, ok := parent.Find(path.Base(dir)); ok && e.Mode == objects.ModeDir {
				t, err = r.src.ReadTree(e.ID)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	r.trees[dir] = t
	return t, nil
}

func (r *restorer) targetIsDir(dir string) bool {
	t, err := r.targetTree(dir)
	return err == nil && t != nil
}

// openParent opens the directory holding p, walking from the root one
// component at a time without following symlinks, creating missing
// directories when create is set. It returns the directory fd and p's
// base name.
func (r *restorer) openParent(p string, create bool) (int, string, error) {
	comps := strings.Split(p, "/")
	fd, err := unix.Dup(r.rootfd)
	if err != nil {
		return -1, "", err
	}
	for _, c := range comps[:len(comps)-1] {
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, c, 0o777); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return -1, "", fmt.Errorf("%w: %s", ErrNotDir, c)
			}
			return -1, "", err
		}
		fd = next
	}
	return fd, comps[len(comps)-1], nil
}

// remove deletes a captured file or symlink.
func (r *restorer) remove(p string) error {
	fd, name, err := r.openParent(p, false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// write puts one file or symlink in place by temporary file and rename.
func (r *restorer) write(c objects.Change) error {
	fd, name, err := r.openParent(c.Path, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		// A directory where the target has a file: only an empty one
		// (captured trees omit empty directories) may go.
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil {
			return fmt.Errorf("a directory is in the way: %w", err)
		}
	case err == nil && c.Old.Mode == 0:
		return ErrUntracked
	case err != nil && !errors.Is(err, unix.ENOENT):
		return err
	}
	tmp := TempName()
	if c.New.Mode == objects.ModeSymlink {
		var target strings.Builder
		if _, err := r.src.WriteBlob(c.New.ID, &target); err != nil {
			return err
		}
		if err := unix.Symlinkat(target.String(), fd, tmp); err != nil {
			return err
		}
	} else {
		perm := uint32(0o666)
		if c.New.Mode == objects.ModeExec {
			perm = 0o777
		}
		tfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(tfd), tmp)
		_, werr := r.src.WriteBlob(c.New.ID, f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			unix.Unlinkat(fd, tmp, 0)
			return werr
		}
	}
	if err := unix.Renameat(fd, tmp, fd, name); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return err
	}
	if r.opts.Cache != nil && c.New.Mode != objects.ModeSymlink {
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			r.opts.Cache.Put(c.Path, statFromUnix(&st), c.New.ID, r.start)
		}
	}
	return nil
}
