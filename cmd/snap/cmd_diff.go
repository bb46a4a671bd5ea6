package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type diffOptions struct {
	globalOptions
	From  string   // "" is the session head
	To    string   // "" is the working tree
	Stat  bool     // per-file counts instead of patches
	Paths []string // limit to these paths (and what lies beneath them)
}

func diffCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "show changes between checkpoints, or a checkpoint and the working tree",
		ArgsUsage: "[REF [REF2]] [-- PATH...]",
		Description: `Shows a unified diff from REF (default: the session head) to REF2 (default:
the working tree and the state documents at their source paths).

State documents are compared too: the conversation message by message
("@@ message N @@", then - the message of REF, + the message of REF2), other
documents as text. Limiting to paths (after --) leaves them out.

--stat prints, per file, the lines added and removed instead of the patch.

Examples:
   snap diff                      # what changed since the last checkpoint
   snap diff '#2' '#3'            # what step 3 did
   snap diff @~1 -- src/          # only under src/
   snap diff '#1' --stat --json`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "stat", Usage: "print per-file counts of lines added and removed instead of patches"},
		),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			refs, paths := args, []string(nil)
			if n := inv.dashPos; n >= 0 && n <= len(args) {
				refs, paths = args[:n], args[n:]
			} else {
				for i, a := range args {
					if a == "--" {
						refs, paths = args[:i], args[i+1:]
						break
					}
				}
			}
			if len(refs) > 2 {
				return usageErrorf("diff takes at most two REFs (got %q); put paths after --", refs)
			}
			o := diffOptions{globalOptions: globals(c), Stat: c.Bool("stat"), Paths: paths}
			if len(refs) > 0 {
				o.From = refs[0]
			}
			if len(refs) > 1 {
				o.To = refs[1]
			}
			return runDiff(c.Context, o, inv.stdout)
		},
	}
}

func runDiff(ctx context.Context, o diffOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	var paths []string
	if len(o.Paths) > 0 {
		if paths, err = o.projectPaths(repo, o.Paths); err != nil {
			return err
		}
	}
	// Each REF is resolved once: the result names what was compared.
	from, err := repo.Resolve(ctx, o.session(), o.From)
	if err != nil {
		return err
	}
	var to *snap.ID
	if o.To != "" {
		id, err := repo.Resolve(ctx, o.session(), o.To)
		if err != nil {
			return err
		}
		to = &id
	}
	res, err := repo.Diff(ctx, from, to, paths)
	if err != nil {
		return err
	}
	if o.Stat {
		for i := range res.Files {
			res.Files[i].Patch = ""
		}
		for i := range res.State {
			res.State[i].Patch = ""
		}
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if o.Stat {
			return writeDiffStat(w, res, o.session())
		}
		return writeDiff(w, res)
	})
}

func writeDiff(w io.Writer, res *snap.DiffResult) error {
	for _, f := range res.Files {
		a, b := "a/"+f.Path, "b/"+f.Path
		if f.Status == "added" {
			a = "/dev/null"
		}
		if f.Status == "deleted" {
			b = "/dev/null"
		}
		qa, qb := quotePath(a), quotePath(b)
		switch {
		case f.OldMode == "dir" || f.NewMode == "dir":
			if f.Status != "modified" { // a kind change says so below
				fmt.Fprintf(w, "empty directory %s %s\n", quotePath(f.Path+"/"), f.Status)
			}
		case f.Binary:
			fmt.Fprintf(w, "Binary files %s and %s differ\n", qa, qb)
		case f.Patch != "":
			patch := f.Patch
			if head := "--- " + a + "\n+++ " + b + "\n"; (qa != a || qb != b) && strings.HasPrefix(patch, head) {
				patch = "--- " + qa + "\n+++ " + qb + "\n" + patch[len(head):]
			}
			io.WriteString(w, patch)
			if !strings.HasSuffix(patch, "\n") {
				io.WriteString(w, "\n")
			}
		case f.Status == "added" || f.Status == "deleted":
			fmt.Fprintf(w, "--- %s\n+++ %s\n(empty file %s)\n", qa, qb, f.Status)
		}
		if f.OldMode != "" && f.NewMode != "" && f.OldMode != f.NewMode {
			fmt.Fprintf(w, "mode of %s: %s -> %s\n", quotePath(f.Path), f.OldMode, f.NewMode)
		}
	}
	for _, s := range res.State {
		switch {
		case s.Conversation != nil:
			d := s.Conversation
			fmt.Fprintf(w, "=== state %s (%s): %s in common, -%d +%d\n", s.Name, s.Status, plural(d.Common, "message"), len(d.Removed), len(d.Added))
			if err := d.Format(w); err != nil {
				return err
			}
		case s.Patch != "":
			fmt.Fprintf(w, "=== state %s (%s)\n", s.Name, s.Status)
			io.WriteString(w, s.Patch)
			if !strings.HasSuffix(s.Patch, "\n") {
				io.WriteString(w, "\n")
			}
		default:
			fmt.Fprintf(w, "=== state %s (%s, binary or too large to show)\n", s.Name, s.Status)
		}
	}
	return nil
}

func writeDiffStat(w io.Writer, res *snap.DiffResult, session string) error {
	tw := newTable(w)
	plus, minus := 0, 0
	for _, f := range res.Files {
		note := ""
		if f.Status != "modified" {
			note = " (" + f.Status + ")"
		}
		if f.OldMode == "dir" || f.NewMode == "dir" {
			fmt.Fprintf(tw, " %s\t| %s -> %s%s%s\n", quotePath(f.Path), orNone(f.OldMode), orNone(f.NewMode), note, changedBy(f.ChangedBy, session))
			continue
		}
		if f.Binary {
			fmt.Fprintf(tw, " %s\t| binary%s%s\n", quotePath(f.Path), note, changedBy(f.ChangedBy, session))
			continue
		}
		fmt.Fprintf(tw, " %s\t| +%d -%d%s%s\n", quotePath(f.Path), f.Added, f.Removed, note, changedBy(f.ChangedBy, session))
		plus += f.Added
		minus += f.Removed
	}
	for _, s := range res.State {
		if s.Conversation != nil {
			fmt.Fprintf(tw, " state %s\t| +%d -%d messages\n", s.Name, len(s.Conversation.Added), len(s.Conversation.Removed))
		} else {
			fmt.Fprintf(tw, " state %s\t| %s\n", s.Name, s.Status)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Files) > 0 {
		fmt.Fprintf(w, " %s changed, %s(+), %s(-)\n", plural(len(res.Files), "file"), plural(plus, "insertion"), plural(minus, "deletion"))
	}
	return nil
}

// orNone is a mode for people: "-" for none.
func orNone(mode string) string {
	if mode == "" {
		return "-"
	}
	return mode
}

// changedBy names who recorded a path's changes: "  by A's agent #3, you
// (B #5)"; "" when no checkpoint recorded them yet, or only session's own
// of unknown actor (a session working alone).
func changedBy(cs []snap.Changer, session string) string {
	if !slices.ContainsFunc(cs, func(c snap.Changer) bool { return c.Session != session || c.Actor != snap.ActorUnknown }) {
		return ""
	}
	var parts []string
	for _, c := range cs {
		who := printable(c.Session)
		switch {
		case c.Session == "":
			who = "a rewind's safety capture"
		case c.Actor == snap.ActorAgent:
			who += "'s agent"
		case c.Actor == snap.ActorUser:
			who = "you (" + who
		}
		if c.Seq > 0 {
			who += fmt.Sprintf(" #%d", c.Seq)
		}
		if c.Actor == snap.ActorUser && c.Session != "" {
			who += ")"
		}
		parts = append(parts, who)
	}
	if len(parts) == 0 {
		return ""
	}
	return "  by " + strings.Join(parts, ", ")
}
