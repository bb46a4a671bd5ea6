package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type gcOptions struct {
	globalOptions
	KeepLast   int    // retention: keep the last N checkpoints of each session; -1: the store's setting
	KeepWithin string // retention: keep checkpoints younger than DUR; "": the store's setting
	Grace      string // DUR; "": the store's setting
	Auto       bool   // only when garbage passes the threshold; quiet when another gc runs
	DryRun     bool
	Progress   *progress // nil: no progress display
}

type gcResult struct {
	*snap.GCResult
	Grace      string `json:"grace"`
	KeepLast   int    `json:"keep_last"`
	KeepWithin string `json:"keep_within"`
	Skipped    string `json:"skipped,omitempty"` // --auto: why nothing ran
	// TrashRemoved counts the files rewinds deleted or replaced (kept
	// aside in the store's trash) that this run unlinked.
	TrashRemoved int `json:"trash_removed"`
}

func gcCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "gc",
		Usage:     "expire old checkpoints and remove what nothing reaches any more",
		ArgsUsage: " ",
		Description: `First applies the retention policy: a checkpoint is kept if it is among the
last N of its session (retention.keep-last, default 50), younger than
retention.keep-within (default 7d), named by an operation younger than that
(so recent operations stay undoable), labelled, or a session head; sessions
archived longer ago than retention.archived-expire (default 7d) are removed.
Everything else is expired. Then removes from the store every object no kept
checkpoint, ref or op-log record reaches, rewriting or deleting packs, and
merges small packs (as git repack --geometric: only the smallest ones, so
a store of one big pack and many small ones rewrites only the small ones).
Unreferenced data younger than the grace period (gc.grace, default 1h) is
never removed. --dry-run reports what would go and the bytes it would free.

gc runs while sessions checkpoint: writers wait for its sweep (they never see
half of it), and it waits for running writers.

--auto (run in the background by 'snap checkpoint', rewind, undo and redo
when the store has many packs, or the trash 64 files or 64 MiB) does nothing
unless there is work and exits quietly when another gc is running.

Every gc also deletes the files rewinds removed or replaced: a rewind moves
them aside (into the store's trash/) rather than waiting for the file
system to free them.

Durations: Go syntax (90s, 30m, 2h45m) or days (7d).

Examples:
   snap gc --dry-run
   snap gc --keep-last 5 --keep-within 0s
   snap gc --grace 10m --json`,
		Flags: withGlobals(
			&cli.IntFlag{Name: "keep-last", Usage: "keep the last `N` checkpoints of each session (default: retention.keep-last)"},
			&cli.StringFlag{Name: "keep-within", Usage: "keep checkpoints younger than `DUR` (default: retention.keep-within)"},
			&cli.StringFlag{Name: "grace", Usage: "never remove unreferenced data younger than `DUR` (default: gc.grace)"},
			&cli.BoolFlag{Name: "auto", Usage: "run only if the store needs it; merge packs; quiet when busy"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("gc takes no arguments")
			}
			o := gcOptions{globalOptions: globals(c), KeepLast: -1, KeepWithin: c.String("keep-within"),
				Grace: c.String("grace"), Auto: c.Bool("auto"), DryRun: c.Bool("dry-run")}
			if c.IsSet("keep-last") {
				if o.KeepLast = c.Int("keep-last"); o.KeepLast < 0 {
					return usageErrorf("--keep-last must not be negative")
				}
			}
			if !o.JSON && !o.Auto {
				o.Progress = newProgress(inv.stderr)
			}
			return runGC(c.Context, o, inv.stdout)
		},
	}
}

func runGC(ctx context.Context, o gcOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	policy := repo.RetentionPolicy()
	opts := snap.GCOptions{Grace: repo.GCGrace(snap.DefaultGCGrace), Policy: &policy, DryRun: o.DryRun, Auto: o.Auto}
	if o.Progress != nil {
		opts.Progress = o.Progress.update
		defer o.Progress.done()
	}
	if o.Grace != "" {
		if opts.Grace, err = parseDuration(o.Grace); err != nil {
			return usageErrorf("--grace: %v", err)
		}
	}
	if o.KeepWithin != "" {
		if policy.KeepWithin, err = parseDuration(o.KeepWithin); err != nil {
			return usageErrorf("--keep-within: %v", err)
		}
	}
	if o.KeepLast >= 0 {
		policy.KeepLast = o.KeepLast
	}
	res := gcResult{Grace: opts.Grace.String(), KeepLast: policy.KeepLast, KeepWithin: policy.KeepWithin.String()}
	if !o.DryRun {
		if res.TrashRemoved, err = repo.EmptyTrash(ctx); err != nil {
			return err
		}
	}
	if o.Auto && !repo.NeedsGC(ctx) {
		res.Skipped = "the store does not need it yet"
		res.GCResult = &snap.GCResult{}
	} else {
		r, err := repo.GC(ctx, opts)
		if o.Auto && errors.Is(err, snap.ErrBusy) {
			res.Skipped, res.GCResult, err = "another gc is running", &snap.GCResult{}, nil
		}
		if err != nil {
			return err
		}
		if res.GCResult == nil {
			res.GCResult = r
		}
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		r := res.GCResult
		if res.TrashRemoved > 0 {
			fmt.Fprintf(w, "deleted %s that rewinds removed or replaced\n", plural(res.TrashRemoved, "file"))
		}
		if res.Skipped != "" {
			_, err := fmt.Fprintf(w, "gc: nothing done: %s\n", res.Skipped)
			return err
		}
		verb, expired, rewrote, deleted, removed, freed := "", "expired", "rewrote", "deleted", "removed", "freed"
		if r.DryRun {
			verb, expired, rewrote, deleted, removed, freed = "dry run: ", "would expire", "would rewrite", "would delete", "would remove", "would free"
		}
		fmt.Fprintf(w, "%s%s %s (keeping %d; keep-last %d, keep-within %s)\n", verb, expired,
			plural(r.Expired, "checkpoint"), r.Kept, res.KeepLast, res.KeepWithin)
		fmt.Fprintf(w, "%d reachable objects, %d unreachable (grace %s)\n", r.Reachable, r.Unreachable, res.Grace)
		fmt.Fprintf(w, "%s %s, %s %s, %s %s; %s %s\n",
			rewrote, plural(r.PacksRewritten, "pack"), deleted, plural(r.PacksDeleted, "pack"),
			removed, plural(r.TempFilesRemoved, "temporary file"), freed, humanSize(r.BytesFreed))
		return nil
	})
}

// startAutoGC starts `snap gc --auto` for the repo in the background,
// detached from this process, when the store needs it or a rewind left
// replaced files' old content to delete. Failing to start it is not an
// error of the command that triggered it. SNAP_NO_AUTO_GC=1 disables it.
func startAutoGC(ctx context.Context, repo *snap.Repo) {
	if noAutoGC || !repo.AutoGCDue(ctx) {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(self, "gc", "--auto", "-C", repo.Root, "--store", repo.StoreDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// (Not the profile of this command: the gc would write its own over it.)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SNAP_CPUPROFILE=") })
	if cmd.Start() == nil {
		cmd.Process.Release()
	}
}

// noAutoGC turns startAutoGC off in this package's test binary: there
// os.Executable is the test binary, which would run the whole suite again
// (and start more of itself) instead of a gc.
var noAutoGC bool

// parseDuration parses a duration with a day unit (see snap.ParseDuration).
func parseDuration(s string) (time.Duration, error) { return snap.ParseDuration(s) }
