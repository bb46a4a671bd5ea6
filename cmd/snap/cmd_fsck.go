package main

import (
	"context"
	"fmt"
	snap "github.com/snapcore-dev/snap"
	"io"

	"github.com/urfave/cli/v2"
)

type fsckOptions struct {
	globalOptions
	Full bool // also re-hash every record of every pack
}

func fsckCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "fsck",
		Usage:     "check the store's integrity",
		ArgsUsage: " ",
		Description: `Checks the store: every pack can be indexed; every ref and op-log record is
intact and names a checkpoint; from each of them, every checkpoint, parent,
tree, state document and chunk list is present, decodes and has the recorded
type and size. --full also reads and re-hashes every record of every pack.

Problems are listed as errors (damage: exit 12) or warnings (a writer in
progress or one that crashed, stray files: exit 0). Nothing is changed.

Examples:
   snap fsck
   snap fsck --full --json`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "full", Usage: "also read and re-hash every object of every pack"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("fsck takes no arguments")
			}
			return runFsck(c.Context, fsckOptions{globalOptions: globals(c), Full: c.Bool("full")}, inv.stdout)
		},
	}
}

// runFsck prints the report and returns errCorruptFound (exit 12) when it
// lists damage.
func runFsck(ctx context.Context, o fsckOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	rep, err := repo.Fsck(ctx, o.Full)
	if err != nil {
		return err
	}
	rep.Problems = nonNil(rep.Problems)
	errs := 0
	for _, p := range rep.Problems {
		if p.Severity == snap.FsckError {
			errs++
		}
	}
	if err := emit(out, o.JSON, rep, func(w io.Writer) error {
		mode := "connectivity"
		if o.Full {
			mode = "full"
		}
		fmt.Fprintf(w, "checked (%s) %s in %s, %s, %s, %s\n", mode, plural(rep.Objects, "object"), plural(rep.Packs, "pack"),
			plural(rep.Checkpoints, "checkpoint"), plural(rep.Refs, "ref"), plural(rep.Ops, "op-log record"))
		for _, p := range rep.Problems {
			fmt.Fprintln(w, p.String())
		}
		if rep.Corrupt() {
			fmt.Fprintf(w, "store is CORRUPT: %s\n", plural(errs, "error"))
		} else {
			fmt.Fprintln(w, "ok")
		}
		return nil
	}); err != nil {
		return err
	}
	if rep.Corrupt() {
		return fmt.Errorf("%w: fsck found %s", errCorruptFound, plural(errs, "error"))
	}
	return nil
}
