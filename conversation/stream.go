package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"unicode/utf8"
)

// Streaming views of documents too large to hold: ParsePage and
// CountReader read a document once, front to back, and give what Parse and
// Count give for the same bytes (see the package documentation, "Large
// documents"). Parse's detection looks at a document several ways (is its
// first line a record, does the object end where the document does, does
// any later line start with a record); the stream keeps every answer it
// may need as it goes: a JSONL reading of every line runs beside the JSON
// reading of an object document, and the JSON reading of an array stops
// it once an element is read (an array with an element is never JSONL).

// MaxRecord bounds what ParsePage and CountReader hold of one record: a
// JSONL line, an element of the message array, or another member of an
// object document. A document that needs a longer one is refused with
// ErrRecordTooLarge.
const MaxRecord = 64 << 20

// maxProblems bounds the Problems ParsePage returns: past it, one last
// Problem says that more were left out.
const maxProblems = 1000

// recordLimit is MaxRecord; tests lower it.
var recordLimit = MaxRecord

// readChunk is how much the stream reads at a time.
const readChunk = 64 << 10

// CountReader returns Count of the document r holds, reading it once, as a
// stream: memory is bounded by about two records (MaxRecord each) and
// about 20 bytes per distinct assistant message id of a JSONL document,
// whatever its size. It fails only when reading r fails or with
// ErrRecordTooLarge (see the package documentation, "Large documents").
func CountReader(r io.Reader) (int, error) {
	_, total, err := parseStream(r, math.MaxInt, 1, true)
	return total, err
}

// ParsePage returns messages [offset, offset+limit) of Parse of the
// document r holds (limit <= 0: all from offset), with their Index in the
// whole view, the view's Format and Problems (all of them, up to 1,000:
// past that, the first 1,000 and one more saying so), and the number of
// messages in the whole view. It reads r once, as a stream: memory is
// bounded by the page, about two records (MaxRecord each) and about 20
// bytes per distinct assistant message id of a JSONL document, whatever
// the document's size. It fails only when reading r fails, with
// ErrRecordTooLarge, or for a negative offset (see the package
// documentation, "Large documents"). Like Parse it does not panic; a page
// past the end has no messages.
func ParsePage(r io.Reader, offset, limit int) (*Conversation, int, error) {
	if offset < 0 {
		return nil, 0, fmt.Errorf("conversation: negative offset %d", offset)
	}
	return parseStream(r, offset, limit, false)
}

// window is a range of message indexes [lo, hi); hi < 0 for no end.
type window struct{ lo, hi int }

func (w window) has(i int) bool { return i >= w.lo && (w.hi < 0 || i < w.hi) }

func pageWindow(offset, limit int) window {
	if limit <= 0 || offset > math.MaxInt-limit {
		return window{offset, -1}
	}
	return window{offset, offset + limit}
}

// abort carries an error out of the stream's readers to parseStream.
type abort struct{ err error }

func parseStream(r io.Reader, offset, limit int, quiet bool) (c *Conversation, total int, err error) {
	defer func() {
		if p := recover(); p != nil {
			if a, ok := p.(abort); ok {
				c, total, err = nil, 0, a.err
				return
			}
			// As Parse and Count do.
			total, err = 0, nil
			c = &Conversation{
				Format:   FormatUnknown,
				Messages: []Message{},
				Problems: []Problem{{Message: fmt.Sprintf("internal error while parsing: %v", p)}},
			}
		}
	}()
	p := &streamParse{
		s:      &stream{r: r, keep: -1},
		win:    pageWindow(offset, limit),
		offset: offset,
		limit:  limit,
		quiet:  quiet,
	}
	return p.run()
}

// streamParse is one run of ParsePage or CountReader.
type streamParse struct {
	s             *stream
	tap           *jsonlTap // the JSONL reading of the whole document
	win           window
	offset, limit int
	quiet         bool
}

func (p *streamParse) run() (*Conversation, int, error) {
	s := p.s
	for len(s.buf) < len(utf8BOM) && s.more() {
	}
	if bytes.HasPrefix(s.buf, utf8BOM) {
		s.pos = len(utf8BOM)
		s.base = -int64(s.pos)
	}
	p.tap = newJSONLTap(p.win, p.quiet)
	p.tap.feed(s.buf[s.pos:])
	s.tap = p.tap
	c, ok := s.ws()
	if !ok {
		return unknownView("empty document")
	}
	s.doc = s.base + int64(s.pos)
	switch c {
	case '[':
		return p.arrayDoc()
	case '{':
		return p.objectDoc()
	}
	// Not JSON: JSONL if some line is a record.
	for len(s.buf)-s.pos < 100 && s.more() {
	}
	start := s.buf[s.pos:]
	if s.eof {
		start = bytes.TrimRight(start, " \t\r\n")
	}
	i := 0
	for n := 0; i < len(start) && n < 20; n++ {
		_, size := utf8.DecodeRune(start[i:])
		i += size
	}
	quoted := fmt.Sprintf("%q", start[:i])
	p.drain()
	if p.tap.recordLine() {
		return p.jsonl(nil)
	}
	if p.tap.maybeRecordLine() {
		return nil, 0, p.tap.tooLarge()
	}
	if p.tap.lastNonWS >= s.doc+int64(i) {
		quoted += "..."
	}
	return unknownView(fmt.Sprintf("not a JSON document: starts with %s", quoted))
}

// drain reads the rest of the document through the JSONL reading.
func (p *streamParse) drain() {
	s := p.s
	s.pos = len(s.buf)
	for s.more() {
		s.pos = len(s.buf)
	}
	p.tap.finish()
}

// jsonl is the view of the whole document read as JSONL.
func (p *streamParse) jsonl(pre []Problem) (*Conversation, int, error) {
	if p.tap.overflow {
		return nil, 0, p.tap.tooLarge()
	}
	return p.tap.pager.view(pre, p.quiet)
}

func unknownView(why string, more ...Problem) (*Conversation, int, error) {
	return &Conversation{Format: FormatUnknown, Messages: []Message{},
		Problems: append([]Problem{{Message: why}}, more...)}, 0, nil
}

// arrayDoc reads a document starting with '[' (detect's first case).
func (p *streamParse) arrayDoc() (*Conversation, int, error) {
	s := p.s
	ep := newElemPager(p.win, p.quiet, "array")
	err := s.array(0, func(v []byte) {
		if ep.n == 0 { // an array with an element: never JSONL
			s.tap, p.tap = nil, nil
		}
		ep.elem(v)
	})
	if err == nil {
		end := s.docOffset(s.pos)
		if _, more := s.ws(); more {
			return ep.view(FormatJSONArray, false, nil, p, Problem{Message: fmt.Sprintf(
				"data after the end of the JSON array (byte %d) ignored", end+1)})
		}
		return ep.view(FormatJSONArray, false, nil, p)
	}
	if ep.n > 0 {
		return ep.view(FormatJSONArray, false, nil, p, Problem{Message: fmt.Sprintf(
			"invalid JSON array (%v); showing the %d element(s) before the error", err, ep.n)})
	}
	p.drain()
	if p.tap.recordLine() {
		return p.jsonl(nil)
	}
	if p.tap.maybeRecordLine() {
		return nil, 0, p.tap.tooLarge()
	}
	return unknownView(fmt.Sprintf("document starts with '[' but is not a JSON array: %v", err))
}

// streamObject is what objectDoc reads of an object document: detect's
// docObject, with message arrays read into pagers instead of kept.
type streamObject struct {
	arrays    [len(arrayKeys)]*elemPager // nil: not found
	system    []byte                     // the last non-null "system" (nil when quiet)
	hasSystem bool
	typ, role string
}

// objectDoc reads a document starting with '{' (detect's second case).
func (p *streamParse) objectDoc() (*Conversation, int, error) {
	s := p.s
	s.keep = s.pos // the document, for a one-record JSONL document
	var o streamObject
	err := s.object(func(key int) error {
		if key < len(arrayKeys) {
			o.arrays[key] = nil
			if c, _ := s.ws(); c != '[' {
				_, err := s.value(1)
				return err
			}
			s.keepLess() // not a one-record document unless this array is replaced
			p.tap.shortFirstLine()
			w := p.win
			if key == 0 && w.lo > 0 { // a "system" member may come first
				w.lo--
			}
			ep := newElemPager(w, p.quiet, fmt.Sprintf("%q array", arrayKeys[key]))
			o.arrays[key] = ep
			return s.array(1, ep.elem)
		}
		v, err := s.value(1)
		if err != nil {
			return err
		}
		switch key {
		case keySystem:
			o.system, o.hasSystem = nil, v[0] != 'n'
			if o.hasSystem && !p.quiet {
				o.system = bytes.Clone(v)
			}
		case keyType:
			o.typ = stringValue(v)
		case keyRole:
			o.role = stringValue(v)
		}
		return nil
	})
	if err != nil {
		s.keep = -1
		p.drain()
		// A first line holding a whole record would have completed the
		// object: only later lines can make it JSONL.
		if p.tap.laterRec {
			return p.jsonl(nil)
		}
		if p.tap.maybeRecordLine() {
			return nil, 0, p.tap.tooLarge()
		}
		for k, name := range arrayKeys {
			if ep := o.arrays[k]; ep != nil {
				return ep.view(FormatJSONMessages, false, nil, p, Problem{Message: fmt.Sprintf(
					"invalid JSON object (%v); showing the %d element(s) of %q read before the error", err, ep.n, name)})
			}
		}
		if !p.tap.docHasNewline() {
			return p.jsonl(nil) // a single broken line: most likely a truncated JSONL record
		}
		return unknownView(fmt.Sprintf("invalid JSON object: %v", err))
	}
	end := s.docOffset(s.pos)
	endData := s.base + int64(s.pos)
	var doc []byte // the object, when it may be one record
	if s.keep >= 0 && o.arrays == [len(arrayKeys)]*elemPager{} && (o.typ != "" || o.role != "") {
		doc = bytes.Clone(s.buf[s.keep:s.pos])
	}
	s.keep = -1
	firstLineRecord := p.tap.firstNL < 0 || p.tap.firstNL >= endData
	if _, trailing := s.ws(); !trailing {
		return p.objectView(&o, doc)
	}
	p.drain()
	if firstLineRecord || p.tap.laterRec {
		return p.jsonl(nil)
	}
	if p.tap.maybeRecordLine() {
		return nil, 0, p.tap.tooLarge()
	}
	return p.objectView(&o, doc, Problem{Message: fmt.Sprintf(
		"data after the end of the JSON object (byte %d) ignored", end+1)})
}

// objectView is detect's docObject.detection, then Parse, for a valid
// object document; doc is the object, if kept.
func (p *streamParse) objectView(o *streamObject, doc []byte, more ...Problem) (*Conversation, int, error) {
	for k := range arrayKeys {
		if ep := o.arrays[k]; ep != nil {
			return ep.view(FormatJSONMessages, k == 0 && o.hasSystem, o.system, p, more...)
		}
	}
	if o.typ != "" || o.role != "" {
		// One record (perhaps pretty-printed): a one-line JSONL document.
		if doc == nil {
			return nil, 0, fmt.Errorf("%w: a one-record document too long to keep", ErrRecordTooLarge)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, doc) != nil {
			return unknownView("invalid JSON object", more...)
		}
		t := newJSONLTap(p.win, p.quiet)
		t.feed(buf.Bytes())
		t.finish()
		if t.overflow {
			return nil, 0, t.tooLarge()
		}
		return t.pager.view(more, p.quiet)
	}
	return unknownView("JSON object without a messages, history or trajectory array", more...)
}

// stringValue is stringAt for a whole value.
func stringValue(v []byte) string {
	if v[0] == '"' {
		return unquote(v)
	}
	return ""
}

// Keys of an object document that objectDoc reads: arrayKeys by index,
// then these.
const (
	keySystem = len(arrayKeys) + iota
	keyType
	keyRole
	keyOther
)

func docKey(key []byte) int {
	for k, name := range arrayKeys {
		if string(key) == name {
			return k
		}
	}
	switch string(key) {
	case "system":
		return keySystem
	case "type":
		return keyType
	case "role":
		return keyRole
	}
	return keyOther
}

// stream reads a document in chunks, holding at most one value (or, for
// objectDoc, the document while it may be one record, up to recordLimit).
// Offsets in data are counted after the byte order mark; the scanner's
// errors give offsets in the document (after white space too), as detect
// does.
type stream struct {
	r    io.Reader
	buf  []byte
	pos  int   // next byte to read in buf
	base int64 // offset in data of buf[0]
	doc  int64 // offset in data of the document's first byte
	eof  bool
	tap  *jsonlTap // fed every byte read, when set
	keep int       // index in buf of the first byte to keep, or -1
	// keepSmall: keep only up to keepSmallMax bytes (the document has a
	// message array, and is one record only if a later member replaces it)
	keepSmall bool
}

// keepSmallMax is how much of an object document with a message array
// objectDoc keeps in case it turns out to be one record.
const keepSmallMax = 1 << 20

// more reads more of the document; false at its end.
func (s *stream) more() bool {
	if s.eof {
		return false
	}
	from := s.pos
	if s.keep >= 0 && s.keep < from {
		from = s.keep
	}
	if from > 0 && (from >= len(s.buf)/2 || cap(s.buf)-len(s.buf) < readChunk/2) {
		n := copy(s.buf, s.buf[from:])
		s.buf = s.buf[:n]
		s.pos -= from
		if s.keep >= 0 {
			s.keep -= from
		}
		s.base += int64(from)
	}
	if cap(s.buf)-len(s.buf) < readChunk/2 {
		b := make([]byte, len(s.buf), max(2*cap(s.buf), len(s.buf)+readChunk))
		copy(b, s.buf)
		s.buf = b
	}
	for empty := 0; ; empty++ {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		if n > 0 {
			chunk := s.buf[len(s.buf) : len(s.buf)+n]
			s.buf = s.buf[:len(s.buf)+n]
			if s.tap != nil {
				s.tap.feed(chunk)
			}
			if s.keep >= 0 && (len(s.buf)-s.keep > recordLimit || s.keepSmall && len(s.buf)-s.keep > keepSmallMax) {
				s.keep = -1
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			s.eof = true
			return n > 0
		case err != nil:
			panic(abort{err})
		case n > 0:
			return true
		case empty >= 100:
			panic(abort{io.ErrNoProgress})
		}
	}
}

// keepLess keeps at most keepSmallMax bytes of the document.
func (s *stream) keepLess() {
	s.keepSmall = true
	if s.keep >= 0 && len(s.buf)-s.keep > keepSmallMax {
		s.keep = -1
	}
}

// ws skips white space and returns the next byte; false at the end.
func (s *stream) ws() (byte, bool) {
	for {
		for s.pos < len(s.buf) {
			if c := s.buf[s.pos]; !isSpace(c) {
				return c, true
			}
			s.pos++
		}
		if !s.more() {
			return 0, false
		}
	}
}

// docOffset is the offset in the document of buf[i].
func (s *stream) docOffset(i int) int {
	return int(s.base + int64(i) - s.doc)
}

// errHere is errAt at the current byte (ok) or at the end of the document.
func (s *stream) errHere(ok bool, context string) error {
	if !ok {
		return &scanError{off: s.docOffset(len(s.buf))}
	}
	e := errAt(s.buf, s.pos, context).(*scanError)
	e.off = s.docOffset(s.pos)
	return e
}

// value reads the JSON value that starts at the next byte that is not
// white space, as skipValue(doc, i, depth) would, and returns its bytes
// (valid until the next read).
func (s *stream) value(depth int) ([]byte, error) {
	for {
		avail := s.buf[s.pos:]
		if s.eof { // the document ends at its last byte that is not white space
			avail = bytes.TrimRight(avail, " \t\r\n")
		}
		end, err := skipValue(avail, 0, depth)
		var se *scanError
		if err != nil {
			se = err.(*scanError)
		}
		switch {
		case err == nil && (end < len(avail) || s.eof):
			// A value ends at a byte read (a number at the one after it).
			if end > recordLimit {
				panic(abort{s.tooLarge()})
			}
			v := avail[:end]
			s.pos += end
			return v, nil
		case err != nil && se.eof() && s.eof:
			return nil, se
		case err != nil && !se.eof() && (s.eof || !allSpace(avail[se.off:])):
			// An unexpected byte is unexpected whatever follows, if it is
			// in the document (not white space at its end).
			e := *se
			e.off = s.docOffset(s.pos + se.off)
			return nil, &e
		}
		if len(avail) > recordLimit {
			panic(abort{s.tooLarge()})
		}
		for want := min(max(2*len(avail), readChunk), recordLimit+1); len(s.buf)-s.pos < want && s.more(); {
		}
	}
}

func (s *stream) tooLarge() error {
	return fmt.Errorf("%w: the JSON value at byte %d is longer than %d bytes", ErrRecordTooLarge, s.docOffset(s.pos)+1, recordLimit)
}

func allSpace(b []byte) bool { return skipSpace(b, 0) == len(b) }

// array reads the array whose '[' is the next byte, as scanArray(doc, i,
// depth, ...) with elements read by skipValue(doc, e, depth+1) does,
// calling elem with each element.
func (s *stream) array(depth int, elem func(v []byte)) error {
	s.pos++
	c, ok := s.ws()
	if ok && c == ']' {
		s.pos++
		return nil
	}
	for {
		if !ok {
			return s.errHere(false, "")
		}
		v, err := s.value(depth + 1)
		if err != nil {
			return err
		}
		elem(v)
		if c, ok = s.ws(); !ok {
			return s.errHere(false, "")
		}
		switch c {
		case ',':
			s.pos++
			_, ok = s.ws()
		case ']':
			s.pos++
			return nil
		default:
			return s.errHere(true, "after array element")
		}
	}
}

// object reads the top-level object whose '{' is the next byte, as
// scanObject(doc, 0, 0, ...) does. member is called with docKey of each
// member's key, the stream at its value.
func (s *stream) object(member func(key int) error) error {
	s.pos++
	c, ok := s.ws()
	if ok && c == '}' {
		s.pos++
		return nil
	}
	for {
		if !ok || c != '"' {
			return s.errHere(ok, "looking for beginning of object key string")
		}
		k, err := s.value(1)
		if err != nil {
			return err
		}
		key := docKey(k[1 : len(k)-1])
		if c, ok = s.ws(); !ok || c != ':' {
			return s.errHere(ok, "after object key")
		}
		s.pos++
		if _, ok = s.ws(); !ok {
			return s.errHere(false, "")
		}
		if err := member(key); err != nil {
			return err
		}
		if c, ok = s.ws(); !ok {
			return s.errHere(false, "")
		}
		switch c {
		case ',':
			s.pos++
			c, ok = s.ws()
		case '}':
			s.pos++
			return nil
		default:
			return s.errHere(true, "after object key:value pair")
		}
	}
}

// problemList keeps the first maxProblems Problems.
type problemList struct {
	items   []pendingProblem
	dropped bool
}

// pendingProblem is a Problem whose message may not be formatted yet.
type pendingProblem struct {
	Problem
	lp lineProblem // the message, when Message is empty
}

func (l *problemList) add(p Problem) { l.addLazy(p, lineProblem{}) }

func (l *problemList) addLazy(p Problem, lp lineProblem) {
	if len(l.items) >= maxProblems {
		l.dropped = true
		return
	}
	l.items = append(l.items, pendingProblem{p, lp})
}

// list returns the Problems, formatted.
func (l *problemList) list() []Problem {
	out := make([]Problem, len(l.items))
	for i, p := range l.items {
		out[i] = p.Problem
		if p.Message == "" {
			out[i].Message = p.lp.String()
		}
	}
	return out
}

// capped returns pre followed by l's Problems (Parse's order), at most
// maxProblems of them, and one more when some were left out.
func capped(pre []Problem, items []Problem, dropped bool) []Problem {
	out := append(append([]Problem(nil), pre...), items...)
	if len(out) > maxProblems {
		out, dropped = out[:maxProblems], true
	}
	if dropped {
		out = append(out, Problem{Message: fmt.Sprintf(
			"more than %d problems: the others are not shown", maxProblems)})
	}
	return out
}

// elemPager reads the elements of a message array (Parse's kindElements)
// and keeps the messages of a window of object ordinals.
type elemPager struct {
	win     window
	quiet   bool
	where   string
	n       int // elements read
	objects int // of which objects
	page    []Message
	first   int // ordinal of page[0]
	probs   problemList
}

func newElemPager(w window, quiet bool, where string) *elemPager {
	return &elemPager{win: w, quiet: quiet, where: where}
}

func (p *elemPager) elem(raw []byte) {
	i := p.n
	p.n++
	if !isObject(raw) {
		if !p.quiet {
			p.probs.add(Problem{Message: fmt.Sprintf(
				"element %d of the %s is %s, not an object; skipped", i, p.where, valueKind(raw))})
		}
		return
	}
	j := p.objects
	p.objects++
	if !p.quiet && p.win.has(j) {
		if len(p.page) == 0 {
			p.first = j
		}
		w := decodeWire(raw)
		p.page = append(p.page, fromWire(&w))
	}
}

// view is Parse's view of these elements, preceded by a system message
// when hasSystem, with the Problems pre (detection's) and the elements'.
func (p *elemPager) view(format Format, hasSystem bool, system []byte, sp *streamParse, pre ...Problem) (*Conversation, int, error) {
	total := p.objects
	shift := 0
	if hasSystem {
		total++
		shift = 1
	}
	if sp.quiet {
		return nil, total, nil
	}
	c := &Conversation{Format: format, Messages: []Message{}}
	if hasSystem && sp.win.has(0) {
		m := Message{Role: "system"}
		sys, _ := parseContent(system, 0)
		m.addContent(&sys)
		c.Messages = append(c.Messages, m)
	}
	for i, m := range p.page {
		if sp.win.has(p.first + i + shift) {
			c.Messages = append(c.Messages, m)
		}
	}
	for i := range c.Messages {
		c.Messages[i].Index = sp.offset + i
	}
	if len(pre) > 0 || len(p.probs.items) > 0 || p.probs.dropped {
		c.Problems = capped(pre, p.probs.list(), p.probs.dropped)
	}
	return c, total, nil
}

// jsonlTap reads a JSONL document fed to it in chunks, line by line, as
// parseJSONL (through a jsonlPager), and records what detect asks of its
// lines: whether the first line that is not blank holds a record
// (lineIsRecord), whether a later one starts with one at its first column
// (hasRecordLine), where its first newline after the first byte that is
// not white space is, and its last such byte. Lines longer than
// recordLimit are skipped and remembered: a view that needs them fails.
type jsonlTap struct {
	pager    *jsonlPager
	pending  []byte // the line read so far
	lineNo   int    // lines read
	skipping bool   // the current line is too long: skip to its end
	skipHas  bool   // the line skipped has a byte that is not white space
	skipCol0 byte   // its first byte
	overflow bool   // some line was too long
	longLine int    // the first one
	longMax  int    // and its limit
	maybeRec bool   // a line too long, not the first, may have started with a record

	firstMax  int  // when set, the limit of the first line that is not blank
	seenLine  bool // a line that is not blank was read
	firstRec  bool // the first such line holds a record
	laterRec  bool // a later line starts with a record at its first column
	fed       int64
	lineAt    int64 // offset in data of the line being read
	firstByte int64 // offsets in data; -1: none yet
	firstNL   int64
	lastNonWS int64
}

func newJSONLTap(w window, quiet bool) *jsonlTap {
	return &jsonlTap{pager: newJSONLPager(w, quiet), firstByte: -1, firstNL: -1, lastNonWS: -1}
}

func (t *jsonlTap) feed(chunk []byte) {
	at := t.fed
	t.fed += int64(len(chunk))
	if t.firstByte < 0 {
		if i := skipSpace(chunk, 0); i < len(chunk) {
			t.firstByte = at + int64(i)
		}
	}
	if t.firstByte >= 0 && t.firstNL < 0 {
		from := max(0, int(t.firstByte-at))
		if i := bytes.IndexByte(chunk[from:], '\n'); i >= 0 {
			t.firstNL = at + int64(from+i)
		}
	}
	for i := len(chunk) - 1; i >= 0; i-- {
		if !isSpace(chunk[i]) {
			t.lastNonWS = at + int64(i)
			break
		}
	}
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			t.add(chunk)
			return
		}
		part := chunk[:i]
		chunk = chunk[i+1:]
		if len(t.pending) == 0 && !t.skipping {
			t.line(part, false)
		} else {
			t.add(part)
			t.endLine(false)
		}
		t.lineAt = t.fed - int64(len(chunk))
	}
}

// lineMax is the longest line read: recordLimit, or firstMax for the first
// line that is not blank.
func (t *jsonlTap) lineMax() int {
	if !t.seenLine && t.firstMax > 0 {
		return t.firstMax
	}
	return recordLimit
}

// shortFirstLine reads no more than keepSmallMax bytes of the first line
// that is not blank: objectDoc found a message array in it, so it is not a
// record of the view but in odd documents (a message array followed by
// JSONL records, or a broken one), where the view then fails.
func (t *jsonlTap) shortFirstLine() {
	t.firstMax = keepSmallMax
	if !t.seenLine && !t.skipping && len(t.pending) > t.firstMax {
		t.add(nil)
	}
}

// add appends part of a line to pending, or skips it.
func (t *jsonlTap) add(part []byte) {
	if !t.skipping && len(t.pending)+len(part) > t.lineMax() {
		t.skipping = true
		if len(t.pending) > 0 {
			t.skipCol0 = t.pending[0]
		} else {
			t.skipCol0 = part[0] // not empty: it is too long
		}
		t.skipHas = !allSpace(t.pending)
		t.pending = nil
	}
	if !t.skipping {
		t.pending = append(t.pending, part...)
		return
	}
	t.skipHas = t.skipHas || !allSpace(part)
}

// endLine ends the line in pending (or skipped).
func (t *jsonlTap) endLine(last bool) {
	if t.skipping {
		t.skipping = false
		t.tooLong(t.skipCol0, t.skipHas)
		return
	}
	t.line(t.pending, last)
	t.pending = t.pending[:0]
	if cap(t.pending) > 1<<20 {
		t.pending = nil // after a long line
	}
}

// finish reads the last line, when no newline ends it.
func (t *jsonlTap) finish() {
	if len(t.pending) > 0 || t.skipping {
		t.endLine(true)
	}
	t.pending = nil
}

// tooLong counts a line longer than recordLimit, which is not read: the
// view fails if it needs it.
// A blank line, however long, holds nothing.
func (t *jsonlTap) tooLong(col0 byte, hasNonWS bool) {
	t.lineNo++
	if !hasNonWS {
		return
	}
	if !t.overflow {
		t.overflow, t.longLine, t.longMax = true, t.lineNo, t.lineMax()
	}
	t.maybeRec = t.maybeRec || (t.seenLine && col0 == '{')
	t.seenLine = true
}

func (t *jsonlTap) line(line []byte, last bool) {
	if len(line) > t.lineMax() {
		t.tooLong(line[0], !allSpace(line))
		return
	}
	t.lineNo++
	t.pager.lineAt, t.pager.lineBefore = t.lineAt, t.pager.n
	first := !t.seenLine && !allSpace(line)
	if first {
		t.seenLine = true
	}
	if recordsOnLine(line, t.lineNo, last, t.pager.problemFunc(), t.pager.recordFn) {
		if first {
			t.firstRec = true
		} else if line[0] == '{' {
			t.laterRec = true
		}
	}
}

// recordLine is hasRecordLine of the whole document (detect's first line
// counts only when it starts with '{', which makes no difference where
// this is asked).
func (t *jsonlTap) recordLine() bool { return t.firstRec || t.laterRec }

// maybeRecordLine reports whether a line too long to read may have been a
// record line.
func (t *jsonlTap) maybeRecordLine() bool { return t.maybeRec }

// docHasNewline reports whether the document (without the white space
// around it) holds a newline.
func (t *jsonlTap) docHasNewline() bool { return t.firstNL >= 0 && t.lastNonWS > t.firstNL }

func (t *jsonlTap) tooLarge() error {
	return fmt.Errorf("%w: line %d is longer than %d bytes", ErrRecordTooLarge, t.longLine, t.longMax)
}

// jsonlPager is parseJSONL (and countJSONL, when quiet) for a stream of
// records, keeping the messages of a window of indexes. A record merges
// into an earlier message with its message.id wherever that is, as in
// Parse: the ids seen are kept, as 128-bit hashes.
type jsonlPager struct {
	win          window
	quiet        bool
	n            int // messages so far
	seen         map[[2]uint64]struct{}
	seeds        [2]maphash.Seed
	page         []Message
	byID         map[string]int // message.id -> index in page
	merged       mergeState
	unknown      map[string]*unknownStat
	unknownOrder []string
	probs        problemList
	problemFn    func(int, lineProblem)
	recordFn     func(int, []byte, *recordHead)

	// For DiffShared (diffshared.go): scan, when set, records where the
	// message of every assistant message id read starts (instead of seen);
	// shared, when set, holds those of the part of the document before
	// the records read, where the messages [0, win.lo) are: a record of
	// one of their ids merges into one of them, noted in into.
	scan, shared *sharedPrefix
	into         int   // the lowest message of shared a record merged into; -1: none
	lineAt       int64 // offset of the line being read
	lineBefore   int   // messages before it
}

func newJSONLPager(w window, quiet bool) *jsonlPager {
	p := &jsonlPager{win: w, quiet: quiet, seen: map[[2]uint64]struct{}{},
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		byID:  map[string]int{}, merged: mergeState{}, unknown: map[string]*unknownStat{}}
	p.problemFn, p.recordFn = p.problem, p.record
	return p
}

// problemFunc returns the function recordsOnLine reports Problems to; nil
// when they are not wanted or no more are kept.
func (p *jsonlPager) problemFunc() func(int, lineProblem) {
	if p.quiet || p.probs.dropped {
		return nil
	}
	return p.problemFn
}

// problem keeps a Problem, formatted only if the view is JSONL.
func (p *jsonlPager) problem(line int, lp lineProblem) {
	p.probs.addLazy(Problem{Line: line}, lp)
}

func (p *jsonlPager) record(line int, rec []byte, h *recordHead) {
	switch h.classify() {
	case recSkip:
	case recUnknown:
		if p.quiet {
			return
		}
		if st, ok := p.unknown[h.typ]; ok {
			st.count++
		} else if len(p.unknown) < maxProblems {
			p.unknown[h.typ] = &unknownStat{first: line, count: 1}
			p.unknownOrder = append(p.unknownOrder, h.typ)
		} else {
			p.probs.dropped = true // its Problem would come after maxProblems others
		}
	case recNoMessage:
		if !p.quiet {
			p.probs.add(Problem{Line: line, Message: fmt.Sprintf("%s record without a message object; skipped", h.typ)})
		}
	case recBare:
		i := p.n
		p.n++
		if p.quiet || !p.win.has(i) {
			return
		}
		w := decodeWire(rec)
		w.Type, w.Role, w.Timestamp = h.typ, h.role, h.timestamp
		if w.ID == "" {
			w.ID = h.uuid
		}
		m := fromWire(&w)
		m.Lines = []int{line}
		p.page = append(p.page, m)
	case recClaude:
		assistant := h.typ == "assistant" && h.msgID != ""
		if assistant {
			if i, ok := p.byID[h.msgID]; ok {
				p.merged.add(&p.page[i], i, h.msg, line)
				return
			}
			k := [2]uint64{maphash.String(p.seeds[0], h.msgID), maphash.String(p.seeds[1], h.msgID)}
			if p.shared != nil {
				if m, ok := p.shared.ids[k]; ok && m.index < p.win.lo {
					if p.into < 0 || m.index < p.into {
						p.into = m.index
					}
					return
				}
			}
			if p.scan != nil {
				if _, ok := p.scan.ids[k]; ok {
					return
				}
				p.scan.ids[k] = sharedMsg{index: p.n, line: line, at: p.lineAt, before: p.lineBefore}
			} else {
				if _, ok := p.seen[k]; ok {
					return // merged into a message outside the page
				}
				p.seen[k] = struct{}{}
			}
		}
		i := p.n
		p.n++
		if p.quiet || !p.win.has(i) {
			return
		}
		m := Message{Role: h.typ, ID: h.uuid, Timestamp: h.timestamp, Lines: []int{line}}
		if assistant {
			m.ID = h.msgID
			p.byID[h.msgID] = len(p.page)
		}
		m.addClaudeContent(h.msg)
		m.finishRole()
		p.page = append(p.page, m)
	}
}

// view is Parse's view of the records read, preceded by the Problems pre
// (detection's, all on line 0).
func (p *jsonlPager) view(pre []Problem, quiet bool) (*Conversation, int, error) {
	if quiet {
		return nil, p.n, nil
	}
	c := &Conversation{Format: FormatJSONL, Messages: p.page}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	p.merged.finish(c)
	for i := range c.Messages {
		c.Messages[i].Index = p.win.lo + i
	}
	// Parse appends one Problem per unknown record type after the others,
	// then sorts them by line, stably: merge the two lists, both in line
	// order, the others first on a tie.
	var all []Problem
	items := p.probs.list()
	for _, key := range p.unknownOrder {
		st := p.unknown[key]
		for len(items) > 0 && items[0].Line <= st.first {
			all, items = append(all, items[0]), items[1:]
		}
		what := fmt.Sprintf("of unknown type %q", key)
		if key == "" {
			what = "without a type or role"
		}
		all = append(all, Problem{Line: st.first, Message: fmt.Sprintf(
			"skipped %d record(s) %s (first on this line)", st.count, what)})
	}
	all = append(all, items...)
	if len(pre) > 0 || len(all) > 0 || p.probs.dropped {
		c.Problems = capped(pre, all, p.probs.dropped)
	}
	return c, p.n, nil
}
