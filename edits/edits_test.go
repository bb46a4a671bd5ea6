package edits

import (
	"errors"
	"strings"
	"testing"
)

const config = `server:
  timeout: 30
  port: 80
client:
  timeout: 30
  retries: 2
db:
  timeout: 30
`

// Three equal lines changed one by one through the candidates' letters:
// the letters stay the same between calls, a staged one is marked, and
// the three changes apply together on the base.
func TestCandidatesStageApply(t *testing.T) {
	base := []byte(config)
	p := New()
	old := "timeout: 30"
	matches, err := Find(base, old, "")
	if err != nil || len(matches) != 3 || matches[1].Line != 5 {
		t.Fatalf("find: %+v %v", matches, err)
	}
	for i, want := range []string{"A", "B", "C"} {
		cands, more := p.Candidates(base, "c.yaml", old, matches, 5)
		if len(cands) != 3 || more != 0 || cands[i].MatchID != want || !cands[i].Recommended || cands[i].Staged != "" {
			t.Fatalf("round %d: candidates %+v", i, cands)
		}
		for j := range i {
			if cands[j].Staged != Letter(j) || cands[j].Recommended {
				t.Fatalf("round %d: candidate %d not marked staged: %+v", i, j, cands[j])
			}
		}
		m, err := Pick(matches, want)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Stage(Change{Path: "c.yaml", Kind: Replace, Offset: m.Offset, Line: m.Line, Old: old, New: "timeout: 60"}, "base-id")
		if err != nil || c.ID != want {
			t.Fatalf("stage %s: %+v %v", want, c, err)
		}
	}
	if _, err := p.Stage(Change{Path: "c.yaml", Kind: Replace, Offset: matches[0].Offset, Line: 2, Old: old, New: "x"}, ""); !errors.Is(err, ErrOverlap) {
		t.Fatalf("staging A again: %v", err)
	}
	if _, err := p.Stage(Change{Path: "c.yaml", Kind: Replace, Offset: matches[0].Offset + 3, Line: 2, Old: "eout", New: "x"}, ""); !errors.Is(err, ErrOverlap) {
		t.Fatalf("a change inside A: %v", err)
	}
	if _, err := p.Stage(Change{Path: "c.yaml", Kind: Write, New: "x"}, ""); !errors.Is(err, ErrOverlap) {
		t.Fatalf("a write beside replacements: %v", err)
	}
	out, exists, err := Apply(base, p.Of("c.yaml"))
	if err != nil || !exists || strings.Count(string(out), "timeout: 60") != 3 || strings.Contains(string(out), "timeout: 30") {
		t.Fatalf("apply: %q %v", out, err)
	}
	// Drop B: C keeps its letter, the next change is D.
	if _, err := p.Drop("B"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Drop("B"); !errors.Is(err, ErrNoChange) {
		t.Fatalf("dropping B twice: %v", err)
	}
	c, _ := p.Stage(Change{Path: "other", Kind: Write, New: "n"}, "")
	if c.ID != "D" || p.Of("c.yaml")[1].ID != "C" {
		t.Fatalf("letters after a drop: %+v %+v", c, p.Changes)
	}
	// The anchor narrows to what follows its first occurrence.
	after, err := Find(base, old, "client:")
	if err != nil || len(after) != 2 || after[0].Line != 5 {
		t.Fatalf("after client: %+v %v", after, err)
	}
	if _, err := Find(base, old, "nowhere"); !errors.Is(err, ErrNoAnchor) {
		t.Fatalf("missing anchor: %v", err)
	}
	// A stale base is detected.
	if _, _, err := Apply([]byte("changed"), p.Of("c.yaml")); !errors.Is(err, ErrStale) {
		t.Fatalf("apply on other content: %v", err)
	}
}

func TestLimitAndFull(t *testing.T) {
	base := []byte(strings.Repeat("x = 1\n", 30))
	matches, _ := Find(base, "x = 1", "")
	p := New()
	cands, more := p.Candidates(base, "f", "x = 1", matches, 5)
	if len(cands) != 5 || more != 25 {
		t.Fatalf("5 shown, %d more: %d", more, len(cands))
	}
	if cands, more = p.Candidates(base, "f", "x = 1", matches, 26); len(cands) != 26 || more != 4 || cands[25].MatchID != "Z" {
		t.Fatalf("all matches: %d shown, %d more", len(cands), more)
	}
	for i := range 26 {
		if _, err := p.Stage(Change{Path: "f", Kind: Replace, Offset: matches[i].Offset, Line: matches[i].Line, Old: "x = 1", New: "x = 2"}, ""); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	if _, err := p.Stage(Change{Path: "f", Kind: Replace, Offset: matches[26].Offset, Old: "x = 1", New: "x = 2"}, ""); !errors.Is(err, ErrFull) {
		t.Fatalf("a 27th change: %v", err)
	}
	if _, err := Pick(matches[:3], "D"); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("pick past the matches: %v", err)
	}
}

func TestClosestAndPreview(t *testing.T) {
	base := []byte(config)
	near := Closest(base, "timeout: 300\n", 2)
	if len(near) != 2 || near[0].Text != "timeout: 30" {
		t.Fatalf("closest: %+v", near)
	}
	if Closest(base, "zzzz qqqq", 3) != nil {
		t.Fatal("unrelated text has close lines")
	}
	p := New()
	m, _ := Find(base, "port: 80", "")
	p.Stage(Change{Path: "c.yaml", Kind: Replace, Offset: m[0].Offset, Line: m[0].Line, Old: "port: 80", New: "port: 8080"}, "")
	got := Render("c.yaml", base, p.Of("c.yaml"), Compact, 1)
	want := "A c.yaml:3\n    timeout: 30\n-   port: 80\n+   port: 8080\n  client:\n"
	if got != want {
		t.Fatalf("compact preview:\n%s\nwant:\n%s", got, want)
	}
	if got := Render("c.yaml", base, p.Of("c.yaml"), Stats, 3); got != "A c.yaml:3 (position 24) +10/-8 chars\n" {
		t.Fatalf("stats: %q", got)
	}
}

// With letters used up by dropped changes, the refusal says so instead of
// claiming 26 are pending (adversarial pass 2, A12).
func TestFullAfterDropsSaysWhy(t *testing.T) {
	p := New()
	data := []byte(strings.Repeat("x = 1\n", 30))
	matches, _ := Find(data, "x = 1", "")
	for i := range MaxChanges {
		if _, err := p.Stage(Change{Path: "f", Kind: Replace, Offset: matches[i].Offset, Old: "x = 1", New: "x = 2"}, "base"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"A", "B", "C", "D", "E"} {
		if _, err := p.Drop(id); err != nil {
			t.Fatal(err)
		}
	}
	_, err := p.Stage(Change{Path: "f", Kind: Replace, Offset: matches[27].Offset, Old: "x = 1", New: "x = 2"}, "base")
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "21 pending, 5 dropped") {
		t.Fatalf("Stage: %v", err)
	}
}
