package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type undoOptions struct {
	globalOptions
	Redo bool // re-apply the last undone operation instead
	All  bool // a move changes every path back, whoever changed it since
}

func undoCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "reverse the session's last operation",
		ArgsUsage: " ",
		Description: `Reverses the last operation of the session (see 'snap op log'):

   checkpoint   the session head moves back to the checkpoint's parent
                (the checkpoint itself stays in the store and in 'snap log')
   rewind       the working tree and state documents go back exactly as they
                were before the rewind, uncheckpointed edits included, and the
                head moves back
   label        the label is removed, or moved back where it was
   session archive|rm   the session comes back
   task begin, task commit
                the head moves back, and the task stack with it (a commit
                that applied staged edits puts their files back and stages
                them again)
   task revert, edit commit, revert
                the files they changed go back as they were, uncheckpointed
                edits included; a task revert's staged edits are staged again

An undo that moves files changes only this session's own changes, as a rewind
does: what another session or you changed since the operation is kept and
listed; --all puts every path back. (See 'snap help rewind'.)

Repeated undos walk further back; 'snap redo' re-applies what was undone.
Before an undo changes files it records a safety checkpoint of whatever
changed since, so an undo cannot lose work either.

Examples:
   snap rewind '#2' && snap undo    # as if the rewind never happened
   snap undo --json`,
		Flags: withGlobals(allFlag()),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("undo takes no arguments")
			}
			return runUndo(c.Context, undoOptions{globalOptions: globals(c), All: c.Bool("all")}, inv.stdout)
		},
	}
}

func redoCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "redo",
		Usage:     "re-apply the last undone operation",
		ArgsUsage: " ",
		Description: `Re-applies the operation the last 'snap undo' reversed: a checkpoint moves
the head forward again, a rewind is redone (after a safety checkpoint of
anything changed since), a label is set again. Any new operation after an
undo clears what can be redone, as in an editor.

Example:
   snap undo && snap redo`,
		Flags: withGlobals(allFlag()),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("redo takes no arguments")
			}
			return runUndo(c.Context, undoOptions{globalOptions: globals(c), Redo: true, All: c.Bool("all")}, inv.stdout)
		},
	}
}

// allFlag is --all of the commands that move files back: every path, not
// only the session's own changes.
func allFlag() cli.Flag {
	return &cli.BoolFlag{Name: "all", Usage: "put every path back, also what other sessions or you changed since"}
}

// runUndo runs undo (or redo with o.Redo). For a rewind that failed on some
// paths it prints the result and returns snap.ErrPartial.
func runUndo(ctx context.Context, o undoOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	var res *snap.UndoResult
	if o.Redo {
		res, err = repo.Redo(ctx, o.session(), snap.UndoOptions{All: o.All})
	} else {
		res, err = repo.Undo(ctx, o.session(), snap.UndoOptions{All: o.All})
	}
	startAutoGC(ctx, repo)
	if err != nil && !(errors.Is(err, snap.ErrPartial) && res != nil && res.Rewind != nil) {
		if res != nil {
			return withSafety(err, res.Rewind)
		}
		return err
	}
	if perr := emit(out, o.JSON, res, func(w io.Writer) error {
		verb := "undid"
		if o.Redo {
			verb = "redid"
		}
		fmt.Fprintf(w, "%s op #%d: %s\n", verb, res.Op.Seq, describeOp(res.Op))
		if res.Rewind != nil {
			op := "undo"
			if o.Redo {
				op = "redo"
			}
			writeRewind(w, res.Rewind, o.session(), "holds the state from before this "+op)
			return nil
		}
		for _, c := range res.Op.Refs {
			from, to := c.Old, c.New
			if !o.Redo {
				from, to = to, from
			}
			fmt.Fprintf(w, "  %s: %s -> %s\n", c.Name, idOrNone(from), idOrNone(to))
		}
		return nil
	}); perr != nil {
		return perr
	}
	return err
}

// describeOp says in a few words what an op-log entry did.
func describeOp(op snap.Op) string {
	switch op.Kind {
	case "checkpoint":
		return "checkpoint " + op.Checkpoint.Short()
	case "rewind":
		s := "rewind to " + op.Target.Short()
		if !op.Safety.IsZero() {
			s += " (safety checkpoint " + op.Safety.Short() + ")"
		}
		return s
	case "undo", "redo":
		return fmt.Sprintf("%s of op #%d", op.Kind, op.Undoes)
	case "label":
		if len(op.Refs) > 0 {
			return fmt.Sprintf("label %s -> %s", trimRefPrefix(op.Refs[0].Name), idOrNone(op.Refs[0].New))
		}
	case "session-archive", "session-rm":
		return op.Kind + " " + op.Session
	}
	s := op.Kind
	for _, c := range op.Refs {
		s += fmt.Sprintf(" %s: %s -> %s", c.Name, idOrNone(c.Old), idOrNone(c.New))
	}
	return s
}
