package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type sessionsOptions struct {
	globalOptions
}

type sessionsResult struct {
	Current  string             `json:"current"` // the session -s / $SNAP_SESSION selects
	Sessions []snap.SessionInfo `json:"sessions"`
}

type sessionOpOptions struct {
	globalOptions
	Name   string // the session to act on
	Remove bool   // rm instead of archive
}

type sessionOpResult struct {
	Session  string `json:"session"`
	Archived bool   `json:"archived"`
	Removed  bool   `json:"removed"`
}

func sessionsCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "sessions",
		Usage:     "list sessions",
		ArgsUsage: " ",
		Description: `Lists the store's sessions, active ones first, then archived ones: name,
number of checkpoints, head, time of the head. * marks the current session
(-s ID, $SNAP_SESSION, else "default"). Sessions let several agents work in
one project without stomping on each other: each has its own head, log and
undo history.

Examples:
   snap sessions
   snap sessions --json`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("sessions takes no arguments (to manage one: snap session archive|rm ID)")
			}
			return runSessions(c.Context, sessionsOptions{globals(c)}, inv.stdout)
		},
	}
}

func sessionCommand(inv *invocation) *cli.Command {
	action := func(remove bool) cli.ActionFunc {
		return func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("'snap session %s' takes one session ID", c.Command.Name)
			}
			return runSessionOp(c.Context, sessionOpOptions{globalOptions: globals(c), Name: c.Args().First(), Remove: remove}, inv.stdout)
		}
	}
	return &cli.Command{
		Name:  "session",
		Usage: "manage a session (archive, rm)",
		Description: `Archives or removes one session; 'snap sessions' lists them.

Examples:
   snap session archive agent-2
   snap session rm scratch`,
		Flags:  withGlobals(),
		Action: subcommandAction,
		Subcommands: []*cli.Command{
			{
				Name:      "archive",
				Usage:     "move a session out of the active list",
				ArgsUsage: "ID",
				Description: `Moves session ID out of the active list; 'snap sessions' still shows it as
archived. Its checkpoints stay until retention (snap gc) expires them.
Recorded in the op log.

Example:
   snap session archive agent-2`,
				Flags:  withGlobals(),
				Action: action(false),
			},
			{
				Name:      "rm",
				Usage:     "delete a session's head",
				ArgsUsage: "ID",
				Description: `Deletes session ID (active or archived): its head ref goes away, so its
checkpoints are no longer reachable from it, and the next 'snap gc' may
collect those nothing else references. Labels keep what they name.
Recorded in the op log.

Example:
   snap session rm scratch`,
				Flags:  withGlobals(),
				Action: action(true),
			},
		},
	}
}

func runSessions(ctx context.Context, o sessionsOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	list, err := repo.Sessions(ctx)
	if err != nil {
		return err
	}
	res := sessionsResult{Current: o.session(), Sessions: nonNil(list)}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if len(list) == 0 {
			fmt.Fprintln(w, "no sessions yet")
			return nil
		}
		tw := newTable(w)
		for _, s := range list {
			mark := " "
			if s.Name == res.Current && !s.Archived {
				mark = "*"
			}
			state := ""
			if s.Agent != "" {
				state = "by " + s.Agent
			}
			if s.Archived {
				state = strings.TrimSpace(state + " (archived)")
			}
			fmt.Fprintln(tw, row(mark+" "+s.Name, plural(s.Checkpoints, "checkpoint"), "head "+s.Head.Short(), when(s.Updated), state))
		}
		return tw.Flush()
	})
}

func runSessionOp(ctx context.Context, o sessionOpOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	res := sessionOpResult{Session: o.Name}
	if o.Remove {
		err = repo.RemoveSession(ctx, o.Name)
		res.Removed = err == nil
	} else {
		err = repo.ArchiveSession(ctx, o.Name)
		res.Archived = err == nil
	}
	if err != nil {
		return err
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if o.Remove {
			_, err := fmt.Fprintf(w, "removed session %s\n", o.Name)
			return err
		}
		_, err := fmt.Fprintf(w, "archived session %s\n", o.Name)
		return err
	})
}
