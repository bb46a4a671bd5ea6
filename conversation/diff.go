package conversation

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// DiffResult compares two conversations message by message: both share
// their first Common messages, then a continues with Removed and b with Added.
// Appending to a conversation gives an empty Removed; rewriting its history
// (a rewind, a compaction) gives both.
type DiffResult struct {
	Common  int       `json:"common"`
	Removed []Message `json:"removed"`
	Added   []Message `json:"added"`
}

// Diff compares a and b. Messages are equal when their role, text, tool calls
// (id, name, input as JSON) and tool results are; ids, timestamps and source
// lines are not compared. A nil conversation is empty.
func Diff(a, b *Conversation) DiffResult {
	var am, bm []Message
	if a != nil {
		am = a.Messages
	}
	if b != nil {
		bm = b.Messages
	}
	i := 0
	for i < len(am) && i < len(bm) && EqualMessages(&am[i], &bm[i]) {
		i++
	}
	return DiffResult{
		Common:  i,
		Removed: append([]Message{}, am[i:]...),
		Added:   append([]Message{}, bm[i:]...),
	}
}

// EqualMessages reports whether x and y are the same message for Diff.
func EqualMessages(x, y *Message) bool {
	if x.Role != y.Role || x.Text != y.Text ||
		len(x.ToolCalls) != len(y.ToolCalls) || len(x.ToolResults) != len(y.ToolResults) {
		return false
	}
	for i := range x.ToolCalls {
		p, q := &x.ToolCalls[i], &y.ToolCalls[i]
		if p.ID != q.ID || p.Name != q.Name || !equalJSON(p.Input, q.Input) {
			return false
		}
	}
	for i := range x.ToolResults {
		if x.ToolResults[i] != y.ToolResults[i] {
			return false
		}
	}
	return true
}

// equalJSON compares two JSON values ignoring insignificant whitespace.
func equalJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// maxDetail bounds how much of a tool input or result Format prints.
const maxDetail = 200

// Format writes d as text for people. Each differing position gets a
// "@@ message N @@" header (N is the 0-based message index), then the message
// of a prefixed by "-" and the message of b prefixed by "+":
//
//	@@ message 3 @@
//	- assistant: old answer
//	+ assistant: new answer
//	+   tool_call Edit {"file_path":"main.go",...}
//	+   tool_result toolu_01: ok
//
// Text is printed in full, one source line per output line; tool inputs and
// results are cut to about 200 characters. Identical conversations print
// nothing.
func (d DiffResult) Format(w io.Writer) error {
	bw := bufio.NewWriter(w)
	n := max(len(d.Removed), len(d.Added))
	for k := 0; k < n; k++ {
		fmt.Fprintf(bw, "@@ message %d @@\n", d.Common+k)
		if k < len(d.Removed) {
			writeMessage(bw, '-', &d.Removed[k])
		}
		if k < len(d.Added) {
			writeMessage(bw, '+', &d.Added[k])
		}
	}
	return bw.Flush()
}

func writeMessage(w *bufio.Writer, sign byte, m *Message) {
	lines := strings.Split(m.Text, "\n")
	fmt.Fprintf(w, "%c %s:", sign, m.Role)
	if m.Text != "" {
		fmt.Fprintf(w, " %s", lines[0])
	}
	w.WriteByte('\n')
	if m.Text != "" {
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%c   %s\n", sign, l)
		}
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(w, "%c   tool_call %s", sign, tc.Name)
		if len(tc.Input) > 0 {
			fmt.Fprintf(w, " %s", truncate(compactString(tc.Input), maxDetail))
		}
		w.WriteByte('\n')
	}
	for _, tr := range m.ToolResults {
		fmt.Fprintf(w, "%c   tool_result", sign)
		if tr.ToolUseID != "" {
			fmt.Fprintf(w, " %s", tr.ToolUseID)
		}
		if tr.IsError {
			w.WriteString(" (error)")
		}
		content := strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(truncate(tr.Content, maxDetail))
		fmt.Fprintf(w, ": %s\n", content)
	}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
