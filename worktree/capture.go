package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
)

// DefaultMaxFileSize is the size above which a file is skipped (and
// reported) rather than captured.
const DefaultMaxFileSize = 1 << 30

// Options configure a capture.
type Options struct {
	Root        string       // project root (absolute)
	StoreDir    string       // the store; never captured when inside Root
	MaxFileSize int64        // 0 means DefaultMaxFileSize
	Cache       *index.Cache // stat cache; nil re-reads every file
	// Parent is the root tree of the previous checkpoint (zero: none). A
	// directory or file that changed is stored as a delta against its
	// content there (the file's previous content comes from Cache), so a
	// small change costs about its size, not its whole tree or file.
	Parent objects.ID
	// ParentSkipped lists the paths Parent could not read (a directory's
	// ends in "/"; objects.Checkpoint.Skipped): an edit set (CapturePaths)
	// carries those it does not examine, with their marks, so a later
	// restore still leaves them alone.
	ParentSkipped []string
	// Workers bounds the directory walkers running in parallel; 0 picks a
	// default, 1 walks in the calling goroutine only, so the order of every
	// file-system call is deterministic (fault-injection tests rely on it).
	Workers int
	// Sys makes the directory-relative calls that read the tree (openat,
	// fstatat, read); nil means fsys.RealSys. Listing directories, reading
	// symlinks and ignore files, and fstat are direct calls.
	Sys fsys.Sys
	// IgnoreTrees are stored root trees whose own .gitignore and
	// .snapignore files apply as well as those on disk: a path ignored under
	// any of them is not captured. A rewind captures under its target's
	// rules too, so that it neither records nor touches what the target
	// ignores (an .env the target's .gitignore names, say), whatever the
	// ignore files on disk say now.
	IgnoreTrees []IgnoreTree
	// Exclude lists paths (slash-separated, relative to Root) that are
	// never captured, as the store is not: state documents kept inside the
	// project.
	Exclude []string
	// Monitor, when set, says which directories may have changed since an
	// earlier capture: the others are taken from it without being read.
	Monitor *Monitor
}

// IgnoreTree is a stored root tree whose ignore files apply to a capture
// (Options.IgnoreTrees), read beneath exclude rules as git reads a
// checkout: Excludes, the rules in force when the tree was the working
// tree (an undo's target: they were recorded when the move it undoes
// began), or, when nil, those in force now.
type IgnoreTree struct {
	Tree     objects.ID
	Excludes *string
	// Skipped: the paths the tree's capture could not read
	// (objects.Checkpoint.Skipped); an ignore file among them is not read
	// from the tree, which holds an older version of it (M18).
	Skipped []string
}

// Skipped is a path that was not captured, and why. A directory's path
// ends in "/".
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Kept: the path was not read, though it may hold content worth
	// keeping — it could not be read (it kept changing, grew past the size
	// limit, could not be opened...), or only a rewind's target rules
	// ignore it — as opposed to a name or file kind snap never stores. Its
	// entry in Options.Parent, if any, is carried into the captured tree,
	// so the capture records no change; a restore leaves the path alone.
	Kept bool `json:"kept,omitempty"`
}

// Snapshot is the result of a capture.
type Snapshot struct {
	Tree    objects.ID // root tree
	Files   int        // files and symlinks captured
	Bytes   int64      // their total size
	Read    int        // files whose content was read (stat cache misses)
	Listed  int        // directories listed with getdents (listing cache misses)
	Skipped []Skipped  // sorted by path
	// Linked are the regular files read that have other names (hard
	// links), sorted: written through another name, inside the project
	// or outside, they change without an event in their own directory,
	// so a monitor cannot vouch for them (Monitor).
	Linked []string
	// UnrecordedRules are the directories whose rules the capture read
	// from an ignore file it did not record as it read it (an ignore file
	// ignored itself, skipped, unreadable, changed while read), sorted:
	// there the tree's ignore files are not the rules the capture applied,
	// so a monitor cannot take the directory from it (Monitor), nor can a
	// capture under a stored tree's rules rely on them (SameRules).
	UnrecordedRules []string
}

// Capture records the working tree under opts.Root into w and returns its
// root tree. It honours .gitignore files at every depth, .snapignore and
// .git/info/exclude; never enters .git (at any depth) or the store; stores
// symlinks as links without following them; skips FIFOs, sockets and
// devices without opening them, and files over the size limit, listing them
// in Skipped. A file that changes while it is read is read again; one that
// keeps changing is skipped. Objects are only put into w: nothing is durable
// until the caller commits w.
func Capture(ctx context.Context, w *objects.Writer, opts Options) (*Snapshot, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.Workers <= 0 {
		opts.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	c := &capturer{
		ctx:       ctx,
		opts:      opts,
		sys:       fsys.OrSys(opts.Sys),
		w:         w,
		scanStart: time.Now(),
		sem:       walkers(opts.Workers),
	}
	c.setExcluded()
	if opts.Monitor != nil {
		c.mon = newMonitorPlan(opts.Monitor)
	}
	fd, err := unix.Open(opts.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", &os.PathError{Op: "open", Path: opts.Root, Err: err})
	}
	var rootStat unix.Stat_t
	if err := unix.Fstat(fd, &rootStat); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat project root: %w", &os.PathError{Op: "fstat", Path: opts.Root, Err: err})
	}
	walk := c.dir
	if c.mon != nil {
		switch c.mon.how("") {
		case reuseDir:
			if t := c.mon.tree(c.w, ""); t != nil { // nothing changed
				unix.Close(fd)
				var size int64
				for _, e := range t.Entries {
					size += e.Size
				}
				return &Snapshot{Tree: c.mon.base, Files: -1, Bytes: size}, nil
			}
		case descendDir:
			walk = c.descend
		}
	}
	res := walk(fd, "", nil, &rootStat, c.rootIgnores())
	if res.err != nil {
		return nil, res.err
	}
	if res.unreadable {
		return nil, fmt.Errorf("read project root: %s", c.skipped[len(c.skipped)-1].Reason)
	}
	files := int(c.files.Load())
	if c.mon != nil {
		// Directories taken from the monitor's base were not counted, and
		// their files and listings are still in the cache, though this
		// capture did not look them up: the count is derived from the
		// parent's, and the cache keeps what it holds.
		files = -1
	} else if opts.Cache != nil {
		opts.Cache.DropUnusedListings()
		if opts.Cache.Len() != int(c.cached.Load()) {
			// Some cached paths were not seen: forget them. Every regular
			// file captured is in the cache, so equal counts mean nothing
			// is stale.
			seen := map[string]bool{}
			if err := objects.WalkTree(w, res.id, func(p string, e objects.TreeEntry) error {
				seen[p] = true
				return nil
			}); err != nil {
				return nil, err
			}
			opts.Cache.Retain(func(p string) bool { return seen[p] })
		}
	}
	sort.Slice(c.skipped, func(i, j int) bool { return c.skipped[i].Path < c.skipped[j].Path })
	slices.Sort(c.linked)
	slices.Sort(c.unrecorded)
	return &Snapshot{Tree: res.id, Files: files, Bytes: c.bytes.Load(), Read: int(c.read.Load()),
		Listed: int(c.listed.Load()), Skipped: c.skipped, Linked: c.linked, UnrecordedRules: c.unrecorded}, nil
}

// setExcluded fills c.excluded: the store, when it lies inside the root,
// and opts.Exclude.
func (c *capturer) setExcluded() {
	c.excluded = map[string]bool{}
	if rel, err := filepath.Rel(c.opts.Root, c.opts.StoreDir); err == nil && rel != "." && filepath.IsLocal(rel) {
		c.excluded[filepath.ToSlash(rel)] = true
	}
	for _, p := range c.opts.Exclude {
		c.excluded[p] = true
	}
}

// recoverTo turns a panic of the goroutine it is deferred in into *err: a
// bug in one walker or writer fails the operation with an error, as one in
// the calling goroutine does (the CLI recovers those), instead of killing
// the process half way.
func recoverTo(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("internal error: %v\n%s", p, debug.Stack())
	}
}

// walkers returns the semaphore bounding the extra walker goroutines: nil
// (none) for a single worker.
func walkers(n int) chan struct{} {
	if n == 1 {
		return nil
	}
	return make(chan struct{}, n)
}

type capturer struct {
	ctx       context.Context
	opts      Options
	sys       fsys.Sys
	w         *objects.Writer
	scanStart time.Time
	sem       chan struct{}
	excluded  map[string]bool // the store and opts.Exclude
	mon       *monitorPlan    // nil: no monitor, every directory is read

	files, read atomic.Int64
	listed      atomic.Int64
	cached      atomic.Int64 // regular files captured, all of which are in the stat cache
	bytes       atomic.Int64

	mu         sync.Mutex
	skipped    []Skipped
	linked     []string              // regular files with other names (Snapshot.Linked)
	unrecorded []string              // Snapshot.UnrecordedRules
	bases      map[string]objects.ID // directory path → its tree in opts.Parent (see treeBase)
}

// ruleRead is an ignore file a directory's rules were read from.
type ruleRead struct {
	name string
	id   objects.ID // its content's blob id; zero: it could not be read
}

// rulesInto is the ignoreSet.enter callback that appends to rules.
func rulesInto(rules *[]ruleRead) func(string, []byte, error) {
	return func(name string, data []byte, err error) {
		rr := ruleRead{name: name}
		if err == nil {
			rr.id = objects.Hash(objects.TypeBlob, data)
		}
		*rules = append(*rules, rr)
	}
}

type dirResult struct {
	id         objects.ID
	size       int64
	unreadable bool // the directory could not be listed (see carry)
	store      bool // the directory is a snap store: never captured
	err        error
}

// isStore reports whether a directory holding names (sorted) is a snap
// store — another project's, kept here through SNAP_STORE: never captured,
// so never deleted by a rewind either.
func isStore(names []string) bool {
	for _, n := range []string{"config", "packs", "refs"} {
		if i := sort.SearchStrings(names, n); i == len(names) || names[i] != n {
			return false
		}
	}
	return true
}

// skip records a path that is not captured and never will be as it is (a
// name or a kind of file snap does not store).
func (c *capturer) skip(p, reason string) {
	c.mu.Lock()
	c.skipped = append(c.skipped, Skipped{Path: p, Reason: reason})
	c.mu.Unlock()
}

// unreadable records that path p (a directory's ends in "/") exists but
// could not be read.
func (c *capturer) unreadable(p, reason string) {
	c.mu.Lock()
	c.skipped = append(c.skipped, Skipped{Path: p, Reason: reason, Kept: true})
	c.mu.Unlock()
}

// Kinds of entry carry looks for.
const (
	anyKind = iota
	fileKind
	dirKind
)

// carry returns the entry that name, in directory dir, had in
// opts.Parent, for a path that could not be read: carried forward, the
// capture records no change the user never made. It is found only when it
// is of the kind wanted (fileKind: a file or symlink).
func (c *capturer) carry(dir, name string, kind int) (objects.TreeEntry, bool) {
	base := c.treeBase(dir)
	if base.IsZero() {
		return objects.TreeEntry{}, false
	}
	t, err := c.w.ReadTree(base)
	if err != nil {
		return objects.TreeEntry{}, false
	}
	e, ok := t.Find(name)
	if !ok || kind == fileKind && e.Mode == objects.ModeDir || kind == dirKind && e.Mode != objects.ModeDir {
		return objects.TreeEntry{}, false
	}
	return e, true
}

// rootIgnores is the rule set of the root: .git/info/exclude (and git's
// global excludes file), and for each of opts.IgnoreTrees the root rules
// of its time (the same, unless recorded), as that tree checked out would
// have them: its own ignore files
// are added beneath them directory by directory. (Starting a stored stack
// empty let a tree's '!y' un-ignore what the exclude file ignores: M13.)
func (c *capturer) rootIgnores() *ignoreSet {
	root := rootIgnorer(c.opts.Root)
	set := &ignoreSet{disk: root}
	for _, it := range c.opts.IgnoreTrees {
		st := storedIgnore{ig: root, skipped: it.Skipped}
		if it.Excludes != nil {
			st.ig = excludesIgnorer(*it.Excludes)
		}
		if t, err := c.w.ReadTree(it.Tree); err == nil {
			st.tree = t
		}
		set.stored = append(set.stored, st)
	}
	return set
}

// dir captures the directory open at fd (rel is its path, comps its
// components, st its stat taken before it was opened) and closes fd.
func (c *capturer) dir(fd int, rel string, comps []string, st *unix.Stat_t, ig *ignoreSet) dirResult {
	defer unix.Close(fd)
	if err := c.ctx.Err(); err != nil {
		return dirResult{err: err}
	}
	names, err := c.list(fd, rel, st)
	if err != nil {
		c.unreadable(rel+"/", "cannot read directory: "+errText(err))
		return dirResult{unreadable: true}
	}
	if rel != "" && isStore(names) {
		c.skip(rel+"/", "a snap store (never captured)")
		return dirResult{store: true}
	}
	// Ignore files of this directory apply to its own entries.
	var rules []ruleRead
	ig = ig.enter(c.w, fd, comps, names, rulesInto(&rules))

	entries := make([]objects.TreeEntry, 0, len(names))
	var subs subdirs
	pathBuf := make([]string, len(comps)+1)
	copy(pathBuf, comps)
	// pb holds rel + "/" + name for each entry in turn: the stat cache is
	// looked up with it, and a path string is only made when one is kept.
	var pb []byte
	if rel != "" {
		pb = append([]byte(rel), '/')
	}
	prefix := len(pb)
	var tally tally // added to the capture's totals once, at the end
	defer c.add(&tally)
	for _, name := range names {
		if name == ".git" {
			continue
		}
		if strings.HasPrefix(name, TempPrefix) {
			removeStaleTemp(fd, name) // debris of a killed restore; never captured
			continue
		}
		pb = append(pb[:prefix], name...)
		if c.excluded[string(pb)] {
			continue
		}
		var st unix.Stat_t
		if err := c.sys.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) { // vanished during the walk: nothing to capture
				c.unreadable(string(pb), "cannot stat: "+errText(err))
				if e, ok := c.carry(rel, name, anyKind); ok {
					entries = append(entries, e)
				}
			}
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		pathBuf[len(comps)] = name
		if byDisk, byStored := ig.ignored(pathBuf, isDir); byDisk {
			continue
		} else if byStored {
			// Not read (a secret the target ignores is not pulled into the
			// store), but not a deletion either: kept as it was.
			p := string(pb)
			if isDir {
				p += "/"
			}
			c.unreadable(p, storedOnly)
			if e, ok := c.carry(rel, name, anyKind); ok {
				entries = append(entries, e)
			}
			continue
		}
		if err := objects.ValidName(name); err != nil {
			c.skip(string(pb), "name cannot be stored: "+err.Error())
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			p := string(pb)
			if c.mon != nil && c.mon.how(p) == reuseDir {
				// Unchanged, and nothing beneath it: as it was.
				if e, ok := c.mon.entry(c.w, rel, name); ok && e.Mode == objects.ModeDir {
					entries = append(entries, e)
					tally.bytes += e.Size
					continue
				}
			}
			entries = c.subdir(fd, rel, name, comps, &st, ig, entries, &subs)
		case unix.S_IFREG, unix.S_IFLNK:
			e, ok := c.file(fd, rel, name, pb, &st, &tally)
			if ok {
				entries = append(entries, e)
			}
		default:
			c.skip(string(pb), "not a regular file, directory or symlink")
		}
	}
	return c.finish(rel, entries, &subs, rules)
}

// subdirs are the subdirectories of one directory being captured, each
// perhaps by another walker.
type subdirs struct {
	list []*subdir
	wg   sync.WaitGroup
}

type subdir struct {
	idx int // its entry's index
	res dirResult
}

// subdir opens subdirectory name of the directory open at fd (rel, at
// comps, under rules ig; st is its stat) and captures it, perhaps in
// another walker: its entry is appended to entries (filled in by finish)
// and returned. One that cannot be opened keeps its previous entry, if
// any.
func (c *capturer) subdir(fd int, rel, name string, comps []string, st *unix.Stat_t, ig *ignoreSet, entries []objects.TreeEntry, subs *subdirs) []objects.TreeEntry {
	p := name
	if rel != "" {
		p = rel + "/" + name
	}
	cfd, err := c.sys.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		c.unreadable(p+"/", "cannot open directory: "+errText(err))
		if e, ok := c.carry(rel, name, dirKind); ok {
			entries = append(entries, e)
		}
		return entries
	}
	s := &subdir{idx: len(entries)}
	subs.list = append(subs.list, s)
	entries = append(entries, objects.TreeEntry{Name: name, Mode: objects.ModeDir})
	childComps := append(append([]string(nil), comps...), name)
	cig := ig.sub(c.w, name)
	walk := c.dir
	if c.mon != nil && c.mon.how(p) == descendDir {
		walk = c.descend
	}
	select {
	case c.sem <- struct{}{}: // never ready when c.sem is nil
		subs.wg.Add(1)
		go func() {
			defer subs.wg.Done()
			defer func() { <-c.sem }()
			defer recoverTo(&s.res.err) // a bug is an error, not a crash of the process
			s.res = walk(cfd, p, childComps, st, cig)
		}()
	default:
		s.res = walk(cfd, p, childComps, st, cig)
	}
	return entries
}

// finish waits for the subdirectories of directory rel, fills in their
// entries and stores the directory's tree.
func (c *capturer) finish(rel string, entries []objects.TreeEntry, subs *subdirs, rules []ruleRead) dirResult {
	subs.wg.Wait()

	// Fill in subdirectories (an empty one is kept: unlike git, snap
	// restores empty directories); one that could not be listed keeps
	// its previous entry, if any.
	out := entries[:0]
	var size int64
	j := 0
	for i, e := range entries {
		if j < len(subs.list) && subs.list[j].idx == i {
			r := subs.list[j].res
			j++
			if r.err != nil {
				return dirResult{err: r.err}
			}
			if r.store {
				continue
			}
			if r.unreadable {
				var ok bool
				if e, ok = c.carry(rel, e.Name, dirKind); !ok {
					continue
				}
			} else {
				e.ID, e.Size = r.id, r.size
			}
		}
		size += e.Size
		out = append(out, e)
	}
	t := objects.Tree{Entries: out}
	for _, rr := range rules {
		if e, ok := t.Find(rr.name); !ok || e.ID != rr.id || e.Mode != objects.ModeFile && e.Mode != objects.ModeExec {
			c.mu.Lock()
			c.unrecorded = append(c.unrecorded, rel)
			c.mu.Unlock()
			break
		}
	}
	data := t.Encode()
	id := objects.Hash(objects.TypeTree, data)
	if !c.w.Has(id) { // changed: find its previous version, a delta base
		var err error
		if id, err = c.w.PutDelta(objects.TypeTree, data, c.treeBase(rel)); err != nil {
			return dirResult{err: err}
		}
	}
	return dirResult{id: id, size: size}
}

// treeBase returns the tree of directory rel in opts.Parent (zero when it
// had none), reading only rel's ancestors, once each.
func (c *capturer) treeBase(rel string) objects.ID {
	if c.opts.Parent.IsZero() {
		return objects.ID{}
	}
	c.mu.Lock()
	id, ok := c.bases[rel]
	c.mu.Unlock()
	if ok {
		return id
	}
	if rel == "" {
		id = c.opts.Parent
	} else {
		dir, name := path.Split(rel)
		if pid := c.treeBase(strings.TrimSuffix(dir, "/")); !pid.IsZero() {
			if t, err := c.w.ReadTree(pid); err == nil {
				if e, ok := t.Find(name); ok && e.Mode == objects.ModeDir {
					id = e.ID
				}
			}
		}
	}
	c.mu.Lock()
	if c.bases == nil {
		c.bases = map[string]objects.ID{}
	}
	c.bases[rel] = id
	c.mu.Unlock()
	return id
}

// list returns the sorted entry names of the directory open at fd: from
// the stat cache's listing when the directory is unchanged since (st), else
// read and recorded there. The result must not be modified.
func (c *capturer) list(fd int, rel string, st *unix.Stat_t) ([]string, error) {
	var dst index.Stat
	if c.opts.Cache != nil {
		dst = statFromUnix(st)
		if names, ok := c.opts.Cache.Listing(rel, dst); ok {
			return names, nil
		}
	}
	names, err := readDirNames(fd)
	if err != nil {
		return nil, err
	}
	c.listed.Add(1)
	sort.Strings(names)
	if c.opts.Cache != nil {
		c.opts.Cache.PutListing(rel, dst, names, c.scanStart)
	}
	return names, nil
}

// direntBufs are getdents(2) buffers, shared by the walkers.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirNames lists the directory open at fd (without "." and ".."),
// straight from getdents(2): an os.File per directory would cost an fcntl,
// a poller registration attempt and a finalizer each.
func readDirNames(fd int) ([]string, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var names []string
	for {
		n, err := unix.Getdents(fd, *bp)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent((*bp)[:n], -1, names)
	}
}

// tally counts what one directory captured.
type tally struct {
	files, read, cached, bytes int64
}

func (t *tally) count(size int64) {
	t.files++
	t.bytes += size
}

// add adds a directory's tally to the capture's totals.
func (c *capturer) add(t *tally) {
	c.files.Add(t.files)
	c.read.Add(t.read)
	c.cached.Add(t.cached)
	c.bytes.Add(t.bytes)
}

// file captures a regular file or symlink named name in directory dir; pb
// is its path (a buffer the caller reuses), t the tally of its directory.
// One that cannot be read keeps its entry of opts.Parent, if any (carry).
func (c *capturer) file(dirfd int, dir, name string, pb []byte, st *unix.Stat_t, t *tally) (objects.TreeEntry, bool) {
	if st.Nlink > 1 && st.Mode&unix.S_IFMT == unix.S_IFREG {
		c.mu.Lock()
		c.linked = append(c.linked, string(pb))
		c.mu.Unlock()
	}
	e, ok := c.readEntry(dirfd, name, pb, st, t)
	if ok {
		return e, true
	}
	if e, ok = c.carry(dir, name, fileKind); ok {
		t.count(e.Size)
	}
	return e, ok
}

// readEntry reads a regular file or symlink into the store; on failure it
// records the path as unreadable and returns false.
func (c *capturer) readEntry(dirfd int, name string, pb []byte, st *unix.Stat_t, t *tally) (objects.TreeEntry, bool) {
	e := objects.TreeEntry{Name: name, Mode: objects.ModeFile, Size: st.Size}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		p := string(pb)
		e.Mode = objects.ModeSymlink
		target, err := readlinkAt(dirfd, name)
		if err != nil {
			c.unreadable(p, "cannot read symlink: "+errText(err))
			return e, false
		}
		id, err := c.w.Put(objects.TypeBlob, []byte(target))
		if err != nil {
			c.unreadable(p, "cannot store: "+errText(err))
			return e, false
		}
		e.ID, e.Size = id, int64(len(target))
		t.count(e.Size)
		return e, true
	}
	if st.Mode&0o100 != 0 {
		e.Mode = objects.ModeExec
	}
	if st.Size > c.opts.MaxFileSize {
		c.unreadable(string(pb), fmt.Sprintf("larger than max-file-size (%d > %d bytes)", st.Size, c.opts.MaxFileSize))
		return e, false
	}
	ist := statFromUnix(st)
	if c.opts.Cache != nil {
		// A cached id is used only while the store still holds its content
		// (retention or damage may have removed it): else read again.
		if id, ok := c.opts.Cache.LookupBytes(pb, ist); ok && c.w.Has(id) {
			e.ID = id
			t.cached++
			t.count(e.Size)
			return e, true
		}
	}
	p := string(pb)
	var prev objects.ID // the path's previous content: a delta base
	if c.opts.Cache != nil {
		prev, _ = c.opts.Cache.Previous(p)
	}
	id, rst, err := c.readFile(dirfd, name, prev)
	if err != nil {
		c.unreadable(p, errText(err))
		return e, false
	}
	if c.opts.Cache != nil {
		c.opts.Cache.Put(p, rst, id, c.scanStart)
		t.cached++
	}
	e.ID, e.Size = id, rst.Size
	if rst.Mode&0o100 != 0 {
		e.Mode = objects.ModeExec
	} else {
		e.Mode = objects.ModeFile
	}
	t.read++
	t.count(e.Size)
	return e, true
}

// TempPrefix starts the names of the temporary files a restore writes
// before renaming them into place: TempPrefix + pid + "-" + n. Capture never
// records them and removes those whose process is gone.
const TempPrefix = ".snap-tmp-"

// TempName returns a fresh temporary file name for this process.
func TempName() string {
	return fmt.Sprintf("%s%d-%d", TempPrefix, os.Getpid(), tmpCounter.Add(1))
}

var tmpCounter atomic.Int64

// removeStaleTemp removes a temporary file left by a process that no longer
// runs (the pid in its name is dead). Anything else is left alone.
func removeStaleTemp(dirfd int, name string) {
	var pid int
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, TempPrefix), "%d-", &pid); err != nil || pid <= 0 {
		return
	}
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		unix.Unlinkat(dirfd, name, 0)
	}
}

// errChanging: the file kept changing while it was being read.
var errChanging = errors.New("file kept changing while being read")

// readFile stores the content of a regular file, re-reading it when its
// stat changes during the read, so content is never stored torn. It returns
// the stat the content belongs to.
//
// An unchanged stat proves nothing for a file changed within the last
// timestamp tick: file times are coarse (a few milliseconds), so a write
// landing in the tick the read began in leaves them as they were. Such a
// recently changed file is read again once the tick has passed (a wait of
// at most timestampTick), so a write during that read would show. A
// writer stopped half way through a write for longer than that leaves the
// file torn on disk; that is what is recorded.
func (c *capturer) readFile(dirfd int, name string, base objects.ID) (objects.ID, index.Stat, error) {
	for attempt := 0; attempt < 4; attempt++ {
		start := time.Now()
		fd, err := c.sys.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return objects.ID{}, index.Stat{}, fmt.Errorf("cannot open: %w", err)
		}
		var before, after unix.Stat_t
		if err := unix.Fstat(fd, &before); err != nil || before.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return objects.ID{}, index.Stat{}, errors.New("not a regular file any more")
		}
		if before.Size > c.opts.MaxFileSize {
			unix.Close(fd)
			return objects.ID{}, index.Stat{}, fmt.Errorf("larger than max-file-size (%d > %d bytes)", before.Size, c.opts.MaxFileSize)
		}
		id, n, err := c.w.PutBlobBase(fsys.FdReader(c.sys, fd), base)
		if err == nil {
			err = unix.Fstat(fd, &after)
		}
		unix.Close(fd)
		if err != nil {
			return objects.ID{}, index.Stat{}, fmt.Errorf("cannot read: %w", err)
		}
		bs, as := statFromUnix(&before), statFromUnix(&after)
		if bs != as || n != bs.Size {
			continue
		}
		changed := time.Unix(0, bs.Mtime) // a write sets it
		if changed.Before(start.Add(-timestampTick)) {
			return id, bs, nil
		}
		time.Sleep(time.Until(changed.Add(timestampTick))) // let the tick pass, then read again
	}
	return objects.ID{}, index.Stat{}, errChanging
}

// timestampTick bounds the granularity of file times: they come from the
// kernel's coarse clock, which ticks every 1-10 ms (its resolution,
// CLOCK_REALTIME_COARSE, is the jiffy); three ticks, for a margin, within
// [2 ms, 50 ms] (50 ms when the resolution cannot be read). A checkpoint
// taken right after an edit waits up to this long.
var timestampTick = func() time.Duration {
	var ts unix.Timespec
	if unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &ts) != nil || ts.Nano() <= 0 {
		return 50 * time.Millisecond
	}
	return min(max(3*time.Duration(ts.Nano()), 2*time.Millisecond), 50*time.Millisecond)
}()

func statFromUnix(st *unix.Stat_t) index.Stat {
	return index.Stat{
		Size:  st.Size,
		Mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		Ino:   st.Ino,
		Mode:  unixMode(st.Mode),
	}
}

// unixMode maps st_mode to the fs.FileMode bits the stat cache stores.
func unixMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	}
	return mode
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
	return "", errors.New("symlink target too long")
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ReadFile copies the current content of the file (or the target of the
// symlink) at the slash-separated path p under root to w, without following
// symlinks on the way.
func ReadFile(root, p string, symlink bool, w io.Writer) error {
	r := &restorer{opts: RestoreOptions{Root: root}, sys: fsys.RealSys}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	r.rootfd = fd
	dfd, name, err := r.openParent(p, false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if symlink {
		target, err := readlinkAt(dfd, name)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, target)
		return err
	}
	ffd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(ffd), p)
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
