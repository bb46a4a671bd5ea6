package worktree

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
)

// CapturePaths records a tree equal to base except at the given paths, which
// are examined on disk as Capture would (a directory is captured whole; a
// path that no longer exists, or is now ignored, is removed). Its cost
// follows the number of paths, not the size of the tree: this is the
// edit-set checkpoint a pre-edit hook takes. Paths are relative to the root
// or absolute inside it. Snapshot.Files is -1: only a full capture counts.
func CapturePaths(ctx context.Context, w *objects.Writer, base objects.ID, paths []string, opts Options) (*Snapshot, error) {
	rels, err := normalizePaths(opts.Root, paths)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 || rels[0] == "" {
		return Capture(ctx, w, opts)
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	workers := opts.Workers
	if workers != 1 {
		workers = max(4, workers)
	}
	c := &capturer{ctx: ctx, opts: opts, sys: fsys.OrSys(opts.Sys), w: w, scanStart: time.Now(),
		sem: walkers(workers)}
	c.setExcluded()
	rootfd, err := unix.Open(opts.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", err)
	}
	defer unix.Close(rootfd)
	edits := map[string]*objects.TreeEntry{}
	for _, p := range rels {
		e, err := c.examine(rootfd, p)
		if err != nil {
			return nil, err
		}
		edits[p] = e
	}
	for _, s := range opts.ParentSkipped {
		q := strings.TrimSuffix(s, "/")
		if !slices.ContainsFunc(rels, func(p string) bool { return q == p || strings.HasPrefix(q, p+"/") }) {
			c.unreadable(s, "could not be read at the last checkpoint; not examined by this edit set")
		}
	}
	// A directory the edits leave empty is kept, as an empty directory,
	// while it still exists on disk.
	isDir := func(dir string) bool {
		fd, err := unix.Dup(rootfd)
		for _, name := range strings.Split(dir, "/") {
			if err != nil {
				return false
			}
			var next int
			next, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			fd = next
		}
		if err == nil {
			unix.Close(fd)
		}
		return err == nil
	}
	id, size, _, err := applyEdits(w, base, "", edits, isDir)
	if err != nil {
		return nil, err
	}
	if id.IsZero() {
		id, err = w.Put(objects.TypeTree, (&objects.Tree{}).Encode())
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(c.skipped, func(i, j int) bool { return c.skipped[i].Path < c.skipped[j].Path })
	return &Snapshot{Tree: id, Files: -1, Bytes: size, Read: int(c.read.Load()), Skipped: c.skipped}, nil
}

// normalizePaths turns paths into clean slash-separated paths relative to
// root, sorted, dropping any path beneath another one. "" stands for the
// whole tree.
func normalizePaths(root string, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(root, p)
			if err != nil || !filepath.IsLocal(rel) && rel != "." {
				return nil, fmt.Errorf("%w: %q is outside %s", ErrOutsideRoot, p, root)
			}
			p = rel
		}
		p = filepath.ToSlash(filepath.Clean(p))
		if p == "." {
			p = ""
		}
		if p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("%w: %q", ErrOutsideRoot, p)
		}
		out = append(out, p)
	}
	sort.Strings(out)
	var kept []string
	for _, p := range out {
		if n := len(kept); n > 0 && (kept[n-1] == p || kept[n-1] == "" || strings.HasPrefix(p, kept[n-1]+"/")) {
			continue
		}
		kept = append(kept, p)
	}
	return kept, nil
}

// examine captures one path: its new tree entry, or nil when it should not
// be in the tree.
func (c *capturer) examine(rootfd int, p string) (*objects.TreeEntry, error) {
	comps := strings.Split(p, "/")
	for i, name := range comps {
		prefix := strings.Join(comps[:i+1], "/")
		if name == ".git" || c.excluded[prefix] || objects.ValidName(name) != nil {
			return nil, nil
		}
	}
	ig := c.rootIgnores()
	fd, err := unix.Dup(rootfd)
	if err != nil {
		return nil, err
	}
	dir := path.Dir(p)
	if dir == "." {
		dir = ""
	}
	last := comps[len(comps)-1]
	for i, name := range comps {
		if i > 0 {
			ig = ig.sub(c.w, comps[i-1])
		}
		ig = ig.enter(c.w, fd, comps[:i], nil, nil)
		var st unix.Stat_t
		if err := c.sys.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil, nil
			}
			c.unreadable(p, "cannot stat: "+errText(err))
			return c.carried(dir, last, anyKind), nil
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if byDisk, byStored := ig.ignored(comps[:i+1], isDir); byDisk || byStored {
			unix.Close(fd)
			if byStored {
				c.unreadable(p, storedOnly)
				return c.carried(dir, last, anyKind), nil
			}
			return nil, nil
		}
		if i == len(comps)-1 {
			defer unix.Close(fd)
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				cfd, err := c.sys.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					c.unreadable(p+"/", "cannot open directory: "+errText(err))
					return c.carried(dir, name, dirKind), nil
				}
				res := c.dir(cfd, p, comps, &st, ig.sub(c.w, name))
				if res.err != nil || res.store {
					return nil, res.err
				}
				if res.unreadable {
					return c.carried(dir, name, dirKind), nil
				}
				return &objects.TreeEntry{Name: name, Mode: objects.ModeDir, ID: res.id, Size: res.size}, nil
			case unix.S_IFREG, unix.S_IFLNK:
				var t tally
				defer c.add(&t)
				if e, ok := c.file(fd, dir, name, []byte(p), &st, &t); ok {
					return &e, nil
				}
				return nil, nil
			default:
				c.skip(p, "not a regular file, directory or symlink")
				return nil, nil
			}
		}
		if !isDir {
			unix.Close(fd)
			return nil, nil
		}
		next, err := c.sys.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			// Gone, or no longer a directory (replaced by a file or a
			// symlink) since the fstatat: the path is not in the tree.
			// Any other failure is reported, never dropped silently.
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				c.unreadable(p, "cannot open directory "+strings.Join(comps[:i+1], "/")+": "+errText(err))
				return c.carried(dir, last, anyKind), nil
			}
			return nil, nil
		}
		fd = next
	}
	return nil, nil
}

// carried is carry for an edit-set path: the entry to keep, or nil.
func (c *capturer) carried(dir, name string, kind int) *objects.TreeEntry {
	if e, ok := c.carry(dir, name, kind); ok {
		return &e
	}
	return nil
}

// onlyDeletions reports whether every edit removes its path.
func onlyDeletions(edits map[string]*objects.TreeEntry) bool {
	for _, e := range edits {
		if e != nil {
			return false
		}
	}
	return true
}

// applyEdits returns tree id with the edits (paths relative to dir; nil
// deletes) applied, its total size, and whether it ended up empty. A
// subdirectory left empty stays, as an empty directory, when isDir says it
// exists.
func applyEdits(w *objects.Writer, id objects.ID, dir string, edits map[string]*objects.TreeEntry, isDir func(string) bool) (objects.ID, int64, bool, error) {
	var t objects.Tree
	if !id.IsZero() {
		base, err := w.ReadTree(id)
		if err != nil {
			return objects.ID{}, 0, false, err
		}
		t = *base
	}
	here := map[string]*objects.TreeEntry{}
	below := map[string]map[string]*objects.TreeEntry{}
	for p, e := range edits {
		rel := strings.TrimPrefix(p, dir)
		if i := strings.IndexByte(rel, '/'); i >= 0 {
			name := rel[:i]
			if below[name] == nil {
				below[name] = map[string]*objects.TreeEntry{}
			}
			below[name][p] = e
		} else {
			here[rel] = e
		}
	}
	byName := map[string]objects.TreeEntry{}
	for _, e := range t.Entries {
		byName[e.Name] = e
	}
	for name, e := range here {
		if e == nil {
			delete(byName, name)
		} else {
			byName[name] = *e
		}
	}
	for name, sub := range below {
		var subID objects.ID
		if e, ok := byName[name]; ok && e.Mode == objects.ModeDir {
			subID = e.ID
		} else if onlyDeletions(sub) {
			continue // nothing to delete in a directory the tree does not have
		}
		nid, size, empty, err := applyEdits(w, subID, path.Join(dir, name)+"/", sub, isDir)
		if err != nil {
			return objects.ID{}, 0, false, err
		}
		if empty {
			if !isDir(path.Join(dir, name)) {
				if e, ok := byName[name]; ok && e.Mode == objects.ModeDir {
					delete(byName, name)
				}
				continue
			}
			if nid, err = w.Put(objects.TypeTree, (&objects.Tree{}).Encode()); err != nil {
				return objects.ID{}, 0, false, err
			}
		}
		byName[name] = objects.TreeEntry{Name: name, Mode: objects.ModeDir, ID: nid, Size: size}
	}
	var out objects.Tree
	var size int64
	for _, e := range byName {
		out.Entries = append(out.Entries, e)
		size += e.Size
	}
	if len(out.Entries) == 0 {
		return objects.ID{}, 0, true, nil
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Name < out.Entries[j].Name })
	nid, err := w.PutDelta(objects.TypeTree, out.Encode(), id) // the tree it edits is the delta base
	return nid, size, false, err
}

// EditTree returns tree with the edits applied: each path (relative, with
// slashes) set to its entry, or removed when nil. A directory a removal
// empties stays, as an empty directory, when isDir(dir) reports that it
// exists on disk; the result of removing everything is the empty tree.
func EditTree(w *objects.Writer, tree objects.ID, edits map[string]*objects.TreeEntry, isDir func(string) bool) (objects.ID, error) {
	id, _, empty, err := applyEdits(w, tree, "", edits, isDir)
	if err != nil || !empty {
		return id, err
	}
	return w.Put(objects.TypeTree, (&objects.Tree{}).Encode())
}
