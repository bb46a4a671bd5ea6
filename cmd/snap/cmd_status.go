package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

type statusOptions struct {
	globalOptions
}

func statusCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "compare the working tree with the session head",
		ArgsUsage: " ",
		Description: `Compares the working tree, and the state documents at their recorded source
paths, with the session head: files added (A), modified (M), deleted (D)
since the last checkpoint, and state documents that changed. Writes nothing.

Examples:
   snap status
   snap status -s agent-2 --json`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("status takes no arguments")
			}
			return runStatus(c.Context, statusOptions{globals(c)}, inv.stdout)
		},
	}
}

func runStatus(ctx context.Context, o statusOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	res, err := repo.Status(ctx, o.session())
	if err != nil {
		return err
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if res.Head == nil {
			fmt.Fprintf(w, "session %s has no checkpoints yet\n", res.Session)
		} else {
			fmt.Fprintf(w, "session %s, head %s\n", res.Session, res.Head.Short())
		}
		if res.Clean {
			fmt.Fprintln(w, "nothing changed since the head")
		} else {
			writeChanges(w, "  ", res.Files.Added, res.Files.Modified, res.Files.Deleted)
			for _, s := range res.State {
				fmt.Fprintf(w, "  state %s %s", s.Name, s.Status)
				if s.Source != "" {
					fmt.Fprintf(w, " (%s)", quotePath(s.Source))
				}
				fmt.Fprintln(w)
			}
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "skipped %s: %s\n", quotePath(s.Path), printable(s.Reason))
		}
		return nil
	})
}
