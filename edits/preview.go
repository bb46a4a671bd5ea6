package edits

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Preview modes.
const (
	Compact = "compact" // Context lines around each change, the changed lines marked
	Full    = "full"    // the whole changed region of each file, with Context lines around it
	Stats   = "stats"   // per change: position and characters added and removed
)

// ChangeStat is what one change does, in characters.
type ChangeStat struct {
	ID       string `json:"change_id"`
	Path     string `json:"path"`
	Kind     Kind   `json:"kind"`
	Line     int    `json:"line"`
	Position int    `json:"position"`
	Added    int    `json:"chars_added"`
	Removed  int    `json:"chars_removed"`
}

// Stat is the character count of change c on base.
func Stat(c Change, base []byte) ChangeStat {
	s := ChangeStat{ID: c.ID, Path: c.Path, Kind: c.Kind, Line: c.Line, Position: c.Offset}
	switch c.Kind {
	case Replace:
		s.Added, s.Removed = utf8.RuneCountInString(c.New), utf8.RuneCountInString(c.Old)
	case Write:
		s.Added, s.Removed, s.Line, s.Position = utf8.RuneCountInString(c.New), utf8.RuneCount(base), 1, 0
	case Delete:
		s.Removed, s.Line, s.Position = utf8.RuneCount(base), 1, 0
	}
	return s
}

// Render renders the changes to one path (on its base) in mode, with
// context lines around: "  " context, "- " removed, "+ " added lines, each
// hunk headed by the letters of its changes.
func Render(path string, base []byte, changes []Change, mode string, context int) string {
	var b strings.Builder
	if mode == Stats {
		for _, c := range changes {
			s := Stat(c, base)
			fmt.Fprintf(&b, "%s %s:%d (position %d) +%d/-%d chars\n", s.ID, path, s.Line, s.Position, s.Added, s.Removed)
		}
		return b.String()
	}
	lines := splitLines(base)
	for _, c := range changes {
		switch c.Kind {
		case Write:
			fmt.Fprintf(&b, "%s %s: whole content (%d lines -> %d lines)\n", c.ID, path, len(lines), len(splitLines([]byte(c.New))))
			if mode == Full {
				writeLines(&b, "+ ", splitLines([]byte(c.New)))
			}
			return b.String()
		case Delete:
			fmt.Fprintf(&b, "%s %s: delete (%d lines)\n", c.ID, path, len(lines))
			return b.String()
		}
	}
	type hunk struct {
		ids        []string
		first, end int // base lines [first, end), 0-based
		changes    []Change
	}
	var hunks []hunk
	for _, c := range changes {
		first := c.Line - 1
		end := first + max(strings.Count(c.Old, "\n")+1, 1)
		if n := len(hunks); n > 0 && (mode == Full || first <= hunks[n-1].end+2*context) {
			h := &hunks[n-1]
			h.ids, h.end, h.changes = append(h.ids, c.ID), max(h.end, end), append(h.changes, c)
			continue
		}
		hunks = append(hunks, hunk{ids: []string{c.ID}, first: first, end: end, changes: []Change{c}})
	}
	for _, h := range hunks {
		from, to := max(h.first-context, 0), min(h.end+context, len(lines))
		fmt.Fprintf(&b, "%s %s:%d\n", strings.Join(h.ids, ","), path, h.first+1)
		writeLines(&b, "  ", lines[from:h.first])
		writeLines(&b, "- ", lines[h.first:min(h.end, len(lines))])
		// The new text of the region: the base lines with the hunk's
		// changes applied.
		start := lineStart(base, h.first)
		stop := lineStart(base, h.end)
		region := []Change{}
		for _, c := range h.changes {
			c.Offset -= start
			region = append(region, c)
		}
		if after, _, err := Apply(base[start:stop], region); err == nil {
			writeLines(&b, "+ ", splitLines(after))
		}
		writeLines(&b, "  ", lines[min(h.end, len(lines)):to])
	}
	return b.String()
}

// splitLines splits data into lines without their newlines.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// lineStart is the offset where 0-based line n begins (len(data) past the end).
func lineStart(data []byte, n int) int {
	off := 0
	for range n {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return off
}

func writeLines(b *strings.Builder, prefix string, lines []string) {
	for _, l := range lines {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteByte('\n')
	}
}
