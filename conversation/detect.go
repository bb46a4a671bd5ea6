package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

type docKind int

const (
	kindNone     docKind = iota // nothing to show
	kindElements                // elems holds the message array's elements
	kindJSONL                   // body holds JSON records, one per line
)

// detection is what Parse and Count share: the format decision and the raw
// material both of them walk, so that they always agree.
type detection struct {
	kind     docKind
	format   Format
	elems    [][]byte // kindElements: the elements, valid JSON each
	where    string   // kindElements: "array" or `"messages" array` (for Problems)
	system   []byte   // kindElements: a messages object's non-null "system" member
	body     []byte   // kindJSONL
	problems []Problem
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// arrayKeys are the members of an object document that may hold its
// messages, by preference.
var arrayKeys = [...]string{"messages", "history", "trajectory"}

func detect(data []byte) detection {
	data = bytes.TrimPrefix(data, utf8BOM)
	doc := trimWS(data)
	if len(doc) == 0 {
		return unknown("empty document")
	}
	jsonl := detection{kind: kindJSONL, format: FormatJSONL, body: data}
	switch doc[0] {
	case '[':
		elems, end, err := collectArray(doc, 0, 0)
		d := detection{kind: kindElements, format: FormatJSONArray, elems: elems, where: "array"}
		switch {
		case err == nil && end == len(doc):
			return d
		case err == nil:
			d.problems = []Problem{{Message: fmt.Sprintf("data after the end of the JSON array (byte %d) ignored", end+1)}}
			return d
		case len(elems) > 0:
			d.problems = []Problem{{Message: fmt.Sprintf(
				"invalid JSON array (%v); showing the %d element(s) before the error", err, len(elems))}}
			return d
		case hasRecordLine(data):
			return jsonl
		}
		return unknown(fmt.Sprintf("document starts with '[' but is not a JSON array: %v", err))
	case '{':
		first, rest := splitFirstLine(doc)
		if len(trimWS(rest)) > 0 && lineIsRecord(first) {
			return jsonl
		}
		o, end, err := scanDocObject(doc)
		if err == nil {
			if end == len(doc) {
				return o.detection(doc)
			}
			if lineIsRecord(first) || hasRecordLine(rest) {
				return jsonl // records run together, or more records below
			}
			d := o.detection(doc[:end])
			d.problems = append(d.problems, Problem{Message: fmt.Sprintf(
				"data after the end of the JSON object (byte %d) ignored", end+1)})
			return d
		}
		if lineIsRecord(first) || hasRecordLine(rest) {
			return jsonl
		}
		for k, name := range arrayKeys {
			if o.found[k] {
				return detection{kind: kindElements, format: FormatJSONMessages, elems: o.arrays[k],
					where: fmt.Sprintf("%q array", name),
					problems: []Problem{{Message: fmt.Sprintf(
						"invalid JSON object (%v); showing the %d element(s) of %q read before the error",
						err, len(o.arrays[k]), name)}}}
			}
		}
		if !bytes.ContainsRune(doc, '\n') {
			return jsonl // a single broken line: most likely a truncated JSONL record
		}
		return unknown(fmt.Sprintf("invalid JSON object: %v", err))
	}
	if hasRecordLine(data) {
		return jsonl
	}
	return unknown(fmt.Sprintf("not a JSON document: starts with %s", quoteStart(doc)))
}

func unknown(why string) detection {
	return detection{kind: kindNone, format: FormatUnknown, problems: []Problem{{Message: why}}}
}

// docObject is what detection reads from a JSON object document: a Gemini
// CLI session, an API request body, a SWE-agent trajectory, or one record.
type docObject struct {
	arrays    [len(arrayKeys)][][]byte // elements read (up to an error)
	found     [len(arrayKeys)]bool     // the member is present and an array
	system    []byte
	typ, role string
}

func scanDocObject(doc []byte) (o docObject, end int, err error) {
	end, err = scanObject(doc, 0, 0, func(key []byte, v int) (int, error) {
		for k, name := range arrayKeys {
			if string(key) == name {
				o.arrays[k], o.found[k] = nil, false
				if doc[v] != '[' {
					return skipValue(doc, v, 1)
				}
				elems, end, err := collectArray(doc, v, 1)
				o.arrays[k], o.found[k] = elems, true
				return end, err
			}
		}
		switch string(key) {
		case "system":
			end, err := skipValue(doc, v, 1)
			o.system = nil
			if err == nil && doc[v] != 'n' {
				o.system = doc[v:end]
			}
			return end, err
		case "type":
			return stringAt(doc, v, 1, &o.typ)
		case "role":
			return stringAt(doc, v, 1, &o.role)
		}
		return skipValue(doc, v, 1)
	})
	return o, end, err
}

// detection picks the message array of a valid object document.
func (o *docObject) detection(doc []byte) detection {
	for k, name := range arrayKeys {
		if !o.found[k] {
			continue
		}
		d := detection{kind: kindElements, format: FormatJSONMessages, elems: o.arrays[k],
			where: fmt.Sprintf("%q array", name)}
		if name == "messages" {
			d.system = o.system
		}
		return d
	}
	if o.typ != "" || o.role != "" {
		// One record (perhaps pretty-printed): a one-line JSONL document.
		var buf bytes.Buffer
		if json.Compact(&buf, doc) != nil {
			return unknown("invalid JSON object")
		}
		return detection{kind: kindJSONL, format: FormatJSONL, body: buf.Bytes()}
	}
	return unknown("JSON object without a messages, history or trajectory array")
}

// collectArray reads the array at b[i] and returns its elements; on a syntax
// error, the elements read before it.
func collectArray(b []byte, i, depth int) (elems [][]byte, end int, err error) {
	end, err = scanArray(b, i, depth, func(e int) (int, error) {
		end, err := skipValue(b, e, depth+1)
		if err == nil {
			elems = append(elems, b[e:end])
		}
		return end, err
	})
	return elems, end, err
}

// splitFirstLine returns the first line of doc (without its newline) and the rest.
func splitFirstLine(doc []byte) (first, rest []byte) {
	if i := bytes.IndexByte(doc, '\n'); i >= 0 {
		return doc[:i], doc[i+1:]
	}
	return doc, nil
}

// lineIsRecord reports whether line starts with a complete JSON object
// (possibly followed by more values: records run together).
func lineIsRecord(line []byte) bool {
	line = trimWS(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	_, err := skipValue(line, 0, 0)
	return err == nil
}

// hasRecordLine reports whether some line of data starts, at its first
// column, with a complete JSON object: the mark of a JSONL document whose
// other lines may be broken. Indented lines are not considered, so the inner
// lines of a pretty-printed document do not count.
func hasRecordLine(data []byte) bool {
	for len(data) > 0 {
		line, rest := splitFirstLine(data)
		if len(line) > 0 && line[0] == '{' && lineIsRecord(line) {
			return true
		}
		data = rest
	}
	return false
}

// trimWS trims JSON white space (not Unicode spaces, which JSON does not allow).
func trimWS(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// valueKind names the JSON type of a value by its first byte.
func valueKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// isObject reports whether raw holds a JSON object (by its first byte).
func isObject(raw []byte) bool { return valueKind(raw) == "an object" }

// quoteStart quotes the first few characters of doc for a Problem.
func quoteStart(doc []byte) string {
	i := 0
	for n := 0; i < len(doc) && n < 20; n++ {
		_, size := utf8.DecodeRune(doc[i:])
		i += size
	}
	s := fmt.Sprintf("%q", doc[:i])
	if i < len(doc) {
		s += "..."
	}
	return s
}
