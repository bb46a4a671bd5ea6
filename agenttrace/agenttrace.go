// Package agenttrace is the Agent Trace format (v0.1.0, an open
// specification for recording which lines of a codebase AI wrote and which
// people did: github.com/cursor/agent-trace): its trace record, as snap
// writes one per checkpoint ('snap trace export'). testdata holds the
// specification's JSON Schema, which the tests validate every record
// against.
package agenttrace

import (
	"fmt"
	"time"
)

// Version is the version of the specification the records follow.
const Version = "0.1.0"

// The contributor types.
const (
	Human   = "human"
	AI      = "ai"
	Mixed   = "mixed"
	Unknown = "unknown"
)

// Record is one trace record: the files and line ranges one contribution
// made, and who made them.
type Record struct {
	Version   string         `json:"version"`
	ID        string         `json:"id"`        // a UUID
	Timestamp string         `json:"timestamp"` // RFC 3339
	VCS       *VCS           `json:"vcs,omitempty"`
	Tool      *Tool          `json:"tool,omitempty"`
	Files     []File         `json:"files"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// VCS names the revision a record belongs to.
type VCS struct {
	Type     string `json:"type"` // git, jj, hg, svn
	Revision string `json:"revision"`
}

// Tool is what wrote the record.
type Tool struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// File is one file's attributed ranges, by conversation.
type File struct {
	Path          string         `json:"path"` // relative to the repository's root
	Conversations []Conversation `json:"conversations"`
}

// Conversation is the ranges one conversation (for snap: one session's
// checkpoint) produced.
type Conversation struct {
	URL         string       `json:"url,omitempty"`
	Contributor *Contributor `json:"contributor,omitempty"`
	Ranges      []Range      `json:"ranges"`
	Related     []Related    `json:"related,omitempty"`
}

// Contributor is who produced ranges: Type is Human, AI, Mixed or Unknown.
type Contributor struct {
	Type    string `json:"type"`
	ModelID string `json:"model_id,omitempty"`
}

// Range is lines start to end (from 1, both included).
type Range struct {
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
}

// Related is another resource of a conversation (a session).
type Related struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// UUID formats 16 bytes of an id as a UUID (version 8: custom, variant
// RFC 4122), so that a record's id is a function of what it records.
func UUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Timestamp formats t as a record's timestamp (RFC 3339, UTC).
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
