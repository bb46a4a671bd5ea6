package conversation

import (
	"bytes"
	"fmt"
	"strings"
)

// recordHead is what classification needs from a JSONL record. Parse and
// Count both get it from scanRecord, so they agree by construction.
type recordHead struct {
	typ, role, uuid, timestamp string
	msg                        []byte // the "message" member when it is an object
	msgID                      string // its "id" when that is a string
	content                    bool   // a "content" member that is not null
}

// scanRecord validates the JSON object at b[i] and reads its head. Keys are
// matched exactly; when a key repeats, the last one wins.
func scanRecord(b []byte, i int) (h recordHead, end int, err error) {
	end, err = scanObject(b, i, 0, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "type":
			return stringAt(b, v, 1, &h.typ)
		case "role":
			return stringAt(b, v, 1, &h.role)
		case "uuid":
			return stringAt(b, v, 1, &h.uuid)
		case "timestamp":
			return stringAt(b, v, 1, &h.timestamp)
		case "content":
			e, err := skipValue(b, v, 1)
			h.content = err == nil && b[v] != 'n'
			return e, err
		case "message":
			h.msg, h.msgID = nil, ""
			if b[v] != '{' {
				return skipValue(b, v, 1)
			}
			var id string
			e, err := scanObject(b, v, 1, func(k []byte, w int) (int, error) {
				if string(k) == "id" {
					return stringAt(b, w, 2, &id)
				}
				return skipValue(b, w, 2)
			})
			if err == nil {
				h.msg, h.msgID = b[v:e], id
			}
			return e, err
		}
		return skipValue(b, v, 1)
	})
	return h, end, err
}

type recordKind int

const (
	recSkip      recordKind = iota // known bookkeeping record: skipped silently
	recUnknown                     // unknown type or shape: skipped, reported once per type
	recNoMessage                   // user/assistant record without a message: skipped, reported
	recClaude                      // Claude Code user/assistant record
	recBare                        // a bare message record ({role, content, ...})
)

// bookkeeping lists the non-message record types of Claude Code transcripts
// (and of `claude -p --output-format stream-json`), skipped without a Problem.
var bookkeeping = map[string]bool{
	"progress":              true,
	"file-history-snapshot": true,
	"summary":               true,
	"system":                true,
	"queue-operation":       true,
	"custom-title":          true,
	"result":                true,
}

// classify decides what a record is.
func (h *recordHead) classify() recordKind {
	switch h.typ {
	case "user", "assistant":
		if h.msg != nil {
			return recClaude
		}
		if h.content {
			return recBare
		}
		return recNoMessage
	case "", "message":
		if h.role != "" {
			return recBare
		}
		return recUnknown
	}
	if bookkeeping[h.typ] {
		return recSkip
	}
	return recUnknown
}

// eachRecord calls fn for every JSON object of a JSONL document, with its
// 1-based line number and bytes. Broken lines are passed to problem (which
// may be nil); a line holding several values run together yields each
// object among them, up to the first syntax error.
func eachRecord(data []byte, problem func(line int, msg string), fn func(line int, rec []byte, h *recordHead)) {
	var lp func(int, lineProblem)
	if problem != nil {
		lp = func(line int, p lineProblem) { problem(line, p.String()) }
	}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		last := false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data, last = data, nil, true
		}
		recordsOnLine(line, lineNo, last, lp, fn)
	}
}

// lineProblem is a Problem of one line of a JSONL document, formatted on
// demand (String).
type lineProblem struct {
	err     error  // the line's JSON is invalid after n values
	n       int    // values read before err; for kind, the value's ordinal
	last    bool   // err is on the last line, which no newline ends
	several bool   // several values run together
	kind    string // the JSON type of a value that is not an object
}

func (p lineProblem) String() string {
	switch {
	case p.err != nil:
		msg := p.err.Error()
		if se, ok := p.err.(*scanError); ok && se.eof() && p.last {
			msg = "truncated last line: unexpected end of input"
		}
		if p.n > 0 {
			msg = fmt.Sprintf("after %d JSON value(s): %s", p.n, msg)
		}
		return "invalid JSON: " + msg
	case p.several:
		return "several JSON values run together on one line; each was read"
	}
	return fmt.Sprintf("JSON value %d on the line is %s, not an object; skipped", p.n, p.kind)
}

// recordsOnLine is eachRecord for one line (without its newline; last when
// no newline ends it); problem may be nil. It reports whether the line
// starts, after white space, with a complete JSON object (detect's
// lineIsRecord).
func recordsOnLine(line []byte, lineNo int, last bool, problem func(line int, p lineProblem), fn func(line int, rec []byte, h *recordHead)) (record bool) {
	n := 0
	for pos := skipSpace(line, 0); pos < len(line); pos = skipSpace(line, pos) {
		var h recordHead
		var end int
		var err error
		if line[pos] == '{' {
			h, end, err = scanRecord(line, pos)
		} else {
			end, err = skipValue(line, pos, 0)
		}
		if err != nil {
			if problem != nil {
				problem(lineNo, lineProblem{err: err, n: n, last: last})
			}
			break
		}
		n++
		if n == 2 && problem != nil {
			problem(lineNo, lineProblem{several: true})
		}
		if line[pos] != '{' {
			if problem != nil {
				problem(lineNo, lineProblem{n: n, kind: valueKind(line[pos:end])})
			}
		} else {
			record = record || n == 1
			fn(lineNo, line[pos:end], &h)
		}
		pos = end
	}
	return record
}

type unknownStat struct {
	first, count int
}

func parseJSONL(data []byte, c *Conversation) {
	byID := map[string]int{} // assistant message.id -> index in c.Messages
	unknown := map[string]*unknownStat{}
	var unknownOrder []string
	merged := mergeState{}
	defer merged.finish(c)
	problem := func(line int, msg string) {
		c.Problems = append(c.Problems, Problem{Line: line, Message: msg})
	}
	eachRecord(data, problem, func(line int, rec []byte, h *recordHead) {
		switch h.classify() {
		case recSkip:
		case recUnknown:
			if st, ok := unknown[h.typ]; ok {
				st.count++
			} else {
				unknown[h.typ] = &unknownStat{first: line, count: 1}
				unknownOrder = append(unknownOrder, h.typ)
			}
		case recNoMessage:
			problem(line, fmt.Sprintf("%s record without a message object; skipped", h.typ))
		case recBare:
			w := decodeWire(rec)
			w.Type, w.Role, w.Timestamp = h.typ, h.role, h.timestamp
			if w.ID == "" {
				w.ID = h.uuid
			}
			m := fromWire(&w)
			m.Lines = []int{line}
			c.Messages = append(c.Messages, m)
		case recClaude:
			if h.typ == "assistant" && h.msgID != "" {
				if i, ok := byID[h.msgID]; ok {
					merged.add(&c.Messages[i], i, h.msg, line)
					return
				}
				byID[h.msgID] = len(c.Messages)
			}
			m := Message{Role: h.typ, ID: h.uuid, Timestamp: h.timestamp, Lines: []int{line}}
			if h.typ == "assistant" && h.msgID != "" {
				m.ID = h.msgID
			}
			m.addClaudeContent(h.msg)
			m.finishRole()
			c.Messages = append(c.Messages, m)
		}
	})
	for _, key := range unknownOrder {
		st := unknown[key]
		what := fmt.Sprintf("of unknown type %q", key)
		if key == "" {
			what = "without a type or role"
		}
		c.Problems = append(c.Problems, Problem{Line: st.first, Message: fmt.Sprintf(
			"skipped %d record(s) %s (first on this line)", st.count, what)})
	}
}

// mergeState accumulates the records merged into earlier assistant
// messages, in time linear in their number: texts are joined once at the
// end, and tool blocks written twice (same id) are kept once.
type mergeState map[int]*pendingMerge

type pendingMerge struct {
	texts []string
	ids   map[string]struct{} // "c"+tool call id, "r"+tool_use_id
}

func (ms mergeState) add(m *Message, i int, msg []byte, line int) {
	p := ms[i]
	if p == nil {
		p = &pendingMerge{ids: map[string]struct{}{}}
		if m.Text != "" {
			p.texts = append(p.texts, m.Text)
		}
		for _, tc := range m.ToolCalls {
			p.ids["c"+tc.ID] = struct{}{}
		}
		for _, tr := range m.ToolResults {
			p.ids["r"+tr.ToolUseID] = struct{}{}
		}
		ms[i] = p
	}
	var more Message
	more.addClaudeContent(msg)
	if more.Text != "" {
		p.texts = append(p.texts, more.Text)
	}
	for _, tc := range more.ToolCalls {
		if tc.ID != "" {
			if _, dup := p.ids["c"+tc.ID]; dup {
				continue
			}
			p.ids["c"+tc.ID] = struct{}{}
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	for _, tr := range more.ToolResults {
		if tr.ToolUseID != "" {
			if _, dup := p.ids["r"+tr.ToolUseID]; dup {
				continue
			}
			p.ids["r"+tr.ToolUseID] = struct{}{}
		}
		m.ToolResults = append(m.ToolResults, tr)
	}
	if m.Lines[len(m.Lines)-1] != line { // not two records on one line
		m.Lines = append(m.Lines, line)
	}
}

func (ms mergeState) finish(c *Conversation) {
	for i, p := range ms {
		c.Messages[i].Text = strings.Join(p.texts, "\n")
	}
}

// addClaudeContent adds the content of a Claude Code message object (an
// Anthropic Messages API message; other members are ignored).
func (m *Message) addClaudeContent(msg []byte) {
	_, _ = scanObject(msg, 0, 0, func(key []byte, v int) (int, error) {
		if string(key) == "content" {
			c, end := parseContent(msg, v)
			m.addContent(&c)
			return end, nil
		}
		return skipValue(msg, v, 1)
	})
}

func countJSONL(data []byte) int {
	n := 0
	seen := map[string]struct{}{}
	eachRecord(data, nil, func(_ int, _ []byte, h *recordHead) {
		switch h.classify() {
		case recClaude:
			if h.typ == "assistant" && h.msgID != "" {
				if _, ok := seen[h.msgID]; ok {
					return
				}
				seen[h.msgID] = struct{}{}
			}
			n++
		case recBare:
			n++
		}
	})
	return n
}
