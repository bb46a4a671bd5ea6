package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

type revertOptions struct {
	globalOptions
	From, Ref string
	Paths     []string
	DryRun    bool
	All       bool
}

func revertCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "revert",
		Usage:     "undo one checkpoint's change (or a range's), keeping what happened since",
		ArgsUsage: "REF | FROM..REF",
		Description: `Applies the inverse of checkpoint REF's change (REF against its parent), or
of the change from FROM to REF, to the working tree as it is now: what
happened since stays. A file untouched since goes back to its version before
the change; a text file changed since is merged three ways, line by line. A
path that cannot be merged (a conflicting region, binary content, a file
deleted or re-created since) is left untouched and reported with the
conflicting lines; the exit code is then 3. A safety checkpoint comes first
and a "revert" checkpoint records the result; 'snap undo' puts the files back.
--dry-run shows what would be reverted and what conflicts, changing nothing.
When every path is already as before the change there is nothing to do: it
says so and exits 0. A path whose change another session or you made (that
session, or a checkpoint marked --actor user, recorded it first) is this
session's to keep: it is left and listed as kept; --all reverts it too.

Examples:
   snap revert '#2' --dry-run
   snap revert '#2'
   snap revert @~3..@~1 --path src/`,
		Flags: withGlobals(
			&cli.StringSliceFlag{Name: "path", Usage: "revert only `P` and what lies beneath it; repeatable"},
			&cli.BoolFlag{Name: "dry-run", Usage: "show what would be reverted and what conflicts; change nothing"},
			&cli.BoolFlag{Name: "all", Usage: "revert every path of the change, also those another session or you changed"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("revert takes one REF or FROM..REF")
			}
			o := revertOptions{globalOptions: globals(c), Ref: c.Args().First(), Paths: c.StringSlice("path"), DryRun: c.Bool("dry-run"), All: c.Bool("all")}
			if from, to, ok := strings.Cut(o.Ref, ".."); ok {
				if from == "" || to == "" {
					return usageErrorf("a range is FROM..REF, both given (got %q)", o.Ref)
				}
				o.From, o.Ref = from, to
			}
			return runRevert(c.Context, o, inv.stdout)
		},
	}
}

func runRevert(ctx context.Context, o revertOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	ro := workflow.RevertOptions{Session: o.session(), Ref: o.Ref, From: o.From, DryRun: o.DryRun, All: o.All}
	if len(o.Paths) > 0 {
		if ro.Paths, err = o.projectPaths(repo, o.Paths); err != nil {
			return err
		}
	}
	res, err := workflow.New(repo).Revert(ctx, ro)
	if res != nil && res.Checkpoint != nil && (err == nil || errors.Is(err, snap.ErrPartial)) {
		startAutoGC(ctx, repo)
	}
	if res == nil || err != nil && res.Checkpoint == nil && len(res.Conflicts) == 0 {
		if res != nil {
			return withSafety(err, res.Rewind)
		}
		return err
	}
	if perr := emit(out, o.JSON, res, func(w io.Writer) error {
		for _, k := range res.Kept {
			fmt.Fprintf(w, "kept %s: %s\n", quotePath(k.Path), keptReason(k, o.session()))
		}
		if res.Nothing {
			if len(res.Kept) > 0 {
				fmt.Fprintln(w, "nothing to revert: every path of the change is another session's or yours (--all reverts them)")
				return nil
			}
			fmt.Fprintf(w, "nothing to revert: the change touched no file%s, or each is already as before it\n", pathsOf(o.Paths))
			return nil
		}
		verb := "reverted"
		if res.DryRun {
			verb = "would revert"
		}
		for _, p := range res.Reverted {
			fmt.Fprintf(w, "%s %s\n", verb, quotePath(p))
		}
		for _, c := range res.Conflicts {
			fmt.Fprintf(w, "CONFLICT %s: %s (left as it is)\n", quotePath(c.Path), printable(c.Reason))
			for _, h := range c.Hunks {
				fmt.Fprintf(w, "  at line %d, now:\n%s  the revert would write:\n%s", h.Line, indent(strings.TrimSuffix(h.Current, "\n"), "    | ")+"\n",
					indent(strings.TrimSuffix(h.Reverted, "\n"), "    | ")+"\n")
			}
		}
		switch {
		case res.DryRun:
			fmt.Fprintln(w, "(dry run: nothing changed)")
			return nil
		case res.Checkpoint == nil:
			fmt.Fprintln(w, "nothing reverted: every path conflicts (the working tree is as it was)")
			return nil
		}
		fmt.Fprintf(w, "checkpoint %s; 'snap undo' puts the files back\n", res.Checkpoint.Short())
		return nil
	}); perr != nil {
		return perr
	}
	return err
}

// pathsOf is " under P, Q" for --path arguments, or "".
func pathsOf(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return " under " + strings.Join(paths, ", ")
}
