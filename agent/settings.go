package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Settings files are edited as text, never decoded and re-encoded whole:
// the hooks snap owns are inserted or removed where they are, and every
// other byte of the file stays as the user (or a teammate, or another
// tool) wrote it. A JSON tokenizer (encoding/json's Decoder.Token with
// InputOffset) finds the byte spans of the members and elements concerned.
//
// Insertions and removals are each other's inverse, so that an uninstall
// after an install gives the original bytes back:
//   - an item is appended after the last one of its object or array, as a
//     comma, the separator the last item was written with (the whitespace
//     before the first item when there is one item, on one line a single
//     space or none as the file's colons have one), and the item;
//   - removing the last item removes from the end of the one before it to
//     its own end (the comma, whitespace and item the insertion added);
//   - into an empty object or array the item goes alone, on lines of its
//     own when the file is written on several lines; removing an only item
//     leaves the brackets with nothing between them.
// New items are rendered in the file's style: its indentation unit, its
// colon (": " or ":" or " : "), its line ending, one line or several as the
// object or array they go into.

// jsonItem is one member of an object or element of an array: byte offsets
// into the text.
type jsonItem struct {
	key      string // the member's key, unescaped ("" in an array)
	start    int    // the key's opening quote, or (array) the value's start
	keyEnd   int    // just past the key's closing quote (array: start)
	valStart int    // where the value starts
	end      int    // just past the value
}

// jsonContainer is an object or an array in a text.
type jsonContainer struct {
	open, close int // offsets of the opening and the closing bracket
	items       []jsonItem
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace is the offset of the first byte at or after i that is neither
// JSON whitespace nor one of seps.
func skipSpace(text []byte, i int, seps string) int {
	for i < len(text) && (isJSONSpace(text[i]) || strings.IndexByte(seps, text[i]) >= 0) {
		i++
	}
	return i
}

// parseContainer reads the object or array whose opening bracket is at
// text[at].
func parseContainer(text []byte, at int) (jsonContainer, error) {
	c := jsonContainer{open: at}
	if at >= len(text) || text[at] != '{' && text[at] != '[' {
		return c, errors.New("not an object or array")
	}
	d := json.NewDecoder(bytes.NewReader(text[at:]))
	if _, err := d.Token(); err != nil {
		return c, err
	}
	object := text[at] == '{'
	for d.More() {
		var it jsonItem
		it.start = skipSpace(text, at+int(d.InputOffset()), ",")
		it.keyEnd, it.valStart = it.start, it.start
		if object {
			tok, err := d.Token()
			if err != nil {
				return c, err
			}
			it.key, _ = tok.(string)
			it.keyEnd = at + int(d.InputOffset())
			it.valStart = skipSpace(text, it.keyEnd, ":")
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return c, err
		}
		it.end = at + int(d.InputOffset())
		if it.end-it.valStart != len(raw) {
			return c, errors.New("cannot locate a value in the text") // not expected: the spans would be wrong
		}
		c.items = append(c.items, it)
	}
	if _, err := d.Token(); err != nil {
		return c, err
	}
	c.close = at + int(d.InputOffset()) - 1
	return c, nil
}

// member is the index of the member named key in object c (-1: none); an
// object naming it twice is refused, as its meaning depends on the reader.
func (c jsonContainer) member(key string) (int, error) {
	found := -1
	for i, it := range c.items {
		if it.key == key {
			if found >= 0 {
				return -1, fmt.Errorf("%q appears twice in one object", key)
			}
			found = i
		}
	}
	return found, nil
}

// jsonStyle is how a settings text is written.
type jsonStyle struct {
	multi bool   // objects and arrays on several lines
	unit  string // one level of indentation
	colon string // between a key and its value
	space string // after a comma on one line
	nl    string // line ending
}

// styleOf is the style of a settings text, read from its top-level
// object; a new file is written with two-space indentation.
func styleOf(text []byte, top jsonContainer) jsonStyle {
	st := jsonStyle{multi: true, unit: "  ", colon: ": ", space: " ", nl: "\n"}
	if bytes.Contains(text, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	if len(top.items) == 0 {
		return st
	}
	first := top.items[0]
	st.colon = string(text[first.keyEnd:first.valStart])
	if !strings.HasSuffix(st.colon, " ") {
		st.space = ""
	}
	lead := string(text[top.open+1 : first.start])
	if i := strings.LastIndexByte(lead, '\n'); i >= 0 {
		st.unit = lead[i+1:]
	} else {
		st.multi = false
		if len(top.items) > 1 {
			sep := string(text[first.end:top.items[1].start])
			if i := strings.IndexByte(sep, ','); i >= 0 {
				st.space = sep[i+1:]
			}
		}
	}
	return st
}

// lineIndent is the whitespace that starts the line holding text[i].
func lineIndent(text []byte, i int) string {
	start := bytes.LastIndexByte(text[:i], '\n') + 1
	end := start
	for end < len(text) && (text[end] == ' ' || text[end] == '\t') {
		end++
	}
	return string(text[start:end])
}

// splice is text with text[from:to] replaced by with.
func splice(text []byte, from, to int, with string) []byte {
	out := make([]byte, 0, len(text)-(to-from)+len(with))
	out = append(out, text[:from]...)
	out = append(out, with...)
	return append(out, text[to:]...)
}

// jsonValue is a value to render: a string, an array ([]any) or an object
// (jsonObject, its members in order).
type jsonValue = any

type jsonMember struct {
	key   string
	value jsonValue
}

type jsonObject []jsonMember

// quote is s as a JSON string (no HTML escaping: "a && b" stays readable).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// render is v in style st, on several lines when multi, its nested lines
// indented from indent (the indentation of the line it starts on).
func (st jsonStyle) render(v jsonValue, indent string, multi bool) string {
	var items []string
	open, close := "[", "]"
	switch v := v.(type) {
	case string:
		return quote(v)
	case jsonObject:
		open, close = "{", "}"
		for _, m := range v {
			items = append(items, quote(m.key)+st.colon+st.render(m.value, indent+st.unit, multi))
		}
	case []any:
		for _, e := range v {
			items = append(items, st.render(e, indent+st.unit, multi))
		}
	}
	if len(items) == 0 {
		return open + close
	}
	if !multi {
		return open + strings.Join(items, ","+st.space) + close
	}
	in := st.nl + indent + st.unit
	return open + in + strings.Join(items, ","+in) + st.nl + indent + close
}

// renderItem is an item of an object (key set) or array (key "") as it is
// written at indentation indent.
func (st jsonStyle) renderItem(key string, v jsonValue, indent string, multi bool) string {
	if key == "" {
		return st.render(v, indent, multi)
	}
	return quote(key) + st.colon + st.render(v, indent, multi)
}

// insertItem appends an item (key "" in an array) to c (see the top of
// this file).
func (st jsonStyle) insertItem(text []byte, c jsonContainer, key string, v jsonValue) []byte {
	n := len(c.items)
	if n == 0 {
		indent := lineIndent(text, c.open)
		if !st.multi {
			return splice(text, c.open+1, c.close, st.renderItem(key, v, indent, false))
		}
		in := indent + st.unit
		return splice(text, c.open+1, c.close, st.nl+in+st.renderItem(key, v, in, true)+st.nl+indent)
	}
	last := c.items[n-1]
	var sep string
	if n > 1 {
		sep = string(text[c.items[n-2].end:last.start])
	} else if lead := string(text[c.open+1 : last.start]); strings.Contains(lead, "\n") {
		sep = "," + lead
	} else {
		sep = "," + st.space
	}
	multi := strings.Contains(sep, "\n")
	indent := lineIndent(text, last.start)
	if multi {
		indent = sep[strings.LastIndexByte(sep, '\n')+1:]
		// The indentation unit of this object or array: its items'
		// indentation past its own line's.
		if outer := lineIndent(text, c.open); len(indent) > len(outer) && strings.HasPrefix(indent, outer) {
			st.unit = indent[len(outer):]
		}
	}
	return splice(text, last.end, last.end, sep+st.renderItem(key, v, indent, multi))
}

// removeItem removes item i of c (see the top of this file).
func removeItem(text []byte, c jsonContainer, i int) []byte {
	switch {
	case len(c.items) == 1:
		return splice(text, c.open+1, c.close, "")
	case i > 0:
		return splice(text, c.items[i-1].end, c.items[i].end, "")
	default:
		return splice(text, c.items[0].start, c.items[1].start, "")
	}
}

// replaceValue replaces the value of item it by v, rendered to start on
// the item's line.
func (st jsonStyle) replaceValue(text []byte, it jsonItem, v jsonValue) []byte {
	return splice(text, it.valStart, it.end, st.render(v, lineIndent(text, it.start), st.multi))
}

// settingsTop is the top-level object of a settings text and the index of
// its "hooks" member (-1: none).
func settingsTop(text []byte) (jsonContainer, int, error) {
	top, err := parseContainer(text, skipSpace(text, 0, ""))
	if err != nil {
		return top, -1, err
	}
	hi, err := top.member("hooks")
	return top, hi, err
}

// settingsEvent is the hooks object of a settings text and the index of
// the member of event in it (-1: none); ok is false when the text has no
// hooks object.
func settingsEvent(text []byte, event string) (hooks jsonContainer, ei int, ok bool, err error) {
	top, hi, err := settingsTop(text)
	if err != nil || hi < 0 || text[top.items[hi].valStart] != '{' {
		return hooks, -1, false, err
	}
	if hooks, err = parseContainer(text, top.items[hi].valStart); err != nil {
		return hooks, -1, false, err
	}
	ei, err = hooks.member(event)
	return hooks, ei, err == nil, err
}

// hookEntry is the entry install adds for s: {"matcher", "hooks": [{"type":
// "command", "command"}]}, the matcher left out when there is none.
func hookEntry(s HookSpec, command string) jsonObject {
	e := jsonObject{{"hooks", []any{jsonObject{{"type", "command"}, {"command", command}}}}}
	if s.Matcher != "" {
		e = append(jsonObject{{"matcher", s.Matcher}}, e...)
	}
	return e
}

// hooksObject is the "hooks" value for specs, every event running command.
func hooksObject(specs []HookSpec, command string) jsonObject {
	var o jsonObject
	for _, s := range specs {
		o = append(o, jsonMember{s.Event, []any{hookEntry(s, command)}})
	}
	return o
}

// jsonString is the value of it when it is a JSON string.
func jsonString(text []byte, it jsonItem) (string, bool) {
	var s string
	if text[it.valStart] != '"' || json.Unmarshal(text[it.valStart:it.end], &s) != nil {
		return "", false
	}
	return s, true
}

// ownEntry reports whether the element e of an event's list is snap's own
// entry for s: exactly what hookEntry(s, command) writes, whatever its
// layout and member order (see the package doc): the matcher of s (none
// when s has none), and one hook with only "type": "command" and
// "command": command.
func ownEntry(text []byte, e jsonItem, s HookSpec, command string) bool {
	if text[e.valStart] != '{' {
		return false
	}
	entry, err := parseContainer(text, e.valStart)
	if err != nil {
		return false
	}
	want := 1
	if s.Matcher != "" {
		want = 2
	}
	if len(entry.items) != want {
		return false
	}
	seen := map[string]bool{}
	for _, it := range entry.items {
		if seen[it.key] {
			return false
		}
		seen[it.key] = true
		switch it.key {
		case "matcher":
			if m, ok := jsonString(text, it); !ok || s.Matcher == "" || m != s.Matcher {
				return false
			}
		case "hooks":
			if text[it.valStart] != '[' {
				return false
			}
			list, err := parseContainer(text, it.valStart)
			if err != nil || len(list.items) != 1 || text[list.items[0].valStart] != '{' {
				return false
			}
			hook, err := parseContainer(text, list.items[0].valStart)
			if err != nil || len(hook.items) != 2 {
				return false
			}
			got := map[string]string{}
			for _, f := range hook.items {
				v, ok := jsonString(text, f)
				if _, dup := got[f.key]; !ok || dup {
					return false
				}
				got[f.key] = v
			}
			if got["type"] != "command" || got["command"] != command {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// runsSnap reports whether an entry of an event's list holds a hook that
// runs snap's hook for adapter name (RunsSnapHook). Entries or hooks that
// are not objects, and "hooks" that are not lists, are another tool's
// business.
func runsSnap(text []byte, e jsonItem, name string) (bool, error) {
	if text[e.valStart] != '{' {
		return false, nil
	}
	entry, err := parseContainer(text, e.valStart)
	if err != nil {
		return false, err
	}
	hi, err := entry.member("hooks")
	if err != nil || hi < 0 || text[entry.items[hi].valStart] != '[' {
		return false, err
	}
	hooks, err := parseContainer(text, entry.items[hi].valStart)
	if err != nil {
		return false, err
	}
	for _, h := range hooks.items {
		if text[h.valStart] != '{' {
			continue
		}
		hook, err := parseContainer(text, h.valStart)
		if err != nil {
			return false, err
		}
		ci, err := hook.member("command")
		if err != nil {
			return false, err
		}
		if ci < 0 {
			continue
		}
		if cmd, ok := jsonString(text, hook.items[ci]); ok && RunsSnapHook(cmd, name) {
			return true, nil
		}
	}
	return false, nil
}

// eventHooks reads the event list at text[at]: the indices of snap's own
// entries for s in it (ownEntry), and whether another entry holds a hook
// that runs snap for the agent (the user's own).
func eventHooks(text []byte, at int, s HookSpec, name, command string) (list jsonContainer, own []int, users bool, err error) {
	if list, err = parseContainer(text, at); err != nil {
		return list, nil, false, err
	}
	for i, e := range list.items {
		if ownEntry(text, e, s, command) {
			own = append(own, i)
			continue
		}
		runs, err := runsSnap(text, e, name)
		if err != nil {
			return list, nil, false, err
		}
		users = users || runs
	}
	return list, own, users, nil
}

// addHooks is text with snap's entries for specs added (no text: a new
// file), the events it added them to, and the events where a hook of the
// user's own already runs snap (kept: left as it is, and no second hook
// added beside it). An event that has snap's own entry, or any hook
// running snap, is installed already: nothing is rewritten.
func addHooks(text []byte, name, command string, specs []HookSpec) (out []byte, added, kept []string, err error) {
	added, kept = []string{}, []string{}
	if text == nil {
		st := styleOf(nil, jsonContainer{})
		for _, s := range specs {
			added = append(added, s.Event)
		}
		return []byte(st.render(jsonObject{{"hooks", hooksObject(specs, command)}}, "", true) + st.nl), added, kept, nil
	}
	top, hi, err := settingsTop(text)
	if err != nil {
		return nil, nil, nil, err
	}
	st := styleOf(text, top)
	if hi < 0 || text[top.items[hi].valStart] == 'n' { // none, or null
		for _, s := range specs {
			added = append(added, s.Event)
		}
		if hi < 0 {
			return st.insertItem(text, top, "hooks", hooksObject(specs, command)), added, kept, nil
		}
		return st.replaceValue(text, top.items[hi], hooksObject(specs, command)), added, kept, nil
	}
	for _, s := range specs {
		hooks, ei, _, err := settingsEvent(text, s.Event)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case ei < 0:
			text = st.insertItem(text, hooks, s.Event, []any{hookEntry(s, command)})
		case text[hooks.items[ei].valStart] == 'n': // null
			text = st.replaceValue(text, hooks.items[ei], []any{hookEntry(s, command)})
		default:
			list, own, users, err := eventHooks(text, hooks.items[ei].valStart, s, name, command)
			if err != nil {
				return nil, nil, nil, err
			}
			if users {
				kept = append(kept, s.Event)
			}
			if len(own) > 0 || users {
				continue
			}
			text = st.insertItem(text, list, "", hookEntry(s, command))
		}
		added = append(added, s.Event)
	}
	return text, added, kept, nil
}

// removeHooks is text without snap's own entries for specs (ownEntry), the
// events it removed them from, and the events where a hook of the user's
// own that runs snap is left (kept). An event left with no entry goes,
// and "hooks" left empty goes.
func removeHooks(text []byte, name, command string, specs []HookSpec) (out []byte, removed, kept []string, err error) {
	removed, kept = []string{}, []string{}
	if text == nil {
		return nil, removed, kept, nil
	}
	for _, s := range specs {
		gone := false
		for {
			hooks, ei, ok, err := settingsEvent(text, s.Event)
			if err != nil {
				return nil, nil, nil, err
			}
			if !ok || ei < 0 || text[hooks.items[ei].valStart] != '[' {
				break
			}
			list, own, users, err := eventHooks(text, hooks.items[ei].valStart, s, name, command)
			if err != nil {
				return nil, nil, nil, err
			}
			if len(own) == 0 {
				if users {
					kept = append(kept, s.Event)
				}
				if gone && len(list.items) == 0 {
					text = removeItem(text, hooks, ei)
				}
				break
			}
			text = removeItem(text, list, own[0])
			gone = true
		}
		if gone {
			removed = append(removed, s.Event)
		}
	}
	if len(removed) > 0 {
		top, hi, err := settingsTop(text)
		if err != nil {
			return nil, nil, nil, err
		}
		if hi >= 0 && emptyObject(text[top.items[hi].valStart:top.items[hi].end]) {
			text = removeItem(text, top, hi)
		}
	}
	return text, removed, kept, nil
}
