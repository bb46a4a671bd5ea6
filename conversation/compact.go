package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Span is a run of messages, [From, To) as Parse numbers them, that a
// compacted document replaces by one message holding Summary.
type Span struct {
	From, To int
	Summary  string
}

// CompactRaw returns data with each span's messages replaced by one user
// message holding its Summary, in the document's own format, so that a
// harness that owns its history can load it back: in a JSONL document the
// lines from a span's first message to its last give way to one line (a
// Claude Code record when the span's first line is one, else a bare
// {"role", "content"} line); in a JSON array the span's elements give way
// to one element ({"role", "parts"} when the first has parts, as Gemini's,
// else {"role", "content"}). Spans must not overlap. Other formats are
// ErrCannotCompact. The bytes outside the spans are kept as they are.
func CompactRaw(data []byte, spans []Span) ([]byte, error) {
	spans = append([]Span(nil), spans...)
	sort.Slice(spans, func(i, j int) bool { return spans[i].From < spans[j].From })
	for i := 1; i < len(spans); i++ {
		if spans[i].From < spans[i-1].To {
			return nil, fmt.Errorf("spans [%d,%d) and [%d,%d) overlap", spans[i-1].From, spans[i-1].To, spans[i].From, spans[i].To)
		}
	}
	d := detect(data)
	switch {
	case d.kind == kindJSONL:
		return compactJSONL(data, spans)
	case d.kind == kindElements && d.format == FormatJSONArray && len(d.problems) == 0:
		return compactArray(d.elems, spans)
	}
	what := map[Format]string{FormatJSONMessages: "a JSON object holding the messages (Gemini CLI, SWE-agent), which is rewritten whole by its agent"}[d.format]
	if what == "" {
		what = string(d.format)
	}
	return nil, fmt.Errorf("%w: %s; the compacted messages are shown, but not as a file in its format", ErrCannotCompact, what)
}

func compactJSONL(data []byte, spans []Span) ([]byte, error) {
	c := Parse(data)
	lines := bytes.SplitAfter(data, []byte("\n"))
	type cut struct {
		from, to int // 0-based lines [from, to]
		summary  string
	}
	var cuts []cut
	for _, s := range spans {
		if s.From < 0 || s.To > len(c.Messages) || s.From >= s.To {
			return nil, fmt.Errorf("span [%d,%d) outside the %d messages", s.From, s.To, len(c.Messages))
		}
		lo, hi := len(lines), -1
		for _, m := range c.Messages[s.From:s.To] {
			for _, l := range m.Lines {
				lo, hi = min(lo, l-1), max(hi, l-1)
			}
		}
		if hi < 0 {
			return nil, fmt.Errorf("%w: the messages of span [%d,%d) have no lines", ErrCannotCompact, s.From, s.To)
		}
		if n := len(cuts); n > 0 && lo <= cuts[n-1].to {
			return nil, fmt.Errorf("%w: spans [%d,%d) and the one before share lines", ErrCannotCompact, s.From, s.To)
		}
		cuts = append(cuts, cut{lo, hi, s.Summary})
	}
	var out bytes.Buffer
	next := 0
	for _, k := range cuts {
		for _, l := range lines[next:k.from] {
			out.Write(l)
		}
		var rec any = map[string]any{"role": "user", "content": k.summary}
		var first struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(bytes.TrimSpace(lines[k.from]), &first) == nil && first.Type != "" {
			rec = map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": k.summary}}
		}
		b, _ := json.Marshal(rec)
		out.Write(b)
		out.WriteByte('\n')
		next = k.to + 1
	}
	for _, l := range lines[next:] {
		out.Write(l)
	}
	return out.Bytes(), nil
}

func compactArray(elems [][]byte, spans []Span) ([]byte, error) {
	// Every element is an object here (Parse numbers only those): map
	// message indices to elements.
	var objs []int
	for i, e := range elems {
		if isObject(e) {
			objs = append(objs, i)
		}
	}
	var out [][]byte
	next := 0
	for _, s := range spans {
		if s.From < 0 || s.To > len(objs) || s.From >= s.To {
			return nil, fmt.Errorf("span [%d,%d) outside the %d messages", s.From, s.To, len(objs))
		}
		from, to := objs[s.From], objs[s.To-1]
		out = append(out, elems[next:from]...)
		var first struct {
			Parts json.RawMessage `json:"parts"`
		}
		var rec any = map[string]any{"role": "user", "content": s.Summary}
		if json.Unmarshal(elems[from], &first) == nil && first.Parts != nil {
			rec = map[string]any{"role": "user", "parts": []any{map[string]any{"text": s.Summary}}}
		}
		b, _ := json.Marshal(rec)
		out = append(out, b)
		next = to + 1
	}
	out = append(out, elems[next:]...)
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, e := range out {
		if i > 0 {
			buf.WriteString(",\n")
		}
		buf.WriteString("  ")
		buf.Write(e)
	}
	buf.WriteString("\n]\n")
	return buf.Bytes(), nil
}
