package conversation

import (
	"bytes"
	"fmt"
	"testing"
)

// bigTranscript builds a Claude Code JSONL transcript of at least size bytes
// from the verbatim excerpts, renaming message ids in each copy so that
// copies do not merge into one another.
func bigTranscript(tb testing.TB, size int) []byte {
	tb.Helper()
	parts := [][]byte{
		fixture(tb, "claude_f5e7d3c25b68_lines1-30.jsonl"),
		fixture(tb, "claude_8df6319ef9a6_lines1-13_20-24.jsonl"),
	}
	var buf bytes.Buffer
	for k := 0; buf.Len() < size; k++ {
		for _, p := range parts {
			p = bytes.ReplaceAll(p, []byte(`"id":"msg_`), []byte(fmt.Sprintf(`"id":"msg_%d_`, k)))
			buf.Write(p)
			if !bytes.HasSuffix(p, []byte("\n")) {
				buf.WriteByte('\n')
			}
		}
	}
	return buf.Bytes()
}

func BenchmarkParseJSONL4MB(b *testing.B) {
	data := bigTranscript(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		Parse(data)
	}
}

func BenchmarkCountJSONL4MB(b *testing.B) {
	data := bigTranscript(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		Count(data)
	}
}

func BenchmarkParseGemini(b *testing.B) {
	data := fixture(b, "gemini_ab2b9748b105_session.json")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Parse(data)
	}
}

func BenchmarkDiff(b *testing.B) {
	data := bigTranscript(b, 1<<20)
	x := Parse(data)
	y := Parse(append(append([]byte{}, data...), fixture(b, "claude_f5e7d3c25b68_lines1-30.jsonl")...))
	b.ResetTimer()
	for b.Loop() {
		Diff(x, y)
	}
}

// TestParseLargeTranscript: a 4 MB transcript parses without problems and
// Count agrees with Parse. (Speed is measured by the benchmarks, not here.)
func TestParseLargeTranscript(t *testing.T) {
	data := bigTranscript(t, 4<<20)
	c := Parse(data)
	if n := Count(data); n != len(c.Messages) || len(c.Problems) != 0 {
		t.Errorf("Count %d, Parse %d, problems %v", n, len(c.Messages), c.Problems)
	}
}

func BenchmarkParsePageJSONL4MB(b *testing.B) {
	data := bigTranscript(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := ParsePage(bytes.NewReader(data), 0, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCountReaderJSONL4MB(b *testing.B) {
	data := bigTranscript(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := CountReader(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParsePageGemini(b *testing.B) {
	data := fixture(b, "gemini_ab2b9748b105_session.json")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := ParsePage(bytes.NewReader(data), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}
