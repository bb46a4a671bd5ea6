package watch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/internal/flock"
	"github.com/snapcore-dev/snap/worktree"
)

// Config configures Run.
type Config struct {
	// Root is the project root, StoreDir its store (the lock, the socket
	// and the sync cookies live there).
	Root, StoreDir string
	// Idle: exit when no query came for this long; 0 never.
	Idle time.Duration
	// Logf, when set, is told what the daemon does (start, epochs,
	// failures, exit).
	Logf func(format string, args ...any)

	// Tests only: addHook runs before each watch is added and fails the
	// add with its error; errs carries errors as if the watcher had
	// reported them; inspect runs functions in the loop; eventHook runs
	// before each event is handled.
	addHook   func(path string) error
	errs      chan error
	inspect   chan func(*daemon)
	eventHook func(fsnotify.Event)
}

// Tunables (variables for the tests).
var (
	checkEvery  = 2 * time.Second  // is the root, is the store still there?
	retryEvery  = 30 * time.Second // retry the watches that could not be added
	maxRounds   = 8                // walks of a new directory until nothing new shows up
	defaultWait = time.Second      // a query's sync wait when the client gives none
	maxWait     = 30 * time.Second
	cookieGrace = 5 * time.Second // a cookie no one waits for any more is removed
)

// maxStateDirs bounds State.UnwatchedDirs.
const maxStateDirs = 100

const (
	eventBuffer = 1024 // fsnotify's event channel; the kernel queue holds more
	flushAfter  = 1024 // events handled before the walks they asked for are done
)

// Kinds of pending walk.
const (
	walkEntry = 1 << iota // a directory may have appeared or gone at this path
	walkRules             // an ignore file of this directory changed
)

// node is a directory the daemon knows: watched, or reported unwatched.
type node struct {
	rel     string
	parent  *node
	kids    map[string]*node // by name
	watched bool             // a watch is on it
	id      fileID           // the directory watched, when watched
	ignored bool             // a capture does not enter it (worktree.Dirs' ignored)
	why     string           // why it is reported unwatched; "" when it is not
}

// mark records that a directory changed at seq.
type mark struct {
	seq  uint64
	dir  string
	tree bool // Trees, else Dirs
}

// call is a request handed from a connection to the loop.
type call struct {
	req      request
	reply    chan reply // buffered: the loop never waits on it
	deadline time.Time
}

type fileID struct{ dev, ino uint64 }

type daemon struct {
	cfg        Config
	logf       func(string, ...any)
	werrs      []error  // errors of w received while adding or removing watches, not handled yet
	removals   []string // watches to remove (absolute paths), before any is added
	root       string   // absolute
	rootPrefix string   // root + "/"
	store      string   // absolute
	storeSlash string   // store + "/"
	sock       string
	uid        atomic.Int64 // the one user served
	rootID     fileID
	storeID    fileID
	sockID     fileID
	w          *fsnotify.Watcher

	nodes    map[string]*node
	inodes   map[fileID]*node   // the watched nodes by directory
	unw      map[*node]struct{} // nodes with a why
	unwList  []string           // top-most of unw, sorted; nil when stale
	watches  int                // directories of the tree watched
	excludes string             // worktree.Excludes when last walked
	mounts   string             // mountTable when last audited
	env      []string           // gitEnv of the daemon

	epoch, epochReason string
	seq                uint64
	dirSeq, treeSeq    map[string]uint64 // a directory's last change
	log                []mark            // by seq; entries superseded in dirSeq/treeSeq are stale

	pending map[string]int // path → walk kinds, done by flush
	events  int            // events handled since the last flush

	cookies map[string]*call
	cookieN uint64

	started      time.Time
	queries      uint64
	lastQuery    time.Time
	lastActive   time.Time
	overflows    int
	lastOverflow time.Time
	lastRetry    time.Time
	exit         string // why the loop ends; "" while it runs

	reqs     chan *call
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when the loop has ended
	conns    sync.WaitGroup

	tokMu  sync.Mutex // guards tokEpoch, tokSeq: the token for handlers
	tokEp  string
	tokSeq uint64
}

// Run runs the daemon for the project root cfg.Root with its store at
// cfg.StoreDir until ctx ends, Stop asks it to, the root or the store is
// removed, or no query came for cfg.Idle (0: never). Only one daemon runs
// per store: a second Run returns an error wrapping ErrRunning at once.
// It returns nil when it ran and ended for one of these reasons, and an
// error when it could not start.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Root == "" || cfg.StoreDir == "" {
		return errors.New("watch: Config.Root and Config.StoreDir are required")
	}
	d := &daemon{cfg: cfg, logf: cfg.Logf, root: absPath(cfg.Root), store: absPath(cfg.StoreDir)}
	if d.logf == nil {
		d.logf = func(string, ...any) {}
	}
	d.rootPrefix = strings.TrimSuffix(d.root, "/") + "/"
	d.storeSlash = d.store + "/"
	if d.store == d.root || strings.HasPrefix(d.root, d.storeSlash) {
		return fmt.Errorf("watch: the store %s holds the root %s", d.store, d.root)
	}
	var err error
	if d.rootID, err = dirID(d.root); err != nil {
		return fmt.Errorf("watch: project root: %w", err)
	}
	if d.storeID, err = dirID(d.store); err != nil {
		return fmt.Errorf("watch: store: %w", err)
	}
	if err := checkFS(d.root); err != nil {
		return err
	}
	lock, err := flock.Lock{Path: filepath.Join(d.store, lockName), Busy: ErrRunning, Holder: "a watch daemon"}.Acquire(ctx)
	if err != nil {
		return err
	}
	defer lock.Close() // last: the socket is gone by then
	sock, sockDir, err := socketPath(d.store)
	if err != nil {
		return err
	}
	if sockDir != "" {
		if err := os.Mkdir(sockDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("watch: %w", err)
		}
		if err := checkSocketDir(sockDir); err != nil {
			return err
		}
	}
	d.sock = sock
	// Holding the lock, no daemon runs: a socket there, and cookies, are
	// a killed one's.
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("watch: remove a stale socket: %w", err)
	}
	if stale, err := filepath.Glob(filepath.Join(d.store, cookiePrefix+"*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}

	d.started = time.Now()
	d.lastActive = d.started
	d.lastRetry = d.started
	d.env = gitEnv()
	d.mounts = mountTable()
	d.uid.Store(int64(os.Getuid()))
	d.reqs = make(chan *call)
	d.stop = make(chan struct{})
	d.done = make(chan struct{})
	d.cookies = map[string]*call{}
	if err := d.begin("just started"); err != nil {
		if d.w != nil {
			d.w.Close()
		}
		return err
	}
	defer func() { d.w.Close() }() // d.w changes on a restart

	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("watch: %w", err)
	}
	if d.sockID, err = fileIDOf(sock); err != nil {
		ln.Close()
		return fmt.Errorf("watch: %w", err)
	}
	d.logf("watch: watching %s (%d directories, %d unwatched), socket %s", d.root, d.watches, len(d.unwatched()), sock)
	d.conns.Add(1)
	go d.accept(ln)

	d.loop(ctx)

	d.logf("watch: exiting: %s", d.exit)
	close(d.done)
	ln.Close() // removes the socket
	d.conns.Wait()
	for name := range d.cookies {
		os.Remove(filepath.Join(d.store, name))
	}
	return nil
}

// begin starts an epoch: a new watcher on the store and on the whole tree.
func (d *daemon) begin(reason string) error {
	w, err := fsnotify.NewBufferedWatcher(eventBuffer)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	d.w = w
	d.werrs, d.removals = nil, nil
	if err := d.watchOps([]string{d.store})[0]; err != nil {
		return fmt.Errorf("watch: watch the store: %w", err)
	}
	d.nodes = map[string]*node{}
	d.inodes = map[fileID]*node{}
	d.unw = map[*node]struct{}{}
	d.unwList = nil
	d.watches = 0
	d.pending = map[string]int{}
	d.dirSeq = map[string]uint64{}
	d.treeSeq = map[string]uint64{}
	d.log = nil
	var b [8]byte
	rand.Read(b[:])
	d.epoch, d.epochReason = hex.EncodeToString(b[:]), reason
	d.setToken()
	d.excludes = worktree.Excludes(d.root)
	d.ensure("")
	d.walk("")
	d.flush()
	if n := d.nodes[""]; n == nil || !n.watched {
		why := "the root cannot be walked"
		if n != nil && n.why != "" {
			why = n.why
		}
		return fmt.Errorf("watch: %s", why)
	}
	return nil
}

// loop handles events, requests and ticks until d.exit is set.
func (d *daemon) loop(ctx context.Context) {
	every := checkEvery
	if d.cfg.Idle > 0 {
		every = min(every, max(d.cfg.Idle/4, 10*time.Millisecond))
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for d.exit == "" {
		select {
		case <-ctx.Done():
			d.exit = "the context ended"
		case <-d.stop:
			d.exit = "asked to stop"
		case ev, ok := <-d.w.Events:
			if !ok {
				d.restart("the watcher closed its events")
				continue
			}
			d.event(ev)
			d.drain()
		case err, ok := <-d.w.Errors:
			if !ok {
				d.restart("the watcher closed its errors")
				continue
			}
			d.werrs = append(d.werrs, err)
		case err := <-d.cfg.errs:
			d.werrs = append(d.werrs, err)
		case f := <-d.cfg.inspect:
			f(d)
		case c := <-d.reqs:
			d.request(c)
		case <-tick.C:
			d.tick()
		}
		d.watchErrors()
	}
}

// drain handles the events already queued, then does the walks they
// asked for.
func (d *daemon) drain() {
	for d.exit == "" {
		select {
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			d.event(ev)
			if len(d.werrs) > 0 {
				return // handled first: the events may be stale
			}
			if d.events >= flushAfter {
				d.flush()
			}
		default:
			d.flush()
			return
		}
	}
}

// watchErrors handles the errors of the watcher received so far: events
// may have been lost, so nothing handed out so far can be vouched for, and
// it restarts (and says so). The one error it can attribute is EINVAL:
// fsnotify removing, on a directory's IN_MOVE_SELF, a watch the kernel had
// dropped already (the directory was deleted since), which loses nothing.
//
// Only the loop receives errors, in its select or while watches are added
// or removed (watchOps): fsnotify sends an overflow before the events that
// follow it, so an error received after an event was always received
// before it, and is handled before the event's query is answered.
func (d *daemon) watchErrors() {
	for len(d.werrs) > 0 && d.exit == "" {
		err := d.werrs[0]
		d.werrs = d.werrs[1:]
		if errors.Is(err, unix.EINVAL) {
			d.logf("watch: %v (a watch the kernel had dropped already)", err)
			continue
		}
		reason := "event queue overflowed"
		if !errors.Is(err, fsnotify.ErrEventOverflow) {
			reason = "watcher error: " + err.Error()
		}
		d.restart(reason) // a new watcher: the old one's other errors do not matter
	}
}

// watchOps removes the watches of d.removals, then adds watches on adds
// (absolute paths), returning each add's error. fsnotify sends some errors
// while it holds the lock Add and Remove take: so the calls are made in
// another goroutine while the loop keeps receiving errors, which it
// handles later (watchErrors).
func (d *daemon) watchOps(adds []string) []error {
	removes := d.removals
	d.removals = nil
	errs := make([]error, len(adds))
	if len(removes) == 0 && len(adds) == 0 {
		return errs
	}
	w, hook := d.w, d.cfg.addHook
	done := make(chan struct{})
	var panicked error
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil { // a bug of fsnotify's: start afresh
				panicked = fmt.Errorf("fsnotify panicked: %v", r)
				for i := range errs {
					errs[i] = panicked
				}
			}
		}()
		for _, p := range removes {
			w.Remove(p) // an error: the kernel dropped it already
		}
		for i, p := range adds {
			if hook != nil {
				if errs[i] = hook(p); errs[i] != nil {
					continue
				}
			}
			errs[i] = w.Add(p)
		}
	}()
	errc := w.Errors
	for {
		select {
		case <-done:
			if panicked != nil {
				d.werrs = append(d.werrs, panicked)
			}
			return errs
		case err, ok := <-errc:
			if !ok {
				errc = nil
				continue
			}
			d.werrs = append(d.werrs, err)
		}
	}
}

// restart begins a new epoch with a new watcher: every older token gets
// All, and the tree is walked again.
func (d *daemon) restart(reason string) {
	d.logf("watch: %s: new epoch, walking %s again", reason, d.root)
	d.overflows++
	d.lastOverflow = time.Now()
	d.w.Close()
	d.werrs = nil
	if err := d.begin(reason); err != nil {
		d.exit = err.Error()
		d.checkAlive()
	}
	// The new watcher never sees the cookies of the old one.
	for name, c := range d.cookies {
		delete(d.cookies, name)
		os.Remove(filepath.Join(d.store, name))
		c.reply <- reply{Answer: d.all(reason)}
	}
}

// event handles one event of the watcher.
func (d *daemon) event(ev fsnotify.Event) {
	if d.cfg.eventHook != nil {
		d.cfg.eventHook(ev)
	}
	d.events++
	name := ev.Name
	switch {
	case name == d.store:
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			d.checkAlive()
		}
		return
	case strings.HasPrefix(name, d.storeSlash):
		if base := name[len(d.storeSlash):]; strings.HasPrefix(base, cookiePrefix) && ev.Has(fsnotify.Create) {
			d.cookie(base)
		}
		return
	case name == d.root:
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			d.checkAlive()
		}
		return
	case !strings.HasPrefix(name, d.rootPrefix):
		return
	}
	rel := name[len(d.rootPrefix):]
	dir, base := split(rel)
	d.mark(dir, false)
	if base == ".gitignore" || base == ".snapignore" {
		d.pending[dir] |= walkRules
	}
	n := d.nodes[rel]
	switch {
	case ev.Has(fsnotify.Create):
		d.pending[rel] |= walkEntry
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		// Gone from here as of this event; whatever is there now is
		// walked again (the event may be older than the tree on disk).
		if n != nil {
			d.dropNode(n)
			d.pending[rel] |= walkEntry
		}
	case ev.Has(fsnotify.Chmod):
		// Permissions may now let a walk in where it could not go.
		if n != nil && (!n.watched || n.why != "" || d.unwatchedKid(n)) {
			d.pending[rel] |= walkEntry
		}
	}
}

// unwatchedKid reports whether a subdirectory of n is reported unwatched.
func (d *daemon) unwatchedKid(n *node) bool {
	for _, k := range n.kids {
		if k.why != "" {
			return true
		}
	}
	return false
}

// flush does the pending walks, an ancestor's before (and instead of)
// those beneath it, and marks in Trees what they entered.
func (d *daemon) flush() {
	d.events = 0
	if len(d.removals) > 0 {
		d.watchOps(nil)
	}
	for range 16 { // walks may ask for more (a directory moved under them)
		if len(d.pending) == 0 || d.exit != "" {
			return
		}
		d.flushOnce()
	}
}

// flushOnce does the walks pending now.
func (d *daemon) flushOnce() {
	todo := d.pending
	d.pending = map[string]int{}
	paths := make([]string, 0, len(todo))
	for p := range todo {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if d.exit != "" {
			return
		}
		if coveredBy(p, todo) {
			continue
		}
		kind := todo[p]
		if kind&walkRules == 0 {
			var st unix.Stat_t
			if err := unix.Lstat(d.abs(p), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				if n := d.nodes[p]; n != nil && p != "" {
					d.dropNode(n)
				}
				continue
			}
		}
		if d.walk(p) || kind&walkRules != 0 {
			d.mark(p, true)
		}
	}
}

// coveredBy reports whether a proper ancestor of p is in set.
func coveredBy(p string, set map[string]int) bool {
	for p != "" {
		p, _ = split(p)
		if _, ok := set[p]; ok {
			return true
		}
	}
	return false
}

// walk (re)watches directory p and everything beneath it that a capture
// enters, drops what it no longer enters, and records what it does not
// enter as unwatched. It reports whether a capture enters p.
//
// A directory created beneath one after the walk listed it and before its
// watch was added has no event. So each directory newly watched is checked
// once its watch is in place: when its ctime (which every entry added or
// removed sets) is not older than the walk's start, less a margin for the
// coarse clock file times come from, it is walked again (a listing made
// now that it is watched misses nothing), until a round finds nothing new.
func (d *daemon) walk(p string) bool {
	entered := false
	todo := []string{p}
	for round := 0; len(todo) > 0; round++ {
		var next []string
		for _, q := range todo {
			start := time.Now()
			in, added := d.walkOnce(q, round == 0)
			if q == p {
				entered = in
			}
			for _, x := range added {
				if d.changedSince(x, start) {
					next = append(next, x)
				}
			}
		}
		set := make(map[string]int, len(next))
		for _, x := range next {
			set[x] = walkEntry
		}
		todo = next[:0]
		for _, x := range next {
			if !coveredBy(x, set) { // an ancestor's walk covers it
				todo = append(todo, x)
			}
		}
		if round == maxRounds-1 {
			for _, x := range todo {
				if n := d.nodes[x]; n != nil {
					d.setWhy(n, "kept changing while its watches were added")
				}
			}
			break
		}
	}
	return entered
}

// fileTimeMargin covers the lag of the coarse clock file times are taken
// from behind time.Now (a tick, 1 to 10 ms) with room to spare.
const fileTimeMargin = 50 * time.Millisecond

// changedSince reports whether directory rel may have changed since
// start: its ctime is not older than start, less fileTimeMargin (or it
// cannot be read: then it is walked again, to be safe).
func (d *daemon) changedSince(rel string, start time.Time) bool {
	var st unix.Stat_t
	if err := unix.Lstat(d.abs(rel), &st); err != nil {
		return !errors.Is(err, unix.ENOENT) // gone: its parent's event tells
	}
	return time.Unix(st.Ctim.Unix()).After(start.Add(-fileTimeMargin))
}

// walkOnce walks p once: Dirs, then apply (force: add every watch again).
// It reports whether a capture enters p, and the directories newly watched.
func (d *daemon) walkOnce(p string, force bool) (bool, []string) {
	if p != "" {
		if par := d.nodes[parentOf(p)]; par == nil || par.ignored {
			return false, nil // beneath what is not watched: reported there
		}
	}
	dirs, ignored, err := worktree.Dirs(d.root, d.store, p)
	if err != nil {
		if p == "" {
			d.checkAlive()
			root := d.nodes[""]
			for _, k := range root.kids {
				d.dropNode(k)
			}
			d.setWhy(root, "cannot walk the root: "+err.Error())
			return false, nil
		}
		if n := d.nodes[p]; n != nil {
			d.dropNode(n)
		}
		if !errors.Is(err, os.ErrNotExist) {
			if n := d.ensure(p); n != nil {
				d.setWhy(n, "cannot walk: "+err.Error())
			}
		}
		return false, nil
	}
	if len(dirs) == 0 { // not entered
		if n := d.nodes[p]; n != nil && p != "" {
			d.dropNode(n)
		}
		if len(ignored) > 0 {
			if n := d.ensure(p); n != nil {
				n.ignored = true
				d.setWhy(n, "ignored")
			}
		}
		return false, nil
	}
	return true, d.apply(p, dirs, ignored, force)
}

// apply brings the nodes beneath p in line with a walk's result: dirs are
// watched (each again when force is set: a watch may point elsewhere since
// a move), ignored ones are not, and nodes in neither are dropped. It
// returns the directories newly watched.
func (d *daemon) apply(p string, dirs, ignored []string, force bool) (added []string) {
	keep := make(map[string]bool, len(dirs)+len(ignored))
	for _, x := range dirs {
		keep[x] = true
	}
	for _, x := range ignored {
		keep[x] = false
	}
	if n := d.nodes[p]; n != nil {
		d.prune(n, keep)
	}
	var want []*node         // to watch
	for _, x := range dirs { // parents first: an ignored one's parent is among them
		n := d.ensure(x)
		if n == nil {
			continue
		}
		n.ignored = false
		if n.watched && n.why == "" && !force {
			continue
		}
		want = append(want, n)
	}
	for _, x := range ignored {
		n := d.ensure(x)
		if n == nil {
			continue
		}
		for _, k := range n.kids {
			d.dropNode(k)
		}
		d.unwatch(n)
		n.ignored = true
		d.setWhy(n, "ignored")
	}
	// One watch per directory, under its path now. fsnotify keys its
	// watches by path and the kernel by inode: adding a path whose
	// directory is watched under another path (moved there, its events
	// not handled yet) would leave fsnotify naming its events after the
	// old path, and its registry broken.
	var nodes []*node
	var paths []string
	var ids []fileID
	for _, n := range want {
		if d.nodes[n.rel] != n {
			continue // dropped since, with its parent
		}
		id, err := dirID(d.abs(n.rel))
		if err != nil {
			if n.rel != "" {
				d.dropNode(n) // gone, or not a directory: its parent's event tells
			}
			continue
		}
		if n.watched && n.id != id {
			d.unwatch(n) // another directory at this path: the old watch goes first
		}
		if o := d.inodes[id]; o != nil && o != n {
			if oid, err := dirID(d.abs(o.rel)); err == nil && oid == id {
				d.setWhy(n, "the same directory as "+strconv.Quote(o.rel)+", watched there (a bind mount?)")
				continue
			}
			// Moved here from o: o's path is looked at again.
			d.unwatch(o)
			d.setWhy(o, "its directory moved; to be walked again")
			d.pending[o.rel] |= walkEntry
		}
		nodes = append(nodes, n)
		paths = append(paths, d.abs(n.rel))
		ids = append(ids, id)
	}
	// The removals (watchOps), then the adds.
	for i, err := range d.watchOps(paths) {
		n := nodes[i]
		if d.nodes[n.rel] != n {
			continue // dropped with its parent, gone
		}
		if err != nil {
			if (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) && n.rel != "" {
				d.dropNode(n) // gone since it was listed: its parent's event tells
				continue
			}
			if errors.Is(err, unix.ENOSPC) {
				err = fmt.Errorf("%w (the inotify watch limit, sysctl fs.inotify.max_user_watches)", err)
			}
			d.logf("watch: cannot watch %s: %v", paths[i], err)
			d.setWhy(n, "cannot watch: "+err.Error())
			continue
		}
		if !n.watched || n.why != "" {
			added = append(added, n.rel)
		}
		if !n.watched {
			n.watched = true
			d.watches++
		}
		n.id = ids[i]
		d.inodes[n.id] = n
		d.setWhy(n, "")
	}
	return added
}

// prune drops the nodes beneath n that keep does not hold.
func (d *daemon) prune(n *node, keep map[string]bool) {
	for _, k := range n.kids {
		if _, ok := keep[k.rel]; !ok {
			d.dropNode(k)
		} else {
			d.prune(k, keep)
		}
	}
}

// ensure returns the node of directory x, made when missing; nil when its
// parent is unknown or not entered.
func (d *daemon) ensure(x string) *node {
	if n := d.nodes[x]; n != nil {
		return n
	}
	n := &node{rel: x}
	if x != "" {
		par := d.nodes[parentOf(x)]
		if par == nil || par.ignored {
			return nil
		}
		n.parent = par
		if par.kids == nil {
			par.kids = map[string]*node{}
		}
		_, base := split(x)
		par.kids[base] = n
	}
	d.nodes[x] = n
	return n
}

// dropNode forgets n and everything beneath it, and removes their watches.
func (d *daemon) dropNode(n *node) {
	for _, k := range n.kids {
		d.dropNode(k)
	}
	d.unwatch(n)
	d.setWhy(n, "")
	if n.parent != nil {
		_, base := split(n.rel)
		delete(n.parent.kids, base)
	}
	delete(d.nodes, n.rel)
}

// unwatch removes n's watch, if any (before the next watch is added:
// watchOps).
func (d *daemon) unwatch(n *node) {
	if n.watched {
		d.removals = append(d.removals, d.abs(n.rel))
		n.watched = false
		d.watches--
		if d.inodes[n.id] == n {
			delete(d.inodes, n.id)
		}
	}
}

// setWhy sets why n is reported unwatched ("": it is not).
func (d *daemon) setWhy(n *node, why string) {
	if (n.why != "") != (why != "") {
		d.unwList = nil
		if why != "" {
			d.unw[n] = struct{}{}
		} else {
			delete(d.unw, n)
		}
	}
	n.why = why
}

// unwatched returns the top-most directories reported unwatched, sorted.
func (d *daemon) unwatched() []string {
	if d.unwList != nil {
		return d.unwList
	}
	list := []string{}
	for n := range d.unw {
		top := true
		for a := n.parent; a != nil; a = a.parent {
			if a.why != "" {
				top = false
				break
			}
		}
		if top {
			list = append(list, n.rel)
		}
	}
	slices.Sort(list)
	d.unwList = list
	return list
}

// mark records a change of directory dir's own entries (Dirs), or of
// anything beneath it (tree: Trees), as the next seq.
func (d *daemon) mark(dir string, tree bool) {
	d.seq++
	m := d.dirSeq
	if tree {
		m = d.treeSeq
	}
	old, ok := m[dir]
	m[dir] = d.seq
	if last := len(d.log) - 1; ok && last >= 0 && d.log[last].seq == old && d.log[last].tree == tree && d.log[last].dir == dir {
		d.log[last].seq = d.seq // the same directory again: one entry
	} else {
		d.log = append(d.log, mark{seq: d.seq, dir: dir, tree: tree})
		if len(d.log) > 2*(len(d.dirSeq)+len(d.treeSeq))+1024 {
			d.compact()
		}
	}
	d.setToken()
}

// compact drops the stale entries of the log, and the marks of
// directories the daemon no longer knows (removed, or beneath what is
// reported unwatched: a directory that comes back is marked in Trees).
func (d *daemon) compact() {
	log := d.log[:0:0]
	for _, m := range d.log {
		seqs := d.dirSeq
		if m.tree {
			seqs = d.treeSeq
		}
		if seqs[m.dir] != m.seq {
			continue
		}
		if n := d.nodes[m.dir]; n == nil || !n.watched {
			delete(seqs, m.dir)
			continue
		}
		log = append(log, m)
	}
	d.log = log
}

// setToken publishes the current token for the connection handlers.
func (d *daemon) setToken() {
	d.tokMu.Lock()
	d.tokEp, d.tokSeq = d.epoch, d.seq
	d.tokMu.Unlock()
}

// token returns the current token; safe from any goroutine.
func (d *daemon) token() string {
	d.tokMu.Lock()
	defer d.tokMu.Unlock()
	return d.tokEp + ":" + strconv.FormatUint(d.tokSeq, 10)
}

// all is an answer that vouches for nothing. Its token is safe whenever it
// was read: every event not handled yet gets a later seq.
func (d *daemon) all(reason string) *Answer {
	return &Answer{Token: d.token(), All: true, Reason: reason, Dirs: []string{}, Trees: []string{}, Unwatched: []string{}}
}

// answer answers a query since token since, every event before it handled.
func (d *daemon) answer(since string) *Answer {
	if reason := d.refuse(since); reason != "" {
		return d.all(reason)
	}
	_, seq, _ := parseToken(since)
	i, _ := slices.BinarySearchFunc(d.log, seq+1, func(m mark, s uint64) int {
		switch {
		case m.seq < s:
			return -1
		case m.seq > s:
			return 1
		}
		return 0
	})
	trees := map[string]bool{}
	var dirs []string
	for _, m := range d.log[i:] {
		if d.nodes[m.dir] == nil {
			continue // removed since (its parent says so), or beneath what is unwatched
		}
		if m.tree && d.treeSeq[m.dir] == m.seq {
			trees[m.dir] = true
		} else if !m.tree && d.dirSeq[m.dir] == m.seq {
			dirs = append(dirs, m.dir)
		}
	}
	a := &Answer{Token: d.token(), Dirs: []string{}, Trees: []string{}, Unwatched: d.unwatched()}
	for t := range trees {
		if !coveredByTree(t, trees, false) {
			a.Trees = append(a.Trees, t)
		}
	}
	for _, x := range dirs {
		if !coveredByTree(x, trees, true) {
			a.Dirs = append(a.Dirs, x)
		}
	}
	slices.Sort(a.Trees)
	slices.Sort(a.Dirs)
	return a
}

// coveredByTree reports whether a proper ancestor of p (or p itself, with
// self) is in trees.
func coveredByTree(p string, trees map[string]bool, self bool) bool {
	if self && trees[p] {
		return true
	}
	for p != "" {
		p, _ = split(p)
		if trees[p] {
			return true
		}
	}
	return false
}

// refuse says why a token cannot be answered for ("" when it can).
func (d *daemon) refuse(since string) string {
	if since == "" {
		return "no token"
	}
	epoch, seq, ok := parseToken(since)
	switch {
	case !ok:
		return "malformed token"
	case epoch != d.epoch:
		return d.epochReason
	case seq > d.seq:
		return "token from the future"
	}
	return ""
}

// request handles a call of a connection.
func (d *daemon) request(c *call) {
	switch c.req.Op {
	case "status":
		c.reply <- reply{State: d.state()}
	case "query":
		d.queries++
		d.lastQuery = time.Now()
		d.lastActive = d.lastQuery
		if !slices.Equal(c.req.Env, d.env) {
			c.reply <- reply{Answer: d.all("the caller's HOME, XDG_CONFIG_HOME or GIT_CONFIG_* differ from the daemon's (git's excludes file may differ)")}
			return
		}
		if reason := d.refuse(c.req.Since); reason != "" {
			c.reply <- reply{Answer: d.all(reason)}
			return
		}
		// Sync: once the cookie's creation comes back, every event of a
		// change made before the query has been handled.
		d.cookieN++
		name := cookiePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(d.cookieN, 10)
		f, err := os.OpenFile(filepath.Join(d.store, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			c.reply <- reply{Answer: d.all("cannot create the sync cookie: " + err.Error())}
			return
		}
		f.Close()
		d.cookies[name] = c
	default:
		c.reply <- reply{Error: "unknown op " + strconv.Quote(c.req.Op)}
	}
}

// cookie answers the query waiting for cookie name, which came back.
func (d *daemon) cookie(name string) {
	c := d.cookies[name]
	if c == nil {
		return
	}
	os.Remove(filepath.Join(d.store, name))
	d.flush()
	if x := worktree.Excludes(d.root); x != d.excludes {
		// .git/info/exclude or git's excludes file changed: the rules of
		// every directory did.
		d.excludes = x
		d.walk("")
		d.flush()
		d.mark("", true)
	}
	// An error received before now came before the cookie: a restart
	// answers every query waiting, this one too.
	d.watchErrors()
	if d.cookies[name] == nil {
		return
	}
	delete(d.cookies, name)
	if d.exit != "" {
		c.reply <- reply{Error: "the daemon is exiting: " + d.exit}
		return
	}
	c.reply <- reply{Answer: d.answer(c.req.Since)}
}

// tick checks the root and the store, the idle time, forgotten cookies,
// and retries the watches that could not be added.
func (d *daemon) tick() {
	now := time.Now()
	d.checkAlive()
	if d.cfg.Idle > 0 && now.Sub(d.lastActive) >= d.cfg.Idle {
		d.exit = "no query for " + d.cfg.Idle.String()
	}
	for name, c := range d.cookies {
		if now.After(c.deadline.Add(cookieGrace)) {
			delete(d.cookies, name)
			os.Remove(filepath.Join(d.store, name))
		}
	}
	if m := mountTable(); d.exit == "" && m != d.mounts {
		d.mounts = m
		d.audit()
	}
	if d.exit == "" && now.Sub(d.lastRetry) >= retryEvery {
		d.lastRetry = now
		d.retry()
	}
}

// mountTable is this process's mount table (read when it may have
// changed: a mount or an unmount inside the tree changes directories
// without an event).
func mountTable() string {
	fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var data []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			return string(data)
		}
		data = append(data, buf[:n]...)
	}
}

// audit checks that every watched directory is the one its watch is on: a
// file system mounted on one, or unmounted from it, changes it without an
// event (and fsnotify drops a watch the kernel drops on an unmount
// silently); tick calls it when the mount table changed. One that is not
// is walked again, and its parent marked.
func (d *daemon) audit() {
	for rel, n := range d.nodes {
		if !n.watched {
			continue
		}
		if id, err := dirID(d.abs(rel)); err == nil && id == n.id {
			continue
		}
		if rel == "" {
			d.checkAlive()
			continue
		}
		d.logf("watch: %s is not the directory watched any more", d.abs(rel))
		d.mark(parentOf(rel), false)
		d.pending[rel] |= walkEntry
	}
	d.flush()
}

// retry walks again the directories a watch could not be added to.
func (d *daemon) retry() {
	for _, p := range d.unwatched() {
		if n := d.nodes[p]; n != nil && !n.ignored {
			d.pending[p] |= walkEntry
		}
	}
	d.flush()
}

// checkAlive ends the daemon when the root, the store or its socket is
// gone or replaced (no client could reach it).
func (d *daemon) checkAlive() {
	if id, err := dirID(d.root); err != nil || id != d.rootID {
		d.exit = "the project root was removed or replaced"
	} else if id, err := dirID(d.store); err != nil || id != d.storeID {
		d.exit = "the store was removed or replaced"
	} else if id, err := fileIDOf(d.sock); d.sockID != (fileID{}) && (err != nil || id != d.sockID) {
		d.exit = "its socket was removed or replaced"
	}
}

// fileIDOf identifies the file at path (not following a symlink).
func fileIDOf(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}

// state is what Status reports.
func (d *daemon) state() *State {
	s := &State{
		Pid: os.Getpid(), Root: d.root, StoreDir: d.store, Socket: d.sock, Started: d.started,
		Watches: d.watches + 1, Unwatched: len(d.unwatched()), Queries: d.queries, LastQuery: d.lastQuery,
		Epoch: d.epoch, EpochReason: d.epochReason, Token: d.token(),
		Overflows: d.overflows, LastOverflow: d.lastOverflow,
	}
	for n := range d.unw {
		if !n.ignored {
			s.Failed++
		}
	}
	for _, p := range d.unwatched() {
		if len(s.UnwatchedDirs) == maxStateDirs {
			break
		}
		s.UnwatchedDirs = append(s.UnwatchedDirs, strconv.Quote(p)+": "+d.nodes[p].why)
	}
	return s
}

// accept serves the connections of ln until it is closed.
func (d *daemon) accept(ln net.Listener) {
	defer d.conns.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-d.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say
			continue
		}
		d.conns.Add(1)
		go d.serve(conn)
	}
}

// serve reads the one request of conn and writes the one reply.
func (d *daemon) serve(conn net.Conn) {
	defer d.conns.Done()
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if uid, err := peerUID(conn); err != nil || int64(uid) != d.uid.Load() {
		d.logf("watch: refused a connection from uid %d (%v)", uid, err)
		return
	}
	line, err := readLine(conn, maxRequest)
	if err != nil {
		return
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		writeReply(conn, reply{Error: "bad request: " + err.Error()})
		return
	}
	switch req.Op {
	case "stop":
		writeReply(conn, reply{Stopping: true})
		d.stopOnce.Do(func() { close(d.stop) })
		return
	case "query", "status":
	default:
		writeReply(conn, reply{Error: "unknown op " + strconv.Quote(req.Op)})
		return
	}
	wait := defaultWait
	if req.WaitMs > 0 {
		wait = min(time.Duration(req.WaitMs)*time.Millisecond, maxWait)
	}
	conn.SetDeadline(time.Now().Add(wait + time.Second))
	writeReply(conn, d.call(req, wait))
}

// call hands req to the loop and waits at most wait for its reply. A query
// not answered in time gets All: the events lag behind.
func (d *daemon) call(req request, wait time.Duration) reply {
	c := &call{req: req, reply: make(chan reply, 1), deadline: time.Now().Add(wait)}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	late := func() reply {
		if req.Op == "query" {
			return reply{Answer: d.all("the daemon could not sync with the file system in time (its events lag behind)")}
		}
		return reply{Error: "the daemon is busy"}
	}
	select {
	case d.reqs <- c:
	case <-timer.C:
		return late()
	case <-d.done:
		return reply{Error: "the daemon is exiting"}
	}
	select {
	case r := <-c.reply:
		return r
	case <-timer.C:
		return late()
	case <-d.done:
		return reply{Error: "the daemon is exiting"}
	}
}

func writeReply(conn net.Conn, r reply) {
	data, err := json.Marshal(r)
	if err != nil {
		data, _ = json.Marshal(reply{Error: err.Error()})
	}
	conn.Write(append(data, '\n'))
}

// abs is the absolute path of directory rel.
func (d *daemon) abs(rel string) string {
	if rel == "" {
		return d.root
	}
	return d.rootPrefix + rel
}

// split splits a relative path into its directory ("" at the root) and
// its last component.
func split(rel string) (dir, base string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

func parentOf(rel string) string {
	dir, _ := split(rel)
	return dir
}

// dirID identifies the directory at path (not following a symlink).
func dirID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileID{}, fmt.Errorf("%s is not a directory", path)
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}

// checkFS refuses a file system on which inotify does not see every
// change: a network or FUSE file system, changed from elsewhere.
func checkFS(root string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil {
		return fmt.Errorf("watch: statfs %s: %w", root, err)
	}
	remote := map[int64]string{
		0x6969: "NFS", 0x517B: "SMB", 0xFF534D42: "CIFS", 0xFE534D42: "SMB2", 0x65735546: "FUSE",
		0x01021997: "9P", 0x00C36400: "Ceph", 0x5346414F: "AFS", 0x73757245: "Coda", 0x47504653: "GPFS",
		0x013111A8: "IBRIX", 0x0BD00BD0: "Lustre",
	}
	if name, ok := remote[int64(fs.Type)]; ok {
		return fmt.Errorf("watch: %s is on a %s file system, whose changes made elsewhere inotify does not see", root, name)
	}
	return nil
}
