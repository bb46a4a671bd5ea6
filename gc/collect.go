package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// DefaultGrace is a grace period suitable when the user set none: far longer
// than any checkpoint takes between committing its pack and moving its ref.
const DefaultGrace = time.Hour

// Options control Collect.
type Options struct {
	// Grace: packs and temporary files whose mtime is more recent than this
	// are never touched. 0 means no grace period, safe only when no other
	// snap process is running.
	Grace time.Duration
	// DryRun computes the Result without changing anything.
	DryRun bool
}

// Result is what Collect did (or, with DryRun, would do).
type Result struct {
	Reachable        int   `json:"reachable"`          // distinct reachable objects present
	Unreachable      int   `json:"unreachable"`        // distinct unreachable objects, in packs of any age
	PacksRewritten   int   `json:"packs_rewritten"`    // old packs holding reachable and unreachable objects
	PacksDeleted     int   `json:"packs_deleted"`      // old packs holding nothing reachable
	BytesFreed       int64 `json:"bytes_freed"`        // packs removed minus the pack written, plus temporary files
	TempFilesRemoved int   `json:"temp_files_removed"` // files removed from tmp/
	DryRun           bool  `json:"dry_run"`
}

// Collect removes unreachable objects from packs older than opts.Grace and
// temporary files older than it (see doc.go). It holds gc.lock exclusively
// (ErrBusy when another gc runs), and deletes nothing unless reachability is
// certain (else ErrCorrupt). On success with changes it appends a "gc" op to
// the op log. A crash at any point leaves a store that passes fsck.
func Collect(ctx context.Context, st *objects.Store, rs *refs.Store, opts Options) (*Result, error) {
	if opts.Grace < 0 {
		return nil, fmt.Errorf("gc: negative grace period %v", opts.Grace)
	}
	lock, err := lockExclusive(st.Dir())
	if err != nil {
		return nil, err
	}
	defer lock.Close()

	if err := st.Reload(); err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	// Packs are listed before the roots are read: a pack committed after
	// this is not considered, and one listed here whose objects a ref comes
	// to name later was committed before the grace period began.
	now := time.Now()
	cutoff := now.Add(-opts.Grace)
	packs := st.PackInfo()

	roots, err := Roots(rs)
	if err != nil {
		return nil, fmt.Errorf("gc: %w: refusing to delete anything, a ref or op-log record is damaged (run fsck): %w", ErrCorrupt, err)
	}
	w := newWalker(ctx, st)
	for _, id := range roots {
		w.root(id, "root "+id.Short())
	}
	if err := w.run(); err != nil {
		return nil, err
	}
	if w.incomplete {
		why := "some reachable objects cannot be read"
		if w.packsBroken {
			why = "some reachable objects cannot be read, or may be in a pack that cannot be indexed"
		}
		return nil, fmt.Errorf("gc: %w: refusing to delete anything, %s (run fsck): %s",
			ErrCorrupt, why, firstErrors(w.probs, 3))
	}
	reach := w.reach

	res := &Result{Reachable: len(reach), DryRun: opts.DryRun}
	st.Each(func(id objects.ID, _ objects.Type) {
		if _, ok := reach[id]; !ok {
			res.Unreachable++
		}
	})

	var targets []string
	for _, p := range packs {
		if p.ModTime.After(cutoff) {
			continue // young: a writer may be about to name its objects
		}
		objs, err := st.PackObjects(p.Name)
		if err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
		live, dead := 0, 0
		for _, o := range objs {
			if _, ok := reach[o.ID]; ok {
				live++
			} else {
				dead++
			}
		}
		switch {
		case dead == 0:
		case live == 0:
			res.PacksDeleted++
			targets = append(targets, p.Name)
		default:
			res.PacksRewritten++
			targets = append(targets, p.Name)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := func(id objects.ID) bool { _, ok := reach[id]; return ok }
	if len(targets) > 0 {
		if opts.DryRun {
			plan, err := st.PlanRepack(targets, keep)
			if err != nil {
				return nil, fmt.Errorf("gc: %w", err)
			}
			res.BytesFreed += plan.Freed
		} else {
			_, freed, err := st.Repack(targets, keep)
			res.BytesFreed += freed
			if err != nil {
				return res, fmt.Errorf("gc: %w", err)
			}
		}
	}

	if err := removeTemps(st.Dir(), cutoff, opts.DryRun, res); err != nil {
		return res, err
	}

	if !opts.DryRun && (len(targets) > 0 || res.TempFilesRemoved > 0) {
		detail, _ := json.Marshal(res)
		if err := rs.Append(&refs.Op{Kind: "gc", Detail: detail}); err != nil {
			return res, fmt.Errorf("gc: record in op log: %w", err)
		}
	}
	return res, nil
}

// removeTemps removes the regular files of tmp/ not modified since cutoff:
// packs of writers that crashed (a live writer's file is recent, since it
// is being written).
func removeTemps(storeDir string, cutoff time.Time, dryRun bool, res *Result) error {
	dir := filepath.Join(storeDir, objects.TmpDir)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	removed := false
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue // gone meanwhile, or young
		}
		if !dryRun {
			if err := os.Remove(filepath.Join(dir, de.Name())); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return fmt.Errorf("gc: %w", err)
			}
			removed = true
		}
		res.TempFilesRemoved++
		res.BytesFreed += fi.Size()
	}
	if removed {
		return objects.SyncDir(dir)
	}
	return nil
}

// firstErrors summarises up to n error problems.
func firstErrors(probs []Problem, n int) string {
	var s string
	k := 0
	for _, p := range probs {
		if p.Severity != SeverityError {
			continue
		}
		if k == n {
			return s + "; ..."
		}
		if k > 0 {
			s += "; "
		}
		s += p.String()
		k++
	}
	return s
}
