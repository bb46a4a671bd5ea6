package main

import (
	"github.com/urfave/cli/v2"
)

type redactOptions struct {
	globalOptions
	Arg string // a FILE that exists, else a REF ("" is the session head)
}

func redactCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "redact",
		Usage:     "show what export and push redact: secrets in state documents, secret files held back",
		ArgsUsage: "--check [REF | FILE]",
		Description: `What leaves the machine ('snap git export', 'snap push') carries no secret
found in a state document: each is replaced by a placeholder naming its kind,
[REDACTED:github-pat], [REDACTED:private-key]... The store keeps the exact
bytes, so a rewind here restores the transcript exactly. Secrets are found by
gitleaks' maintained default rules (AWS, GitHub, GitLab, Slack, OpenAI,
Anthropic, private keys, JWTs, generic API keys and ~200 more), plus any value
of high entropy assigned to a name containing KEY, TOKEN, SECRET or PASSWORD
(also in JSON nested in a transcript), and every later occurrence of a secret
found once. A JSONL transcript stays valid JSON line by line. Files whose name
marks them as secrets (.env*, *.pem, *.key, id_rsa*, credentials*.json, ...)
and that git does not track are held back unless --include-secret-files is
given to export or push.

'snap redact --check' shows, for checkpoint REF (default: the session head),
what an export would redact in each state document and in the checkpoint's
record (summary, message id, labels, the paths documents were read from), and
why (kind, rule, line), and the secret files it would hold back (a file name
holding what looks like a secret counts as one); with a FILE
that exists, what it would redact in that file. A finding shows the kind, the
rule, where it is, a fingerprint (the same secret, the same fingerprint) and
at most a 4-character prefix, never the secret. Nothing is changed.

--json answers {checkpoint or file, documents: [{name, size, findings: [{kind,
rule, offset, length, line, fingerprint, masked}]}], secrets, secret_files:
[{path, pattern, tracked}]}.

Examples:
   snap redact --check
   snap redact --check @~1 --json
   snap redact --check transcript.jsonl`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "check", Usage: "report what would be redacted (required: snap never rewrites your files)"},
		),
		Action: func(c *cli.Context) error {
			if !c.Bool("check") {
				return usageErrorf("redact takes --check: it reports what export and push redact (they redact by themselves; snap never rewrites your files)")
			}
			if c.NArg() > 1 {
				return usageErrorf("redact --check takes at most one argument, REF or FILE")
			}
			return runRedactCheck(c.Context, redactOptions{globalOptions: globals(c), Arg: c.Args().First()}, inv.stdout)
		},
	}
}
