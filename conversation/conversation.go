package conversation

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Format names the shape of a conversation document, detected from its content.
type Format string

// Recognised formats. See the package documentation for what each covers.
const (
	FormatJSONArray    Format = "json-array"    // a JSON array of messages
	FormatJSONMessages Format = "json-messages" // a JSON object holding a messages (or history/trajectory) array
	FormatJSONL        Format = "jsonl"         // one JSON record per line (Claude Code transcripts and similar)
	FormatUnknown      Format = "unknown"       // not understood; Problems says why
)

// ToolCall is one tool invocation requested by a message.
type ToolCall struct {
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"` // always valid JSON when set
}

// ToolResult is the outcome of one tool call, flattened to text.
type ToolResult struct {
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// Message is one entry of the conversation view.
type Message struct {
	Index       int          `json:"index"`
	ID          string       `json:"id,omitempty"`
	Role        string       `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	Timestamp   string       `json:"timestamp,omitempty"`
	Lines       []int        `json:"lines,omitempty"`
}

// Problem is something the parser could not read or chose to skip. Problems
// never stop parsing; they explain why the view may be incomplete.
type Problem struct {
	Line    int    `json:"line,omitempty"` // 1-based source line, JSONL only
	Message string `json:"message"`
}

// Conversation is the read-only view of a conversation document.
type Conversation struct {
	Format   Format    `json:"format"`
	Messages []Message `json:"messages"`
	Problems []Problem `json:"problems,omitempty"`
}

// Parse builds the view of a conversation document. It never returns nil and
// never panics: whatever cannot be read is reported in Problems, and a
// document that is not understood at all yields Format "unknown", no messages
// and one Problem. data is not modified and not retained.
func Parse(data []byte) (c *Conversation) {
	defer func() {
		if r := recover(); r != nil {
			c = &Conversation{
				Format:   FormatUnknown,
				Messages: []Message{},
				Problems: []Problem{{Message: fmt.Sprintf("internal error while parsing: %v", r)}},
			}
		}
	}()
	c = &Conversation{Format: FormatUnknown, Messages: []Message{}}
	d := detect(data)
	c.Format = d.format
	c.Problems = append(c.Problems, d.problems...)
	switch d.kind {
	case kindElements:
		if d.system != nil {
			m := Message{Role: "system"}
			sys, _ := parseContent(d.system, 0)
			m.addContent(&sys)
			c.Messages = append(c.Messages, m)
		}
		for i, raw := range d.elems {
			if !isObject(raw) {
				c.Problems = append(c.Problems, Problem{Message: fmt.Sprintf(
					"element %d of the %s is %s, not an object; skipped", i, d.where, valueKind(raw))})
				continue
			}
			w := decodeWire(raw)
			c.Messages = append(c.Messages, fromWire(&w))
		}
	case kindJSONL:
		parseJSONL(d.body, c)
	}
	for i := range c.Messages {
		c.Messages[i].Index = i
	}
	sort.SliceStable(c.Problems, func(i, j int) bool { return c.Problems[i].Line < c.Problems[j].Line })
	return c
}

// Count returns the number of messages Parse would return for data, without
// building them. It never panics.
func Count(data []byte) (n int) {
	defer func() {
		if r := recover(); r != nil {
			n = 0
		}
	}()
	d := detect(data)
	switch d.kind {
	case kindElements:
		if d.system != nil {
			n++
		}
		for _, raw := range d.elems {
			if isObject(raw) {
				n++
			}
		}
	case kindJSONL:
		n = countJSONL(d.body)
	}
	return n
}
