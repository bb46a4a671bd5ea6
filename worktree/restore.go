package worktree

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/snapcore-dev/snap/fsys"
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
	Root     string   // project root (absolute)
	StoreDir string   // never written
	Paths    []string // when set, only these paths and what lies beneath them
	// Keep lists paths the restore leaves exactly as they are, whatever the
	// trees say (a directory's path ends in "/" and covers what lies
	// beneath): those that could not be read when current or target was
	// captured (Skipped.Kept), whose content neither tree knows.
	Keep []string
	// UndoCreated, with UndoFrom, undoes what a restore to the tree
	// UndoFrom created though the ignore rules ignored it (that restore's
	// RestoreResult.Created): each such path still holding UndoFrom's
	// entry is removed, and so are the directories made for them once
	// empty; what changed since stays. The rules that protect ignored
	// paths would keep them otherwise.
	UndoCreated []string
	UndoFrom    objects.ID
	// SpareIgnored: a deletion spares what the target's own ignore rules
	// ignore. For a target made from the current capture whose deletions
	// are implied (a revert): a move to an older checkpoint leaves such a
	// path out of its safety capture, since it reads the target's rules
	// first; this one cannot, the rules being part of what it makes (M40).
	SpareIgnored bool
	// SyncAll makes the whole tree durable before Restore returns, even
	// when nothing differs: completing a move a killed process began,
	// whose writes may not be durable yet.
	SyncAll bool
	// DryRun computes and reports, changing nothing: every check a real
	// restore makes before it writes (a directory in the way, a file on
	// disk that was not captured...) is made, against the disk as the
	// deletions would leave it, so the report names the same failures.
	DryRun bool
	Cache  *index.Cache // updated with the stat of every file written
	// Trash is a directory on the same file system (inside the store)
	// into which deleted files and the old content of replaced files are
	// moved instead of being unlinked: freeing a file's blocks is the slowest step of a
	// restore on many file systems, and EmptyTrash can do it later, in the
	// background. "" unlinks at once; so does a failed move (EXDEV).
	Trash string
	// Workers bounds the files written at once; 0 picks a default (one
	// below parallelWrites files), 1 makes every call from the calling
	// goroutine, in path order (fault-injection tests rely on it).
	Workers int
	// Sys makes every directory-relative call that reads or changes the
	// working tree (openat, mkdirat, fstatat, write, close, symlinkat,
	// renameat, unlinkat); nil means fsys.RealSys. Fault-injection tests
	// pass an fsys.Faulty.
	Sys fsys.Sys

	// probe, when set, replaces probeFolding (tests use it to restore
	// onto a file system that folds names without having one).
	probe func(sys fsys.Sys, dirfd int) (folding, error)
}

// JoinPathErrors is errs as one error (nil for none) whose message names
// each path and whose chain holds each cause (errors.Is finds
// syscall.ENOSPC, ErrUntracked, ...).
func JoinPathErrors(errs []PathError) error {
	es := make([]error, len(errs))
	for i, e := range errs {
		if e.Err != nil {
			es[i] = fmt.Errorf("%s: %w", e.Path, e.Err)
		} else {
			es[i] = fmt.Errorf("%s: %s", e.Path, e.Error)
		}
	}
	return errors.Join(es...)
}

// PathError is a path a restore refused or failed to write.
type PathError struct {
	Path  string `json:"path"`
	Error string `json:"error"` // for a failed system call: "<call> <path>: <errno text>"
	Err   error  `json:"-"`     // the error itself, for errors.Is (syscall.ENOSPC, ErrUntracked, ...)
}

// RestoreResult lists what a restore changed (or, in a dry run, would).
// An empty directory's path ends in "/".
type RestoreResult struct {
	Restored []string    `json:"restored"` // written: added or modified
	Deleted  []string    `json:"deleted"`
	Errors   []PathError `json:"errors"`
	Kept     []string    `json:"kept"` // differing paths left alone (RestoreOptions.Keep)
	// Created lists what the restore created though the ignore rules in
	// force when it began, or the target's own, ignored it (absent then;
	// once the restore writes the target's ignore files, their rules are
	// those in force: M37): files, links and empty
	// directories it wrote, and the directories it made for them (ending
	// in "/"). An undo passes it back (RestoreOptions.UndoCreated): those
	// rules protect the paths from the undo's deletions otherwise.
	Created []string `json:"created,omitempty"`
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
// A path the target adds that the ignore rules in force ignore (the ignore
// files on disk when the restore begins, or the target's own) is created and listed in Created,
// so that undoing the restore can remove it again (UndoCreated).
// Entries whose names would be one name on the file system written to are
// refused: a directory's entries that differ only in case, or only in
// Unicode normalisation (NFC/NFD), are checked by probing the directory
// (see probeFolding) and refused only where it folds them. Per-path
// problems go to Errors and do not stop the other paths.
//
// I/O errors are per-path problems too: a file whose write fails at any
// step (creating, writing or closing its temporary file, renaming it into
// place) keeps its old content, whole, and its temporary file is removed
// (should that removal fail as well, Capture ignores the file and removes
// it once this process is gone); a file whose deletion fails stays as it
// was. So after any failure every path holds either its current or its
// target content, never a mix, and repeating the restore from a fresh
// capture completes it.
func Restore(ctx context.Context, src Source, current, target objects.ID, opts RestoreOptions) (*RestoreResult, error) {
	r := &restorer{src: src, sys: fsys.OrSys(opts.Sys), opts: opts,
		res:   &RestoreResult{Restored: []string{}, Deleted: []string{}, Errors: []PathError{}, Kept: []string{}},
		trees: map[string]*objects.Tree{}, collisions: map[string]map[string]error{}, folds: map[string]folding{},
		rules: map[string]*ignorer{}, stored: map[string]*ignorer{}, ends: map[string]*ignorer{}, current: current, target: target, start: time.Now()}
	if rel, err := filepath.Rel(opts.Root, opts.StoreDir); err == nil && rel != "." && filepath.IsLocal(rel) {
		r.storeRel = filepath.ToSlash(rel)
	}
	if opts.DryRun {
		r.gone = map[string]bool{}
	}
	rootfd, err := unix.Open(opts.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: opts.Root, Err: err}
	}
	defer unix.Close(rootfd)
	r.rootfd = rootfd
	var writes, deletes, afterUndo []objects.Change
	ignoredAdds := map[string]string{} // path → the top directory its write creates
	madeAbove := map[string]string{}   // path → the directory above opts.Paths its write makes
	err = objects.DiffTrees(src, current, target, func(c objects.Change) error {
		if !inPaths(c.Path, opts.Paths) {
			return nil
		}
		if kept(c.Path, opts.Keep) {
			if c.New.Mode != 0 && createdAt(c.Path, opts.UndoCreated) {
				// Kept as the restore being undone made it: once its
				// undo removes that, the path is the target's again (M23).
				afterUndo = append(afterUndo, c)
			}
			if n := len(r.res.Kept); n == 0 || r.res.Kept[n-1] != c.Path {
				r.res.Kept = append(r.res.Kept, c.Path)
			}
			return nil
		}
		if c.New.Mode == 0 {
			deletes = append(deletes, c)
			return ctx.Err()
		}
		if c.Old.Mode == 0 {
			if ignored, top := r.ignoredAndAbsent(c.Path, c.New.Mode == objects.ModeDir); ignored {
				ignoredAdds[c.Path] = top
			} else if top := r.absentAbove(c.Path, opts.Paths); top != "" {
				// A directory made above the paths restored: outside
				// them, so its undo would leave it (M12) unless listed.
				madeAbove[c.Path] = top
			}
		}
		writes = append(writes, c)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	r.syncEach = syncPolicy == "fsync" || syncPolicy == "auto" && len(writes) <= syncEachMax
	r.trashfd = -1
	if !opts.DryRun {
		r.removeLeftovers()
		if opts.Trash != "" {
			if err := os.MkdirAll(opts.Trash, 0o700); err == nil {
				if fd, err := unix.Open(opts.Trash, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
					r.trashfd = fd
					defer unix.Close(fd)
				}
			}
		}
	}

	// 1. Delete captured files the target does not have, and captured
	// empty directories (one that is no longer empty, holding what was not
	// captured, stays).
	emptied := map[string]bool{}
	for _, c := range deletes {
		if opts.SpareIgnored && r.targetIgnores(c.Path, c.Old.Mode == objects.ModeDir) {
			continue
		}
		if c.Old.Mode == objects.ModeDir {
			if r.removeEmptyDir(c.Path) {
				r.res.Deleted = append(r.res.Deleted, c.Path+"/")
				for d := path.Dir(c.Path); d != "." && !opts.DryRun && inPaths(d, opts.Paths); d = path.Dir(d) {
					emptied[d] = true // e1/ of e1/e2/ may be empty now
				}
			}
			continue
		}
		if opts.DryRun {
			r.gone[c.Path] = true
			r.res.Deleted = append(r.res.Deleted, c.Path)
			continue
		}
		if err := r.remove(c.Path); err != nil {
			r.fail(c.Path, err)
			continue
		}
		r.res.Deleted = append(r.res.Deleted, c.Path)
		// Directories it leaves empty go too, within the paths restored
		// (a --path restore leaves the directories above it alone).
		for d := path.Dir(c.Path); d != "." && inPaths(d, opts.Paths); d = path.Dir(d) {
			emptied[d] = true
		}
	}
	// 1b. What the restore being undone created though the rules ignored it.
	if len(opts.UndoCreated) > 0 {
		removed := r.undoCreated()
		// What was kept only because the restore being undone created
		// it there, and is gone now, is written as the target has it.
		n := len(writes)
		for _, c := range afterUndo {
			if removed[c.Path] && !slices.Contains(r.res.Kept, c.Path) {
				writes = append(writes, c)
			}
		}
		if len(writes) > n {
			sort.SliceStable(writes, func(i, j int) bool { return writes[i].Path < writes[j].Path })
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
				r.sys.Unlinkat(pfd, name, unix.AT_REMOVEDIR) // fails harmlessly when not empty
				unix.Close(pfd)
			}
		}
	}
	// 3. Write added and modified files: the checks that read only the
	// target's trees first, in order, then the writes, in parallel when
	// there are many (each waits mostly on the file system's metadata
	// updates). Results are reported in path order either way.
	errs := make([]error, len(writes))
	written := make([]bool, len(writes))
	var todo []int
	for i, c := range writes {
		if errs[i] = r.refused(c.Path); errs[i] == nil && opts.DryRun {
			errs[i] = r.dryWrite(c)
		}
		if errs[i] == nil && !opts.DryRun {
			todo = append(todo, i)
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 1
		if len(todo) >= parallelWrites {
			workers = 4
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = r.write(writes[i])
				written[i] = errs[i] == nil
			}
		}()
	}
	var cerr error
	for _, i := range todo {
		if cerr = ctx.Err(); cerr != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, c := range writes {
		p := c.Path
		if c.New.Mode == objects.ModeDir {
			p += "/"
		}
		switch {
		case errors.Is(errs[i], errAlready):
		case errs[i] != nil:
			r.fail(p, errs[i])
		case written[i] || (opts.DryRun && cerr == nil):
			r.res.Restored = append(r.res.Restored, p)
			top, ok := ignoredAdds[c.Path]
			if ok {
				r.res.Created = append(r.res.Created, p)
			} else {
				top = madeAbove[c.Path]
			}
			if top != "" && !slices.Contains(r.res.Created, top+"/") {
				r.res.Created = append(r.res.Created, top+"/")
			}
		}
	}
	if cerr == nil && !opts.DryRun && syncPolicy != "none" {
		if err := r.durable(); err != nil {
			cerr = errors.Join(JoinPathErrors(r.res.Errors), err) // the paths that failed first, then this
		}
	}
	return r.res, cerr
}

// syncEachMax is the number of files a restore writes up to which it
// fsyncs each (and then each directory it changed); past it, one
// syncfs(2) of the project's file system is cheaper (design §4, measured
// in bench/README.md, "Durable restores").
const syncEachMax = 64

// syncPolicy is "auto" (the above); the benchmark builds variants with
// -ldflags "-X github.com/snapcore-dev/snap/worktree.syncPolicy=P", P one
// of fsync, syncfs or none (no durability step: never shipped).
var syncPolicy = "auto"

// durable makes what the restore changed durable before it returns, so
// that its caller records the move (the op log) only once a power loss
// can no longer undo it: each file written was fsynced before it was
// renamed into place (syncEach), and now each directory above what was
// written, deleted or created is fsynced; or, for a restore of many
// files, one syncfs per file system those directories are on.
func (r *restorer) durable() error {
	if len(r.res.Restored)+len(r.res.Deleted) == 0 {
		if !r.opts.SyncAll {
			return nil
		}
		r.syncEach = false // what a killed restore wrote: one syncfs
	}
	dirs := map[string]bool{"": true}
	for _, p := range slices.Concat(r.res.Restored, r.res.Deleted, r.res.Created) {
		for d := path.Dir(strings.TrimSuffix(p, "/")); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	devs := map[uint64]bool{}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		fd, err := r.openDir(d)
		if err != nil && d != "" {
			// Not a directory now (removed, replaced by a file, never
			// made for a failed path): the entry that names it is in its
			// parent, which is in dirs too.
			continue
		}
		if err != nil {
			return fmt.Errorf("making the restore durable: %w", err)
		}
		if r.syncEach {
			err = r.sys.Fsync(fd)
		} else {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil && !devs[st.Dev] {
				devs[st.Dev] = true
				err = r.sys.Syncfs(fd)
			}
		}
		unix.Close(fd)
		if err != nil {
			call := "fsync"
			if !r.syncEach {
				call = "syncfs"
			}
			return fmt.Errorf("making the restore durable: %w", sysError(call, cmp.Or(d, "."), err))
		}
	}
	return nil
}

// openDir opens directory d ("" is the root) without following symlinks.
func (r *restorer) openDir(d string) (int, error) {
	if d == "" {
		return unix.Dup(r.rootfd)
	}
	pfd, name, err := r.openParent(d, false)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	return r.sys.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// createdAt reports whether p, or a directory above it, is one of created
// (RestoreOptions.UndoCreated: a directory's path ends in "/").
func createdAt(p string, created []string) bool {
	for _, c := range created {
		c = strings.TrimSuffix(c, "/")
		if p == c || strings.HasPrefix(p, c+"/") {
			return true
		}
	}
	return false
}

// kept reports whether p is one of keep or lies beneath one (a
// directory's path in keep may end in "/"). A kept path covers what lies
// beneath it, whatever it is on disk now: a file snap could not read that
// is a directory now is left alone with all it holds.
func kept(p string, keep []string) bool {
	for _, k := range keep {
		k = strings.TrimSuffix(k, "/")
		if p == k || strings.HasPrefix(p, k+"/") {
			return true
		}
	}
	return false
}

// parallelWrites is the number of files from which a restore writes with
// several workers; below it, one goroutine makes every call in order.
const parallelWrites = 32

type restorer struct {
	src        Source
	sys        fsys.Sys
	opts       RestoreOptions
	res        *RestoreResult
	rootfd     int
	trashfd    int // -1: no trash, unlink old content
	storeRel   string
	current    objects.ID // the captured tree now
	target     objects.ID
	gone       map[string]bool             // dry run: paths the deletions would remove
	trees      map[string]*objects.Tree    // target trees by directory path ("" = root)
	collisions map[string]map[string]error // per target directory: names that collide, and why
	folds      map[string]folding          // per directory on disk: what its file system folds (see foldingOf)
	rules      map[string]*ignorer         // per directory: the ignore rules on disk when the restore began
	stored     map[string]*ignorer         // per directory: the ignore rules the current capture stores
	ends       map[string]*ignorer         // per directory: the ignore rules the target stores
	start      time.Time
	syncEach   bool // fsync each file written (else one syncfs at the end): see durable
}

func (r *restorer) fail(p string, err error) {
	r.res.Errors = append(r.res.Errors, PathError{Path: p, Error: err.Error(), Err: err})
}

// sysError names the failed call and the path (relative to the root) it
// was made for.
func sysError(call, p string, err error) error {
	return &os.PathError{Op: call, Path: p, Err: err}
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

// refused checks a path to be written against the rules that do not depend
// on what the disk holds: legal names, not the store, no names the file
// system would take for one.
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
		if err := col[name]; err != nil {
			return err
		}
		dir = path.Join(dir, name)
	}
	return nil
}

// folding is what a file system takes for the same name: names that differ
// only in case (caseless: vfat, ext4 and f2fs casefold directories, APFS,
// HFS+, NTFS, SMB shares) or only in Unicode normalisation, NFC "é" against
// NFD "e"+U+0301 (normalising: APFS, HFS+, ext4 casefold, ZFS with
// normalization set).
type folding struct{ caseless, normalising bool }

// key is the name under which the file system stores name.
func (f folding) key(name string, fold cases.Caser) string {
	if f.normalising {
		name = norm.NFC.String(name)
	}
	if f.caseless {
		name = fold.String(name)
	}
	return name
}

// probeFolding finds out what the file system of the directory open at
// dirfd folds: it creates an empty temporary file whose name holds an
// upper-case letter and a precomposed "é", looks that name up with the
// letter in lower case and with "é" decomposed, and removes it. A dry run
// probes too: the file exists for a moment, and no capture records a name
// starting with TempPrefix. A file system folds names per directory at
// most (ext4's casefold attribute), and a new directory inherits its
// parent's rule.
func probeFolding(sys fsys.Sys, dirfd int) (folding, error) {
	base := TempName() + "-probe-"
	name := base + "A\u00e9"
	fd, err := sys.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return folding{}, sysError("openat", name, err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	sys.Close(fd)
	defer sys.Unlinkat(dirfd, name, 0)
	if err != nil {
		return folding{}, sysError("fstat", name, err)
	}
	same := func(other string) bool {
		var o unix.Stat_t
		return sys.Fstatat(dirfd, other, &o, unix.AT_SYMLINK_NOFOLLOW) == nil && o.Dev == st.Dev && o.Ino == st.Ino
	}
	return folding{caseless: same(base + "a\u00e9"), normalising: same(base + "Ae\u0301")}, nil
}

// foldingOf is the folding of directory dir of the target: of dir on disk
// when it exists, else of its nearest existing ancestor, in which a restore
// would create it. Each directory is probed once per restore, and only
// when the target has entries there that a folding file system would take
// for one. A probe that fails (a read-only directory, say) counts as
// folding everything, the safe answer, and its error goes with the
// refusal.
func (r *restorer) foldingOf(dir string) (folding, error) {
	fd, err := unix.Dup(r.rootfd)
	if err != nil {
		return folding{true, true}, sysError("dup", ".", err)
	}
	at := ""
	if dir != "" {
		for _, c := range strings.Split(dir, "/") {
			next, err := r.sys.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				break
			}
			unix.Close(fd)
			fd, at = next, path.Join(at, c)
		}
	}
	defer unix.Close(fd)
	if f, ok := r.folds[at]; ok {
		return f, nil
	}
	probe := r.opts.probe
	if probe == nil {
		probe = probeFolding
	}
	f, err := probe(r.sys, fd)
	if err != nil {
		return folding{true, true}, err
	}
	r.folds[at] = f
	return f, nil
}

// collisionsIn maps the names of target directory dir that the file system
// written to would take for another of its entries to the error refusing
// them.
func (r *restorer) collisionsIn(dir string) (map[string]error, error) {
	if c, ok := r.collisions[dir]; ok {
		return c, nil
	}
	t, err := r.targetTree(dir)
	if err != nil {
		return nil, err
	}
	c := map[string]error{}
	r.collisions[dir] = c
	if t == nil {
		return c, nil
	}
	fold := cases.Fold()
	pairs := collide(t, folding{true, true}, fold)
	if len(pairs) == 0 {
		return c, nil // the common case: no probe
	}
	f, perr := r.foldingOf(dir)
	if perr == nil {
		pairs = collide(t, f, fold)
	}
	for name, other := range pairs {
		err := fmt.Errorf("%w: %+q and %+q", ErrCollision, other, name)
		if perr != nil {
			err = fmt.Errorf("%w: %+q and %+q (whether this file system folds names is unknown: %v)", ErrCollision, other, name, perr)
		}
		c[name] = err
	}
	return c, nil
}

// collide maps each entry of t that folds (under f) to the same name as an
// earlier entry to that entry's name, and that earlier entry to it.
func collide(t *objects.Tree, f folding, fold cases.Caser) map[string]string {
	if !f.caseless && !f.normalising {
		return nil
	}
	var out map[string]string
	first := map[string]string{}
	for _, e := range t.Entries {
		k := f.key(e.Name, fold)
		other, ok := first[k]
		if !ok {
			first[k] = e.Name
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, ok := out[other]; !ok {
			out[other] = e.Name
		}
		out[e.Name] = other
	}
	return out
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

// ignoredAndAbsent reports whether p is absent from the disk and ignored
// by the rules on disk, read before the restore changes anything (p, or a
// directory above it, matches the rules in force there); top is then the
// shallowest directory above p that is absent too ("" for none), which
// writing p creates.
func (r *restorer) ignoredAndAbsent(p string, isDir bool) (ignored bool, top string) {
	comps := strings.Split(p, "/")
	for i := range comps {
		dir := isDir || i < len(comps)-1
		// The rules on disk, those the current capture stores (the
		// undo's target: an ignore file it carried unread may differ),
		// and (below) those the target stores: once the restore has
		// written its ignore files, what they ignore is no longer
		// captured, so an undo would keep it (M37).
		if r.rulesIn(comps[:i]).ignored(comps[:i+1], dir) || r.storedRulesIn(comps[:i]).ignored(comps[:i+1], dir) {
			ignored = true
			break
		}
	}
	if !ignored && !r.targetIgnores(p, isDir) {
		return false, ""
	}
	i, fd, err := r.walkAbove(comps)
	if fd >= 0 {
		defer unix.Close(fd)
		var st unix.Stat_t
		return errors.Is(r.sys.Fstatat(fd, comps[len(comps)-1], &st, unix.AT_SYMLINK_NOFOLLOW), unix.ENOENT), ""
	}
	// Missing, or a file or symlink the restore replaces with the
	// directory (one it may not replace fails the write).
	absent := errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
	return absent, strings.Join(comps[:i+1], "/")
}

// absentAbove is, for a restore limited to paths, the shallowest
// directory above p and outside them that is missing from the disk before
// the restore changes anything (so writing p makes it); "" when there is
// none, when every path is restored (no directory lies outside), or when
// one cannot be walked.
func (r *restorer) absentAbove(p string, paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	comps := strings.Split(p, "/")
	i, fd, err := r.walkAbove(comps)
	if fd >= 0 {
		unix.Close(fd)
		return ""
	}
	if top := strings.Join(comps[:i+1], "/"); errors.Is(err, unix.ENOENT) && !inPaths(top, paths) {
		return top
	}
	return ""
}

// walkAbove opens, from the root and following no symlink, the directories
// comps[:len(comps)-1]: it returns the last one open (the caller closes
// it), or -1 with the index of the component that could not be opened and
// the error.
func (r *restorer) walkAbove(comps []string) (int, int, error) {
	fd, err := unix.Dup(r.rootfd)
	if err != nil {
		return 0, -1, err
	}
	for i, c := range comps[:len(comps)-1] {
		next, err := r.sys.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return i, -1, err
		}
		fd = next
	}
	return 0, fd, nil
}

// undoCreated removes what the restore being undone created though the
// rules ignored it (RestoreOptions.UndoCreated): each file, link or empty
// directory still as that restore wrote it, then the directories it made,
// once empty.
func (r *restorer) undoCreated() map[string]bool {
	var files, dirs []string
	for _, p := range r.opts.UndoCreated {
		if d, ok := strings.CutSuffix(p, "/"); ok {
			dirs = append(dirs, d)
		} else {
			files = append(files, p)
		}
	}
	removed := map[string]bool{} // what the undo removed: the deletions so far, then these
	for _, p := range r.res.Deleted {
		removed[strings.TrimSuffix(p, "/")] = true
	}
	for _, p := range files {
		e, ok := r.entryIn(r.opts.UndoFrom, p)
		if !ok || !inPaths(p, r.opts.Paths) || e.Mode == objects.ModeDir {
			continue
		}
		fd, name, err := r.openParent(p, false)
		if err != nil {
			continue
		}
		same := r.holds(fd, name, e)
		unix.Close(fd)
		if !same {
			continue // changed since: left alone
		}
		if !r.opts.DryRun {
			if err := r.remove(p); err != nil {
				r.fail(p, err)
				continue
			}
		}
		removed[p] = true
		if r.gone != nil {
			r.gone[p] = true
		}
		r.res.Deleted = append(r.res.Deleted, p)
	}
	// The directories: listed ones (within the paths restored, or above
	// them: made on the way to one), and those between a removed file or
	// a listed directory and the listed directory above it (M16); deepest
	// first.
	set := map[string]bool{}
	for _, d := range dirs {
		if !inPaths(d, r.opts.Paths) && !slices.ContainsFunc(r.opts.Paths, func(p string) bool {
			return strings.HasPrefix(strings.Trim(path.Clean("/"+p), "/"), d+"/")
		}) {
			continue
		}
		set[d] = true
		for _, p := range slices.Concat(slices.Collect(maps.Keys(removed)), dirs) {
			for q := path.Dir(p); q != "." && strings.HasPrefix(q+"/", d+"/"); q = path.Dir(q) {
				set[q] = true
			}
		}
	}
	order := slices.Collect(maps.Keys(set))
	sort.Slice(order, func(i, j int) bool { return len(order[i]) > len(order[j]) })
	for _, d := range order {
		if r.targetIsDir(d) || !r.emptyBut(d, removed) {
			continue
		}
		if !r.opts.DryRun {
			pfd, name, err := r.openParent(d, false)
			if err != nil {
				continue
			}
			err = r.sys.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
			unix.Close(pfd)
			if err != nil {
				continue
			}
		}
		removed[d] = true
		under := false
		for q := range removed {
			under = under || strings.HasPrefix(q, d+"/")
		}
		if !under {
			r.res.Deleted = append(r.res.Deleted, d+"/")
		}
	}
	r.res.Kept = slices.DeleteFunc(r.res.Kept, func(p string) bool { return removed[strings.TrimSuffix(p, "/")] })
	return removed
}

// emptyBut reports whether directory d on disk holds nothing but paths in
// removed (in a dry run, those still there: what it predicts gone).
func (r *restorer) emptyBut(d string, removed map[string]bool) bool {
	fd, name, err := r.openParent(d, false)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	dfd, err := r.sys.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	names, err := readDirNames(dfd)
	if err != nil {
		return false
	}
	for _, n := range names {
		if !removed[d+"/"+n] {
			return false
		}
	}
	return true
}

// capturedDir reports whether the current capture has a directory at p
// that the restore may remove (one it does not have is ignored, and a kept
// one is to be left as it is: never removed, even empty).
func (r *restorer) capturedDir(p string) bool {
	e, ok := r.entryIn(r.current, p)
	return ok && e.Mode == objects.ModeDir && !kept(p, r.opts.Keep)
}

// entryIn is the entry at path p of the stored tree id.
func (r *restorer) entryIn(id objects.ID, p string) (objects.TreeEntry, bool) {
	e, ok, _ := objects.EntryAt(r.src, id, p)
	return e, ok
}

// targetIgnores reports whether the rules the target stores ignore p
// (or a directory above it).
func (r *restorer) targetIgnores(p string, isDir bool) bool {
	comps := strings.Split(p, "/")
	for i := range comps {
		if r.treeRulesIn(r.target, r.ends, comps[:i]).ignored(comps[:i+1], isDir || i < len(comps)-1) {
			return true
		}
	}
	return false
}

// storedRulesIn is the ignorer of directory comps as the current capture
// stores its ignore files (none where it has no such directory).
func (r *restorer) storedRulesIn(comps []string) *ignorer {
	return r.treeRulesIn(r.current, r.stored, comps)
}

// treeRulesIn is the rules the tree root stores for directory comps
// (cached in cache), beneath the exclude files in force.
func (r *restorer) treeRulesIn(root objects.ID, cache map[string]*ignorer, comps []string) *ignorer {
	key := strings.Join(comps, "/")
	if ig, ok := cache[key]; ok {
		return ig
	}
	var parent *ignorer
	if len(comps) == 0 {
		parent = rootIgnorer(r.opts.Root) // the exclude files, beneath the tree's own (M13)
	} else {
		parent = r.treeRulesIn(root, cache, comps[:len(comps)-1])
	}
	ig := parent
	id := root
	if len(comps) > 0 {
		if e, ok := r.entryIn(root, key); ok && e.Mode == objects.ModeDir {
			id = e.ID
		} else {
			id = objects.ID{}
		}
	}
	if !id.IsZero() {
		if t, err := r.src.ReadTree(id); err == nil {
			if files := storedIgnoreFiles(r.src, t, comps, r.opts.Keep); files != nil {
				ig = parent.child(slices.Clone(comps), files)
			}
		}
	}
	cache[key] = ig
	return ig
}

// rulesIn is the ignorer of directory comps as the disk holds it (a
// directory that is not there, or not a directory, adds no rules).
func (r *restorer) rulesIn(comps []string) *ignorer {
	key := strings.Join(comps, "/")
	if ig, ok := r.rules[key]; ok {
		return ig
	}
	var parent *ignorer
	if len(comps) == 0 {
		parent = rootIgnorer(r.opts.Root)
	} else {
		parent = r.rulesIn(comps[:len(comps)-1])
	}
	ig := parent
	fd, err := unix.Dup(r.rootfd)
	for _, c := range comps {
		if err != nil {
			break
		}
		var next int
		next, err = r.sys.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		fd = next
	}
	if err == nil {
		var files [][]byte
		for _, name := range ignoreFiles {
			if d, err := readSmallAt(fd, name); err == nil {
				files = append(files, d)
			}
		}
		unix.Close(fd)
		ig = parent.child(slices.Clone(comps), files)
	}
	r.rules[key] = ig
	return ig
}

// openParent opens the directory holding p, walking from the root one
// component at a time without following symlinks, creating missing
// directories when create is set. It returns the directory fd and p's
// base name.
func (r *restorer) openParent(p string, create bool) (int, string, error) {
	comps := strings.Split(p, "/")
	fd, err := unix.Dup(r.rootfd)
	if err != nil {
		return -1, "", sysError("dup", ".", err)
	}
	for i, c := range comps[:len(comps)-1] {
		call := "openat"
		next, err := r.sys.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			call = "mkdirat"
			if err = r.sys.Mkdirat(fd, c, 0o777); err == nil || errors.Is(err, unix.EEXIST) {
				call = "openat"
				next, err = r.sys.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return -1, "", fmt.Errorf("%w: %s", ErrNotDir, c)
			}
			return -1, "", sysError(call, strings.Join(comps[:i+1], "/"), err)
		}
		fd = next
	}
	return fd, comps[len(comps)-1], nil
}

// remove deletes a captured file or symlink.
func (r *restorer) remove(p string) error {
	fd, name, err := r.openParent(p, false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, ErrNotDir) {
			// Not there: a directory above it is gone, or is a file or a
			// symlink now (a kept path, say); never followed.
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	if r.trashfd >= 0 && r.sys.Renameat(fd, name, r.trashfd, TempName()) == nil {
		return nil // to the trash, like replaced content (see place)
	}
	if err := r.sys.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return sysError("unlinkat", p, err)
	}
	return nil
}

// removeEmptyDirs removes the directory name (at path p) under dirfd if it
// and every directory beneath it hold no entry but directories; it never
// follows a symlink and never removes anything else.
func (r *restorer) removeEmptyDirs(dirfd int, name, p string) error {
	fd, err := r.sys.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysError("openat", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	names, err := f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			var st unix.Stat_t
			if err = r.sys.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				err = sysError("fstatat", p+"/"+n, err)
				break
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || !r.capturedDir(p+"/"+n) {
				err = fmt.Errorf("%s holds %s, which was not captured (ignored?)", p, n)
				break
			}
			if err = r.removeEmptyDirs(fd, n, p+"/"+n); err != nil {
				break
			}
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	if err := r.sys.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return sysError("unlinkat", p, err)
	}
	return nil
}

// write puts one file, symlink or empty directory in place; a file or
// symlink by temporary file and rename.
func (r *restorer) write(c objects.Change) error {
	fd, name, err := r.openParent(c.Path, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	err = r.sys.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	isDir := err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
	replace := err == nil && !isDir
	if err := r.inTheWay(c, fd, name, err == nil, isDir); err != nil {
		return err
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return sysError("fstatat", c.Path, err)
	}
	if c.New.Mode == objects.ModeDir {
		if isDir {
			return nil
		}
		if err := r.sys.Mkdirat(fd, name, 0o777); err != nil && !errors.Is(err, unix.EEXIST) {
			return sysError("mkdirat", c.Path, err)
		}
		return nil
	}
	if isDir {
		// A directory where the target has a file: one holding nothing but
		// empty directories may go; anything else in it (an ignored file)
		// stays, and so does the directory (inTheWay said so).
		if err := r.removeEmptyDirs(fd, name, c.Path); err != nil {
			return fmt.Errorf("a directory is in the way: %w", err)
		}
	}
	tmp := TempName()
	if c.New.Mode == objects.ModeSymlink {
		var target strings.Builder
		if _, err := r.src.WriteBlob(c.New.ID, &target); err != nil {
			return err
		}
		if err := r.sys.Symlinkat(target.String(), fd, tmp); err != nil {
			return sysError("symlinkat", c.Path, err)
		}
	} else {
		perm := uint32(0o666)
		if c.New.Mode == objects.ModeExec {
			perm = 0o777
		}
		if replace && st.Mode&unix.S_IFMT == unix.S_IFREG {
			// The file it replaces keeps its permissions (a 0600 secret
			// stays 0600), the executable bits following the target.
			perm = st.Mode & 0o666
			if c.New.Mode == objects.ModeExec {
				perm |= (perm & 0o444) >> 2
			}
		}
		tfd, err := r.sys.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != nil {
			return sysError("openat", c.Path, err)
		}
		_, werr := r.src.WriteBlob(c.New.ID, &callWriter{fsys.FdWriter(r.sys, tfd), c.Path})
		if werr == nil && r.syncEach {
			if err := r.sys.Fsync(tfd); err != nil {
				werr = sysError("fsync", c.Path, err)
			}
		}
		if cerr := r.sys.Close(tfd); werr == nil && cerr != nil {
			werr = sysError("close", c.Path, cerr)
		}
		if werr != nil {
			r.discard(fd, c.Path, tmp)
			return werr
		}
	}
	var before *unix.Stat_t
	if replace {
		before = &st
		// Written to since the capture this restore compares with: left
		// as it is. The stat cache vouches for a file it recorded as
		// captured; any other file is compared with its captured content.
		unchanged := false
		if r.opts.Cache != nil {
			if rec, id, ok := r.opts.Cache.Recorded(c.Path); ok && id == c.Old.ID {
				now := statFromUnix(&st)
				unchanged = now == rec // ctime too: an edit that puts the mtime back moves it
			}
		}
		if !unchanged && c.Old.Mode != 0 && c.Old.Mode != objects.ModeDir {
			same, err := r.stillHolds(fd, name, c.Path, &st, c.Old)
			if err == nil && !same {
				err = fmt.Errorf("%w: %s changed since it was captured: left as it is", ErrChanged, c.Path)
			}
			if err != nil {
				r.discard(fd, c.Path, tmp)
				return err
			}
		}
	}
	if err := r.place(fd, tmp, name, c.Path, before); err != nil {
		r.discard(fd, c.Path, tmp)
		return err
	}
	if r.opts.Cache != nil && c.New.Mode != objects.ModeSymlink {
		if err := r.sys.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			r.opts.Cache.Put(c.Path, statFromUnix(&st), c.New.ID, r.start)
		}
	}
	return nil
}

// inTheWay is the check a write makes of what is on disk at its path
// (name in the directory open at dirfd), shared by the dry run so that it
// predicts the same failures: a file or symlink that was not captured is
// never replaced (ErrUntracked), and a directory where the target has a
// file must hold nothing but directories. In a dry run, paths the
// deletions would remove count as gone.
func (r *restorer) inTheWay(c objects.Change, dirfd int, name string, exists, isDir bool) error {
	switch {
	case !exists || r.gone[c.Path]:
		return nil
	case isDir && c.New.Mode == objects.ModeDir:
		return errAlready // an uncaptured directory where the target has one
	case isDir && c.New.Mode != objects.ModeDir:
		if !r.capturedDir(c.Path) {
			// Not captured (ignored): never removed, even empty.
			return fmt.Errorf("a directory is in the way: %w", ErrUntracked)
		}
		if err := r.onlyDirs(dirfd, name, c.Path); err != nil {
			return fmt.Errorf("a directory is in the way: %w", err)
		}
	case !isDir && c.Old.Mode == 0:
		if r.holds(dirfd, name, c.New) {
			return errAlready // not captured, but already as in the target: nothing to do, nothing failed
		}
		return ErrUntracked
	}
	return nil
}

// errAlready: a path a restore may not write already holds what it would
// have written.
var errAlready = errors.New("already as in the target")

// holds reports whether name in dirfd (a file or symlink) already is the
// entry e: same kind, exec bit and content (a file over
// objects.SmallBlobMax bytes is compared with the blob as it streams out of
// the store).
func (r *restorer) holds(dirfd int, name string, e objects.TreeEntry) bool {
	var st unix.Stat_t
	if r.sys.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	var data []byte
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := readlinkAt(dirfd, name)
		if err != nil || e.Mode != objects.ModeSymlink {
			return false
		}
		data = []byte(target)
	case unix.S_IFREG:
		exec := st.Mode&0o100 != 0
		if e.Mode != objects.ModeFile && e.Mode != objects.ModeExec || exec != (e.Mode == objects.ModeExec) ||
			st.Size != e.Size {
			return false
		}
		fd, err := r.sys.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		defer r.sys.Close(fd)
		if st.Size > objects.SmallBlobMax {
			return SameBlob(r.src, e.ID, fsys.FdReader(r.sys, fd), st.Size)
		}
		data, err = io.ReadAll(io.LimitReader(fsys.FdReader(r.sys, fd), objects.SmallBlobMax+1))
		if err != nil {
			return false
		}
	default:
		return false
	}
	return objects.Hash(objects.TypeBlob, data) == e.ID
}

// stillHolds reports whether the file or symlink name in dirfd (at path p,
// st its stat) still is entry e, the content a capture recorded; an error
// reading it is returned, naming the call.
func (r *restorer) stillHolds(dirfd int, name, p string, st *unix.Stat_t, e objects.TreeEntry) (bool, error) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		if e.Mode != objects.ModeSymlink {
			return false, nil
		}
		target, err := readlinkAt(dirfd, name)
		if err != nil {
			return false, sysError("readlinkat", p, err)
		}
		return objects.Hash(objects.TypeBlob, []byte(target)) == e.ID, nil
	case unix.S_IFREG:
		exec := st.Mode&0o100 != 0
		if e.Mode != objects.ModeFile && e.Mode != objects.ModeExec || exec != (e.Mode == objects.ModeExec) || st.Size != e.Size {
			return false, nil
		}
		fd, err := r.sys.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, sysError("openat", p, err)
		}
		defer r.sys.Close(fd)
		in := &errReader{r: fsys.FdReader(r.sys, fd)}
		same := SameBlob(r.src, e.ID, in, st.Size)
		if in.err != nil && in.err != io.EOF {
			return false, sysError("read", p, in.err)
		}
		return same, nil
	}
	return false, nil
}

// errReader remembers the first error of r.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// SameBlob reports whether in, of size bytes, holds exactly the blob id
// of src, compared as the blob streams out (no hashing, any size).
func SameBlob(src Source, id objects.ID, in io.Reader, size int64) bool {
	n, err := src.WriteBlob(id, &cmpWriter{r: in})
	return err == nil && n == size
}

// cmpWriter compares what is written to it with what r reads, failing
// at the first difference.
type cmpWriter struct {
	r   io.Reader
	buf []byte
}

var errDiffers = errors.New("content differs")

func (w *cmpWriter) Write(p []byte) (int, error) {
	if cap(w.buf) < len(p) {
		w.buf = make([]byte, len(p))
	}
	b := w.buf[:len(p)]
	if _, err := io.ReadFull(w.r, b); err != nil || !bytes.Equal(b, p) {
		return 0, errDiffers
	}
	return len(p), nil
}

// onlyDirs checks that the directory name (at path p) under dirfd holds
// nothing but directories, once the deletions (r.gone) are done.
func (r *restorer) onlyDirs(dirfd int, name, p string) error {
	if r.gone == nil {
		return nil // a real restore: removeEmptyDirs checks as it removes
	}
	fd, err := r.sys.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysError("openat", p, err)
	}
	defer unix.Close(fd)
	names, err := readDirNames(fd)
	if err != nil {
		return sysError("getdents", p, err)
	}
	for _, n := range names {
		q := p + "/" + n
		var st unix.Stat_t
		if err := r.sys.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return sysError("fstatat", q, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || !r.capturedDir(q) {
			if !r.gone[q] {
				return fmt.Errorf("%s holds %s, which was not captured (ignored?)", p, n)
			}
			continue
		}
		if err := r.onlyDirs(fd, n, q); err != nil {
			return err
		}
	}
	return nil
}

// dryWrite makes the checks write would make, changing nothing: the path's
// parent directories are walked as far as they exist (what the deletions
// would remove counts as missing; the rest would be created), and what is
// at the path is checked as write checks it.
func (r *restorer) dryWrite(c objects.Change) error {
	comps := strings.Split(c.Path, "/")
	fd, err := unix.Dup(r.rootfd)
	if err != nil {
		return sysError("dup", ".", err)
	}
	defer func() { unix.Close(fd) }()
	for i, name := range comps[:len(comps)-1] {
		if r.gone[strings.Join(comps[:i+1], "/")] {
			return nil // a file the deletions remove: a directory will be made
		}
		next, err := r.sys.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil // would be created
		case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			return fmt.Errorf("%w: %s", ErrNotDir, name)
		case err != nil:
			return sysError("openat", strings.Join(comps[:i+1], "/"), err)
		}
		unix.Close(fd)
		fd = next
	}
	name := comps[len(comps)-1]
	var st unix.Stat_t
	err = r.sys.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return sysError("fstatat", c.Path, err)
	}
	return r.inTheWay(c, fd, name, err == nil, err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR)
}

// removeEmptyDir removes the captured empty directory at p, if it still
// is empty (it may hold what was not captured); in a dry run it only
// reports whether it would.
func (r *restorer) removeEmptyDir(p string) bool {
	fd, name, err := r.openParent(p, false)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if r.opts.DryRun {
		// rmdir succeeds on an empty directory only.
		ok := r.emptyBut(p, r.gone)
		r.gone[p] = ok
		return ok
	}
	return r.sys.Unlinkat(fd, name, unix.AT_REMOVEDIR) == nil
}

// place renames the temporary file tmp to name in dirfd. A file being
// replaced is exchanged with it atomically (renameat2 RENAME_EXCHANGE), so
// the path always holds the old or the new content, then the old content,
// now at tmp, goes to the trash (or is unlinked). Renaming over the old
// file instead would free its blocks inside the rename, one file at a
// time, and make ext4 write the new file's data out first (auto_da_alloc).
// Where exchange is unsupported, a plain rename replaces the file.
func (r *restorer) place(dirfd int, tmp, name, p string, before *unix.Stat_t) error {
	if before != nil {
		err := r.sys.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_EXCHANGE)
		if err == nil { // the old content is now at tmp
			// Written to while the new content was being prepared (an
			// editor's save, a tool appending): swap it back and leave
			// it, so no write of the user's is ever lost.
			var now unix.Stat_t
			if r.sys.Fstatat(dirfd, tmp, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && changedSince(before, &now) {
				if r.sys.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_EXCHANGE) == nil {
					return fmt.Errorf("%w: %s changed while it was being restored: left as it is", ErrChanged, p)
				}
			}
			if r.trashfd < 0 || r.sys.Renameat(dirfd, tmp, r.trashfd, TempName()) != nil {
				r.discard(dirfd, p, tmp)
			}
			return nil
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOENT) {
			return sysError("renameat2", p, err)
		}
		// No exchange here: check just before the rename instead.
		var now unix.Stat_t
		if r.sys.Fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && changedSince(before, &now) {
			return fmt.Errorf("%w: %s changed while it was being restored: left as it is", ErrChanged, p)
		}
	}
	if err := r.sys.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return sysError("renameat", p, err)
	}
	return nil
}

// changedSince reports whether a file was written to (or replaced)
// between two stats of it.
func changedSince(a, b *unix.Stat_t) bool {
	return a.Ino != b.Ino || a.Size != b.Size || a.Mtim != b.Mtim
}

// leftovers are the temporary files this process failed to remove (the
// unlinkat failed too, as it does on a persistently failing disk), by
// project root, as paths relative to it. Capture never records them and
// removes them once this process is gone; the next Restore of that root
// removes them as soon as the disk lets it, so a long-running process does
// not leave them in the user's tree.
var leftovers struct {
	sync.Mutex
	byRoot map[string]map[string]bool
}

// discard removes the temporary file tmp beside p, or remembers it.
func (r *restorer) discard(dirfd int, p, tmp string) {
	if err := r.sys.Unlinkat(dirfd, tmp, 0); err == nil || errors.Is(err, unix.ENOENT) {
		return
	}
	rel := tmp
	if d := path.Dir(p); d != "." {
		rel = d + "/" + tmp
	}
	leftovers.Lock()
	defer leftovers.Unlock()
	if leftovers.byRoot == nil {
		leftovers.byRoot = map[string]map[string]bool{}
	}
	if leftovers.byRoot[r.opts.Root] == nil {
		leftovers.byRoot[r.opts.Root] = map[string]bool{}
	}
	leftovers.byRoot[r.opts.Root][rel] = true
}

// removeLeftovers retries the removal of the temporary files earlier
// restores of this root could not remove, reaching each as every other
// path is reached (no symlink followed).
func (r *restorer) removeLeftovers() {
	leftovers.Lock()
	defer leftovers.Unlock()
	for rel := range leftovers.byRoot[r.opts.Root] {
		fd, name, err := r.openParent(rel, false)
		if err == nil {
			err = r.sys.Unlinkat(fd, name, 0)
			unix.Close(fd)
		}
		if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, ErrNotDir) {
			delete(leftovers.byRoot[r.opts.Root], rel)
		}
	}
}

// callWriter names the write(2) that failed.
type callWriter struct {
	w io.Writer
	p string
}

func (w *callWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil {
		err = sysError("write", w.p, err)
	}
	return n, err
}

// EmptyTrash removes every file in the trash directory dir (see
// RestoreOptions.Trash) and reports how many it removed. A missing
// directory is empty. Safe to run while restores move files into it.
func EmptyTrash(dir string) (int, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if uerr := unix.Unlinkat(int(f.Fd()), name, 0); uerr == nil {
				n++
			} else if !errors.Is(uerr, unix.ENOENT) {
				return n, &os.PathError{Op: "unlinkat", Path: filepath.Join(dir, name), Err: uerr}
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// TrashEmpty reports whether the trash directory dir holds nothing.
func TrashEmpty(dir string) bool {
	files, _ := TrashSize(dir, 1)
	return files == 0
}

// TrashSize counts the files in the trash directory dir and their bytes,
// looking at no more than max of them (max <= 0: all). A missing or
// unreadable directory is empty.
func TrashSize(dir string, max int) (files int, bytes int64) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	for max <= 0 || files < max {
		n := 256
		if max > 0 {
			n = min(n, max-files)
		}
		names, err := f.Readdirnames(n)
		for _, name := range names {
			files++
			var st unix.Stat_t
			if unix.Fstatat(int(f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				bytes += st.Size
			}
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	return files, bytes
}
