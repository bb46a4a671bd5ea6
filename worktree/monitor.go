package worktree

import (
	"errors"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/objects"
)

// Monitor lets a capture skip what a file-system monitor vouches has not
// changed since Base was captured: a directory it names neither in Dirs
// nor beneath Trees or Unwatched is taken from Base as it is, without
// being listed or its files stat'ed. The caller guarantees that Base was
// captured under the same options (size limit, exclusions, ignore rules
// outside the tree), that its objects are in the store, and that its own
// entries skipped nothing (a directory that held a skipped path is in
// Dirs) and held no file with other names (Snapshot.Linked: its directory
// is in Dirs, or in Trees when it is an ignore file), and that a
// directory where its capture read rules it did not record
// (Snapshot.UnrecordedRules) is in Dirs; Capture then records the tree a
// full scan would. Under IgnoreTrees, Base may be a capture under the
// rules on disk alone when SameRules holds for each.
type Monitor struct {
	Base objects.ID // the root tree of the earlier capture
	// Dirs are directories ("" is the root; slash-separated, relative)
	// whose own entries may have changed: they are listed and their files
	// looked at again, their unchanged subdirectories taken from Base.
	Dirs []string
	// Trees and Unwatched are directories beneath which anything may have
	// changed: they are captured whole.
	Trees     []string
	Unwatched []string
}

// Ways a capture treats a directory under a monitor.
const (
	scanDir    = iota // list it and look at each entry (its subdirectories are decided one by one)
	scanWhole         // capture it and everything beneath as without a monitor
	descendDir        // unchanged itself, changes beneath: its entries come from Base, but for the subdirectories holding them
	reuseDir          // unchanged, nothing beneath changed: its entry in Base
)

// monitorPlan is a Monitor made ready for lookups.
type monitorPlan struct {
	base    objects.ID
	changed map[string]bool // Dirs
	whole   map[string]bool // Trees and Unwatched
	above   map[string]bool // every strict ancestor of a changed or whole directory

	mu    sync.Mutex
	trees map[string]*objects.Tree // directory → its tree in Base (nil: none there)
}

func newMonitorPlan(m *Monitor) *monitorPlan {
	p := &monitorPlan{base: m.Base, changed: map[string]bool{}, whole: map[string]bool{}, above: map[string]bool{}, trees: map[string]*objects.Tree{}}
	mark := func(d string) {
		for d != "" {
			d = parentOf(d)
			if p.above[d] {
				return
			}
			p.above[d] = true
		}
	}
	for _, d := range m.Dirs {
		d = strings.Trim(d, "/")
		p.changed[d] = true
		mark(d)
	}
	for _, set := range [][]string{m.Trees, m.Unwatched} {
		for _, d := range set {
			d = strings.Trim(d, "/")
			p.whole[d] = true
			mark(d)
		}
	}
	return p
}

// parentOf is the directory holding rel ("" for one at the root).
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// how says how directory rel is captured.
func (p *monitorPlan) how(rel string) int {
	for a := rel; ; a = parentOf(a) {
		if p.whole[a] {
			return scanWhole
		}
		if a == "" {
			break
		}
	}
	switch {
	case p.changed[rel]:
		return scanDir
	case p.above[rel]:
		return descendDir
	}
	return reuseDir
}

// tree returns directory rel's tree in Base (nil when Base has no
// directory there, or it cannot be read).
func (p *monitorPlan) tree(r objects.TreeReader, rel string) *objects.Tree {
	p.mu.Lock()
	t, ok := p.trees[rel]
	p.mu.Unlock()
	if ok {
		return t
	}
	id := p.base
	if rel != "" {
		parent := p.tree(r, parentOf(rel))
		id = objects.ID{}
		if parent != nil {
			if e, ok := parent.Find(path.Base(rel)); ok && e.Mode == objects.ModeDir {
				id = e.ID
			}
		}
	}
	if !id.IsZero() {
		t, _ = r.ReadTree(id) // (unreadable: nil, and the directory is scanned)
	}
	p.mu.Lock()
	p.trees[rel] = t
	p.mu.Unlock()
	return t
}

// entry returns name's entry in directory dir of Base.
func (p *monitorPlan) entry(r objects.TreeReader, dir, name string) (objects.TreeEntry, bool) {
	t := p.tree(r, dir)
	if t == nil {
		return objects.TreeEntry{}, false
	}
	return t.Find(name)
}

// descend captures directory rel (open at fd, which it closes; st its
// stat, ig the rules of its parent) that the monitor vouches is unchanged
// itself, with changes beneath: its entries are Base's, but for the
// subdirectories on the way to a change, which are opened and captured.
// A directory Base does not hold as one, or whose subdirectory on the way
// is no longer one, is scanned instead.
func (c *capturer) descend(fd int, rel string, comps []string, st *unix.Stat_t, ig *ignoreSet) dirResult {
	if err := c.ctx.Err(); err != nil {
		unix.Close(fd)
		return dirResult{err: err}
	}
	base := c.mon.tree(c.w, rel)
	if base == nil {
		return c.dir(fd, rel, comps, st, ig)
	}
	type visit struct {
		name string
		st   unix.Stat_t
	}
	var visits []visit
	for _, e := range base.Entries {
		if e.Mode != objects.ModeDir || c.mon.how(path.Join(rel, e.Name)) == reuseDir {
			continue
		}
		v := visit{name: e.Name}
		if err := c.sys.Fstatat(fd, e.Name, &v.st, unix.AT_SYMLINK_NOFOLLOW); err != nil || v.st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return c.dir(fd, rel, comps, st, ig) // not as Base has it: the monitor missed something
		}
		visits = append(visits, v)
	}
	defer unix.Close(fd)
	names := make([]string, len(base.Entries))
	for i, e := range base.Entries {
		names[i] = e.Name
	}
	var rules []ruleRead
	ig = ig.enter(c.w, fd, comps, names, rulesInto(&rules))
	var tally tally
	defer c.add(&tally)
	entries := make([]objects.TreeEntry, 0, len(base.Entries))
	var subs subdirs
	for _, e := range base.Entries {
		if len(visits) > 0 && visits[0].name == e.Name {
			entries = c.subdir(fd, rel, e.Name, comps, &visits[0].st, ig, entries, &subs)
			visits = visits[1:]
			continue
		}
		entries = append(entries, e)
		tally.bytes += e.Size
	}
	return c.finish(rel, entries, &subs, rules)
}

// SameRules reports whether a capture under it's rules as well as those
// on disk records what one under the rules on disk alone records wherever
// the disk is as the capture of base found it: that capture read its
// rules from the ignore files base records, every one
// (Snapshot.UnrecordedRules was empty: the caller knows), it's tree holds
// the same ignore files at the same paths, all of them read as rules
// (none skipped), and its exclude files' text is root's now. The cost
// follows the difference between the two trees, not their size.
func SameRules(r objects.TreeReader, base objects.ID, it IgnoreTree, root string) bool {
	if it.Excludes != nil && *it.Excludes != Excludes(root) {
		return false
	}
	for _, p := range it.Skipped {
		if strings.HasSuffix(p, "/") || slices.Contains(ignoreFiles, path.Base(p)) {
			return false
		}
	}
	differ := errors.New("an ignore file differs")
	return objects.DiffTrees(r, base, it.Tree, func(c objects.Change) error {
		if slices.Contains(ignoreFiles, path.Base(c.Path)) {
			return differ
		}
		return nil
	}) == nil
}
