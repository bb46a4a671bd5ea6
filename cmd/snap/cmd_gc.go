package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"

	"github.com/snapcore-dev/snap/gc"
)

type gcOptions struct {
	globalOptions
	KeepLast   int    // retention: keep the last N checkpoints of each session; -1: not given (not yet implemented)
	KeepWithin string // retention: keep checkpoints younger than DUR (not yet implemented)
	Grace      string // DUR; "" is gc.DefaultGrace
	DryRun     bool
}

// retentionPending is what --keep-last and --keep-within report until
// gc.Options has retention fields.
const retentionPending = "not yet implemented: retention arrives with the reliability issue"

type gcResult struct {
	*gc.Result
	Grace string   `json:"grace"`
	Notes []string `json:"notes"`
}

func gcCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "gc",
		Usage:     "remove objects nothing can reach any more",
		ArgsUsage: " ",
		Description: `Removes from the store the objects that no ref (session head, label) and no
operation in the op log can reach, so everything 'snap log', 'snap undo' and
'snap redo' can still get to is kept. Packs and temporary files younger than
the grace period (default 1h) are never touched: another snap process may
be about to reference them. --dry-run reports what would be freed.

Durations: Go syntax (90s, 30m, 2h45m) or days (7d).

--keep-last N and --keep-within DUR (retention: expire old checkpoints) are
accepted but not implemented yet.

Examples:
   snap gc --dry-run
   snap gc --grace 10m --json`,
		Flags: withGlobals(
			&cli.IntFlag{Name: "keep-last", Usage: "retention: keep the last `N` checkpoints of each session (not yet implemented)"},
			&cli.StringFlag{Name: "keep-within", Usage: "retention: keep checkpoints younger than `DUR` (not yet implemented)"},
			&cli.StringFlag{Name: "grace", Usage: "never touch packs younger than `DUR` (default: the gc.grace setting, else 1h; 0 only when no other snap runs)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be removed; remove nothing"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("gc takes no arguments")
			}
			o := gcOptions{globalOptions: globals(c), KeepLast: -1, KeepWithin: c.String("keep-within"),
				Grace: c.String("grace"), DryRun: c.Bool("dry-run")}
			if c.IsSet("keep-last") {
				if o.KeepLast = c.Int("keep-last"); o.KeepLast < 0 {
					return usageErrorf("--keep-last must not be negative")
				}
			}
			return runGC(c.Context, o, inv.stdout)
		},
	}
}

func runGC(ctx context.Context, o gcOptions, out io.Writer) error {
	repo, err := o.open()
	if err != nil {
		return err
	}
	defer repo.Close()
	opts := gc.Options{Grace: repo.GCGrace(gc.DefaultGrace), DryRun: o.DryRun}
	if o.Grace != "" {
		d, err := parseDuration(o.Grace)
		if err != nil {
			return usageErrorf("--grace: %v", err)
		}
		opts.Grace = d
	}
	res := gcResult{Grace: opts.Grace.String(), Notes: []string{}}
	if o.KeepWithin != "" {
		if _, err := parseDuration(o.KeepWithin); err != nil {
			return usageErrorf("--keep-within: %v", err)
		}
		res.Notes = append(res.Notes, "--keep-within: "+retentionPending)
	}
	if o.KeepLast >= 0 {
		res.Notes = append(res.Notes, "--keep-last: "+retentionPending)
	}
	r, err := gc.Collect(ctx, repo.Objects(), repo.Refs(), opts)
	if err != nil {
		return err
	}
	res.Result = r
	return emit(out, o.JSON, res, func(w io.Writer) error {
		for _, n := range res.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		verb, rewrote, deleted, removed, freed := "", "rewrote", "deleted", "removed", "freed"
		if r.DryRun {
			verb, rewrote, deleted, removed, freed = "dry run: ", "would rewrite", "would delete", "would remove", "would free"
		}
		fmt.Fprintf(w, "%s%d reachable objects, %d unreachable (grace %s)\n", verb, r.Reachable, r.Unreachable, res.Grace)
		fmt.Fprintf(w, "%s %s, %s %s, %s %s; %s %s\n",
			rewrote, plural(r.PacksRewritten, "pack"), deleted, plural(r.PacksDeleted, "pack"),
			removed, plural(r.TempFilesRemoved, "temporary file"), freed, humanSize(r.BytesFreed))
		return nil
	})
}

// parseDuration parses a duration with a day unit (see snap.ParseDuration).
func parseDuration(s string) (time.Duration, error) { return snap.ParseDuration(s) }
