package snap

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
)

// ContextDoc is the state document an agent saves the context of its next
// API call in, on a "pre-call" checkpoint, so that a failed call can be
// retried: 'snap rewind REF --state context' puts it back.
const ContextDoc = "context"

// ContextSummary is what show reports of a context document in the
// recommended shape:
//
//	{"system": "...", "messages": [...],
//	 "config": {"model": "...", "max_tokens": 8192, "temperature": 0.2},
//	 "task": {...}, "files": [{"path": "...", "content": "..."}],
//	 "call": {"attempt": 1, "params": {...}}}
//
// Every field is optional; a document that is not a JSON object with
// messages or config has no summary.
type ContextSummary struct {
	Model       string         `json:"model,omitempty"`
	Attempt     int            `json:"attempt,omitempty"`
	SystemChars int            `json:"system_chars"`
	Messages    int            `json:"messages"`
	Files       []string       `json:"files"`
	Config      map[string]any `json:"config,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
	Task        any            `json:"task,omitempty"`
}

// maxPreviewDoc bounds the documents show reads whole for its previews.
const maxPreviewDoc = 16 << 20

func (r *Repo) summarizeContext(e objects.TreeEntry) *ContextSummary {
	if e.Size > maxPreviewDoc {
		return nil
	}
	data, err := r.objects.ReadBlob(e.ID, maxPreviewDoc)
	if err != nil {
		return nil
	}
	var doc struct {
		System   *string           `json:"system"`
		Messages []json.RawMessage `json:"messages"`
		Config   map[string]any    `json:"config"`
		Task     any               `json:"task"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
		Call struct {
			Attempt int            `json:"attempt"`
			Params  map[string]any `json:"params"`
		} `json:"call"`
	}
	if json.Unmarshal(data, &doc) != nil || doc.Messages == nil && doc.Config == nil {
		return nil
	}
	s := &ContextSummary{Messages: len(doc.Messages), Files: []string{}, Config: doc.Config, Params: doc.Call.Params,
		Attempt: doc.Call.Attempt, Task: doc.Task}
	if doc.System != nil {
		s.SystemChars = utf8.RuneCountInString(*doc.System)
	}
	if m, ok := doc.Config["model"].(string); ok {
		s.Model = m
	}
	for _, f := range doc.Files {
		s.Files = append(s.Files, f.Path)
	}
	return s
}

// ConversationPreview is a conversation's first user message and last
// assistant message, each cut to 280 characters.
type ConversationPreview struct {
	Messages      int    `json:"messages"`
	FirstUser     string `json:"first_user,omitempty"`
	LastAssistant string `json:"last_assistant,omitempty"`
}

// previewConversation streams the document twice (its head, then its
// tail), so memory stays bounded whatever its size.
func (r *Repo) previewConversation(e objects.TreeEntry) *ConversationPreview {
	page := func(off int) (*conversation.Conversation, int, error) {
		rd := r.blobReader(e.ID)
		defer rd.Close()
		return conversation.ParsePage(rd, off, 20)
	}
	head, total, err := page(0)
	if err != nil {
		return nil
	}
	p := &ConversationPreview{Messages: total}
	for _, m := range head.Messages {
		if m.Role == "user" && m.Text != "" {
			p.FirstUser = cut(m.Text, 280)
			break
		}
	}
	tail := head
	if total > 20 {
		if tail, _, err = page(total - 20); err != nil {
			return p
		}
	}
	for i := len(tail.Messages) - 1; i >= 0; i-- {
		if m := tail.Messages[i]; m.Role == "assistant" && m.Text != "" {
			p.LastAssistant = cut(m.Text, 280)
			break
		}
	}
	return p
}

// cut is s cut to n characters, marked.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// readDoc reads a whole state document into a buffer of its size (the
// tree entry's), not one grown by doubling.
func (r *Repo) readDoc(e objects.TreeEntry) ([]byte, error) {
	if e.Size < 0 || e.Size > maxDocSize {
		return r.objects.ReadBlob(e.ID, maxDocSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, e.Size))
	if _, err := r.objects.WriteBlob(e.ID, buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
