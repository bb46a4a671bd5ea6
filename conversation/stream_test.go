package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of ParsePage and CountReader: the same view as Parse and the same
// count as Count, for every document the other tests use and many more,
// read in chunks of every size, with memory bounded by the page.

type namedDoc struct {
	name string
	data []byte
}

// streamEdgeDocs are documents whose detection depends on what the stream
// reads last or across a chunk: trailing data, white space at the end,
// broken values, objects that turn out to be JSONL.
var streamEdgeDocs = []string{
	`[{"role":"user","content":"a"}] trailing`,
	`[{"role":"user","content":"a"}]` + "\n{\"type\":\"user\",\"message\":{\"content\":\"b\"}}\n",
	"[1, 2   \n",
	"[{\"role\":\"user\",\"content\":\"abc\n",
	"[{\"role\":\"user\",\"content\":\"abc\n  ",
	"[{\"role\":\"user\",\"content\":\"abc\n  \"}]",
	"[1,23,456]", "[1,2", "[0x]", "[01]", "[1,]", "[,1]", "[", "[ ", "]", "[]  x", "[] \n\n ",
	"[\"x\", {\"role\":\"user\",\"content\":\"a\"}, tru",
	"[INFO] starting\n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n",
	"[{\"role\"\n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n",
	"{", "{}", "{ }\n", "{\"a\":1}\n", `{"type":"x"}`, `{"type":"user"}`, `{"role":"user","content":"hi"}`,
	"  \n\t{\"role\":\"user\",\"content\":\"hi\"}  \n\n",
	"\xef\xbb\xbf  [{\"role\":\"user\",\"content\":\"a\"}]",
	"\xef\xbb\xbf\xef\xbb\xbf[]",
	`{"type":"user","message":{"content":"a"}} xx`,
	"{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n  \n",
	"{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\ngarbage\n",
	"{\n \"messages\": [{\"role\":\"user\",\"content\":\"a\"}]\n}\ntrailing\n",
	"{\n \"messages\": [{\"role\":\"user\",\"content\":\"a\"}]\n}\n{\"type\":\"user\",\"message\":{\"content\":\"b\"}}\n",
	"{\n \"messages\": [{\"role\":\"user\",\"content\":\"a\"}, 3, \"x\",\n{\"type\":\"user\",\"message\":{\"content\":\"b\"}}\n",
	"{\n \"messages\": [{\"role\":\"user\",\"content\":\"a\"}, 3, \"x\",\n  {\"type\":\"user\",\"message\":{\"content\":\"b\"}}\n",
	`{"messages": [{"role":"user","content":"a"}, {"role":"user","cont`,
	"{\"messages\": [{\"role\":\"user\",\"content\":\"a\"}] \n",
	`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"system":"be brief"}`,
	`{"system":"be brief","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`,
	`{"system":null,"messages":[{"role":"user","content":"a"}]}`,
	`{"system":"s","messages":[{"role":"user","content":"a"}],"system":null}`,
	`{"messages":[{"role":"user","content":"a"}],"messages":5,"history":[{"role":"user","content":"h"}]}`,
	`{"history":[{"role":"user","content":"h"}],"messages":[{"role":"user","content":"m"}],"trajectory":[{"action":"ls"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"messages":5,"type":"user","message":{"content":"x"}}`,
	`{"trajectory":[{"action":"ls","observation":"a"}, 7]}`,
	`{"messages":{"role":"user"}}`,
	`{"messages":[1,2,3],"system":{"type":"text","text":"sys"}}`,
	"{\n  \"type\": \"assistant\",\n  \"message\": {\"id\": \"m\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}]}\n} trailing",
	"{\"type\":\"user\" \"message\":1}",
	"{\"type\":\"user\"\n\"message\":1}",
	"{\"a\":\"b\n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}",
	"{\"a\" 1}\n\n",
	"{\"a\":",
	"hello", "hello world this is a longer text of more than twenty runes\n", "é\u00e9\u4e16\u754c",
	"x\n \n{\"type\":\"user\",\"message\":{\"content\":\"a\"}}",
	"\"str\"", "42", "-", "null\n", "tru",
	"\n\n\n", " ", "",
	"{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n\n\n{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":\"b\"}}\r\n" +
		"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"ok\"}]}}\n" +
		"{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"Edit\",\"input\":{}}]}}\n" +
		"{\"type\":\"mystery\"}\n{\"type\":\"mystery\"}{\"foo\":1}\n{\"type\":\"assistant\",\"uuid\":\"x\"}\n[1]\n" +
		"{\"type\":\"assistant\",\"message\":{\"id\":\"m2\",\"content\":\"c\"}}\n{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":\"d\"}}\n" +
		"{\"type\":\"other\"}\n{\"role\":\"user\",\"content\":\"bare\"}\n{\"type\":\"user\",\"message\":{\"cont",
}

// nestedForTest is an array nested deeper than the scanner allows, as an
// element and as a member.
func nestedForTest() []namedDoc {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	return []namedDoc{
		{"deep element", []byte(`[{"role":"user","content":"a"},` + deep + `]`)},
		{"deep member", []byte(`{"messages":[{"role":"user","content":"a"}],"x":` + deep + `}`)},
		{"deep first element", []byte(`[` + deep + `]`)},
	}
}

// fuzzCorpusForTest returns the inputs stored in testdata/fuzz/FuzzParse.
func fuzzCorpusForTest(t testing.TB) []namedDoc {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []namedDoc
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s: not a one-value fuzz corpus file", e.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, namedDoc{"fuzz corpus " + e.Name(), []byte(s)})
	}
	return out
}

// streamCorpusForTest is every document of this package's tests: TestParse's
// cases, the fixtures, the real transcripts, the fuzz seeds and corpus,
// the edge cases above and a generated transcript of 1 MiB.
func streamCorpusForTest(t testing.TB) []namedDoc {
	var out []namedDoc
	for _, tc := range parseCases() {
		if tc.file != "" {
			out = append(out, namedDoc{"TestParse " + tc.name, fixture(t, tc.file)})
		} else {
			out = append(out, namedDoc{"TestParse " + tc.name, []byte(tc.data)})
		}
	}
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		out = append(out, namedDoc{"fixture " + e.Name(), fixture(t, e.Name())})
	}
	if entries, err := os.ReadDir(realdataDir); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(realdataDir, e.Name())); err == nil && !e.IsDir() {
				out = append(out, namedDoc{"realdata " + e.Name(), b})
			}
		}
	} else {
		t.Logf("realdata not found at %s: not compared", realdataDir)
	}
	for i, s := range fuzzParseSeeds {
		out = append(out, namedDoc{fmt.Sprintf("fuzz seed %d", i), []byte(s)})
	}
	out = append(out, fuzzCorpusForTest(t)...)
	for i, s := range streamEdgeDocs {
		out = append(out, namedDoc{fmt.Sprintf("edge %d %.30q", i, s), []byte(s)})
	}
	out = append(out, nestedForTest()...)
	out = append(out, namedDoc{"generated 1 MiB transcript", bigTranscript(t, 1<<20)})
	return out
}

// chunkReaderForTest returns the bytes of data in reads of sizes drawn
// from [1, max]: the stream must not depend on how reads are split.
type chunkReaderForTest struct {
	data []byte
	r    *rand.Rand
	max  int
}

func (c *chunkReaderForTest) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.r.IntN(c.max))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// wantProblemsForTest is what ParsePage returns of Parse's Problems.
func wantProblemsForTest(p []Problem) []Problem {
	if len(p) <= maxProblems {
		return p
	}
	return capped(nil, p, false)
}

// checkPageForTest compares ParsePage(data, offset, limit), read through r,
// with Parse's view of data.
func checkPageForTest(t *testing.T, what string, want *Conversation, r io.Reader, offset, limit int) {
	t.Helper()
	got, total, err := ParsePage(r, offset, limit)
	if err != nil {
		t.Fatalf("%s: ParsePage(%d, %d): %v", what, offset, limit, err)
	}
	n := len(want.Messages)
	if total != n {
		t.Fatalf("%s: ParsePage(%d, %d): total %d, Parse has %d messages", what, offset, limit, total, n)
	}
	if got.Format != want.Format {
		t.Fatalf("%s: ParsePage(%d, %d): format %q, Parse %q", what, offset, limit, got.Format, want.Format)
	}
	if wp := wantProblemsForTest(want.Problems); !reflect.DeepEqual(got.Problems, wp) {
		t.Fatalf("%s: ParsePage(%d, %d): problems\n%+v\nParse:\n%+v", what, offset, limit, got.Problems, wp)
	}
	lo, hi := min(offset, n), n
	if limit > 0 {
		hi = min(n, offset+limit)
	}
	wm := want.Messages[lo:max(lo, hi)]
	if got.Messages == nil || !reflect.DeepEqual(got.Messages, wm) {
		if len(got.Messages) != len(wm) {
			t.Fatalf("%s: ParsePage(%d, %d): %d messages, want %d", what, offset, limit, len(got.Messages), len(wm))
		}
		for i := range wm {
			if !reflect.DeepEqual(got.Messages[i], wm[i]) {
				t.Fatalf("%s: ParsePage(%d, %d): message %d\n%+v\nParse:\n%+v", what, offset, limit, i, got.Messages[i], wm[i])
			}
		}
		t.Fatalf("%s: ParsePage(%d, %d): messages %#v, want %#v", what, offset, limit, got.Messages, wm)
	}
}

// checkStreamForTest checks CountReader and ParsePage, for several pages,
// against Count and Parse on data.
func checkStreamForTest(t *testing.T, name string, data []byte, r *rand.Rand, thorough bool) {
	t.Helper()
	want := Parse(data)
	n := len(want.Messages)
	readers := []func() io.Reader{func() io.Reader { return bytes.NewReader(data) }}
	if thorough {
		readers = append(readers,
			func() io.Reader { return &chunkReaderForTest{data, r, 1} },
			func() io.Reader { return &chunkReaderForTest{data, r, 7} },
			func() io.Reader { return &chunkReaderForTest{data, r, 200} })
	}
	for k, reader := range readers {
		what := fmt.Sprintf("%s (reader %d)", name, k)
		count, err := CountReader(reader())
		if err != nil || count != Count(data) {
			t.Fatalf("%s: CountReader = %d, %v; Count = %d", what, count, err, Count(data))
		}
		checkPageForTest(t, what, want, reader(), 0, 0)
		if k > 1 && n > 30 {
			continue // pages of a long document are checked with the first readers
		}
		pages := [][2]int{{0, 1}, {1, 2}, {2, 0}, {n / 2, 3}, {max(0, n-1), 1}, {n, 1}, {n + 2, 0}, {0, n}}
		if thorough || n < 20 {
			pages = append(pages, [2]int{r.IntN(n + 2), r.IntN(n + 2)})
		}
		for _, pg := range pages {
			checkPageForTest(t, what, want, reader(), pg[0], pg[1])
		}
	}
}

func TestParsePageMatchesParse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, d := range streamCorpusForTest(t) {
		checkStreamForTest(t, d.name, d.data, r, len(d.data) < 64<<10)
	}
}

// The corpus, each document broken a few times over (bytes changed to
// JSON syntax, cut, lines split): the broken documents are where detection
// takes its odd paths.
func TestParsePageMatchesParseMutated(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	const syntax = "{}[]\",:\n 0a\\"
	for _, d := range streamCorpusForTest(t) {
		if len(d.data) == 0 || len(d.data) > 64<<10 {
			continue
		}
		for k := 0; k < 8; k++ {
			b := bytes.Clone(d.data)
			for m := 0; m < 1+r.IntN(4) && len(b) > 0; m++ {
				j := r.IntN(len(b))
				switch r.IntN(4) {
				case 0:
					b[j] = syntax[r.IntN(len(syntax))]
				case 1:
					b = append(b[:j], b[j+1:]...)
				case 2:
					b = b[:j]
				default:
					b = append(b[:j], append([]byte(strings.Repeat("\n", 1+r.IntN(2))), b[j:]...)...)
				}
			}
			checkStreamForTest(t, fmt.Sprintf("%s, broken %d", d.name, k), b, r, len(b) < 8<<10)
		}
	}
}

// Every message of a JSONL transcript, as a page of its own: the records
// merged into a message (by message.id, before or after other messages)
// are merged into it whatever the page.
func TestParsePageEveryMessage(t *testing.T) {
	for _, d := range []namedDoc{
		{"excerpt", fixture(t, "claude_f5e7d3c25b68_lines1-30.jsonl")},
		{"broken", fixture(t, "broken.jsonl")},
		{"edge", []byte(streamEdgeDocs[len(streamEdgeDocs)-1])},
	} {
		want := Parse(d.data)
		for i := range want.Messages {
			checkPageForTest(t, d.name, want, bytes.NewReader(d.data), i, 1)
		}
	}
}

// Problems past maxProblems are left out, with one Problem saying so; the
// first maxProblems are Parse's, in Parse's order (records of unknown type
// reported on the line of the first, among the others).
func TestParsePageManyProblems(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3*maxProblems; i++ {
		switch i % 3 {
		case 0:
			b.WriteString("not json\n")
		case 1:
			fmt.Fprintf(&b, "{\"type\":\"kind-%d\"}\n", i)
		default:
			b.WriteString("{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\n")
		}
	}
	for _, data := range []string{b.String(), "[" + strings.Repeat("1,", 2*maxProblems) + "{}]"} {
		want := Parse([]byte(data))
		if len(want.Problems) <= maxProblems {
			t.Fatalf("the test needs more than %d problems, Parse has %d", maxProblems, len(want.Problems))
		}
		got, total, err := ParsePage(strings.NewReader(data), 0, 0)
		if err != nil || total != len(want.Messages) {
			t.Fatalf("ParsePage: total %d, %v", total, err)
		}
		if len(got.Problems) != maxProblems+1 || !reflect.DeepEqual(got.Problems[:maxProblems], want.Problems[:maxProblems]) ||
			!strings.Contains(got.Problems[maxProblems].Message, "not shown") {
			t.Fatalf("%d problems, last %+v", len(got.Problems), got.Problems[len(got.Problems)-1])
		}
		checkPageForTest(t, "many problems", want, strings.NewReader(data), 5, 3)
	}
}

// With records longer than the limit: JSONL lines and values that the view
// needs are refused with ErrRecordTooLarge; a long line of an object
// document whose values are short is not a record and reads as Parse does.
func TestParsePageRecordLimit(t *testing.T) {
	defer func(old int) { recordLimit = old }(recordLimit)
	recordLimit = 1000
	long := strings.Repeat("x", 2000)
	rec := func(text string) string {
		return `{"type":"user","message":{"content":"` + text + `"}}` + "\n"
	}
	for _, data := range []string{
		rec("a") + rec(long) + rec("b"),
		rec("a") + strings.Repeat(" ", 3000) + "\n" + rec("b") + "{\"x\":\"" + long,
		`[{"role":"user","content":"` + long + `"}]`,
		`{"messages":[{"role":"user","content":"` + long + `"}]}`,
		`{"other":"` + long + `","messages":[]}`,
		`{"type":"user","message":{"content":"a"},"pad":"` + strings.Repeat("y", 900) + `","more":"` + strings.Repeat("z", 900) + `"}`,
		"{\n\"messages\": [{\"role\":\"user\",\"content\":\"a\"}]\n}\n" + rec(long),
	} {
		_, _, err := ParsePage(strings.NewReader(data), 0, 0)
		if !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("%.60q...: ParsePage: %v, want ErrRecordTooLarge", data, err)
		}
		if _, err := CountReader(strings.NewReader(data)); !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("%.60q...: CountReader: %v, want ErrRecordTooLarge", data, err)
		}
	}
	// Long lines that are not records of the view.
	var msgs []string
	for i := 0; i < 100; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"message %d"}`, i))
	}
	r := rand.New(rand.NewPCG(2, 2))
	for _, data := range []string{
		`{"messages":[` + strings.Join(msgs, ",") + `]}`,
		`[` + strings.Join(msgs, ",") + `]`,
		"{\"messages\":[" + strings.Join(msgs, ",") + "]}\n" + strings.Repeat(" ", 3000) + "\n",
		"{\"messages\":[" + strings.Join(msgs, ",") + "\n],\n" + strings.Repeat(`"k":1,`, 300) + "\"z\":2}\nnot json\n",
		`[` + strings.Repeat(" ", 3000) + `{"role":"user","content":"a"}]`,
		rec("a") + strings.Repeat(" ", 3000) + "\n" + rec("b"),
	} {
		if len(data) <= recordLimit {
			t.Fatalf("the test needs a document longer than %d bytes", recordLimit)
		}
		checkStreamForTest(t, fmt.Sprintf("%.40q", data), []byte(data), r, true)
	}
}

// A message array on the first line of an object document (an API request
// body written compact) is not read as a JSONL record past 1 MiB: the view
// is Parse's unless it is JSONL (trailing records), which then fails.
func TestParsePageCompactObject(t *testing.T) {
	var msgs []string
	for i := 0; len(msgs)*60 < 2<<20; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"message %d of a long compact body"}`, i))
	}
	doc := `{"model":"m","system":"s","messages":[` + strings.Join(msgs, ",") + `]}`
	r := rand.New(rand.NewPCG(3, 3))
	for _, data := range []string{doc, doc + "\n", doc[:len(doc)-1000], "  " + doc + "\n\n"} {
		checkStreamForTest(t, fmt.Sprintf("compact %d bytes", len(data)), []byte(data), r, false)
	}
	for _, data := range []string{
		doc + " trailing", // JSONL: its first line is a record
		doc + "\n" + `{"type":"user","message":{"content":"a"}}`,
		doc[:len(doc)-1000] + "\n" + `{"type":"user","message":{"content":"a"}}`,
	} {
		if _, _, err := ParsePage(strings.NewReader(data), 0, 0); !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("a compact object then JSONL records: %v, want ErrRecordTooLarge", err)
		}
	}
}

// errReaderForTest fails after its data.
type errReaderForTest struct{ data []byte }

var errReadForTest = errors.New("read failed")

func (e *errReaderForTest) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, errReadForTest
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestParsePageReadError(t *testing.T) {
	for _, data := range []string{"", "[", `{"messages":[`, `{"type":"user","message":{"content":"a"}}` + "\n", "text"} {
		if _, _, err := ParsePage(&errReaderForTest{[]byte(data)}, 0, 0); !errors.Is(err, errReadForTest) {
			t.Errorf("%q: ParsePage: %v, want the read error", data, err)
		}
		if _, err := CountReader(&errReaderForTest{[]byte(data)}); !errors.Is(err, errReadForTest) {
			t.Errorf("%q: CountReader: %v, want the read error", data, err)
		}
	}
	if _, _, err := ParsePage(strings.NewReader("[]"), -1, 0); err == nil {
		t.Error("ParsePage with a negative offset did not fail")
	}
}

// claudeReaderForTest generates a Claude Code transcript of about size
// bytes, record by record: a prompt, then steps of an assistant message
// written as three records (text, tool_use, and a block repeated after the
// tool result, which merges into it) and a tool result carrying a large
// toolUseResult. It holds one record at a time.
type claudeReaderForTest struct {
	size, n  int
	step     int
	buf      []byte
	messages int // messages the view has
}

func (c *claudeReaderForTest) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.n >= c.size {
			return 0, io.EOF
		}
		c.buf = c.next()
		c.n += len(c.buf)
	}
	k := copy(p, c.buf)
	c.buf = c.buf[k:]
	return k, nil
}

func (c *claudeReaderForTest) next() []byte {
	i := c.step
	c.step++
	if i == 0 {
		c.messages++
		return []byte(`{"type":"user","uuid":"u0","message":{"role":"user","content":"Refactor the parser."}}` + "\n")
	}
	id := fmt.Sprintf("msg_%08d", i)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"assistant","uuid":"a%d","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"Step %d: reading the file."}]}}`+"\n", i, id, i)
	fmt.Fprintf(&b, `{"type":"assistant","uuid":"b%d","message":{"id":"%s","role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/src/f%d.go"}}]}}`+"\n", i, id, i, i)
	fmt.Fprintf(&b, `{"type":"user","uuid":"r%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"ok"}]},"toolUseResult":{"file":{"content":"%s"}}}`+"\n",
		i, i, strings.Repeat("package main\\nfunc f() {}\\n", 2000))
	fmt.Fprintf(&b, `{"type":"assistant","uuid":"c%d","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"Done with step %d."}]}}`+"\n", i, id, i)
	c.messages += 2
	return b.Bytes()
}

// objectDocReaderForTest generates an object document of about size bytes
// whose "messages" array holds messages of 10 KB: pretty-printed (a
// Gemini CLI session), or compact on one line (an API request body).
type objectDocReaderForTest struct {
	size, n, i int
	compact    bool
	buf        []byte
	messages   int
}

func (g *objectDocReaderForTest) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case g.i < 0:
			return 0, io.EOF
		case g.i == 0 && g.compact:
			g.buf = []byte(`{"model":"m","messages":[`)
		case g.i == 0:
			g.buf = []byte("{\n  \"sessionId\": \"s\",\n  \"messages\": [\n")
		case g.n >= g.size:
			g.buf, g.i = []byte("\n  ]\n}\n"), -2
		default:
			sep, nl := ",\n    ", "\n      "
			if g.compact {
				sep, nl = ",", ""
			}
			if g.i == 1 {
				sep = ""
			}
			g.buf = fmt.Appendf(nil, `%s{%s"id": "m%d",%s"type": "gemini",%s"content": "%s"}`, sep, nl, g.i, nl, nl, strings.Repeat("text ", 2000))
			g.messages++
		}
		g.i++
		g.n += len(g.buf)
	}
	k := copy(p, g.buf)
	g.buf = g.buf[k:]
	return k, nil
}

// peakHeapForTest runs fn and returns by how much the heap (its objects,
// alive or not yet swept, sampled every millisecond, with the GC at 20%
// growth so that garbage does not hide what fn holds) grew above what it
// held before.
func peakHeapForTest(fn func()) (uint64, time.Duration) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	before := read()
	peak := before
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	fn()
	took := time.Since(start)
	close(done)
	wg.Wait()
	return max(peak, read()) - before, took
}

// A page of a 200 MB transcript, and its count, take a few MiB of heap:
// the document is never held.
func TestParsePageMemory(t *testing.T) {
	size := 200 << 20
	if testing.Short() {
		size = 16 << 20
	}
	const maxHeap = 16 << 20
	// The measure sees a document held whole.
	heap, _ := peakHeapForTest(func() {
		b, _ := io.ReadAll(&claudeReaderForTest{size: 32 << 20})
		runtime.GC()
		runtime.KeepAlive(b)
	})
	if heap < 32<<20 {
		t.Fatalf("reading 32 MiB whole grew the heap by %d MiB: the measure does not work", heap>>20)
	}

	gen := &claudeReaderForTest{size: size}
	var c *Conversation
	var total int
	var err error
	heap, took := peakHeapForTest(func() { c, total, err = ParsePage(gen, 0, 2) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ParsePage(0, 2) of %d MiB: heap grew by %.1f MiB, %v", gen.n>>20, float64(heap)/(1<<20), took)
	if total != gen.messages || len(c.Messages) != 2 || c.Messages[1].Text != "Step 1: reading the file.\nDone with step 1." ||
		len(c.Messages[1].ToolCalls) != 1 || len(c.Problems) != 0 {
		t.Fatalf("total %d (want %d), page %+v, problems %v", total, gen.messages, c.Messages, c.Problems)
	}
	if heap > maxHeap {
		t.Errorf("ParsePage of %d MiB grew the heap by %d MiB, want under %d MiB", gen.n>>20, heap>>20, maxHeap>>20)
	}

	gen = &claudeReaderForTest{size: size}
	var n int
	heap, took = peakHeapForTest(func() { n, err = CountReader(gen) })
	if err != nil || n != gen.messages {
		t.Fatalf("CountReader = %d, %v; want %d", n, err, gen.messages)
	}
	t.Logf("CountReader of %d MiB: heap grew by %.1f MiB, %v", gen.n>>20, float64(heap)/(1<<20), took)
	if heap > maxHeap {
		t.Errorf("CountReader of %d MiB grew the heap by %d MiB, want under %d MiB", gen.n>>20, heap>>20, maxHeap>>20)
	}

	for _, compact := range []bool{false, true} {
		gen := &objectDocReaderForTest{size: size / 2, compact: compact}
		heap, took = peakHeapForTest(func() { c, total, err = ParsePage(gen, 0, 2) })
		if err != nil || total != gen.messages || len(c.Messages) != 2 || c.Messages[1].ID != "m2" {
			t.Fatalf("compact %v: ParsePage: %v, total %d (want %d), page %v", compact, err, total, gen.messages, c.Messages)
		}
		t.Logf("ParsePage(0, 2) of an object document of %d MiB (compact %v): heap grew by %.1f MiB, %v", gen.n>>20, compact, float64(heap)/(1<<20), took)
		if heap > maxHeap {
			t.Errorf("ParsePage of an object document of %d MiB (compact %v) grew the heap by %d MiB, want under %d MiB", gen.n>>20, compact, heap>>20, maxHeap>>20)
		}
	}

	// The last page, and a page of the same document in memory, agree with Parse.
	small := &claudeReaderForTest{size: 2 << 20}
	data, _ := io.ReadAll(small)
	want := Parse(data)
	checkPageForTest(t, "generated", want, bytes.NewReader(data), len(want.Messages)-3, 0)
	checkPageForTest(t, "generated", want, bytes.NewReader(data), 10, 5)
}

// FuzzParsePage checks ParsePage and CountReader against Parse and Count,
// for any document, page and split of the reads.
func FuzzParsePage(f *testing.F) {
	for _, s := range fuzzParseSeeds {
		f.Add([]byte(s), uint8(0), uint8(0), uint8(0))
	}
	for i, s := range streamEdgeDocs {
		f.Add([]byte(s), uint8(i%3), uint8(i%2), uint8(i))
	}
	entries, _ := os.ReadDir(fixtureDir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name())); err == nil && len(b) < 64<<10 {
			f.Add(b, uint8(1), uint8(2), uint8(5))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, offset, limit, split uint8) {
		orig := string(data)
		want := Parse(data)
		read := func() io.Reader {
			if split == 0 {
				return bytes.NewReader(data)
			}
			return &chunkReaderForTest{data, rand.New(rand.NewPCG(uint64(split), 0)), int(split)}
		}
		count, err := CountReader(read())
		if err != nil || count != len(want.Messages) {
			t.Fatalf("CountReader = %d, %v; Parse has %d messages", count, err, len(want.Messages))
		}
		checkPageForTest(t, "fuzz", want, read(), int(offset%16), int(limit%8))
		if string(data) != orig {
			t.Fatal("the input changed")
		}
	})
}
