package gc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/storage"
)

// DefaultGrace is a grace period suitable when the user set none: far longer
// than any checkpoint takes between committing its pack and moving its ref.
const DefaultGrace = time.Hour

// Options control Collect.
type Options struct {
	// Grace: unreachable objects in packs, and temporary files, whose mtime
	// is more recent than this are never removed.
	Grace time.Duration
	// Policy, when set, expires checkpoints first (see Policy); nil keeps
	// every checkpoint the op log names.
	Policy *Policy
	// Consolidate also merges packs that hold no garbage, so the store
	// ends up as few packs (fast to open): the smallest ones, leaving each
	// pack at least twice all smaller ones together (see geometricMerge).
	// Reachable objects of young packs are moved too: moving never loses
	// them.
	Consolidate bool
	// DryRun computes the Result without changing anything.
	DryRun bool
	// Progress, when set, is called now and then with the phase
	// ("marking", "scanning packs", "repacking") and how far it got
	// (total 0: unknown).
	Progress func(phase string, done, total int)
	// LockTimeout bounds the wait for running writers (0:
	// DefaultLockTimeout).
	LockTimeout time.Duration
	// Now is the clock retention and the grace period are measured by
	// (nil: time.Now).
	Now func() time.Time
}

// Result is what Collect did (or, with DryRun, would do).
type Result struct {
	Expired          int   `json:"expired"`            // checkpoints expired by the policy in this run
	Kept             int   `json:"kept"`               // checkpoints of the op log retention kept
	SessionsExpired  int   `json:"sessions_expired"`   // archived sessions removed
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
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	unlock, err := storage.LockSweep(ctx, rs.Locks(), timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// No writer runs from here on (they wait on gc.lock), so the roots read
	// below cover every object anyone can still reference.
	if err := st.Reload(); err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	if err := st.CheckIndexes(); err != nil { // a damaged index must not pass for a pack of garbage
		return nil, fmt.Errorf("gc: %w", err)
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	cutoff := now.Add(-opts.Grace)
	packs := st.PackInfo()

	res := &Result{DryRun: opts.DryRun}
	expired, err := rs.Expired()
	if err != nil {
		return nil, unreadable("refusing to delete anything: the expired list", err)
	}
	var planned expiry
	if opts.Policy != nil {
		if planned, err = expire(ctx, rs, *opts.Policy, expired, now, res); err != nil {
			return res, err
		}
		if expired, err = rs.Expired(); err != nil {
			return res, fmt.Errorf("gc: %w", err)
		}
	}
	roots, err := Roots(rs)
	if err != nil {
		return nil, unreadable("refusing to delete anything: a ref or op-log record", err)
	}
	if opts.DryRun && opts.Policy != nil {
		roots = withoutPlanned(roots, planned)
		expired = maps.Clone(expired)
		for _, id := range planned.expire {
			expired[id] = true
		}
	}
	w := newWalker(ctx, st, expired)
	w.progress = opts.Progress
	for _, id := range roots {
		w.root(id, "root "+id.Short())
	}
	if err := w.run(); err != nil {
		return nil, err
	}
	if w.incomplete && w.ioErr != nil {
		return nil, fmt.Errorf("gc: refusing to delete anything, some reachable objects cannot be read: %w", w.ioErr)
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
	res.Reachable = len(reach)
	st.Each(func(id objects.ID, _ objects.Type) {
		if _, ok := reach[id]; !ok {
			res.Unreachable++
		}
	})

	var targets []string
	var clean []objects.PackInfo   // packs with nothing to drop: merged only when consolidating
	young := map[objects.ID]bool{} // objects of packs within the grace period: never dropped
	for i, p := range packs {
		if opts.Progress != nil {
			opts.Progress("scanning packs", i, len(packs))
		}
		if p.ModTime.After(cutoff) {
			clean = append(clean, p)
			continue
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
			clean = append(clean, p)
		case live == 0:
			res.PacksDeleted++
			targets = append(targets, p.Name)
		default:
			res.PacksRewritten++
			targets = append(targets, p.Name)
		}
	}
	if opts.Consolidate {
		for _, p := range geometricMerge(clean) {
			if p.ModTime.After(cutoff) {
				objs, err := st.PackObjects(p.Name)
				if err != nil {
					return nil, fmt.Errorf("gc: %w", err)
				}
				for _, o := range objs {
					young[o.ID] = true
				}
			}
			targets = append(targets, p.Name)
			res.PacksRewritten++
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := func(id objects.ID) bool { _, ok := reach[id]; return ok || young[id] }
	if len(targets) > 0 {
		if opts.DryRun {
			plan, err := st.PlanRepack(targets, keep)
			if err != nil {
				return nil, fmt.Errorf("gc: %w", err)
			}
			res.BytesFreed += plan.Freed
		} else {
			if opts.Progress != nil {
				opts.Progress("repacking", 0, len(targets))
			}
			_, freed, err := st.Repack(targets, keep)
			res.BytesFreed += freed
			if err != nil {
				return res, fmt.Errorf("gc: %w", err)
			}
		}
	}

	n, freed, err := st.RemoveStaleTemps(cutoff, opts.DryRun)
	res.TempFilesRemoved, res.BytesFreed = res.TempFilesRemoved+n, res.BytesFreed+freed
	if err != nil {
		return res, fmt.Errorf("gc: %w", err)
	}

	if !opts.DryRun && (len(targets) > 0 || res.TempFilesRemoved > 0 || res.Expired > 0) {
		detail, _ := json.Marshal(res)
		if err := rs.Commit(ctx, nil, &refs.Op{Kind: "gc", Detail: detail}); err != nil {
			return res, fmt.Errorf("gc: record in op log: %w", err)
		}
	}
	return res, nil
}

// geometricFactor: consolidation leaves alone every pack at least this many
// times larger than all smaller packs together.
const geometricFactor = 2

// geometricMerge picks the packs a consolidation merges (as git repack
// --geometric does): the smallest ones, up to the first pack from which
// on each pack is at least geometricFactor times the size of all smaller
// ones together. So a store of one big pack and many small ones rewrites
// only the small ones, and every byte is rewritten O(log size) times over
// the life of the store rather than at every gc. Fewer than two packs to
// merge is none.
func geometricMerge(packs []objects.PackInfo) []objects.PackInfo {
	packs = slices.Clone(packs)
	slices.SortFunc(packs, func(a, b objects.PackInfo) int { return cmp.Compare(a.Size, b.Size) })
	smaller := make([]int64, len(packs)+1) // smaller[i]: total size of packs[:i]
	for i, p := range packs {
		smaller[i+1] = smaller[i] + p.Size
	}
	split := len(packs)
	for split > 0 && packs[split-1].Size >= geometricFactor*smaller[split-1] {
		split--
	}
	if split < 2 {
		return nil
	}
	return packs[:split]
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

// expire applies the policy: it removes the archive refs of expired
// archived sessions and durably lists the checkpoints to expire, before
// anything is swept. In a dry run it only counts.
func expire(ctx context.Context, rs *refs.Store, p Policy, already map[objects.ID]bool, now time.Time, res *Result) (expiry, error) {
	ops, err := rs.LogOps()
	if err != nil {
		return expiry{}, unreadable("refusing to expire anything: the op log", err)
	}
	list, err := rs.List("")
	if err != nil {
		return expiry{}, unreadable("refusing to expire anything: a ref", err)
	}
	e := planExpiry(p, ops, list, already, now)
	res.Expired, res.Kept, res.SessionsExpired = len(e.expire), e.kept, len(e.dropArchive)
	if res.DryRun {
		return e, nil
	}
	for _, r := range e.dropArchive {
		// The ref's removal and its record, as one step (refs.Store.Commit).
		session, _ := archivedSession(r.Name)
		change := []refs.RefChange{{Name: r.Name, Old: r.ID}}
		if err := rs.Commit(ctx, change, &refs.Op{Kind: "session-expire", Session: session, Refs: change}); err != nil {
			return e, fmt.Errorf("gc: expire archived session: %w", err)
		}
	}
	if err := rs.AddExpired(e.expire); err != nil {
		return e, fmt.Errorf("gc: record expired checkpoints: %w", err)
	}
	return e, nil
}

// withoutPlanned drops from roots what a dry run's plan would expire or
// unreference, so its counts match the real run's.
func withoutPlanned(roots []objects.ID, e expiry) []objects.ID {
	drop := map[objects.ID]bool{}
	for _, id := range e.expire {
		drop[id] = true
	}
	for _, r := range e.dropArchive {
		drop[r.ID] = true
	}
	out := roots[:0:0]
	for _, id := range roots {
		if !drop[id] {
			out = append(out, id)
		}
	}
	return out
}

// unreadable explains why gc stops when what it must read fails: damage
// (ErrCorrupt: run fsck) or an I/O error (kept, so errors.Is finds it).
func unreadable(what string, err error) error {
	if errors.Is(err, refs.ErrCorrupt) || errors.Is(err, objects.ErrCorrupt) {
		return fmt.Errorf("gc: %w: %s is damaged (run fsck): %w", ErrCorrupt, what, err)
	}
	return fmt.Errorf("gc: %s cannot be read: %w", what, err)
}
