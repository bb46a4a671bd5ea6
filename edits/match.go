package edits

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Match is one occurrence of a text in a file's content.
type Match struct {
	Offset int // byte offset
	Line   int // 1-based line of Offset
}

// Find returns the occurrences of old in data, in order, not overlapping;
// with anchor, only those after the end of the first occurrence of anchor
// (ErrNoAnchor when anchor does not occur).
func Find(data []byte, old, anchor string) ([]Match, error) {
	if old == "" {
		return nil, fmt.Errorf("%w: the text to replace is empty", ErrNoMatch)
	}
	from := 0
	if anchor != "" {
		i := bytes.Index(data, []byte(anchor))
		if i < 0 {
			return nil, fmt.Errorf("%w: %q does not occur", ErrNoAnchor, short(anchor))
		}
		from = i + len(anchor)
	}
	var out []Match
	line, counted := 1, 0 // lines are counted once, as the matches advance
	for from <= len(data) {
		i := bytes.Index(data[from:], []byte(old))
		if i < 0 {
			break
		}
		off := from + i
		line += bytes.Count(data[counted:off], []byte("\n"))
		counted = off
		out = append(out, Match{Offset: off, Line: line})
		from = off + len(old)
	}
	return out, nil
}

// Candidate is a match offered for choice when a text occurs more than once
// (the needs_match answer). Letters are given in file order, so the same
// query over the same base always gives the same letters.
type Candidate struct {
	MatchID     string `json:"match_id"`
	Line        int    `json:"line"`
	Context     string `json:"context"`
	Recommended bool   `json:"recommended"`
	// Staged: the letter of the pending change that already makes this
	// replacement; staging it again is refused.
	Staged string `json:"staged_as,omitempty"`
	Offset int    `json:"-"`
}

// Candidates letters matches A, B, ... (at most limit, at most 26) and says
// how many more there are. The first candidate not yet staged is the
// recommended one.
func (p *Pending) Candidates(data []byte, path, old string, matches []Match, limit int) (shown []Candidate, more int) {
	limit = min(max(limit, 1), MaxChanges)
	recommended := false
	for i, m := range matches {
		if i >= limit {
			return shown, len(matches) - limit
		}
		c := Candidate{MatchID: Letter(i), Line: m.Line, Context: lineAt(data, m.Offset), Offset: m.Offset}
		if s := p.Staged(path, m.Offset, old); s != nil {
			c.Staged = s.ID
		} else if !recommended {
			c.Recommended, recommended = true, true
		}
		shown = append(shown, c)
	}
	return shown, 0
}

// Pick returns the match a letter names among matches (the letters of
// Candidates, over all matches).
func Pick(matches []Match, id string) (Match, error) {
	if len(id) != 1 || id[0] < 'A' || id[0] > 'Z' || int(id[0]-'A') >= len(matches) {
		return Match{}, fmt.Errorf("%w: no candidate %q (the text occurs %d times: A-%s)", ErrNoMatch, id, len(matches), Letter(min(len(matches), MaxChanges)-1))
	}
	return matches[id[0]-'A'], nil
}

// lineAt is the line holding offset, trimmed, at most 160 bytes.
func lineAt(data []byte, offset int) string {
	start := bytes.LastIndexByte(data[:offset], '\n') + 1
	end := bytes.IndexByte(data[offset:], '\n')
	if end < 0 {
		end = len(data)
	} else {
		end += offset
	}
	s := strings.TrimSpace(string(data[start:end]))
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// Line is a line of a file, for messages.
type Line struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Closest returns up to n lines of data most like the first non-blank line
// of old (by the share of character pairs they have in common), best first,
// for the answer to a text that does not occur.
func Closest(data []byte, old string, n int) []Line {
	want := ""
	for _, l := range strings.Split(old, "\n") {
		if want = strings.TrimSpace(l); want != "" {
			break
		}
	}
	if want == "" {
		return nil
	}
	wp := pairs(want)
	type scored struct {
		Line
		score float64
	}
	var all []scored
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if s := dice(wp, pairs(t)); s > 0.3 {
			if len(t) > 160 {
				t = t[:160] + "…"
			}
			all = append(all, scored{Line{i + 1, t}, s})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	var out []Line
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.Line)
	}
	return out
}

// pairs counts the adjacent character pairs of s.
func pairs(s string) map[string]int {
	m := map[string]int{}
	r := []rune(s)
	for i := 0; i+1 < len(r); i++ {
		m[string(r[i:i+2])]++
	}
	return m
}

// dice is the Sørensen–Dice coefficient of two pair counts.
func dice(a, b map[string]int) float64 {
	na, nb, common := 0, 0, 0
	for k, v := range a {
		na += v
		common += min(v, b[k])
	}
	for _, v := range b {
		nb += v
	}
	if na+nb == 0 {
		return 0
	}
	return 2 * float64(common) / float64(na+nb)
}
