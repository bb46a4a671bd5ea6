//go:build !snapcore

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/redact"
)

// 'snap redact --check' reports what a push would hold back, which needs
// the git bridge (go-git): a snap built with the tag snapcore runs
// snap-full for it (core.go).

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
