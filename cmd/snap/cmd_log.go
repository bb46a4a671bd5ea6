package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type logOptions struct {
	globalOptions
	N    int    // at most N entries; 0: all
	All  bool   // every session
	Kind string // only this kind
}

type logResult struct {
	Session     string          `json:"session,omitempty"` // empty with --all
	Checkpoints []snap.LogEntry `json:"checkpoints"`
}

func logCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "list the session's checkpoints, newest first",
		ArgsUsage: " ",
		Description: `Lists every checkpoint of the session, newest first, one per line:

   #seq  id  time  kind  message-id  summary  (+added ~modified -deleted)  N msgs

#seq numbers the session's checkpoints from 1 (the oldest); use it as a REF:
snap show '#3' (quote it: # starts a comment in shells). (head) marks the
session head, (abandoned) the checkpoints a rewind left behind — a future
you can still go back to with snap rewind '#N'. Labels are shown in
brackets. "-" stands for no message id, no summary, or no conversation
recorded (in the msgs column; "messages": -1 in --json stats).

--kind K lists only checkpoints of kind K (pre-call, task-commit, edit-commit,
pre-rewind, ...).

Examples:
   snap log -n 10
   snap log --all --json
   snap log --kind pre-call`,
		Flags: withGlobals(
			&cli.IntFlag{Name: "n", Usage: "show at most `N` checkpoints", DefaultText: "all"},
			&cli.BoolFlag{Name: "all", Usage: "list every session, not just the current one"},
			&cli.StringFlag{Name: "kind", Usage: "list only checkpoints of kind `K`"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("log takes no arguments")
			}
			if c.Int("n") < 0 {
				return usageErrorf("-n must not be negative")
			}
			return runLog(c.Context, logOptions{globalOptions: globals(c), N: c.Int("n"), All: c.Bool("all"), Kind: c.String("kind")}, inv.stdout)
		},
	}
}

func runLog(ctx context.Context, o logOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	entries, err := repo.Log(ctx, snap.LogOptions{Session: o.session(), N: o.N, All: o.All, Kind: o.Kind})
	if err != nil {
		return err
	}
	res := logResult{Checkpoints: nonNil(entries)}
	if !o.All {
		res.Session = o.session()
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if len(entries) == 0 {
			if o.Kind != "" {
				fmt.Fprintf(w, "no checkpoints of kind %s\n", printable(o.Kind))
				return nil
			}
			if o.All {
				fmt.Fprintln(w, "no checkpoints yet")
			} else {
				fmt.Fprintf(w, "no checkpoints in session %s yet\n", o.session())
			}
			return nil
		}
		tw := newTable(w)
		session := ""
		for i, e := range entries {
			if o.All && e.Session != session {
				if i > 0 {
					fmt.Fprintln(tw)
				}
				fmt.Fprintf(tw, "session %s\n", e.Session)
				session = e.Session
			}
			fmt.Fprintln(tw, logLine(e))
		}
		return tw.Flush()
	})
}

// logLine formats one checkpoint for log (tab-separated columns).
func logLine(e snap.LogEntry) string {
	msgID := e.MessageID
	if msgID == "" {
		msgID = "-"
	}
	summary := printable(oneLine(truncate(e.Summary, 72)))
	if summary == "" {
		summary = "-"
	}
	cols := []string{fmt.Sprintf("#%d", e.Seq), e.ID.Short(), when(e.Time), e.Kind, msgID, summary,
		fmt.Sprintf("(+%d ~%d -%d)", e.Stats.Added, e.Stats.Modified, e.Stats.Deleted)}
	if e.Stats.Messages >= 0 {
		cols = append(cols, plural(e.Stats.Messages, "msg"))
	} else {
		cols = append(cols, "-") // no conversation recorded
	}
	var marks []string
	if len(e.Labels) > 0 {
		marks = append(marks, "["+strings.Join(e.Labels, ", ")+"]")
	}
	if e.Head {
		marks = append(marks, "(head)")
	}
	if e.Abandoned {
		marks = append(marks, "(abandoned)")
	}
	return row(append(cols, strings.Join(marks, " "))...)
}
