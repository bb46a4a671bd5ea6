package redact

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Finding is one secret found in a document. It never holds the secret.
type Finding struct {
	Kind        string `json:"kind"`        // the placeholder's name: [REDACTED:<kind>]
	Rule        string `json:"rule"`        // gitleaks:<rule id>, snap:assigned-secret or snap:known-secret
	Offset      int64  `json:"offset"`      // byte offset of the secret in the input
	Length      int    `json:"length"`      // its length in bytes
	Line        int    `json:"line"`        // 1-based line of its first byte
	Fingerprint string `json:"fingerprint"` // first 12 hex digits of the SHA-256 of the secret
	Masked      string `json:"masked"`      // at most 4 leading characters, then "…"
}

// Placeholder is what replaces a secret of the given kind.
func Placeholder(kind string) string { return "[REDACTED:" + kind + "]" }

// Report is what Scan found in one document: the findings, and the
// replacements Apply makes.
type Report struct {
	Findings []Finding
	// Size is the input's length, OutSize the output's (Apply's).
	Size, OutSize int64
	edits         []edit // merged, what Apply does
	raw           []edit // as found, fragment by fragment
	known         []knownSecret
	resume        *resumePoint
}

// knownSecret is a secret found, and the finding that found it first.
type knownSecret struct {
	secret string
	f      Finding
}

// resumePoint is the scan's state after the last fragment it scanned
// whole before the end (a fragment ends where the next one starts afresh):
// ScanAfter goes on from there in a document that begins with the same
// bytes, as a full scan would.
type resumePoint struct {
	pos                    int64
	line                   int
	findings, edits, known int
	sum                    []byte // SHA-256 of the input before pos
}

// edit replaces n bytes at off with Placeholder(kind).
type edit struct {
	off  int64
	n    int
	kind string
}

// Clean reports whether nothing is to be redacted: Apply would copy the
// input unchanged.
func (r *Report) Clean() bool { return len(r.edits) == 0 }

// Apply copies the document (rd must give the same bytes Scan read) to w
// with every secret replaced by its placeholder, and returns the bytes
// written (OutSize).
func (r *Report) Apply(rd io.Reader, w io.Writer) (int64, error) {
	var pos, n int64
	for _, e := range r.edits {
		c, err := io.CopyN(w, rd, e.off-pos)
		n += c
		if err != nil {
			return n, err
		}
		p, err := io.WriteString(w, Placeholder(e.kind))
		n += int64(p)
		if err != nil {
			return n, err
		}
		if _, err := io.CopyN(io.Discard, rd, int64(e.n)); err != nil {
			return n, err
		}
		pos = e.off + int64(e.n)
	}
	c, err := io.Copy(w, rd)
	n += c
	if err == nil && n != r.OutSize {
		err = errors.New("redact: the document changed between Scan and Apply")
	}
	return n, err
}

// Fragment sizes (see the package doc, "Memory").
const (
	fragSize = 32 << 10 // whole lines are scanned together up to this size
	window   = 32 << 10 // a longer line is scanned in windows of this size
	overlap  = 4 << 10  // overlapping by this much (longer than any single-token secret)
	pemMax   = 1 << 20  // a fragment with an open PEM block grows up to this size
)

// generic is gitleaks' rule for a value assigned to a name like KEY or
// TOKEN. Its regexp is by far the slowest (about 1 MB/s in Go's regexp
// package) and its keywords are in nearly every fragment of a transcript
// ("input_tokens"), so it runs only on windows around its keywords that
// hold every match it can make (genericWindows).
const generic = "generic-api-key"

var (
	// assigned is snap:assigned-secret (see the package doc): a name with
	// KEY, TOKEN, SECRET or PASSWORD in it, optionally quoted (also as
	// \" inside a JSON string), = or :, and the value.
	assigned = lazyRegexp(`(?i)[a-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pwd)[a-z0-9_.-]*(?:\\*["'])?[ \t]*[=:][ \t]*(?:\\*["'])?([A-Za-z0-9+/_.~=-]{8,200})`)
	// partialKey is snap:private-key-body: the body of a PEM private key
	// whose END line is not there (yet), as a checkpoint taken while the
	// key was being written holds it; gitleaks' private-key rule needs
	// the END line. Its newlines may be JSON escapes (adversarial A3).
	partialKey = lazyRegexp(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----((?:\\[rn]|[\r\n]|[A-Za-z0-9+/=]){32,})`)
	// assignedKeywords start every name assigned matches.
	assignedKeywords = []string{"key", "token", "secret", "passw", "pwd"}
)

// sites returns the windows of text around each keyword that op says is
// followed by an assignment of a value that could be a secret: from 51
// bytes before the keyword (the longest name the rules accept) to 180
// after the operator (the longest value), merged where they overlap.
func sites(text, lower string, keywords []string, op func(text, lower string, p int) int) [][2]int {
	var ws [][2]int
	for _, k := range keywords {
		for i := 0; ; {
			j := strings.Index(lower[i:], k)
			if j < 0 {
				break
			}
			p := i + j + len(k)
			if q := op(text, lower, p); q >= 0 {
				ws = append(ws, [2]int{max(0, i+j-51), min(len(lower), q+180)})
			}
			i = p
		}
	}
	return merge(ws)
}

// merge sorts windows and merges those that overlap or touch.
func merge(ws [][2]int) [][2]int {
	sort.Slice(ws, func(i, j int) bool { return ws[i][0] < ws[j][0] })
	var out [][2]int
	for _, w := range ws {
		if n := len(out); n > 0 && w[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], w[1])
			continue
		}
		out = append(out, w)
	}
	return out
}

// skip moves p past at most n bytes of s in set.
func skip(s string, p, n int, set string) int {
	for ; n > 0 && p < len(s) && strings.IndexByte(set, s[p]) >= 0; n-- {
		p++
	}
	return p
}

const (
	word   = "abcdefghijklmnopqrstuvwxyz0123456789_"
	blanks = " \t\r\n\f\v"
)

// valueAt reports whether the value starting at p (after the operator
// and its quoting) could pass an entropy check of bits per character: a
// run of at least min characters among at least 2^bits distinct ones
// (a string's entropy is at most log2 of its distinct characters). It
// is a necessary condition only; the rule decides.
func valueAt(text string, p, min int, bits float64) bool {
	var seen [256]bool
	distinct, n := 0, 0
	for ; p < len(text) && n < 200; p++ {
		c := text[p]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.=+/~-", c) >= 0) {
			break
		}
		if !seen[c] {
			seen[c] = true
			distinct++
		}
		n++
	}
	return n >= min && float64(distinct) >= math.Exp2(bits)
}

// genericWindows returns the windows of text (lower being its lower case,
// byte for byte) that hold every match generic-api-key's regexp can make,
// merged where they overlap or touch. Every match holds one of its
// keywords followed by (?:[ \t\w.-]{0,20})[\s'"]{0,3}, an operator
// (=, >, :{1,3}=, ||, :, =>, ?= or ,), up to 5 of [\x60'"\s=] and a value
// of at least 10 characters, and starts at most 50 characters of [\w.-]
// before its keyword. A window runs from there to 2 bytes past the run of
// value characters (the terminator \n is 2), for every keyword so
// followed, whatever its value's entropy: every match the regexp makes in
// the whole text lies in one window, and nothing before a window can
// reach into it, so the regexp finds the same matches in the windows as
// in the whole text (TestConformance checks it against gitleaks).
func genericWindows(lower string, present func(k string) bool) [][2]int {
	var ws [][2]int
	for _, k := range genericKeywords {
		if !present(k) {
			continue
		}
		for i := 0; ; {
			j := strings.Index(lower[i:], k)
			if j < 0 {
				break
			}
			kw := i + j
			if end := genericTail(lower, kw+len(k)); end >= 0 {
				from := kw
				for n := 0; n < 50 && from > 0 && isName(lower[from-1]); n++ {
					from--
				}
				ws = append(ws, [2]int{from, end})
			}
			i = kw + 1
		}
	}
	return merge(ws)
}

// genericTail is where a match of generic-api-key using the keyword
// ending at p must end by, -1 if none can.
func genericTail(lower string, p int) int {
	for n := 0; n < 20 && p < len(lower) && (isName(lower[p]) || lower[p] == ' ' || lower[p] == '\t'); n++ {
		p++
	}
	p = skip(lower, p, 3, blanks+"'\"")
	if p >= len(lower) || strings.IndexByte("=>:|?,", lower[p]) < 0 {
		return -1
	}
	// The rest of the operator and the quoting: '=' may also begin the value.
	v, eq := p+1, 0
	for n := 0; n < 8 && v < len(lower) && strings.IndexByte(":=>|`'\""+blanks, lower[v]) >= 0; n++ {
		if lower[v] == '=' {
			eq++
		}
		v++
	}
	e := v
	for e < len(lower) && (isName(lower[e]) || lower[e] == '=' || lower[e] == '+' || lower[e] == '/') {
		e++
	}
	if eq+e-v < 10 {
		return -1
	}
	return min(len(lower), e+2)
}

// isName: [a-z0-9_.-], \w with . and - in lower case.
func isName(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// assignedOp is the same for snap:assigned-secret: [a-z0-9_.-]*, a quote
// (maybe \-escaped), blanks, = or :, blanks, a quote, the value.
func assignedOp(text, lower string, p int) int {
	p = skip(lower, p, 64, word+".-")
	p = skip(lower, p, 8, "\\")
	p = skip(lower, p, 1, "'\"")
	p = skip(lower, p, 8, " \t")
	if p >= len(lower) || lower[p] != '=' && lower[p] != ':' {
		return -1
	}
	v := skip(lower, p+1, 8, " \t")
	v = skip(lower, v, 8, "\\")
	v = skip(lower, v, 1, "'\"")
	if !valueAt(text, v, 8, 3) {
		return -1
	}
	return p
}

// Scan reads a document and returns what Apply would redact in it.
func Scan(rd io.Reader) (*Report, error) {
	return scanSized(rd, readBuf)
}

// scanSized is Scan with a read buffer of size bytes (a short text needs
// no 64 KiB buffer: its allocation was most of the cost of Name).
func scanSized(rd io.Reader, size int) (*Report, error) {
	s, err := newScan(rd, size)
	if err != nil {
		return nil, err
	}
	return s.run()
}

// readBuf is the read buffer of a scan: a longer line is read in pieces.
const readBuf = 64 << 10

func newScan(rd io.Reader, size int) (*scan, error) {
	rs, err := loadRules()
	if err != nil {
		return nil, err
	}
	return &scan{rules: rs, known: map[string]Finding{}, br: bufio.NewReaderSize(rd, size), h: sha256.New(), lineNo: 1}, nil
}

// bufFor is the read buffer for a text of n bytes held in memory.
func bufFor(n int) int { return min(max(n+1, 16), readBuf) }

// ScanAfter is Scan for a document that may begin with the document prev
// reported on (a transcript that grew): when it does, up to the last
// fragment prev scanned whole, only the rest is scanned, and the report is
// the one Scan would give. open returns the document from its start; it is
// called again (and the whole document scanned) when the beginning differs.
func ScanAfter(prev *Report, open func() (io.ReadCloser, error)) (*Report, error) {
	rd, err := open()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if prev != nil && prev.resume != nil {
		r := prev.resume
		s, err := newScan(rd, readBuf)
		if err != nil {
			return nil, err
		}
		if n, err := io.CopyN(s.h, rd, r.pos); err == nil && n == r.pos && bytes.Equal(s.h.Sum(nil), r.sum) {
			s.pos, s.lineNo = r.pos, r.line
			s.rep.resume = r // until a fragment ends after it: a small append must not lose it
			s.rep.Findings = slices.Clone(prev.Findings[:r.findings])
			s.rep.raw = slices.Clone(prev.raw[:r.edits])
			for _, k := range prev.known[:r.known] {
				s.known[k.secret] = k.f
				s.order = append(s.order, k.secret)
			}
			s.br = bufio.NewReaderSize(rd, 64<<10)
			return s.run()
		}
		rd.Close()
		if rd, err = open(); err != nil {
			return nil, err
		}
		defer rd.Close()
	}
	return Scan(rd)
}

// Bytes redacts a document held in memory.
func Bytes(in []byte) ([]byte, *Report, error) {
	rep, err := scanSized(bytes.NewReader(in), bufFor(len(in)))
	if err != nil {
		return nil, nil, err
	}
	if rep.Clean() {
		return in, rep, nil
	}
	var out bytes.Buffer
	out.Grow(int(rep.OutSize))
	if _, err := rep.Apply(bytes.NewReader(in), &out); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), rep, nil
}

// Name redacts a short identifier: a message id, a label, a session or
// file name, a path. gitleaks' rules want a word boundary before a key, and
// an identifier joins its words with '_' (msg_AKIA… is no match as it
// stands), so each '_' is read as a space; the placeholders replace the
// secrets in s itself.
func Name(s string) (string, *Report, error) {
	rep, err := scanSized(strings.NewReader(strings.ReplaceAll(s, "_", " ")), bufFor(len(s)))
	if err != nil || rep.Clean() {
		return s, rep, err
	}
	var out strings.Builder
	if _, err := rep.Apply(strings.NewReader(s), &out); err != nil {
		return "", nil, err
	}
	return out.String(), rep, nil
}

type scan struct {
	rules *ruleSet
	br    *bufio.Reader
	known map[string]Finding // secrets found so far → the finding that found it first
	order []string           // known, in the order found
	rep   Report
	// The fragment being gathered: its bytes, offset and first line.
	buf  []byte
	off  int64
	line int
	// Where the next line starts, its number, and the hash of what is
	// before it.
	pos    int64
	lineNo int
	h      hash.Hash
}

func (s *scan) run() (*Report, error) {
	for {
		l, err := s.readLine()
		if len(l) > 0 {
			s.h.Write(l)
			whole := false // a fragment ends with this line
			if len(l) > fragSize {
				s.flush()
				s.buf, s.off, s.line = l, s.pos, s.lineNo
				s.flushLong()
				whole = true
			} else {
				if len(s.buf) == 0 {
					s.off, s.line = s.pos, s.lineNo
				}
				s.buf = append(s.buf, l...)
				if len(s.buf) >= fragSize && !openPEM(s.buf) || len(s.buf) >= pemMax {
					s.flush()
					whole = true
				}
			}
			s.pos += int64(len(l))
			s.lineNo++
			if whole && l[len(l)-1] == '\n' {
				s.rep.resume = &resumePoint{pos: s.pos, line: s.lineNo, findings: len(s.rep.Findings), edits: len(s.rep.raw),
					known: len(s.order), sum: s.h.Sum(nil)}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	s.flush()
	s.rep.Size = s.pos
	s.finish()
	return &s.rep, nil
}

// readLine returns the next line with its newline (the last may have none).
func (s *scan) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line = append(line, frag...)
			continue
		}
		if line == nil {
			line = append([]byte(nil), frag...)
		} else {
			line = append(line, frag...)
		}
		return line, err
	}
}

// openPEM reports whether a fragment ends inside a PEM block.
func openPEM(b []byte) bool {
	return bytes.LastIndex(b, []byte("-----BEGIN")) > bytes.LastIndex(b, []byte("-----END"))
}

// span is a secret found at [off, off+n) of the fragment.
type span struct {
	off, n int
	kind   string
	rule   string
}

// flush scans the gathered fragment.
func (s *scan) flush() {
	if len(s.buf) == 0 {
		return
	}
	text := string(s.buf)
	spans := s.detect(text, 0)
	s.record(text, spans)
	s.buf = s.buf[:0]
}

// flushLong scans one long line in overlapping windows.
func (s *scan) flushLong() {
	text := string(s.buf)
	var spans []span
	for start := 0; start < len(text); start += window - overlap {
		end := min(start+window, len(text))
		spans = append(spans, s.detect(text[start:end], start)...)
		if end == len(text) {
			break
		}
	}
	s.record(text, spans)
	s.buf = nil
}

// detect runs the rules on text (at offset base of the fragment) and
// returns every occurrence in it of each secret they found. A secret
// written with JSON \uXXXX escapes ("\u0041KIA...", "ghp\u005f...") is
// what any JSON reader shows: the rules run on the text with those escapes
// decoded too, and each secret found there is redacted where it stands in
// the raw text, escapes and all (adversarial A5).
func (s *scan) detect(text string, base int) []span {
	out := s.detectRaw(text, base)
	if !strings.Contains(text, `\u`) {
		return out
	}
	dec, offs := unescapeU(text)
	if len(dec) == len(text) {
		return out
	}
	for _, sp := range s.detectRaw(dec, 0) {
		a, b := offs[sp.off], offs[sp.off+sp.n]
		if strings.Contains(text[a:b], `\u`) { // (one written plainly is found above)
			out = append(out, span{base + a, b - a, sp.kind, sp.rule})
		}
	}
	return out
}

// unescapeU decodes the JSON \uXXXX escapes of text that stand for a
// printable ASCII character (an escape of a backslash, \\, is skipped
// whole); offs[i] is the offset in text of dec's byte i, and offs[len(dec)]
// is len(text).
func unescapeU(text string) (dec string, offs []int) {
	var b strings.Builder
	offs = make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		if text[i] == '\\' && i+1 < len(text) {
			if text[i+1] == 'u' && i+6 <= len(text) {
				if v, err := strconv.ParseUint(text[i+2:i+6], 16, 16); err == nil && v >= 0x20 && v < 0x7f {
					b.WriteByte(byte(v))
					offs = append(offs, i)
					i += 6
					continue
				}
			}
			b.WriteString(text[i : i+2]) // another escape, kept as it is
			offs = append(offs, i, i+1)
			i += 2
			continue
		}
		b.WriteByte(text[i])
		offs = append(offs, i)
		i++
	}
	return b.String(), append(offs, len(text))
}

// detectRaw runs the rules on text as it is.
func (s *scan) detectRaw(text string, base int) []span {
	lower := strings.ToLower(text)
	fs := s.rules.detect(text, lower)
	var out []span
	add := func(secret, kind, rule string) {
		if len(secret) < 4 {
			return
		}
		for i := 0; ; {
			j := strings.Index(text[i:], secret)
			if j < 0 {
				break
			}
			out = append(out, span{base + i + j, len(secret), kind, rule})
			i += j + len(secret)
		}
	}
	// Rule order fixes which kind wins where findings overlap.
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].rule.id < fs[j].rule.id })
	for _, f := range fs {
		add(strings.Trim(f.secret, "\n"), f.rule.id, "gitleaks:"+f.rule.id)
	}
	if strings.Contains(lower, "private key") {
		for _, m := range partialKey().FindAllStringSubmatchIndex(text, -1) {
			if !strings.HasPrefix(text[m[3]:], "-----END") { // a whole key is gitleaks' private-key
				add(text[m[2]:m[3]], "private-key", "snap:private-key-body")
			}
		}
	}
	for _, w := range sites(text, lower, assignedKeywords, assignedOp) {
		for _, m := range assigned().FindAllStringSubmatchIndex(text[w[0]:w[1]], -1) {
			if v := text[w[0]+m[2] : w[0]+m[3]]; plausible(v) {
				add(v, "assigned-secret", "snap:assigned-secret")
			}
		}
	}
	return out
}

// plausible: a value that looks like a secret rather than a word or a
// number: a letter, and a digit or both cases, and at least 3 bits of
// entropy a character.
func plausible(v string) bool {
	var lower, upper, digit bool
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	return (lower || upper) && (digit || lower && upper) && entropy(v) >= 3
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// record adds the fragment's findings (and every occurrence of secrets
// found before) to the report, with their edits made safe for JSON lines.
func (s *scan) record(text string, spans []span) {
	for _, secret := range s.order {
		f := s.known[secret]
		for i := 0; ; {
			j := strings.Index(text[i:], secret)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, len(secret), f.Kind, "snap:known-secret"})
			i += j + len(secret)
		}
	}
	if len(spans) == 0 {
		return
	}
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].off != spans[j].off {
			return spans[i].off < spans[j].off
		}
		return spans[i].n > spans[j].n
	})
	lines := lineCounter{text: text}
	jsonLines := map[int]*jsonLine{}
	for i, sp := range spans {
		if i > 0 && sp.off == spans[i-1].off && sp.n == spans[i-1].n {
			continue // the same secret twice (a window's overlap, a known secret found again)
		}
		secret := text[sp.off : sp.off+sp.n]
		f := Finding{Kind: sp.kind, Rule: sp.rule, Offset: s.off + int64(sp.off), Length: sp.n,
			Line: s.line + lines.before(sp.off), Fingerprint: fingerprint(secret), Masked: mask(secret)}
		s.rep.Findings = append(s.rep.Findings, f)
		if _, ok := s.known[secret]; !ok {
			s.known[secret] = f
			s.order = append(s.order, secret)
		}
		// One edit per line the secret is on (the newlines stay), each
		// kept to string contents on a JSON line.
		for a := sp.off; a < sp.off+sp.n; {
			ls := strings.LastIndexByte(text[:a], '\n') + 1
			le := strings.IndexByte(text[a:], '\n')
			if le < 0 {
				le = len(text)
			} else {
				le += a
			}
			b := min(sp.off+sp.n, le)
			if b > a {
				jl, ok := jsonLines[ls]
				if !ok {
					jl = parseJSONLine(text[ls:le])
					jsonLines[ls] = jl
				}
				for _, p := range jl.pieces(a-ls, b-ls) {
					s.rep.raw = append(s.rep.raw, edit{s.off + int64(ls+p[0]), p[1] - p[0], sp.kind})
				}
			}
			a = le + 1
		}
	}
}

// finish orders the findings and merges overlapping edits.
func (s *scan) finish() {
	for _, secret := range s.order {
		s.rep.known = append(s.rep.known, knownSecret{secret, s.known[secret]})
	}
	// Fragments come in order, and each one's findings and edits are
	// sorted: the sorts keep each fragment's where it is.
	sort.SliceStable(s.rep.Findings, func(i, j int) bool { return s.rep.Findings[i].Offset < s.rep.Findings[j].Offset })
	e := slices.Clone(s.rep.raw)
	sort.SliceStable(e, func(i, j int) bool { return e[i].off < e[j].off })
	var merged []edit
	for _, x := range e {
		if n := len(merged); n > 0 && x.off < merged[n-1].off+int64(merged[n-1].n) {
			last := &merged[n-1]
			last.n = int(max(last.off+int64(last.n), x.off+int64(x.n)) - last.off)
			continue
		}
		merged = append(merged, x)
	}
	s.rep.edits = merged
	s.rep.OutSize = s.rep.Size
	for _, x := range merged {
		s.rep.OutSize += int64(len(Placeholder(x.kind)) - x.n)
	}
}

// lineCounter counts newlines before an offset, moving forward.
type lineCounter struct {
	text   string
	pos, n int
}

func (c *lineCounter) before(off int) int {
	if off < c.pos {
		c.pos, c.n = 0, 0
	}
	c.n += strings.Count(c.text[c.pos:off], "\n")
	c.pos = off
	return c.n
}

func fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:6])
}

// mask shows at most 4 leading characters (a quarter of the secret at
// most), then "…".
func mask(secret string) string {
	n := min(4, utf8.RuneCountInString(secret)/4)
	var b strings.Builder
	for _, r := range secret {
		if n == 0 {
			break
		}
		b.WriteRune(r)
		n--
	}
	return b.String() + "…"
}
