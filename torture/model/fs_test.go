package model

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ent is one path of a tree: on disk, or as a checkpoint records it.
type ent struct {
	K      byte   // 'f' regular, 'x' executable, 'l' symlink, 'd' directory, 'p' fifo
	Data   string // file content or symlink target
	NoRead bool   // on disk: no read permission (unreadable unless root)
}

func (e ent) String() string {
	d := e.Data
	if len(d) > 32 {
		d = fmt.Sprintf("%q...(%d bytes)", d[:32], len(d))
	} else {
		d = strconv.Quote(d)
	}
	s := string(e.K)
	if e.K == 'd' || e.K == 'p' {
		return s
	}
	if e.NoRead {
		s += "(unreadable)"
	}
	return s + " " + d
}

// same compares content and kind (not readability).
func (e ent) same(o ent) bool { return e.K == o.K && e.Data == o.Data }

// tree is path (slash-separated, relative to the root) → entry.
type tree map[string]ent

func (t tree) clone() tree {
	c := make(tree, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

func (t tree) paths() []string {
	out := make([]string, 0, len(t))
	for p := range t {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// isDir reports whether p is a directory of t: an explicit 'd' entry or
// an ancestor of some entry.
func (t tree) isDir(p string) bool {
	if e, ok := t[p]; ok {
		return e.K == 'd'
	}
	for q := range t {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// scanDisk reads every path under root except the store (storeRel, a
// path relative to root; "" for none).
// scanDisk reads the tree below root except the store; with gitRepo the
// top .git directory is a real repository's: only .git/info/exclude (an
// ignore file) is read of it.
func scanDisk(root, storeRel string, gitRepo bool) (tree, error) {
	t := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == storeRel {
			return fs.SkipDir
		}
		if gitRepo && rel == ".git" {
			t[rel] = ent{K: 'd'}
			if fi, err := os.Lstat(filepath.Join(p, "info", "exclude")); err == nil && fi.Mode().IsRegular() {
				data, err := os.ReadFile(filepath.Join(p, "info", "exclude"))
				if err != nil {
					return err
				}
				t[".git/info"] = ent{K: 'd'}
				t[".git/info/exclude"] = ent{K: 'f', Data: string(data)}
			}
			return fs.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			t[rel] = ent{K: 'd'}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t[rel] = ent{K: 'l', Data: target}
		case fi.Mode()&fs.ModeNamedPipe != 0:
			t[rel] = ent{K: 'p'}
		case fi.Mode().IsRegular():
			e := ent{K: 'f'}
			if fi.Mode().Perm()&0o100 != 0 {
				e.K = 'x'
			}
			e.NoRead = fi.Mode().Perm()&0o400 == 0
			data, err := os.ReadFile(p)
			switch {
			case err == nil:
				e.Data = string(data)
			case errors.Is(err, fs.ErrPermission):
				e.Data = "<unreadable>"
			default:
				return err
			}
			t[rel] = e
		default:
			return fmt.Errorf("%s: unexpected file type %v", rel, fi.Mode())
		}
		return nil
	})
	return t, err
}

// readOutside reads a file outside the project (state document sources):
// its content and whether it exists.
func readOutside(p string) (string, bool) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// prepareParent makes the directory holding rel exist under root,
// replacing any non-directory in the way (a file becomes a directory).
func prepareParent(root, rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	cur := root
	for _, c := range strings.Split(dir, "/") {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err == nil && !fi.IsDir() {
			if err := os.Remove(cur); err != nil {
				return err
			}
		} else if err == nil {
			continue
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// clearPath removes whatever is at rel (a directory with everything in it).
func clearPath(root, rel string) error {
	full := filepath.Join(root, rel)
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// Nothing there (an ancestor may be a file or a FIFO: os.RemoveAll
		// would open it, and opening a FIFO blocks for good).
		return nil
	}
	makeWritable(full)
	return os.RemoveAll(full)
}

// makeWritable gives back permissions taken by chmod ops below p, so it
// can be removed.
func makeWritable(p string) {
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(q, 0o755)
		}
		return nil
	})
}

func writeFileAt(root, rel, data string, exec bool) error {
	if err := prepareParent(root, rel); err != nil {
		return err
	}
	full := filepath.Join(root, rel)
	if fi, err := os.Lstat(full); err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o200 == 0) {
		if err := clearPath(root, rel); err != nil {
			return err
		}
	}
	mode := os.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	if err := os.WriteFile(full, []byte(data), mode); err != nil {
		return err
	}
	return os.Chmod(full, mode)
}

func mkfifoAt(root, rel string) error {
	if err := prepareParent(root, rel); err != nil {
		return err
	}
	if err := clearPath(root, rel); err != nil {
		return err
	}
	return syscall.Mkfifo(filepath.Join(root, rel), 0o644)
}

func symlinkAt(root, rel, target string) error {
	if err := prepareParent(root, rel); err != nil {
		return err
	}
	if err := clearPath(root, rel); err != nil {
		return err
	}
	return os.Symlink(target, filepath.Join(root, rel))
}

func mkdirAt(root, rel string) error {
	if err := prepareParent(root, rel); err != nil {
		return err
	}
	full := filepath.Join(root, rel)
	if fi, err := os.Lstat(full); err == nil {
		if fi.IsDir() {
			return nil
		}
		os.Remove(full)
	}
	return os.Mkdir(full, 0o755)
}

// diffTrees describes how got differs from want (at most max lines).
func diffTrees(want, got tree, max int) []string {
	var out []string
	seen := map[string]bool{}
	var paths []string
	for p := range want {
		paths, seen[p] = append(paths, p), true
	}
	for p := range got {
		if !seen[p] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		w, inW := want[p]
		g, inG := got[p]
		switch {
		case !inG:
			out = append(out, fmt.Sprintf("%s: missing (want %s)", p, w))
		case !inW:
			out = append(out, fmt.Sprintf("%s: unexpected (%s)", p, g))
		case !w.same(g):
			out = append(out, fmt.Sprintf("%s: got %s, want %s", p, g, w))
		default:
			continue
		}
		if len(out) == max {
			out = append(out, "...")
			break
		}
	}
	return out
}

// nonDirs drops directory entries.
func (t tree) nonDirs() tree {
	out := tree{}
	for p, e := range t {
		if e.K != 'd' {
			out[p] = e
		}
	}
	return out
}
