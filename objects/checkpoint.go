package objects

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Checkpoint binds a working tree and the agent's state documents in one
// node. Its canonical encoding is the compact JSON that Encode produces
// (fields in declaration order, map keys sorted), so ids are stable.
type Checkpoint struct {
	Tree    ID   `json:"tree"`    // the working tree
	State   ID   `json:"state"`   // a tree of named state documents (conversation, context, ...)
	Parents []ID `json:"parents"` // previous checkpoint of the session (empty for the first)

	// StateSources maps a state document's name to the path it was read
	// from, so a rewind can put it back.
	StateSources map[string]string `json:"state_sources,omitempty"`

	// Skipped lists the paths that existed but could not be read when the
	// checkpoint was taken (busy, unreadable, over the size limit; a
	// directory's path ends in "/"), sorted. Tree carries their previous
	// entries, if any; a restore to this checkpoint leaves them alone.
	Skipped []string `json:"skipped,omitempty"`

	Session   string `json:"session"`
	MessageID string `json:"message_id,omitempty"`
	// Actor is who made the changes the checkpoint records against its
	// parent, as the capture's caller knew it: ActorAgent (the session's
	// agent, in a tool call or its turn), ActorUser (a change made outside
	// any of its agent's tool calls), or "" when nobody said (unknown).
	Actor string `json:"actor,omitempty"`
	// Call is the agent's tool call (or message) whose changes an
	// ActorAgent checkpoint records ("" when none was given).
	Call string `json:"call,omitempty"`
	// Agent is the program that took the checkpoint for the session's
	// agent ("claude-code", "gemini", "codex", an MCP client's name), as
	// its hook or server said; "" when none did.
	Agent   string   `json:"agent,omitempty"`
	Kind    string   `json:"kind"`
	Summary string   `json:"summary,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	Time    int64    `json:"time"` // Unix nanoseconds
	Stats   Stats    `json:"stats"`
}

// The actors a checkpoint can name (Checkpoint.Actor).
const (
	ActorAgent = "agent"
	ActorUser  = "user"
)

// Stats is what log and show print without diffing trees.
type Stats struct {
	Files    int   `json:"files"`    // files in the tree
	Bytes    int64 `json:"bytes"`    // their total size
	Added    int   `json:"added"`    // vs the first parent
	Modified int   `json:"modified"` // vs the first parent
	Deleted  int   `json:"deleted"`  // vs the first parent
	NewBytes int64 `json:"new_bytes"`
	Messages int   `json:"messages"` // messages in the conversation document, -1 if none
}

// When returns the checkpoint's time.
func (c *Checkpoint) When() time.Time { return time.Unix(0, c.Time) }

// Encode returns the canonical encoding.
func (c *Checkpoint) Encode() []byte {
	if c.Parents == nil {
		c.Parents = []ID{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // only plain data: cannot fail
	}
	return b
}

// DecodeCheckpoint parses and validates a checkpoint: canonical JSON, a tree,
// a kind and a session.
func DecodeCheckpoint(data []byte) (*Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: checkpoint: trailing data", ErrCorrupt)
	}
	if c.Tree.IsZero() || c.State.IsZero() || c.Kind == "" || c.Session == "" {
		return nil, fmt.Errorf("%w: checkpoint: missing tree, state, kind or session", ErrCorrupt)
	}
	if c.Actor != "" && c.Actor != ActorAgent && c.Actor != ActorUser {
		return nil, fmt.Errorf("%w: checkpoint: unknown actor %q", ErrCorrupt, c.Actor)
	}
	if !bytes.Equal(c.Encode(), data) {
		return nil, fmt.Errorf("%w: checkpoint: non-canonical encoding", ErrCorrupt)
	}
	return &c, nil
}
