package main

import (
	"context"
	"fmt"
	snap "github.com/snapcore-dev/snap"
	"io"

	"github.com/urfave/cli/v2"
)

type opLogOptions struct {
	globalOptions
	N int // at most N operations; 0: all
}

type opLogResult struct {
	Ops []snap.Op `json:"ops"`
}

func opCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "op",
		Usage: "the operation log (what undo and redo work from)",
		Description: `Every operation that changes the store — checkpoint, rewind, label, undo,
redo, session archive/rm, gc — is appended to the operation log.`,
		Flags:  withGlobals(),
		Action: subcommandAction,
		Subcommands: []*cli.Command{{
			Name:      "log",
			Usage:     "list operations, newest first",
			ArgsUsage: " ",
			Description: `Lists the operation log, newest first: seq, time, kind, session and what
the operation did. 'snap undo' reverses the session's last undoable one
(checkpoint, rewind, label); undo and redo are operations too.

Examples:
   snap op log -n 5
   snap op log --json`,
			Flags: withGlobals(
				&cli.IntFlag{Name: "n", Usage: "show at most `N` operations", DefaultText: "all"},
			),
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usageErrorf("op log takes no arguments")
				}
				if c.Int("n") < 0 {
					return usageErrorf("-n must not be negative")
				}
				return runOpLog(c.Context, opLogOptions{globalOptions: globals(c), N: c.Int("n")}, inv.stdout)
			},
		}},
	}
}

func runOpLog(ctx context.Context, o opLogOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	ops, err := repo.Ops(ctx, o.N)
	if err != nil {
		return err
	}
	res := opLogResult{Ops: nonNil(ops)}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if len(ops) == 0 {
			fmt.Fprintln(w, "no operations yet")
			return nil
		}
		tw := newTable(w)
		for _, op := range ops {
			session := op.Session
			if session == "" {
				session = "-"
			}
			fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\n", op.Seq, when(op.Time), op.Kind, session, describeOp(op))
		}
		return tw.Flush()
	})
}
