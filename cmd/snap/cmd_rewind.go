package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type rewindOptions struct {
	globalOptions
	Ref              string
	FilesOnly        bool
	ConversationOnly bool
	Paths            []string
	DryRun           bool
	StateOut         string
	State            []string
	All              bool
}

func rewindCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "rewind",
		Usage:     "take the working tree and conversation back (or forward) to a checkpoint",
		ArgsUsage: "REF",
		Description: `Restores checkpoint REF: its files into the working tree, its state documents
to the paths they were recorded from, and moves the session head to REF.

Nothing is lost: first, the current working tree and state documents are
recorded as a "pre-rewind" safety checkpoint (printed), and 'snap undo' puts
everything back exactly as it was, uncheckpointed edits included.

Only files whose content differs are written (each atomically). Files the
target does not have are deleted only if snap captured them: ignored files
are never touched. A path that cannot be restored is reported and the others
still are; the exit code is then 3.

   --files-only          leave the state documents alone
   --conversation-only   leave the working tree alone
   --path P              restore only P (a file or directory; repeatable); the
                         session head stays where it is, as with
                         'git checkout REF -- P'; a P in neither REF nor the
                         working tree is an error (exit 4)
   --all                 restore every path, also those other sessions or you
                         changed since REF
   --dry-run             show what would change, change nothing
   --state-out DIR       write the state documents into DIR instead
   --state NAME          restore only state document NAME (repeatable): no
                         files, no other document; the head stays (to retry
                         an API call from a saved 'context', say)

Only this session's own changes go back. A path that another session, or you
outside the agent's tool calls, changed since REF (as the checkpoints record
it) is kept and listed: "kept b.txt: written by session B at #3, ...". Where
this session and the other changed different lines of one file, only this
session's lines go back (merged); where they overlap, the file is left as it
is (conflict). The session head then moves to a new checkpoint holding what
is on disk. --all restores every path as REF has it, whoever changed it.

The checkpoints after REF stay in 'snap log', marked (abandoned), and can be
rewound to in turn.

Examples:
   snap rewind '#3' --dry-run
   snap rewind msg:msg_07
   snap rewind @~2 --files-only --path src/
   snap rewind '#3' --conversation-only --state-out /tmp/restored
   snap rewind @~1 --state context`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "files-only", Usage: "restore the working tree only, not the state documents"},
			&cli.BoolFlag{Name: "conversation-only", Usage: "restore the state documents only, not the working tree"},
			&cli.StringSliceFlag{Name: "path", Usage: "restore only `P` and what lies beneath it (implies --files-only); repeatable"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would change; change nothing"},
			&cli.BoolFlag{Name: "all", Usage: "restore every path, also what other sessions or you changed since REF"},
			&cli.StringFlag{Name: "state-out", Usage: "write state documents into `DIR` instead of their recorded paths"},
			&cli.StringSliceFlag{Name: "state", Usage: "restore only state document `NAME` (no files; the head stays); repeatable"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("rewind takes one REF (see 'snap rewind --help')")
			}
			o := rewindOptions{globalOptions: globals(c), Ref: c.Args().First(),
				FilesOnly: c.Bool("files-only"), ConversationOnly: c.Bool("conversation-only"),
				Paths: c.StringSlice("path"), DryRun: c.Bool("dry-run"), StateOut: c.String("state-out"), State: c.StringSlice("state"), All: c.Bool("all")}
			if len(o.State) > 0 && (o.FilesOnly || len(o.Paths) > 0) {
				return usageErrorf("--state restores state documents only; it cannot go with --files-only or --path")
			}
			if o.FilesOnly && o.ConversationOnly {
				return usageErrorf("--files-only and --conversation-only exclude each other")
			}
			if o.ConversationOnly && len(o.Paths) > 0 {
				return usageErrorf("--path restores files; it cannot go with --conversation-only")
			}
			if o.StateOut != "" && (o.FilesOnly || len(o.Paths) > 0) {
				return usageErrorf("--state-out is where state documents go; --files-only and --path restore no state document")
			}
			return runRewind(c.Context, o, inv.stdout)
		},
	}
}

// runRewind prints the result even when some paths failed (snap.ErrPartial),
// and returns that error so the exit code says partial.
func runRewind(ctx context.Context, o rewindOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	ro := snap.RewindOptions{Session: o.session(), Target: o.Ref, FilesOnly: o.FilesOnly,
		ConversationOnly: o.ConversationOnly, DryRun: o.DryRun, State: o.State, All: o.All}
	if len(o.Paths) > 0 {
		if ro.Paths, err = o.projectPaths(repo, o.Paths); err != nil {
			return err
		}
	}
	if o.StateOut != "" {
		if ro.StateOut, err = o.absPath(o.StateOut); err != nil {
			return err
		}
	}
	res, err := repo.Rewind(ctx, ro)
	if !ro.DryRun {
		startAutoGC(ctx, repo)
	}
	if err != nil && !errors.Is(err, snap.ErrPartial) {
		return withSafety(err, res)
	}
	if perr := emit(out, o.JSON, res, func(w io.Writer) error {
		switch verb := "rewound"; {
		case len(ro.Paths) > 0 || len(ro.State) > 0 || ro.StateOut != "" && ro.ConversationOnly:
			// The head stays (like 'git checkout REF -- PATH').
			verb = "restored"
			if res.DryRun {
				verb = "dry run: would restore"
			}
			fmt.Fprintf(w, "%s from %s (the head of session %s stays)\n", verb, res.Target.Short(), o.session())
		default:
			if res.DryRun {
				verb = "dry run: would rewind"
			}
			fmt.Fprintf(w, "%s session %s to %s\n", verb, o.session(), res.Target.Short())
		}
		writeRewind(w, res, o.session(), "'snap undo' returns to it")
		return nil
	}); perr != nil {
		return perr
	}
	return err
}

// writeRewind prints what a rewind (or an undo/redo of one) did in session.
func writeRewind(w io.Writer, res *snap.RewindResult, session, safetyNote string) {
	switch {
	case res.SafetyCheckpoint != nil && res.SafetyCreated:
		fmt.Fprintf(w, "safety checkpoint %s (%s)\n", res.SafetyCheckpoint, safetyNote)
	case res.SafetyCheckpoint != nil:
		fmt.Fprintf(w, "nothing uncheckpointed: the state from before is checkpoint %s\n", res.SafetyCheckpoint.Short())
	}
	restore, del, state := "restored", "deleted ", "state   "
	if res.DryRun {
		restore, del, state = "would restore", "would delete ", "would write  "
	}
	created := map[string]bool{}
	for _, p := range res.Created {
		created[p] = true
	}
	for _, p := range res.Restored {
		note := ""
		if created[p] {
			note = " (ignored by the rules in force; undo removes it)"
		}
		fmt.Fprintf(w, "  %s %s%s\n", restore, quotePath(p), note)
	}
	for _, p := range res.Deleted {
		fmt.Fprintf(w, "  %s %s\n", del, quotePath(p))
	}
	for _, s := range res.State {
		if s.Deleted {
			fmt.Fprintf(w, "  %s %s: removed %s (the target keeps no document there)\n", state, s.Name, quotePath(s.Path))
			continue
		}
		note := ""
		if s.Created {
			note = " (nothing was there; undo removes it)"
		}
		fmt.Fprintf(w, "  %s %s -> %s%s\n", state, s.Name, quotePath(s.Path), note)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(w, "  kept     %s: %s\n", quotePath(k.Path), keptReason(k, session))
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "  FAILED   %s: %s\n", quotePath(e.Path), printable(e.Error))
	}
	for _, s := range res.Skipped {
		note := " (not in the safety checkpoint)"
		if s.Kept {
			note = " (left as it is)"
		}
		fmt.Fprintf(w, "  skipped  %s: %s%s\n", quotePath(s.Path), printable(s.Reason), note)
	}
	summary := fmt.Sprintf("%s, %s deleted, %s", plural(len(res.Restored), "file")+" restored",
		plural(len(res.Deleted), "file"), plural(len(res.State), "state document"))
	if res.DryRun {
		summary = fmt.Sprintf("would restore %s, delete %s, write %s; nothing was changed",
			plural(len(res.Restored), "file"), plural(len(res.Deleted), "file"), plural(len(res.State), "state document"))
	}
	if len(res.Errors) > 0 {
		summary += fmt.Sprintf("; %s FAILED", plural(len(res.Errors), "path"))
	}
	if len(res.Kept) > 0 {
		summary += fmt.Sprintf("; KEPT %s that another session or you changed since (--all restores them too)", plural(len(res.Kept), "path"))
	}
	fmt.Fprintln(w, summary)
}

// keptReason says who changed a kept path and what the move did with it:
// "written by session B at #3, 14:02", "your edit at 14:05", and for a
// merge or a conflict how it stands.
func keptReason(k snap.Kept, session string) string {
	who := "written by session " + printable(k.Session)
	if k.Deleted {
		who = "deleted by session " + printable(k.Session)
	}
	switch {
	case k.Actor == snap.ActorUser && k.Deleted:
		who = "your deletion"
		if k.Session != session {
			who += " (recorded in session " + printable(k.Session) + ")"
		}
	case k.Actor == snap.ActorUser:
		who = "your edit"
		if k.Session != session {
			who += " (recorded in session " + printable(k.Session) + ")"
		}
	case k.Session == "":
		who = "changed by another actor"
	case k.Actor == snap.ActorAgent:
		who += "'s agent"
	}
	at := " at "
	if k.Seq > 0 {
		at += fmt.Sprintf("#%d, ", k.Seq)
	}
	at += when(k.Time)
	switch {
	case k.Merged:
		return who + at + "; merged: this session's own change taken out, that one kept"
	case k.Conflict:
		return who + at + ", over this session's change: left as it is (conflict)"
	}
	return who + at + ": left as it is"
}

// withSafety adds the safety checkpoint to the error of a rewind that failed
// after taking it, so the user knows where the state from before is.
func withSafety(err error, res *snap.RewindResult) error {
	if res == nil || res.SafetyCheckpoint == nil {
		return err
	}
	return fmt.Errorf("%w (the state from before is in safety checkpoint %s)", err, res.SafetyCheckpoint)
}
