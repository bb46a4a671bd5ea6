package snap

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/watch"
	"github.com/snapcore-dev/snap/worktree"
)

// The file-system monitor (design §10). When a watch daemon runs for the
// project (snap watch), a capture of the whole tree asks it which
// directories may have changed since the last capture it can build on,
// and reads only those (worktree.Monitor): the rest is taken from that
// capture's tree. The store keeps, per set of capture options (the size
// limit, the paths excluded, the ignore rules outside the tree), the
// daemon's token and the checkpoint whose tree was captured at it
// (.snap/cache/monitor). Correctness never depends on the daemon: no
// daemon, a dead or hung one (a bounded wait), an answer it cannot vouch
// for, a token it does not know, a base checkpoint gone: a full scan.

// monitorWait bounds what a capture waits for the daemon's answer.
const monitorWait = 500 * time.Millisecond

// monitorBase is the capture a later one under the same options builds on.
type monitorBase struct {
	Token      string     `json:"token"`
	Checkpoint objects.ID `json:"checkpoint"`
	// Rescan: directories that held a path the capture skipped (a FIFO,
	// an unreadable or oversized file) or a file with other names (a hard
	// link, which changes without an event here): read again every time.
	// RescanTrees: directories whose ignore file has other names: read
	// whole every time.
	Rescan      []string `json:"rescan,omitempty"`
	RescanTrees []string `json:"rescan_trees,omitempty"`
	// RulesRecorded: the capture read its rules from the ignore files its
	// tree records, every one (worktree.Snapshot.UnrecordedRules empty), so
	// a capture under a stored tree's rules can build on it too.
	RulesRecorded bool `json:"rules_recorded,omitempty"`
	// Root is the project root's device and inode when it was captured:
	// another directory at that path (moved away, put back as a copy) is
	// not the one the daemon watched.
	Root string `json:"root"`
	// Full is when (Unix ns) the last full scan of this chain ran: one runs
	// every fullScanEvery whatever the daemon says, bounding how long a
	// change inotify never reports (a write through a shared mmap or
	// native AIO) can go unrecorded.
	Full int64 `json:"full"`
	Used int64 `json:"used"` // Unix ns; the oldest of too many is dropped
}

// fullScanEvery is how often a chain of monitored captures is scanned
// whole anyway.
const fullScanEvery = 10 * time.Minute

// monitorBases are kept for this many sets of options at most.
const monitorBases = 8

// monitorNote is what a capture learned from the daemon, kept once its
// tree is recorded as a checkpoint.
type monitorNote struct {
	key, token, root    string
	rescan, rescanTrees []string
	rulesRecorded       bool
	baseRulesRecorded   bool  // the base's RulesRecorded (used)
	full                int64 // the chain's last full scan (this one's time when it is one)
	used                bool  // the capture built on a base (CheckpointResult.Monitored)
}

func (r *Repo) monitorPath() string { return filepath.Join(r.StoreDir, "cache", "monitor") }

// monitorKey names what a capture's result depends on besides the tree:
// two captures with one key record the same tree of the same disk.
func monitorKey(o *worktree.Options) string {
	h := blake3.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00", o.MaxFileSize, o.StoreDir, worktree.Excludes(o.Root))
	for _, e := range slices.Sorted(slices.Values(o.Exclude)) {
		fmt.Fprintf(h, "x%s\x00", e)
	}
	for _, it := range o.IgnoreTrees {
		ex := "-"
		if it.Excludes != nil {
			ex = "+" + *it.Excludes
		}
		fmt.Fprintf(h, "t%s\x00%s\x00%q\x00", it.Tree, ex, it.Skipped)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// loadMonitorBases reads the bases (none when the file is missing or
// damaged: the next capture scans everything).
func (r *Repo) loadMonitorBases() map[string]monitorBase {
	out := map[string]monitorBase{}
	if data, err := fsys.ReadRegularMax(r.fs, r.monitorPath(), 1<<20); err == nil { // (8 bases: a few KB)
		if json.Unmarshal(data, &out) != nil {
			return map[string]monitorBase{}
		}
	}
	return out
}

// askMonitor asks the project's watch daemon, when one runs, what changed
// since the base of o's options, and sets o.Monitor when the capture can
// build on it. It returns what to keep once the capture is recorded (nil:
// no daemon answered).
func (r *Repo) askMonitor(o *worktree.Options) *monitorNote {
	if r.fs != fsys.OS {
		return nil // a store on a simulated file system has no daemon
	}
	key := monitorKey(o)
	bases := r.loadMonitorBases()
	base, ok := bases[key]
	if len(o.IgnoreTrees) > 0 {
		// A move's safety capture, under its target's rules as well as
		// those on disk: it builds on the last capture under the rules
		// on disk alone when that one is the later (the last capture
		// under these options is a move's to the same target, perhaps
		// long ago: what changed since is more) and the target's rules
		// are those it read, every one recorded.
		po := *o
		po.IgnoreTrees = nil
		if pb, pok := bases[monitorKey(&po)]; pok && pb.RulesRecorded && (!ok || pb.Used > base.Used) && r.sameRules(pb, o.IgnoreTrees, o.Root) {
			base, ok = pb, true
		}
	}
	ans, err := watch.Query(r.StoreDir, base.Token, monitorWait)
	if err != nil {
		return nil
	}
	root, err := fileID(r.Root)
	if err != nil || mountsBelow(r.Root) {
		// A file system mounted inside the project (or one directory at
		// two paths) changes without events the daemon sees where the
		// capture reads: never vouched for.
		return nil
	}
	now := time.Now().UnixNano()
	note := &monitorNote{key: key, token: ans.Token, root: root, full: now}
	if !ok || ans.All || base.Root != root || now-base.Full > int64(fullScanEvery) || base.Full > now {
		return note
	}
	ck, err := r.objects.ReadCheckpoint(base.Checkpoint)
	if err != nil || r.history().isExpired(base.Checkpoint) {
		return note
	}
	o.Monitor = &worktree.Monitor{Base: ck.Tree, Dirs: slices.Concat(ans.Dirs, base.Rescan),
		Trees: slices.Concat(ans.Trees, base.RescanTrees), Unwatched: ans.Unwatched}
	note.used, note.full, note.baseRulesRecorded = true, base.Full, base.RulesRecorded
	return note
}

// sameRules reports whether the ignore rules of base's tree are those of
// every tree of rules (worktree.SameRules).
func (r *Repo) sameRules(base monitorBase, rules []worktree.IgnoreTree, root string) bool {
	ck, err := r.objects.ReadCheckpoint(base.Checkpoint)
	if err != nil {
		return false
	}
	for _, it := range rules {
		if !worktree.SameRules(r.objects, ck.Tree, it, root) {
			return false
		}
	}
	return true
}

// fileID is path's device and inode.
func fileID(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// mountsBelow reports whether a file system is mounted strictly inside
// root (or mountinfo cannot be read: then it cannot be known).
func mountsBelow(root string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return true
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	prefix := strings.TrimSuffix(root, "/") + "/"
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// (Octal escapes, \040 for a space, make a path that differs from
		// the real one only where the real one has such a character.)
		if mp := unescapeMount(f[4]); strings.HasPrefix(mp, prefix) {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes (\040 is a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// captured records what the next capture must read again: the
// directories of what this one skipped and of files with other names
// (whole, for an ignore file).
func (n *monitorNote) captured(snap *worktree.Snapshot) {
	dirs, trees := map[string]bool{}, map[string]bool{}
	dirOf := func(p string) string {
		p = strings.TrimSuffix(p, "/")
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			return p[:i]
		}
		return ""
	}
	for _, s := range snap.Skipped {
		dirs[dirOf(s.Path)] = true
	}
	// Where the rules were not read from the tree, the next capture reads
	// them again (a directory taken from this tree would be read under
	// the rules its tree records).
	for _, d := range snap.UnrecordedRules {
		dirs[d] = true
	}
	// (The directories taken from the base were not read: their rules
	// are recorded when the base's were. A base from before this field,
	// or one whose rules were not, waits for the next full scan.)
	n.rulesRecorded = len(snap.UnrecordedRules) == 0 && (!n.used || n.baseRulesRecorded)
	for _, p := range snap.Linked {
		dirs[dirOf(p)] = true
		if base := path.Base(p); base == ".gitignore" || base == ".snapignore" {
			trees[dirOf(p)] = true
		}
	}
	n.rescan, n.rescanTrees = slices.Sorted(maps.Keys(dirs)), slices.Sorted(maps.Keys(trees))
}

// noteMonitor keeps checkpoint id, whose tree capture c recorded, as the
// base of the next capture under the same options, and reports whether c
// built on the daemon's answer. Best effort: a base not kept costs a full
// scan.
func (r *Repo) noteMonitor(c *captured, id objects.ID) (monitored bool) {
	if c == nil || c.monitor == nil || id.IsZero() {
		return false
	}
	monitored = c.monitor.used
	n := c.monitor
	bases := r.loadMonitorBases()
	bases[n.key] = monitorBase{Token: n.token, Checkpoint: id, Rescan: n.rescan, RescanTrees: n.rescanTrees, RulesRecorded: n.rulesRecorded,
		Root: n.root, Full: n.full, Used: time.Now().UnixNano()}
	for len(bases) > monitorBases {
		oldest := ""
		for k, b := range bases {
			if oldest == "" || b.Used < bases[oldest].Used {
				oldest = k
			}
		}
		delete(bases, oldest)
	}
	data, err := json.Marshal(bases)
	if err != nil {
		return monitored
	}
	_ = fsys.ReplaceFile(r.fs, r.monitorPath(), data)
	return monitored
}

// WatchState is what a running watch daemon reports of itself.
type WatchState = watch.State

// Errors of the watch daemon's control.
var (
	ErrWatchRunning    = watch.ErrRunning    // a daemon already watches this project
	ErrWatchNotRunning = watch.ErrNotRunning // no daemon watches this project
)

// Watch runs the project's file-system monitor in this process until ctx
// ends, WatchStop asks it to, the project or the store is removed, or no
// capture asked it anything for idle (0: never). A second one for the
// same store returns ErrWatchRunning at once. logf, when set, receives
// what it does.
func (r *Repo) Watch(ctx context.Context, idle time.Duration, logf func(format string, args ...any)) error {
	return watch.Run(ctx, watch.Config{Root: r.Root, StoreDir: r.StoreDir, Idle: idle, Logf: logf})
}

// WatchStatus reports the running daemon's state, waiting at most timeout
// (ErrWatchNotRunning when none runs; another error when one holds the
// store's watch lock but does not answer).
func (r *Repo) WatchStatus(timeout time.Duration) (*WatchState, error) {
	return watch.Status(r.StoreDir, timeout)
}

// WatchStop asks the running daemon to exit and waits until it has.
func (r *Repo) WatchStop() error { return watch.Stop(r.StoreDir, 5*time.Second) }

// WatchAuto reports whether the store asks for its monitor to be started
// when none runs (snap config watch.auto).
func (r *Repo) WatchAuto() bool { return r.config.WatchAuto }
