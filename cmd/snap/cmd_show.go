package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

type showOptions struct {
	globalOptions
	Ref string // "" is the session head
}

func showCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "describe one checkpoint",
		ArgsUsage: "[REF]",
		Description: `Shows one checkpoint (default: the session head): id, session and #seq,
time, kind, message id, summary, labels, parent; the files added (A),
modified (M) and deleted (D) against its parent; its state documents with
their sizes and the paths they were read from.

Examples:
   snap show
   snap show '#3'
   snap show msg:msg_01 --json`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("show takes one REF, got %d arguments", c.NArg())
			}
			return runShow(c.Context, showOptions{globalOptions: globals(c), Ref: c.Args().First()}, inv.stdout)
		},
	}
}

func runShow(_ context.Context, o showOptions, out io.Writer) error {
	repo, err := o.open()
	if err != nil {
		return err
	}
	defer repo.Close()
	res, err := repo.Show(o.session(), o.Ref)
	if err != nil {
		return err
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		tw := newTable(w)
		var marks []string
		if res.Head {
			marks = append(marks, "head")
		}
		if res.Abandoned {
			marks = append(marks, "abandoned")
		}
		fmt.Fprintf(tw, "checkpoint\t%s\n", res.ID)
		session := res.Session
		if res.Seq > 0 {
			session += fmt.Sprintf(" #%d", res.Seq)
		}
		if len(marks) > 0 {
			session += " (" + strings.Join(marks, ", ") + ")"
		}
		fmt.Fprintf(tw, "session\t%s\n", session)
		fmt.Fprintf(tw, "time\t%s\n", when(res.Time))
		fmt.Fprintf(tw, "kind\t%s\n", res.Kind)
		if res.MessageID != "" {
			fmt.Fprintf(tw, "message id\t%s\n", res.MessageID)
		}
		if res.Summary != "" {
			fmt.Fprintf(tw, "summary\t%s\n", oneLine(res.Summary))
		}
		if len(res.Labels) > 0 {
			fmt.Fprintf(tw, "labels\t%s\n", strings.Join(res.Labels, ", "))
		}
		parent := "none (first checkpoint of the session)"
		if res.Parent != nil {
			parent = res.Parent.String()
		}
		if res.ParentExpired {
			parent += " (expired by retention: the changes below are counts only)"
		}
		fmt.Fprintf(tw, "parent\t%s\n", parent)
		fmt.Fprintf(tw, "tree\t%s, %s\n", plural(res.Stats.Files, "file"), humanSize(res.Stats.Bytes))
		fmt.Fprintf(tw, "changes\t+%d ~%d -%d files, %s new\n", res.Stats.Added, res.Stats.Modified, res.Stats.Deleted, humanSize(res.Stats.NewBytes))
		if err := tw.Flush(); err != nil {
			return err
		}
		writeChanges(w, "  ", res.Files.Added, res.Files.Modified, res.Files.Deleted)
		if len(res.State) > 0 {
			fmt.Fprintln(w, "\nstate documents:")
			tw = newTable(w)
			for _, s := range res.State {
				line := fmt.Sprintf("  %s\t%s", s.Name, humanSize(s.Size))
				if s.Name == "conversation" && res.Stats.Messages >= 0 {
					line += "\t" + plural(res.Stats.Messages, "message")
				} else {
					line += "\t"
				}
				src := s.Source
				if src == "" {
					src = "(stdin)"
				}
				fmt.Fprintf(tw, "%s\tfrom %s\n", line, src)
			}
			return tw.Flush()
		}
		return nil
	})
}

// writeChanges lists file changes as "A path", "M path", "D path".
func writeChanges(w io.Writer, prefix string, added, modified, deleted []string) {
	if len(added)+len(modified)+len(deleted) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, p := range added {
		fmt.Fprintf(w, "%sA %s\n", prefix, p)
	}
	for _, p := range modified {
		fmt.Fprintf(w, "%sM %s\n", prefix, p)
	}
	for _, p := range deleted {
		fmt.Fprintf(w, "%sD %s\n", prefix, p)
	}
}
