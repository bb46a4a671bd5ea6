package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/redact"
)

type redactOptions struct {
	globalOptions
	Arg string // a FILE that exists, else a REF ("" is the session head)
}

// redactDoc is what --check found in one document.
type redactDoc struct {
	// Name: the state document, a text of the checkpoint's record
	// (summary, message_id, label, state_sources:NAME), or the FILE as given.
	Name     string           `json:"name"`
	Size     int64            `json:"size"`
	Findings []redact.Finding `json:"findings"`
}

// redactReport is redact --check's JSON document.
type redactReport struct {
	Checkpoint *snap.ID    `json:"checkpoint,omitempty"` // for a REF
	File       string      `json:"file,omitempty"`       // for a FILE
	Documents  []redactDoc `json:"documents"`
	Secrets    int         `json:"secrets"` // findings, all documents
	// SecretFiles: the checkpoint's secret-named files; those git does not
	// track are held back by export and push.
	SecretFiles []gitbridge.SecretFile `json:"secret_files"`
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

func runRedactCheck(ctx context.Context, o redactOptions, out io.Writer) error {
	rep := &redactReport{Documents: []redactDoc{}, SecretFiles: []gitbridge.SecretFile{}}
	if o.Arg != "" {
		p, err := o.absPath(o.Arg)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			r, err := redact.Scan(f)
			if err != nil {
				return err
			}
			rep.File = o.Arg
			rep.Documents = append(rep.Documents, redactDoc{Name: o.Arg, Size: r.Size, Findings: findings(r)})
			rep.Secrets = len(r.Findings)
			return emitRedact(out, o.JSON, rep)
		}
	}
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	id, err := repo.Resolve(ctx, o.session(), o.Arg)
	if err != nil {
		return err
	}
	rep.Checkpoint = &id
	node, _, err := repo.ReadNode(ctx, id)
	if err != nil {
		return err
	}
	docs, err := repo.ReadTree(ctx, node.State)
	if err != nil {
		return err
	}
	for _, e := range docs {
		pr, pw := io.Pipe()
		go func() {
			_, err := repo.WriteContent(ctx, e.ID, pw)
			pw.CloseWithError(err)
		}()
		r, err := redact.Scan(pr)
		pr.Close()
		if err != nil {
			return fmt.Errorf("state document %s: %w", e.Name, err)
		}
		rep.Documents = append(rep.Documents, redactDoc{Name: e.Name, Size: r.Size, Findings: findings(r)})
		rep.Secrets += len(r.Findings)
	}
	fields, err := gitbridge.RecordSecrets(node)
	if err != nil {
		return err
	}
	for _, f := range fields {
		rep.Documents = append(rep.Documents, redactDoc{Name: f.Field, Findings: f.Findings})
		rep.Secrets += len(f.Findings)
	}
	if rep.SecretFiles, err = gitbridge.SecretFiles(ctx, repo, id); err != nil {
		return err
	}
	return emitRedact(out, o.JSON, rep)
}

func findings(r *redact.Report) []redact.Finding {
	if r.Findings == nil {
		return []redact.Finding{}
	}
	return r.Findings
}

func emitRedact(out io.Writer, asJSON bool, rep *redactReport) error {
	return emit(out, asJSON, rep, func(w io.Writer) error {
		what := rep.File
		if rep.Checkpoint != nil {
			what = "checkpoint " + rep.Checkpoint.Short()
		}
		held := 0
		for _, f := range rep.SecretFiles {
			if !f.Tracked {
				held++
			}
		}
		fmt.Fprintf(w, "%s: %s to redact", what, plural(rep.Secrets, "secret"))
		if rep.Checkpoint != nil {
			fmt.Fprintf(w, ", %s to hold back", plural(held, "secret file"))
		}
		fmt.Fprintln(w)
		for _, d := range rep.Documents {
			for _, f := range d.Findings {
				fmt.Fprintf(w, "  %s:%d  %-20s %-8s fingerprint %s  (%s)\n", d.Name, f.Line, f.Kind, f.Masked, f.Fingerprint, f.Rule)
			}
		}
		for _, f := range rep.SecretFiles {
			if f.Tracked {
				fmt.Fprintf(w, "  exported: %s (matches %s, but git tracks it)\n", f.Path, f.Pattern)
			} else {
				fmt.Fprintf(w, "  held back: %s (matches %s, git does not track it; --include-secret-files exports it)\n", f.Path, f.Pattern)
			}
		}
		if rep.Secrets > 0 {
			_, err := fmt.Fprintf(w, "each is exported as %s; the store here keeps the exact bytes\n", redact.Placeholder("KIND"))
			return err
		}
		return nil
	})
}
