package snap

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/worktree"
)

// GCOptions configure a collection.
type GCOptions struct {
	// Grace: unreferenced data younger than this stays (0: none does;
	// the configured value is GCGrace(DefaultGCGrace)).
	Grace  time.Duration
	Policy *Policy // nil: the configured one, RetentionPolicy()
	// Auto reports ErrBusy when another gc runs rather than waiting.
	// Every gc consolidates small packs (see gc.Options.Consolidate), so
	// the store is left as a few packs and NeedsGC is false afterwards.
	Auto     bool
	DryRun   bool
	Progress func(phase string, done, total int)
}

// GC expires checkpoints by the retention policy, then removes what
// nothing reachable needs and is older than the grace period (see package
// gc). It waits for writers (bounded, then ErrBusy).
func (r *Repo) GC(ctx context.Context, o GCOptions) (*GCResult, error) {
	if o.Policy == nil {
		p := r.RetentionPolicy()
		o.Policy = &p
	}
	res, err := gc.Collect(ctx, r.objects, r.refs, gc.Options{Grace: o.Grace, Policy: o.Policy, Consolidate: true,
		DryRun: o.DryRun, Progress: o.Progress, LockTimeout: r.lockTimeout, Now: r.clock})
	if res != nil {
		n, freed := r.removeStaleCacheTemps(o.DryRun)
		res.TempFilesRemoved, res.BytesFreed = res.TempFilesRemoved+n, res.BytesFreed+freed
	}
	return res, err
}

// cacheTempAge: a cache's temporary file older than this was left by a
// process killed between writing and renaming it (a save takes
// milliseconds).
const cacheTempAge = time.Hour

// removeStaleCacheTemps removes the temporary files fsys.ReplaceFile left
// in cache/ and cache/sessions/ (a reader or a checkpoint killed while
// saving the monitor's base or a session's index), and reports how many
// and their bytes (dry run: would remove).
func (r *Repo) removeStaleCacheTemps(dryRun bool) (n int, freed int64) {
	cutoff := r.clock().Add(-cacheTempAge)
	for _, dir := range []string{filepath.Join(r.StoreDir, "cache"), filepath.Join(r.StoreDir, "cache", "sessions")} {
		entries, _ := r.fs.ReadDir(dir)
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.Contains(e.Name(), ".tmp-") {
				continue
			}
			fi, err := e.Info()
			if err != nil || !fi.ModTime().Before(cutoff) {
				continue
			}
			if dryRun || r.fs.Remove(filepath.Join(dir, e.Name())) == nil {
				n, freed = n+1, freed+fi.Size()
			}
		}
	}
	return n, freed
}

// StoreSize is the bytes the store's files take (its packs, refs, op log,
// caches, trash), as a directory walk finds them.
func (r *Repo) StoreSize(ctx context.Context) (int64, error) {
	var n int64
	err := filepath.WalkDir(r.StoreDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a gc, a temporary file)
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}

// Fsck checks the store: every ref and op-log record names a present
// checkpoint, and everything reachable is present; full also reads and
// verifies every object. Damage is listed in the report (FsckReport.Corrupt),
// not returned as an error.
func (r *Repo) Fsck(ctx context.Context, full bool) (*FsckReport, error) {
	return gc.Fsck(ctx, r.objects, r.refs, full)
}

// WithLockNotice returns a context under which every wait for a lock held
// by another snap process (a writer, gc, a rewind) first calls notice with
// the lock file's path and the longest it will wait.
func WithLockNotice(ctx context.Context, notice func(path string, max time.Duration)) context.Context {
	return gc.WithWaitNotice(ctx, notice)
}

// CaptureStats walks the working tree as a checkpoint would, without
// writing anything, and reports what it found (files read, skipped).
func (r *Repo) CaptureStats(ctx context.Context) (*worktree.Snapshot, error) {
	cache := r.loadCache()
	snap, err := worktree.Capture(ctx, r.objects.NewDryWriter(), worktree.Options{Root: r.Root, StoreDir: r.StoreDir, MaxFileSize: r.MaxFileSize(), Cache: cache, Sys: r.sys})
	return snap, err
}

// AutoGCPacks is the number of packs past which NeedsGC asks for a
// `gc --auto` (which merges them into one).
const AutoGCPacks = 50

// NeedsGC reports whether the store has accumulated enough packs that an
// automatic gc is worth running.
func (r *Repo) NeedsGC(ctx context.Context) bool {
	return r.objects.Packs() >= AutoGCPacks
}

// AutoGCDue reports whether a front-end should start an automatic gc
// (`snap gc --auto`, in the background) after a command that wrote: the
// store needs one (NeedsGC) or rewinds left AutoGCTrashFiles files or
// AutoGCTrashBytes bytes in the trash; never when $SNAP_NO_AUTO_GC is set.
func (r *Repo) AutoGCDue(ctx context.Context) bool {
	switch strings.ToLower(os.Getenv(EnvNoAutoGC)) {
	case "", "0", "false", "no", "off":
	default:
		return false
	}
	if r.NeedsGC(ctx) {
		return true
	}
	files, bytes := worktree.TrashSize(r.trashDir(), AutoGCTrashFiles)
	return files >= AutoGCTrashFiles || bytes >= AutoGCTrashBytes
}

// What the trash holds before a command starts the automatic gc for it
// alone: starting a process after every rewind of a few files cost the
// rewind some milliseconds and its next command the gc's CPU (a monitored
// 10-file rewind of a 20,000-file tree: 32.4 ms before, 29.3 ms after,
// paired; bench/README.md).
// Less waits for the next gc, which the packs ask for every 50
// checkpoints.
const (
	AutoGCTrashFiles = 64
	AutoGCTrashBytes = 64 << 20
)
