package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type checkpointOptions struct {
	globalOptions
	docFlags
	MessageID   string
	Summary     string
	Labels      []string
	Kind        string
	Paths       []string
	MaxFileSize string // bytes, with an optional K/M/G/T suffix
	AllowEmpty  bool
	Actor       string
	Call        string
}

// docFlags are the state documents a command records: --conversation and
// --state.
type docFlags struct {
	Conversation string   // FILE or "-": shorthand for --state conversation=FILE
	State        []string // NAME=FILE, FILE may be "-"
	Stdin        io.Reader
}

func docFlagsOf(c *cli.Context, inv *invocation) docFlags {
	return docFlags{Conversation: c.String("conversation"), State: c.StringSlice("state"), Stdin: inv.stdin}
}

func docCLIFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "conversation", Usage: "record `FILE` (- for stdin) as the conversation document"},
		&cli.StringSliceFlag{Name: "state", Usage: "record state document `NAME=FILE` (- for stdin); repeatable"},
	}
}

func checkpointCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "checkpoint",
		Usage:     "record the working tree and state documents; print the id",
		ArgsUsage: " ",
		Description: `Records the whole working tree (minus .gitignore'd, .snapignore'd and
oversized files, which are listed as skipped) and the agent's state documents
as a new checkpoint of the session, and moves the session head to it.

The first line of output is the checkpoint's full id; the second summarises
it: files added (+), modified (~) and deleted (-) since the parent, bytes the
store grew by, messages in the conversation.

State documents: --state NAME=FILE records FILE as the document NAME;
--conversation FILE is --state conversation=FILE. FILE may be - (stdin; one
document at most). The source path is remembered: a later checkpoint re-reads
it when the document is not given again, and 'snap rewind' writes the
document back there.

--paths P (repeatable) is the edit-set hint of a pre-edit hook: only those
paths are examined; the rest of the tree is inherited from the parent.

--actor says who made the changes since the head: "user" (you, or anything
outside the agent's tool calls) or "agent" (the session's agent; --call ID
names its tool call). Without it the actor is unknown. A rewind, undo or
task revert of one session keeps what another session or the user changed
since its target (see 'snap help rewind'); the hooks set the actor
themselves.

A checkpoint identical to the head (same files, same state documents, no
--label) records nothing: the head's id is printed, marked unchanged
("unchanged": true in JSON), and -m MSG_ID still finds it. --allow-empty
records a new checkpoint anyway.

A file that cannot be read (it keeps changing, grew past --max-file-size,
permission denied) is listed as skipped and keeps its previous version in
the checkpoint; no rewind touches it while that is so.

Examples:
   snap checkpoint -m msg_01 --summary "add parser" --conversation session.jsonl
   cat transcript.json | snap checkpoint --conversation - --kind post-tool
   snap checkpoint --paths src/main.go --kind pre-tool --json
   snap checkpoint --actor user --summary "my own fix"`,
		Flags: withGlobals(append(docCLIFlags(),
			&cli.StringFlag{Name: "message-id", Aliases: []string{"m"}, Usage: "the agent's message `ID` this checkpoint belongs to (REF msg:ID finds it)"},
			&cli.StringFlag{Name: "summary", Usage: "one-line `TEXT` describing the step"},
			&cli.StringSliceFlag{Name: "label", Usage: "label the checkpoint `L` (moved if it exists); repeatable"},
			&cli.StringFlag{Name: "kind", Usage: "why it was taken: `K` = manual (default), pre-tool, post-tool, prompt, ..."},
			&cli.StringSliceFlag{Name: "paths", Usage: "examine only `P` (edit-set hint), inherit the rest; repeatable"},
			&cli.StringFlag{Name: "max-file-size", Usage: "skip files larger than `N` bytes (suffixes K, M, G, T); default: the store's setting"},
			&cli.BoolFlag{Name: "allow-empty", Usage: "record a checkpoint even when nothing differs from the head"},
			&cli.StringFlag{Name: "actor", Usage: "who made the changes since the head: `A` = user or agent (default: unknown)"},
			&cli.StringFlag{Name: "call", Usage: "the agent's tool call `ID` whose changes this records (with --actor agent)"},
		)...),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("checkpoint takes no arguments (got %q); paths go with --paths", c.Args().First())
			}
			return runCheckpoint(c.Context, checkpointOptions{
				globalOptions: globals(c),
				docFlags:      docFlagsOf(c, inv),
				MessageID:     c.String("message-id"),
				Summary:       c.String("summary"),
				Labels:        c.StringSlice("label"),
				Kind:          c.String("kind"),
				Paths:         c.StringSlice("paths"),
				MaxFileSize:   c.String("max-file-size"),
				AllowEmpty:    c.Bool("allow-empty"),
				Actor:         c.String("actor"),
				Call:          c.String("call"),
			}, inv.stdout)
		},
	}
}

func runCheckpoint(ctx context.Context, o checkpointOptions, out io.Writer) error {
	co := snap.CheckpointOptions{Session: o.session(), MessageID: o.MessageID, Summary: o.Summary,
		Kind: o.Kind, Labels: o.Labels, AllowEmpty: o.AllowEmpty, Actor: o.Actor, Call: o.Call}
	if o.MaxFileSize != "" {
		n, err := parseSize(o.MaxFileSize)
		if err != nil {
			return err
		}
		if n == 0 {
			return usageErrorf("--max-file-size must be more than 0")
		}
		co.MaxFileSize = n
	}
	docs, err := o.stateDocs(o.globalOptions)
	if err != nil {
		return err
	}
	co.State = docs
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	if len(o.Paths) > 0 {
		if co.Paths, err = o.projectPaths(repo, o.Paths); err != nil {
			return err
		}
	}
	res, err := repo.Checkpoint(ctx, co)
	if err == nil {
		maintain(ctx, repo)
	}
	if err != nil {
		return err
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		fmt.Fprintln(w, res.ID)
		if res.Unchanged {
			fmt.Fprintln(w, "unchanged: nothing differs from the head, no checkpoint recorded (--allow-empty records one)")
			writeSkipped(w, res.Skipped)
			return nil
		}
		line := fmt.Sprintf("+%d ~%d -%d files, %s new", len(res.Files.Added), len(res.Files.Modified),
			len(res.Files.Deleted), humanSize(res.NewBytes))
		if res.Stats.Messages >= 0 {
			line += fmt.Sprintf(", conversation %s", plural(res.Stats.Messages, "message"))
		}
		if res.Parent == nil {
			line += ", first checkpoint of session " + res.Session
		}
		if len(co.Labels) > 0 {
			line += ", labelled " + strings.Join(co.Labels, ", ")
		}
		fmt.Fprintln(w, line)
		writeSkipped(w, res.Skipped)
		return nil
	})
}

// writeSkipped lists what a capture did not record.
func writeSkipped(w io.Writer, skipped []snap.Skipped) {
	for _, s := range skipped {
		note := ""
		if s.Kept {
			note = " (its previous version is kept)"
		}
		fmt.Fprintf(w, "skipped %s: %s%s\n", quotePath(s.Path), printable(s.Reason), note)
	}
}

// stateDocs reads the state documents named by --conversation and --state
// (relative paths from g's base directory).
func (o docFlags) stateDocs(g globalOptions) ([]snap.StateDoc, error) {
	type spec struct{ name, file, flag string }
	var specs []spec
	if o.Conversation != "" {
		specs = append(specs, spec{snap.ConversationDoc, o.Conversation, "--conversation"})
	}
	for _, s := range o.State {
		name, file, ok := strings.Cut(s, "=")
		if !ok || name == "" || file == "" {
			return nil, usageErrorf("--state %q: want NAME=FILE", s)
		}
		specs = append(specs, spec{name, file, "--state " + name})
	}
	var docs []snap.StateDoc
	seen := map[string]bool{}
	stdinUsed := ""
	for _, s := range specs {
		if seen[s.name] {
			return nil, usageErrorf("state document %q given twice", s.name)
		}
		seen[s.name] = true
		file := s.file
		if file == "-" {
			if stdinUsed != "" {
				return nil, usageErrorf("%s and %s both read stdin; only one document may come from stdin", stdinUsed, s.flag)
			}
			stdinUsed = s.flag
		} else {
			var err error
			if file, err = g.absPath(file); err != nil {
				return nil, err
			}
		}
		d, err := snap.ReadStateDoc(s.name, file, o.Stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.flag, err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}
