package snap

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zeebo/blake3"

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
	// an unreadable or oversized file): read again every time, so that
	// what a full scan would report of them is reported.
	Rescan []string `json:"rescan,omitempty"`
	Used   int64    `json:"used"` // Unix ns; the oldest of too many is dropped
}

// monitorBases are kept for this many sets of options at most.
const monitorBases = 8

// monitorNote is what a capture learned from the daemon, kept once its
// tree is recorded as a checkpoint.
type monitorNote struct {
	key, token string
	rescan     []string
	used       bool // the capture built on a base (for tests and --json stats)
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
	if data, err := r.fs.ReadFile(r.monitorPath()); err == nil {
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
	base, ok := r.loadMonitorBases()[key]
	ans, err := watch.Query(r.StoreDir, base.Token, monitorWait)
	if err != nil {
		return nil
	}
	note := &monitorNote{key: key, token: ans.Token}
	if !ok || ans.All {
		return note
	}
	ck, err := r.objects.ReadCheckpoint(base.Checkpoint)
	if err != nil || r.history().isExpired(base.Checkpoint) {
		return note
	}
	o.Monitor = &worktree.Monitor{Base: ck.Tree, Dirs: slices.Concat(ans.Dirs, base.Rescan), Trees: ans.Trees, Unwatched: ans.Unwatched}
	note.used = true
	return note
}

// captured records what a capture skipped, to read again next time.
func (n *monitorNote) captured(snap *worktree.Snapshot) {
	seen := map[string]bool{}
	for _, s := range snap.Skipped {
		p := strings.TrimSuffix(s.Path, "/")
		dir := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			dir = p[:i]
		}
		seen[dir] = true
	}
	n.rescan = slices.Sorted(maps.Keys(seen))
}

// noteMonitor keeps checkpoint id, whose tree capture c recorded, as the
// base of the next capture under the same options. Best effort: a base
// not kept costs a full scan.
func (r *Repo) noteMonitor(c *captured, id objects.ID) {
	if c == nil || c.monitor == nil || id.IsZero() {
		return
	}
	n := c.monitor
	bases := r.loadMonitorBases()
	bases[n.key] = monitorBase{Token: n.token, Checkpoint: id, Rescan: n.rescan, Used: time.Now().UnixNano()}
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
		return
	}
	dir := filepath.Dir(r.monitorPath())
	if r.fs.MkdirAll(dir, 0o755) != nil {
		return
	}
	f, err := r.fs.CreateTemp(dir, "monitor.tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil && cerr == nil {
		err = r.fs.Rename(f.Name(), r.monitorPath())
	}
	if err != nil {
		r.fs.Remove(f.Name())
	}
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

// WatchStatus reports the running daemon's state (ErrWatchNotRunning
// when none runs).
func (r *Repo) WatchStatus() (*WatchState, error) { return watch.Status(r.StoreDir, 2*time.Second) }

// WatchStop asks the running daemon to exit and waits until it has.
func (r *Repo) WatchStop() error { return watch.Stop(r.StoreDir, 5*time.Second) }

// WatchAuto reports whether the store asks for its monitor to be started
// when none runs (snap config watch.auto).
func (r *Repo) WatchAuto() bool { return r.config.WatchAuto }
