//go:build !snapcore

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agenttrace"
	"github.com/snapcore-dev/snap/gitbridge"
)

// 'snap trace export' reads the git repository (go-git) for the
// revision it names: a snap built with the tag snapcore runs snap-full for
// it (core.go).

func runTraceExport(ctx context.Context, o traceOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	if o.Format == "git-ai" {
		b, err := gitbridge.Open(repo, "")
		if err != nil {
			return err
		}
		log, err := b.AuthorshipLog(ctx, o.session(), o.Since)
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(out, map[string]string{"log": log})
		}
		_, err = io.WriteString(out, log)
		return err
	}
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
