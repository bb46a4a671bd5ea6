// Package merge is the three-way line merge snap's changes share: a revert
// of one change (package workflow) and a move that takes out a session's
// own changes to a file while keeping another actor's (the root's
// actor-scoped rewind, undo and task revert). It is built on
// github.com/epiclabs-io/diff3.
package merge

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/epiclabs-io/diff3"
)

// Hunk is one region both sides changed: Line is its first line in a (from
// 1); A, O and B are its lines in a, in the common base o and in b.
type Hunk struct {
	Line    int
	A, O, B string
}

// Lines merges, line by line, the changes from o to a and from o to b. It
// returns the merged text, or the regions where both changed the same
// lines (the text is then incomplete).
func Lines(a, o, b []byte) ([]byte, []Hunk) {
	lines := func(x []byte) []string {
		if len(x) == 0 {
			return nil
		}
		return strings.SplitAfter(string(x), "\n")
	}
	var out strings.Builder
	var hunks []Hunk
	for _, blk := range diff3.Diff3Merge(lines(a), lines(o), lines(b), true) {
		if blk.Conflict == nil {
			out.WriteString(strings.Join(blk.Ok, ""))
			continue
		}
		c := blk.Conflict
		hunks = append(hunks, Hunk{Line: c.AIndex + 1, A: strings.Join(c.A, ""), O: strings.Join(c.O, ""), B: strings.Join(c.B, "")})
	}
	return []byte(out.String()), hunks
}

// IsText reports whether b can be merged by lines: valid UTF-8 without NUL
// bytes.
func IsText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }
