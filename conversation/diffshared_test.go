package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// randomRecordForTest is one line of a Claude Code-like transcript: a
// prompt, an assistant block (of message id among ids, often the last
// one, sometimes an old one), a tool result, bookkeeping, a bare message,
// a broken line, a blank line or two records on a line.
func randomRecordForTest(r *rand.Rand, ids *[]string) string {
	newID := func() string {
		id := fmt.Sprintf("msg_%d", r.Uint32())
		*ids = append(*ids, id)
		return id
	}
	pick := func() string {
		switch {
		case len(*ids) == 0:
			return newID()
		case r.IntN(10) < 6:
			return (*ids)[len(*ids)-1]
		case r.IntN(4) == 0:
			return (*ids)[r.IntN(len(*ids))]
		}
		return newID()
	}
	word := func() string { return []string{"a", "bé", "x\\ny", "tool", "世界", "ok"}[r.IntN(6)] }
	switch r.IntN(14) {
	case 0, 1:
		return fmt.Sprintf(`{"type":"user","uuid":"u%d","timestamp":"t%d","message":{"role":"user","content":"%s %s"}}`, r.IntN(1000), r.IntN(9), word(), word())
	case 2, 3, 4:
		return fmt.Sprintf(`{"type":"assistant","uuid":"a%d","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"%s"}]}}`, r.IntN(1000), pick(), word())
	case 5:
		return fmt.Sprintf(`{"type":"assistant","message":{"id":"%s","content":[{"type":"tool_use","id":"toolu_%d","name":"Edit","input":{"file_path":"%s", "n": %d}}]}}`, pick(), r.IntN(5), word(), r.IntN(3))
	case 6:
		return fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]},"toolUseResult":{"x":"%s"}}`, r.IntN(5), word(), strings.Repeat("z", r.IntN(300)))
	case 7:
		return fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":"%s"}}`, word())
	case 8:
		return `{"type":"progress","data":{}}`
	case 9:
		return fmt.Sprintf(`{"role":"user","content":"%s"}`, word())
	case 10:
		return []string{`{"type":"user","message":`, `not json`, `[1,2]`, `{"type":"odd"}`, `  `, ``}[r.IntN(6)]
	case 11:
		return fmt.Sprintf(`{"type":"user","message":{"content":"%s"}} {"type":"assistant","message":{"id":"%s","content":"%s"}}`, word(), pick(), word())
	case 12:
		return fmt.Sprintf("{\"type\":\"assistant\",\"message\":{\"id\":\"%s\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\"}]}}\r", pick())
	}
	return ""
}

func randomTranscriptForTest(r *rand.Rand, lines int, ids *[]string) []byte {
	var b bytes.Buffer
	for range lines {
		b.WriteString(randomRecordForTest(r, ids))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// diffPairsForTest returns pairs of documents that share a prefix:
// appended, edited in the middle, truncated, identical, one empty.
func diffPairsForTest(r *rand.Rand, a []byte, ids []string) [][2][]byte {
	more := randomTranscriptForTest(r, 1+r.IntN(6), &ids)
	edit := func() []byte {
		if len(a) == 0 {
			return more
		}
		i := r.IntN(len(a))
		out := append(append([]byte{}, a[:i]...), []byte(randomRecordForTest(r, &ids))...)
		return append(out, a[min(len(a), i+r.IntN(50)):]...)
	}
	cut := a
	if len(a) > 0 {
		cut = a[:r.IntN(len(a))]
	}
	noNL := bytes.TrimRight(a, "\n")
	return [][2][]byte{
		{a, append(append([]byte{}, a...), more...)},
		{append(append([]byte{}, a...), more...), a},
		{noNL, append(append([]byte{}, noNL...), more...)}, // completes the last line
		{a, edit()},
		{edit(), edit()},
		{a, cut},
		{cut, a},
		{a, a},
		{a, nil},
		{nil, a},
		{append([]byte("\xef\xbb\xbf"), a...), append([]byte("\xef\xbb\xbf"), more...)},
	}
}

func commonPrefixForTest(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// checkDiffSharedForTest compares DiffShared, given shared bytes from 0 to
// all that a and b share, with Diff of whole views: the same result, the
// same JSON and the same text. It returns how many took the shortcut.
func checkDiffSharedForTest(t *testing.T, what string, a, b []byte, r *rand.Rand) int {
	t.Helper()
	want := Diff(Parse(a), Parse(b))
	var wantText, wantJSON bytes.Buffer
	if err := want.Format(&wantText); err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(&wantJSON).Encode(want); err != nil {
		t.Fatal(err)
	}
	l := commonPrefixForTest(a, b)
	fast := 0
	for _, shared := range []int{l, r.IntN(l + 1), l / 2, 0} {
		got, ok, err := DiffShared(bytes.NewReader(a), int64(len(a)), bytes.NewReader(b), int64(len(b)), int64(shared))
		if err != nil {
			t.Fatalf("%s: DiffShared(shared %d): %v", what, shared, err)
		}
		if !ok {
			continue
		}
		fast++
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DiffShared(shared %d of %d):\n%+v\nDiff:\n%+v\na=%q\nb=%q", what, shared, l, got, want, a, b)
		}
		var text, js bytes.Buffer
		if err := got.Format(&text); err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&js).Encode(got); err != nil {
			t.Fatal(err)
		}
		if text.String() != wantText.String() || js.String() != wantJSON.String() {
			t.Fatalf("%s: DiffShared(shared %d): output differs from Diff's", what, shared)
		}
	}
	return fast
}

// TestDiffSharedMatchesDiff compares DiffShared with Diff of Parse on many
// pairs of documents that share a prefix: random Claude Code-like
// transcripts (assistant messages split over records, some merging into
// old messages, broken and blank lines, records run together, a byte order
// mark), every document of the stream tests (fixtures, real transcripts
// under /work/shared/realdata, fuzz seeds and corpus, edge cases), each
// appended to, edited, truncated, compared with itself and with nothing.
func TestDiffSharedMatchesDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	fast, pairs := 0, 0
	for i := range 400 {
		var ids []string
		a := randomTranscriptForTest(r, r.IntN(40), &ids)
		for k, p := range diffPairsForTest(r, a, ids) {
			if checkDiffSharedForTest(t, fmt.Sprintf("random %d pair %d", i, k), p[0], p[1], r) > 0 {
				fast++
			}
			pairs++
		}
	}
	t.Logf("random transcripts: %d pairs, %d took the shortcut", pairs, fast)
	if fast < pairs/2 {
		t.Fatalf("random transcripts: only %d pairs of %d took the shortcut", fast, pairs)
	}
	corpus := streamCorpusForTest(t)
	for _, d := range corpus {
		var ids []string
		for k, p := range diffPairsForTest(r, d.data, ids) {
			checkDiffSharedForTest(t, fmt.Sprintf("%s pair %d", d.name, k), p[0], p[1], r)
		}
	}
	// Documents of the corpus that share their start: each with the next.
	for i := 1; i < len(corpus); i++ {
		checkDiffSharedForTest(t, corpus[i-1].name+" / "+corpus[i].name, corpus[i-1].data, corpus[i].data, r)
	}
}

// TestDiffSharedRealGrowth replays the growth of the real Claude Code
// transcripts: every prefix cut at a line against the whole, and against
// the next cut, as checkpoints of a growing session see them.
func TestDiffSharedRealGrowth(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, name := range []string{"entire-cli_f5e7d3c25b68_claude.jsonl", "entire-cli_8df6319ef9a6_claude.jsonl"} {
		data := realdata(t, name)
		var cuts []int
		for i, c := range data {
			if c == '\n' && r.IntN(4) == 0 {
				cuts = append(cuts, i+1)
			}
		}
		prev, fast := 0, 0
		for _, c := range cuts {
			if checkDiffSharedForTest(t, fmt.Sprintf("%s [:%d] / [:%d]", name, prev, c), data[:prev], data[:c], r) > 0 {
				fast++
			}
			prev = c
		}
		if fast < len(cuts)-2 {
			t.Fatalf("%s: %d of %d steps took the shortcut", name, fast, len(cuts))
		}
		checkDiffSharedForTest(t, name+" mid-line", data[:len(data)/2], data, r)
	}
}

// countingReaderAt counts the bytes read below a mark.
type countingReaderAt struct {
	r     io.ReaderAt
	below int64
	n     int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < c.below {
		c.n += min(int64(len(p)), c.below-off)
	}
	return c.r.ReadAt(p, off)
}

// TestDiffSharedReadsSharedOnce checks what DiffShared reads: the shared
// bytes once, from a, and none of them from b, and that what it allocates
// does not grow with them beyond the id table (a transcript of 20
// steps and one of 200 differ by less than a tenth of the bigger's
// bytes in allocations).
func TestDiffSharedReadsSharedOnce(t *testing.T) {
	gen := func(steps int) []byte {
		var b bytes.Buffer
		c := &claudeReaderForTest{size: 1 << 62}
		for range steps {
			b.Write(c.next())
		}
		return b.Bytes()
	}
	tail := []byte(`{"type":"user","message":{"role":"user","content":"one more"}}` + "\n")
	for _, steps := range []int{20, 200} {
		a := gen(steps)
		b := append(append([]byte{}, a...), tail...)
		ca := &countingReaderAt{r: bytes.NewReader(a), below: int64(len(a))}
		cb := &countingReaderAt{r: bytes.NewReader(b), below: int64(len(a))}
		got, ok, err := DiffShared(ca, int64(len(a)), cb, int64(len(b)), int64(len(a)))
		if err != nil || !ok {
			t.Fatalf("DiffShared: %v, %v", ok, err)
		}
		if len(got.Removed) != 0 || len(got.Added) != 1 || got.Common != Count(a) || got.Added[0].Index != got.Common {
			t.Fatalf("DiffShared: common %d, %d removed, %d added; want %d, 0, 1", got.Common, len(got.Removed), len(got.Added), Count(a))
		}
		if cb.n != 0 {
			t.Fatalf("read %d bytes of b's shared prefix, want none", cb.n)
		}
		if ca.n > int64(len(a))+int64(len(utf8BOM)) {
			t.Fatalf("read %d bytes of a's shared prefix (%d bytes): more than once", ca.n, len(a))
		}
	}
	// Allocation: proportional to the id table, not to the bytes.
	allocs := func(steps int) float64 {
		a := gen(steps)
		b := append(append([]byte{}, a...), tail...)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, ok, err := DiffShared(bytes.NewReader(a), int64(len(a)), bytes.NewReader(b), int64(len(b)), int64(len(a))); !ok || err != nil {
			t.Fatal(ok, err)
		}
		runtime.ReadMemStats(&m1)
		return float64(m1.TotalAlloc - m0.TotalAlloc)
	}
	small, big := allocs(20), allocs(200)
	bigBytes := float64(len(gen(200)))
	if big-small > bigBytes/10 {
		t.Fatalf("DiffShared allocated %.0f bytes for 20 steps and %.0f for 200 (%.0f bytes of transcript): it grows with the shared bytes", small, big, bigBytes)
	}
}
