package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type blameOptions struct {
	globalOptions
	Path string
	Ref  string // "" is the session head
}

func blameCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "blame",
		Usage:     "show who wrote each line of a file: which checkpoint, session, agent tool call or you",
		ArgsUsage: "PATH [REF]",
		Description: `Prints each line of PATH, as checkpoint REF (default: the session head) holds
it, with the checkpoint that introduced the line: its id, session, actor (agent,
user, import for a checkpoint pulled from another store, unknown when nobody
said), the agent's tool call or message id, and when. A line is the work of
the checkpoint that first recorded it in any session: a line session B wrote
stays B's when a later checkpoint of this session holds it too.

Lines are followed back through every version of the file along REF's
ancestry with a line diff; --json answers {"path", "checkpoint", "lines":
[{"line", "checkpoint", "session", "actor", "message_id", "prompt", "time",
"text"}]}, prompt being the prompt the session was answering (recorded by the
agent hooks).

Examples:
   snap blame src/main.go
   snap blame README.md '#3' --json`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usageErrorf("blame takes PATH and an optional REF")
			}
			return runBlame(c.Context, blameOptions{globalOptions: globals(c), Path: c.Args().Get(0), Ref: c.Args().Get(1)}, inv.stdout)
		},
	}
}

func runBlame(ctx context.Context, o blameOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	paths, err := o.projectPaths(repo, []string{o.Path})
	if err != nil {
		return err
	}
	res, err := repo.Blame(ctx, snap.BlameOptions{Session: o.session(), Path: paths[0], Ref: o.Ref})
	if err != nil {
		return err
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		width := len(fmt.Sprint(len(res.Lines)))
		for _, l := range res.Lines {
			msg := l.MessageID
			if msg == "" {
				msg = "-"
			}
			fmt.Fprintf(w, "%s (%s %-7s %s %s %*d) %s\n", l.Checkpoint.Short(), printable(l.Session), l.Actor,
				printable(truncate(msg, 24)), when(l.Time), width, l.Line, printable(l.Text))
		}
		return nil
	})
}
