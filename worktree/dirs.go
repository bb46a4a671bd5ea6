package worktree

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/objects"
)

// Dirs lists the directories beneath under (a slash-separated path relative
// to root; "" is the root) that a capture of the project at root, its store
// at storeDir, would enter, deciding as Capture decides with the rules on
// disk (git's excludes file, .git/info/exclude, every .gitignore and
// .snapignore from the root down): .git at any depth, the store, names
// beginning with TempPrefix, names a tree cannot hold and symlinks are never
// entered. It is what a file-system monitor watches (package watch).
//
// dirs comes in walk order, a directory before those beneath it, and
// holds under itself when a capture would enter it. ignored holds the
// top-most directories beneath under that a capture reaches but does not
// enter: those the rules on disk ignore, those holding a snap store, and
// those it could not open or list, or whose entry it could not stat
// (which a capture reports unreadable); nothing beneath them is known.
// under itself is the one entry of ignored when it or one of its ancestors
// is ignored, is a store or cannot be opened; both are empty when a capture
// never enters under for another reason (it is not a directory, it is
// .git, the store...). err is set when under, or a directory on the way
// to it, is missing (errors.Is(err, fs.ErrNotExist)) or the root cannot be
// opened.
//
// Options.Exclude and Options.IgnoreTrees are not known here; they only
// keep a capture out of more paths.
func Dirs(root, storeDir, under string) (dirs, ignored []string, err error) {
	var comps []string
	if under != "" {
		if !filepath.IsLocal(under) || path.Clean(under) != under || strings.Contains(under, "\\") {
			return nil, nil, fmt.Errorf("worktree.Dirs: %q is not a clean relative path", under)
		}
		comps = strings.Split(under, "/")
	}
	storeRel := ""
	if rel, err := filepath.Rel(root, storeDir); err == nil && rel != "." && filepath.IsLocal(rel) {
		storeRel = filepath.ToSlash(rel)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	set := &ignoreSet{disk: rootIgnorer(root)}
	notEntered := []string{under}
	// Go down to under as a capture would, checking each step.
	for i, name := range comps {
		rel := strings.Join(comps[:i+1], "/")
		if name == ".git" || strings.HasPrefix(name, TempPrefix) || rel == storeRel {
			unix.Close(fd)
			return nil, nil, nil
		}
		if i > 0 && holdsStore(fd) {
			unix.Close(fd)
			return nil, notEntered, nil
		}
		set = set.enter(nil, fd, comps[:i], nil, nil)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil, nil, &os.PathError{Op: "stat", Path: rel, Err: unix.ENOENT}
			}
			return nil, notEntered, nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return nil, nil, nil
		}
		if byDisk, _ := set.ignored(comps[:i+1], true); byDisk {
			unix.Close(fd)
			return nil, notEntered, nil
		}
		if objects.ValidName(name) != nil {
			unix.Close(fd)
			return nil, nil, nil
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			switch {
			case errors.Is(err, unix.ENOENT):
				return nil, nil, &os.PathError{Op: "open", Path: rel, Err: err}
			case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
				return nil, nil, nil // replaced by a file or a symlink since
			}
			return nil, notEntered, nil
		}
		fd = next
	}
	w := &dirsWalker{storeRel: storeRel}
	w.walk(fd, under, comps, set)
	return w.dirs, w.ignored, nil
}

// holdsStore reports whether the directory open at fd holds a snap store's
// entries (see isStore), without listing it.
func holdsStore(fd int) bool {
	for _, n := range []string{"config", "packs", "refs"} {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return false
		}
	}
	return true
}

// dirsWalker collects what Dirs returns.
type dirsWalker struct {
	storeRel      string
	dirs, ignored []string
}

// walk visits the directory open at fd (rel, comps: its path; set: its
// parent's rule set) and closes fd.
func (w *dirsWalker) walk(fd int, rel string, comps []string, set *ignoreSet) {
	defer unix.Close(fd)
	names, err := readDirNames(fd)
	if err != nil {
		w.ignored = append(w.ignored, rel)
		return
	}
	sort.Strings(names)
	if rel != "" && isStore(names) {
		w.ignored = append(w.ignored, rel)
		return
	}
	w.dirs = append(w.dirs, rel)
	set = set.enter(nil, fd, comps, names, nil)
	pathBuf := make([]string, len(comps)+1)
	copy(pathBuf, comps)
	for _, name := range names {
		if name == ".git" || strings.HasPrefix(name, TempPrefix) {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		if p == w.storeRel {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				w.ignored = append(w.ignored, p) // a capture reports it unreadable
			}
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		pathBuf[len(comps)] = name
		if byDisk, _ := set.ignored(pathBuf, true); byDisk {
			w.ignored = append(w.ignored, p)
			continue
		}
		if objects.ValidName(name) != nil {
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				w.ignored = append(w.ignored, p)
			}
			continue
		}
		w.walk(cfd, p, append(append([]string(nil), comps...), name), set.sub(nil, name))
	}
}
