package conversation

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// CompactRawView, given Parse's view, gives what CompactRaw gives, and with
// no spans a JSONL document as it is.
func TestCompactRawViewMatchesCompactRaw(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, d := range streamCorpusForTest(t) {
		view := Parse(d.data)
		n := len(view.Messages)
		spanSets := [][]Span{nil}
		if n > 0 {
			from := r.IntN(n)
			spanSets = append(spanSets, []Span{{From: from, To: from + 1 + r.IntN(n-from), Summary: "s"}})
		}
		if n > 3 {
			spanSets = append(spanSets, []Span{{From: 0, To: 1, Summary: "a"}, {From: 2, To: n, Summary: "b"}})
		}
		for k, spans := range spanSets {
			what := fmt.Sprintf("%s spans %d", d.name, k)
			want, werr := CompactRaw(d.data, spans)
			got, gerr := CompactRawView(d.data, view, spans)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
				t.Fatalf("%s: CompactRawView = %q, %v; CompactRaw = %q, %v", what, got, gerr, want, werr)
			}
			if view.Format == FormatJSONL && len(spans) == 0 && !bytes.Equal(got, d.data) {
				t.Fatalf("%s: no spans changed the document", what)
			}
		}
	}
}
