package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/tasks"
)

// CompactedConversation is a conversation with each finished task's
// messages replaced by one summary message (see Flow.CompactConversation).
type CompactedConversation struct {
	Checkpoint snap.ID                `json:"checkpoint"`
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
func (f *Flow) CompactConversation(ctx context.Context, id snap.ID) (*CompactedConversation, error) {
	data, err := f.r.ReadState(ctx, id, snap.ConversationDoc)
	if err != nil {
		return nil, err
	}
	ck, _, err := f.r.ReadNode(ctx, id)
	if err != nil {
		return nil, err
	}
	ts, err := f.taskState(ctx, id, ck)
	if err != nil {
		return nil, err
	}
	c := conversation.Parse(data)
	res := &CompactedConversation{Checkpoint: id, Format: c.Format, Tasks: []CompactedTask{}, Kept: []string{}}
	marks, err := f.s.TaskMarks(ctx, ck.Session)
	if err != nil {
		return nil, err
	}
	var spans []conversation.Span
	byBegin := slices.Clone(ts.Tasks)
	sort.SliceStable(byBegin, func(i, j int) bool { return byBegin[i].BeginMessages < byBegin[j].BeginMessages })
	covered := 0 // messages before this are in a span already
	for _, t := range byBegin {
		to := min(t.EndMessages, len(c.Messages))
		if t.Status == tasks.Open || t.BeginMessages < covered || to <= t.BeginMessages {
			continue
		}
		if why := f.sameMessages(ctx, marks, &t, c, to); why != "" {
			res.Kept = append(res.Kept, fmt.Sprintf("task %d: %s", t.ID, why))
			continue
		}
		summary := f.taskSummaryText(ctx, marks, &t, to-t.BeginMessages)
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
func (f *Flow) sameMessages(ctx context.Context, marks *snap.TaskMarks, t *tasks.Task, c *conversation.Conversation, to int) string {
	_, end := marks.Checkpoints(t.ID)
	if end.IsZero() {
		return "its end checkpoint is not in this session's history"
	}
	if _, _, err := f.r.ReadNode(ctx, end); err != nil {
		return "its end checkpoint cannot be read (" + err.Error() + ")"
	}
	// Only the task's messages of that conversation are needed: read them
	// as a stream (a page), not the whole document.
	var then []conversation.Message
	page, err := f.r.Conversation(ctx, end, t.BeginMessages, to-t.BeginMessages)
	total := 0
	switch {
	case errors.Is(err, snap.ErrNoPath):
		return "its end checkpoint has no conversation"
	case err == nil:
		then, total = page.Messages, page.Total
	default: // a record too long to stream: the whole view
		data, err := f.r.ReadState(ctx, end, snap.ConversationDoc)
		if err != nil {
			return err.Error()
		}
		whole := conversation.Parse(data)
		total = len(whole.Messages)
		then = whole.Messages[min(t.BeginMessages, total):min(to, total)]
	}
	if total < to {
		return "the conversation is not the one the task was recorded with"
	}
	for i := t.BeginMessages; i < to; i++ {
		if !conversation.EqualMessages(&then[i-t.BeginMessages], &c.Messages[i]) {
			return "the conversation is not the one the task was recorded with"
		}
	}
	return ""
}

// taskSummaryText is the message that stands for a finished task.
func (f *Flow) taskSummaryText(ctx context.Context, marks *snap.TaskMarks, t *tasks.Task, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[snap: task #%d, %d messages compacted] Goal: %s. ", t.ID, n, t.Goal)
	if t.Status == tasks.Reverted {
		fmt.Fprintf(&b, "❌ Reverted: %s (its file changes were undone).", t.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "✅ Committed: %s.", t.Summary)
	begin, end := marks.Checkpoints(t.ID)
	if begin.IsZero() || end.IsZero() {
		return b.String()
	}
	bck, _, err1 := f.r.ReadNode(ctx, begin)
	eck, _, err2 := f.r.ReadNode(ctx, end)
	if err1 != nil || err2 != nil {
		return b.String()
	}
	files, err := f.r.DiffPaths(ctx, bck.Tree, eck.Tree, nil)
	if err != nil {
		return b.String()
	}
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
