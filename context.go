package snap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/tasks"
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

// CompactedConversation is a conversation with each finished task's
// messages replaced by one summary message (see Repo.CompactConversation).
type CompactedConversation struct {
	Checkpoint objects.ID             `json:"checkpoint"`
	Format     conversation.Format    `json:"format"`
	Messages   []conversation.Message `json:"messages"`
	Tasks      []CompactedTask        `json:"compacted_tasks"`
	// Kept: finished tasks whose messages stayed, and why (the conversation
	// is not the one the task was recorded with any more, or its end
	// checkpoint is unknown).
	Kept         []string     `json:"kept_tasks"`
	HistoryDelta HistoryDelta `json:"history_delta"`
	// Raw is the compacted document in the original's own format (JSONL
	// stays JSONL, a JSON array stays an array); nil, with RawProblem
	// saying why, for formats that cannot be written back.
	Raw        []byte `json:"-"`
	RawProblem string `json:"raw_problem,omitempty"`
}

// CompactedTask is one task whose messages a summary replaced.
type CompactedTask struct {
	ID      int    `json:"id"`
	From    int    `json:"from"` // messages [from, to) of the original
	To      int    `json:"to"`
	Summary string `json:"summary"`
}

// HistoryDelta is what compaction saves. Tokens are estimated as one per
// four characters of text, tool input and tool output (the usual rule of
// thumb for English and code), removed minus added.
type HistoryDelta struct {
	MessagesRemoved int `json:"messages_removed"`
	TokensSaved     int `json:"tokens_saved"`
}

// CompactConversation returns the conversation recorded in checkpoint id
// with the messages of each finished task (committed or reverted, as the
// checkpoint's task document records them: the messages from its begin to
// its end) replaced by one summary message: the goal, the summary or the
// reason, and the files it changed. Nested tasks go with their finished
// parent. The checkpoint is not changed: the full history stays
// ('snap cat REF --state conversation').
func (r *Repo) CompactConversation(ctx context.Context, id objects.ID) (*CompactedConversation, error) {
	ck, e, err := r.stateDoc(id, ConversationDoc)
	if err != nil {
		return nil, err
	}
	data, err := r.readDoc(e)
	if err != nil {
		return nil, err
	}
	ts, err := r.taskState(ck)
	if err != nil {
		return nil, err
	}
	c := conversation.Parse(data)
	res := &CompactedConversation{Checkpoint: id, Format: c.Format, Tasks: []CompactedTask{}, Kept: []string{}}
	h := r.history()
	var spans []conversation.Span
	byBegin := slices.Clone(ts.Tasks)
	sort.SliceStable(byBegin, func(i, j int) bool { return byBegin[i].BeginMessages < byBegin[j].BeginMessages })
	covered := 0 // messages before this are in a span already
	for _, t := range byBegin {
		to := min(t.EndMessages, len(c.Messages))
		if t.Status == tasks.Open || t.BeginMessages < covered || to <= t.BeginMessages {
			continue
		}
		if why := r.sameMessages(h, ck.Session, &t, c, to); why != "" {
			res.Kept = append(res.Kept, fmt.Sprintf("task %d: %s", t.ID, why))
			continue
		}
		summary := r.taskSummaryText(ctx, h, ck.Session, &t, to-t.BeginMessages)
		spans = append(spans, conversation.Span{From: t.BeginMessages, To: to, Summary: summary})
		res.Tasks = append(res.Tasks, CompactedTask{ID: t.ID, From: t.BeginMessages, To: to, Summary: summary})
		covered = to
	}
	removedChars, addedChars := 0, 0
	res.Messages = []conversation.Message{}
	next := 0
	for _, s := range spans {
		res.Messages = append(res.Messages, c.Messages[next:s.From]...)
		for _, m := range c.Messages[s.From:s.To] {
			removedChars += messageChars(&m)
		}
		addedChars += utf8.RuneCountInString(s.Summary)
		res.Messages = append(res.Messages, conversation.Message{Role: "user", Text: s.Summary})
		res.HistoryDelta.MessagesRemoved += s.To - s.From - 1
		next = s.To
	}
	res.Messages = append(res.Messages, c.Messages[next:]...)
	for i := range res.Messages {
		res.Messages[i].Index = i
	}
	res.HistoryDelta.TokensSaved = max(removedChars-addedChars, 0) / 4 // a summary longer than what it replaces saves nothing
	if res.Raw, err = conversation.CompactRawView(data, c, spans); err != nil {
		res.Raw, res.RawProblem = nil, err.Error()
	}
	return res, nil
}

// sameMessages says why messages [t.BeginMessages, to) of c are not the
// ones task t ended with ("" when they are): they are compared with the
// conversation its end checkpoint recorded.
func (r *Repo) sameMessages(h *history, session string, t *tasks.Task, c *conversation.Conversation, to int) string {
	_, end := h.taskCheckpoints(session, t.ID)
	if end.IsZero() {
		return "its end checkpoint is not in this session's history"
	}
	eck, err := r.objects.ReadCheckpoint(end)
	if err != nil {
		return "its end checkpoint cannot be read (" + err.Error() + ")"
	}
	st, err := r.objects.ReadTree(eck.State)
	if err != nil {
		return err.Error()
	}
	e, ok := st.Find(ConversationDoc)
	if !ok {
		return "its end checkpoint has no conversation"
	}
	// Only the task's messages of that conversation are needed: read them
	// as a stream (a page), not the whole document.
	rd := r.blobReader(e.ID)
	then, total, err := conversation.ParsePage(rd, t.BeginMessages, to-t.BeginMessages)
	rd.Close()
	if err != nil { // a record too long to stream: the whole view
		data, err := r.objects.ReadBlob(e.ID, maxDocSize)
		if err != nil {
			return err.Error()
		}
		then = conversation.Parse(data)
		total = len(then.Messages)
		then.Messages = then.Messages[min(t.BeginMessages, total):min(to, total)]
	}
	if total < to {
		return "the conversation is not the one the task was recorded with"
	}
	for i := t.BeginMessages; i < to; i++ {
		if !conversation.EqualMessages(&then.Messages[i-t.BeginMessages], &c.Messages[i]) {
			return "the conversation is not the one the task was recorded with"
		}
	}
	return ""
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

// taskSummaryText is the message that stands for a finished task.
func (r *Repo) taskSummaryText(ctx context.Context, h *history, session string, t *tasks.Task, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[snap: task #%d, %d messages compacted] Goal: %s. ", t.ID, n, t.Goal)
	if t.Status == tasks.Reverted {
		fmt.Fprintf(&b, "❌ Reverted: %s (its file changes were undone).", t.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "✅ Committed: %s.", t.Summary)
	begin, end := h.taskCheckpoints(session, t.ID)
	if begin.IsZero() || end.IsZero() {
		return b.String()
	}
	bck, err1 := r.objects.ReadCheckpoint(begin)
	eck, err2 := r.objects.ReadCheckpoint(end)
	if err1 != nil || err2 != nil {
		return b.String()
	}
	fc, err := changes(r.objects, bck.Tree, eck.Tree, nil)
	if err != nil {
		return b.String()
	}
	files := slices.Concat(fc.Added, fc.Modified, fc.Deleted)
	slices.Sort(files)
	if len(files) > 20 {
		files = append(files[:20], fmt.Sprintf("and %d more", len(files)-20))
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, " Files changed: %s.", strings.Join(files, ", "))
	}
	return b.String()
}

// messageChars counts a message's text, tool input and tool output.
func messageChars(m *conversation.Message) int {
	n := utf8.RuneCountInString(m.Text)
	for _, c := range m.ToolCalls {
		n += utf8.RuneCount(c.Input) + utf8.RuneCountInString(c.Name)
	}
	for _, r := range m.ToolResults {
		n += utf8.RuneCountInString(r.Content)
	}
	return n
}
