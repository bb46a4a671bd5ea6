package main

import (
	"github.com/urfave/cli/v2"
)

type traceOptions struct {
	globalOptions
	Since  string
	Format string
}

func traceCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "export who wrote which lines (Agent Trace records, git-ai logs)",
		Description: `Attribution out of the store: 'snap trace export' prints an Agent Trace
record for each checkpoint of the session that first recorded lines, or a
git-ai authorship log. (A --git-commit and 'snap git export' also attach one
to each commit they write, under refs/notes/ai; 'snap blame' shows who wrote
each line of one file.)`,
		Subcommands: []*cli.Command{{
			Name:      "export",
			Usage:     "print an Agent Trace record for each checkpoint of the session that added lines (or a git-ai log)",
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
   --format F    agent-trace (the default) or git-ai

With --json the records are printed as one JSON document {"records": [...]}.

--format git-ai prints instead one git-ai authorship log (Git AI Standard
v3.0.0, github.com/git-ai-project/git-ai) of the lines the session's
checkpoints (after --since) recorded first, in the files they changed as the
session's head holds them: the agent's lines under the session, yours (--actor
user) under your git identity; its base_commit_sha is git's HEAD. It is what
'git notes --ref=ai add -F - COMMIT' attaches to the commit that records
those lines. It needs a git repository. With --json: {"log": "..."}.

Examples:
   snap trace export > trace.jsonl
   snap trace export --since '#3' --json
   snap trace export --format git-ai --since '#1'`,
			Flags: withGlobals(
				&cli.StringFlag{Name: "since", Usage: "only checkpoints recorded after `REF`"},
				&cli.StringFlag{Name: "format", Usage: "`F` = agent-trace (default) or git-ai"},
			),
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usageErrorf("trace export takes no arguments")
				}
				o := traceOptions{globalOptions: globals(c), Since: c.String("since"), Format: c.String("format")}
				if o.Format != "" && o.Format != "agent-trace" && o.Format != "git-ai" {
					return usageErrorf("--format %q: want agent-trace or git-ai", o.Format)
				}
				return runTraceExport(c.Context, o, inv.stdout)
			},
		}},
	}
}
