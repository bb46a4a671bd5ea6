package edits

import (
	"bytes"
	"testing"
)

// Find is linear in the size of the content, whatever the number of
// matches (adversarial pass 2, A8: each match counted lines from the start,
// so 95 MB with a match per line ran for more than ten minutes). Its lines
// agree with LineOf.
func TestFindManyMatches(t *testing.T) {
	data := bytes.Repeat([]byte("x = 1\n"), 200000) // 1.2 MB, 200,000 matches
	ms, err := Find(data, "x", "")
	if err != nil || len(ms) != 200000 {
		t.Fatalf("Find: %d matches, %v", len(ms), err)
	}
	for _, i := range []int{0, 1, 99999, 199999} {
		if ms[i].Line != i+1 || ms[i].Line != LineOf(data, ms[i].Offset) {
			t.Fatalf("match %d: line %d, want %d", i, ms[i].Line, i+1)
		}
	}
}
