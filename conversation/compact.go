package conversation

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
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
// ErrCannotCompact. The bytes outside the spans are kept as they are, but
// for Claude Code's record chain: a summary record takes a uuid and the
// cut records' place (its parentUuid is the first cut record's parent),
// and a kept record whose parent was cut names the summary instead.
func CompactRaw(data []byte, spans []Span) ([]byte, error) {
	return compactRaw(data, nil, spans)
}

// CompactRawView is CompactRaw for a caller that holds view = Parse(data)
// already (a JSONL document is not parsed again). With no spans, a JSONL
// document is returned as it is: data itself, not a copy.
func CompactRawView(data []byte, view *Conversation, spans []Span) ([]byte, error) {
	return compactRaw(data, view, spans)
}

func compactRaw(data []byte, view *Conversation, spans []Span) ([]byte, error) {
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
		if view == nil {
			view = Parse(data)
		}
		return compactJSONL(data, view, spans)
	case d.kind == kindElements && d.format == FormatJSONArray && len(d.problems) == 0:
		return compactArray(d.elems, spans)
	}
	what := map[Format]string{FormatJSONMessages: "a JSON object holding the messages (Gemini CLI, SWE-agent), which is rewritten whole by its agent"}[d.format]
	if what == "" {
		what = string(d.format)
	}
	return nil, fmt.Errorf("%w: %s; the compacted messages are shown, but not as a file in its format", ErrCannotCompact, what)
}

func compactJSONL(data []byte, c *Conversation, spans []Span) ([]byte, error) {
	if len(spans) == 0 {
		return data, nil // every line kept as it is
	}
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
	// Claude Code chains its records by uuid/parentUuid and loads a
	// session by walking the chain back from the last record: the summary
	// record takes the place of the cut records in the chain (their
	// children become its children), or a reloaded session would see only
	// what follows the last cut.
	relink := map[string]string{} // a cut record's uuid → its summary's uuid
	var out bytes.Buffer
	out.Grow(len(data))
	next := 0
	for _, k := range cuts {
		for _, l := range lines[next:k.from] {
			out.Write(relinkLine(l, relink))
		}
		var rec any = map[string]any{"role": "user", "content": k.summary}
		var first chainRecord
		if json.Unmarshal(bytes.TrimSpace(lines[k.from]), &first) == nil && first.Type != "" {
			m := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": k.summary}}
			if entry, uuids := chainOf(lines[k.from : k.to+1]); entry != nil {
				id := summaryUUID(k.summary, uuids)
				var parent any // null: the summary starts the chain
				if p, ok := entry.parent(); ok {
					parent = p
					if to, ok := relink[p]; ok {
						parent = to
					}
				}
				m["uuid"], m["parentUuid"], m["isSidechain"], m["userType"] = id, parent, entry.IsSidechain, "external"
				for k, v := range map[string]string{"sessionId": entry.SessionID, "cwd": entry.Cwd, "version": entry.Version, "timestamp": entry.Timestamp, "gitBranch": entry.GitBranch} {
					if v != "" {
						m[k] = v
					}
				}
				for _, u := range uuids {
					relink[u] = id
				}
			}
			rec = m
		}
		b, _ := json.Marshal(rec)
		out.Write(b)
		out.WriteByte('\n')
		next = k.to + 1
	}
	for _, l := range lines[next:] {
		out.Write(relinkLine(l, relink))
	}
	return out.Bytes(), nil
}

// chainRecord is what a Claude Code record says of its place in the chain.
type chainRecord struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
	// Parent is "parentUuid" as it is written: null starts the chain;
	// nil (absent) is a record outside any chain.
	Parent      json.RawMessage `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	SessionID   string          `json:"sessionId"`
	Cwd         string          `json:"cwd"`
	Version     string          `json:"version"`
	Timestamp   string          `json:"timestamp"`
	GitBranch   string          `json:"gitBranch"`
}

// parent is the record's parent uuid; false when it has none.
func (r *chainRecord) parent() (string, bool) {
	var p string
	if json.Unmarshal(r.Parent, &p) != nil || p == "" {
		return "", false
	}
	return p, true
}

// chainOf returns the first record of lines that has a uuid (where the
// run joins the chain) and every uuid the lines hold; nil when none has.
func chainOf(lines [][]byte) (*chainRecord, []string) {
	var entry *chainRecord
	var uuids []string
	for _, l := range lines {
		var r chainRecord
		if json.Unmarshal(bytes.TrimSpace(l), &r) != nil || r.UUID == "" || r.Parent == nil {
			continue
		}
		if entry == nil {
			entry = &r
		}
		uuids = append(uuids, r.UUID)
	}
	return entry, uuids
}

// summaryUUID is a summary record's uuid: derived from what it replaces,
// so compacting the same document twice gives the same bytes.
func summaryUUID(summary string, uuids []string) string {
	h := sha256.New()
	h.Write([]byte(summary))
	for _, u := range uuids {
		h.Write([]byte{0})
		h.Write([]byte(u))
	}
	b := h.Sum(nil)[:16]
	b[6] = b[6]&0x0f | 0x40 // version 4 layout, variant 10
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// relinkLine rewrites a kept record's parentUuid when its parent was cut;
// every other byte of the line stays.
func relinkLine(l []byte, relink map[string]string) []byte {
	if len(relink) == 0 {
		return l
	}
	var r chainRecord
	if json.Unmarshal(bytes.TrimSpace(l), &r) != nil {
		return l
	}
	p, ok := r.parent()
	if !ok {
		return l
	}
	to, ok := relink[p]
	if !ok {
		return l
	}
	old, _ := json.Marshal(p)
	re := regexp.MustCompile(`"parentUuid"\s*:\s*` + regexp.QuoteMeta(string(old)))
	repl, _ := json.Marshal(to)
	return re.ReplaceAllLiteral(l, append([]byte(`"parentUuid":`), repl...))
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
