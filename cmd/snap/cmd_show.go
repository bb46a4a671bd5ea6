package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type showOptions struct {
	globalOptions
	Ref   string // "" is the session head
	Files bool   // list the checkpoint's files instead
	Path  string // with Files: only what lies beneath this path (relative to the current directory)
}

type filesResult struct {
	Checkpoint string          `json:"checkpoint"`
	Path       string          `json:"path"` // from the project root; "" for the whole tree
	Files      []snap.FileInfo `json:"files"`
}

func showCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "describe one checkpoint",
		ArgsUsage: "[REF] [--files [PATH]]",
		Description: `Shows one checkpoint (default: the session head): id, session and #seq,
time, kind, message id, summary, labels, parent; the files added (A),
modified (M) and deleted (D) against its parent; its state documents with
their sizes and the paths they were read from.

--files lists every file of the checkpoint instead, one per line: mode
(file, exec, symlink, or dir for an empty directory), size in bytes, path
from the project root. With PATH (relative to the current directory), only
what lies beneath it. With --json: {checkpoint, path, files: [{path, mode,
size, id}]}.

Examples:
   snap show
   snap show '#3'
   snap show msg:msg_01 --json
   snap show @ --files
   snap show '#2' --files src/ --json`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "files", Usage: "list every file of the checkpoint (beneath PATH, when given)"},
		),
		Action: func(c *cli.Context) error {
			o := showOptions{globalOptions: globals(c), Ref: c.Args().First(), Files: c.Bool("files")}
			switch {
			case o.Files && c.NArg() > 2:
				return usageErrorf("show --files takes a REF and one PATH, got %d arguments", c.NArg())
			case o.Files:
				o.Path = c.Args().Get(1)
				if c.NArg() == 2 && o.Path == "" {
					return usageErrorf("show --files: empty PATH")
				}
				return runShowFiles(c.Context, o, inv.stdout)
			case c.NArg() > 1:
				return usageErrorf("show takes one REF, got %d arguments (to list files: snap show REF --files PATH)", c.NArg())
			}
			return runShow(c.Context, o, inv.stdout)
		},
	}
}

func runShow(ctx context.Context, o showOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	id, err := repo.Resolve(ctx, o.session(), o.Ref)
	if err != nil {
		return err
	}
	res, err := repo.Show(ctx, id)
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
		if res.Actor != "" {
			actor := res.Actor
			if res.Call != "" {
				actor += " (tool call " + printable(res.Call) + ")"
			}
			fmt.Fprintf(tw, "actor\t%s\n", actor)
		}
		if res.MessageID != "" {
			fmt.Fprintf(tw, "message id\t%s\n", res.MessageID)
		}
		if res.Summary != "" {
			fmt.Fprintf(tw, "summary\t%s\n", printable(oneLine(res.Summary)))
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
				src := quotePath(s.Source)
				switch {
				case s.Name == snap.TaskDoc && src == "":
					src = "(snap's task stack)"
				case src == "":
					src = "(stdin)"
				}
				fmt.Fprintf(tw, "%s\tfrom %s\n", line, src)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if c := res.Conversation; c != nil && (c.FirstUser != "" || c.LastAssistant != "") {
			fmt.Fprintln(w, "\nconversation:")
			if c.FirstUser != "" {
				fmt.Fprintf(w, "  first user message:     %s\n", printable(oneLine(c.FirstUser)))
			}
			if c.LastAssistant != "" {
				fmt.Fprintf(w, "  last assistant message: %s\n", printable(oneLine(c.LastAssistant)))
			}
		}
		if c := res.Context; c != nil {
			fmt.Fprintln(w, "\ncontext (the saved API call):")
			if c.Model != "" {
				fmt.Fprintf(w, "  model     %s\n", c.Model)
			}
			if c.Attempt > 0 {
				fmt.Fprintf(w, "  attempt   %d\n", c.Attempt)
			}
			fmt.Fprintf(w, "  system    %s\n", plural(c.SystemChars, "character"))
			fmt.Fprintf(w, "  messages  %d\n", c.Messages)
			if len(c.Files) > 0 {
				fmt.Fprintf(w, "  files     %s\n", strings.Join(c.Files, ", "))
			}
			for _, k := range slices.Sorted(maps.Keys(c.Config)) {
				if k != "model" {
					fmt.Fprintf(w, "  config    %s = %v\n", k, c.Config[k])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(c.Params)) {
				fmt.Fprintf(w, "  param     %s = %v\n", k, c.Params[k])
			}
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
		fmt.Fprintf(w, "%sA %s\n", prefix, quotePath(p))
	}
	for _, p := range modified {
		fmt.Fprintf(w, "%sM %s\n", prefix, quotePath(p))
	}
	for _, p := range deleted {
		fmt.Fprintf(w, "%sD %s\n", prefix, quotePath(p))
	}
}

// runShowFiles lists the files of a checkpoint (show --files).
func runShowFiles(ctx context.Context, o showOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	dir := ""
	if o.Path != "" {
		paths, err := o.projectPaths(repo, []string{o.Path})
		if err != nil {
			return err
		}
		dir = paths[0]
	}
	id, err := repo.Resolve(ctx, o.session(), o.Ref)
	if err != nil {
		return err
	}
	files, err := repo.Files(ctx, id, dir)
	if err != nil {
		return err
	}
	res := filesResult{Checkpoint: id.String(), Path: dir, Files: files}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if len(files) == 0 {
			fmt.Fprintf(w, "checkpoint %s has no files\n", id.Short())
			return nil
		}
		width := 1
		for _, f := range files {
			width = max(width, len(strconv.FormatInt(f.Size, 10)))
		}
		for _, f := range files {
			fmt.Fprintf(w, "%-7s  %*d  %s\n", f.Mode, width, f.Size, quotePath(f.Path))
		}
		return nil
	})
}
