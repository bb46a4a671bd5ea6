package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agenttrace"
	"github.com/snapcore-dev/snap/gitbridge"
)

type traceOptions struct {
	globalOptions
	Since  string
	Format string
}

func traceCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "export who wrote which lines (Agent Trace records)",
		Description: `Attribution out of the store: 'snap trace export' prints an Agent Trace
record for each checkpoint of the session that first recorded lines. (A
--git-commit also attaches a git-ai authorship log under refs/notes/ai; 'snap
blame' shows who wrote each line of one file.)`,
		Subcommands: []*cli.Command{{
			Name:      "export",
			Usage:     "print an Agent Trace record for each checkpoint of the session that added lines",
			ArgsUsage: " ",
			Description: `Prints, one per line, an Agent Trace record (v0.1.0, the open format for
attributing code to AI and to people: github.com/cursor/agent-trace) for each
checkpoint of the session that first recorded a change of the working tree:
its files and the line ranges it added, the contributor "ai" for the agent's
checkpoints, "human" for yours (--actor user, or what the hooks found changed
outside the agent's tool calls), "unknown" otherwise; the tool snap and its
version; vcs, the git HEAD at export, when the project is in a git
repository; and in metadata "dev.snap" the checkpoint, session, tool call
and kind. A line another session wrote first is that session's record.

   --since REF   only checkpoints recorded after REF
   --format F    agent-trace (the default; the only format so far)

With --json the records are printed as one JSON document {"records": [...]}.

Examples:
   snap trace export > trace.jsonl
   snap trace export --since '#3' --json`,
			Flags: withGlobals(
				&cli.StringFlag{Name: "since", Usage: "only checkpoints recorded after `REF`"},
				&cli.StringFlag{Name: "format", Usage: "`F` = agent-trace (default)"},
			),
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usageErrorf("trace export takes no arguments")
				}
				o := traceOptions{globalOptions: globals(c), Since: c.String("since"), Format: c.String("format")}
				if o.Format != "" && o.Format != "agent-trace" {
					return usageErrorf("--format %q: want agent-trace", o.Format)
				}
				return runTraceExport(c.Context, o, inv.stdout)
			},
		}},
	}
}

func runTraceExport(ctx context.Context, o traceOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	cs, err := repo.Contributions(ctx, snap.ContributionOptions{Session: o.session(), Since: o.Since})
	if err != nil {
		return err
	}
	var vcs *agenttrace.VCS
	if b, err := gitbridge.Open(repo, ""); err == nil {
		if head, err := b.Head(); err == nil && head != "" {
			vcs = &agenttrace.VCS{Type: "git", Revision: head}
		}
	} else if !errors.Is(err, gitbridge.ErrNoGitRepo) {
		return err
	}
	records := []agenttrace.Record{}
	for _, c := range cs {
		records = append(records, traceRecord(c, vcs))
	}
	if o.JSON {
		return writeJSON(out, map[string]any{"records": records})
	}
	enc := json.NewEncoder(out)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// traceRecord is the Agent Trace record of one checkpoint's contribution.
func traceRecord(c snap.Contribution, vcs *agenttrace.VCS) agenttrace.Record {
	var id [16]byte
	copy(id[:], c.Checkpoint[:16])
	who := map[string]string{snap.ActorAgent: agenttrace.AI, snap.ActorUser: agenttrace.Human}[c.Actor]
	if who == "" {
		who = agenttrace.Unknown
	}
	r := agenttrace.Record{Version: agenttrace.Version, ID: agenttrace.UUID(id), Timestamp: agenttrace.Timestamp(c.Time),
		VCS: vcs, Tool: &agenttrace.Tool{Name: "snap", Version: version()}, Files: []agenttrace.File{},
		Metadata: map[string]any{"dev.snap": map[string]any{"checkpoint": c.Checkpoint.String(), "session": c.Session,
			"actor": c.Actor, "message_id": c.MessageID, "kind": c.Kind, "summary": c.Summary}}}
	for _, f := range c.Files {
		conv := agenttrace.Conversation{Contributor: &agenttrace.Contributor{Type: who}, Ranges: []agenttrace.Range{},
			Related: []agenttrace.Related{{Type: "session", URL: "urn:snap:session:" + url.PathEscape(c.Session)}}}
		for _, rg := range f.Ranges {
			conv.Ranges = append(conv.Ranges, agenttrace.Range{StartLine: rg[0], EndLine: rg[1]})
		}
		r.Files = append(r.Files, agenttrace.File{Path: f.Path, Conversations: []agenttrace.Conversation{conv}})
	}
	return r
}
