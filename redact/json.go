package redact

import (
	"encoding/json"
	"sort"
)

// jsonLine is one line of a document as JSON: when it is valid JSON, the
// contents of its string literals and the escape sequences in them, so that
// a redaction keeps it valid.
type jsonLine struct {
	valid   bool
	strs    [][2]int // [start, end) of each string literal's contents
	escapes [][2]int // [start, end) of each escape sequence (\n, \", \u00e9, ...)
}

// parseJSONLine reads one line (without its newline).
func parseJSONLine(line string) *jsonLine {
	jl := &jsonLine{}
	if !json.Valid([]byte(line)) {
		return jl
	}
	jl.valid = true
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			continue
		}
		start := i + 1
		for i = start; i < len(line) && line[i] != '"'; i++ {
			if line[i] == '\\' {
				n := 2
				if i+1 < len(line) && line[i+1] == 'u' {
					n = 6
				}
				jl.escapes = append(jl.escapes, [2]int{i, i + n})
				i += n - 1
			}
		}
		jl.strs = append(jl.strs, [2]int{start, i})
	}
	return jl
}

// pieces returns what to replace of [a, b) on this line: on a JSON line,
// its overlap with each string literal's contents, widened so that no
// escape sequence is cut; on any other line, [a, b) itself.
func (jl *jsonLine) pieces(a, b int) [][2]int {
	if !jl.valid {
		return [][2]int{{a, b}}
	}
	var out [][2]int
	for _, s := range jl.strs {
		pa, pb := max(a, s[0]), min(b, s[1])
		if pa >= pb {
			continue
		}
		pa, pb = jl.widen(pa, pb)
		out = append(out, [2]int{pa, pb})
	}
	return out
}

// widen moves a piece's ends out of any escape sequence they fall in.
func (jl *jsonLine) widen(a, b int) (int, int) {
	in := func(p int) (int, int, bool) {
		i := sort.Search(len(jl.escapes), func(i int) bool { return jl.escapes[i][1] > p })
		if i < len(jl.escapes) && jl.escapes[i][0] < p {
			return jl.escapes[i][0], jl.escapes[i][1], true
		}
		return 0, 0, false
	}
	if s, _, ok := in(a); ok {
		a = s
	}
	if _, e, ok := in(b); ok {
		b = e
	}
	return a, b
}
