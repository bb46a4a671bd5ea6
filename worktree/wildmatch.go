package worktree

import "strings"

// This file is git's reading of ignore rules: wildmatch (git's
// wildmatch.c, in its WM_PATHNAME mode) and the per-pattern rules of
// git's dir.c. go-git's matcher is not used: it lets a rule match any
// prefix of a path, so "!src/" re-includes everything beneath src/ and
// "a/**" ignores a itself (go-git issue #2112), where git re-tests what
// lies inside a re-included directory against every rule.

// pattern is one line of an ignore file.
type pattern struct {
	text    string   // the pattern, without "!", a leading "/" or a trailing "/"
	domain  []string // the directory of the ignore file, from the root
	negate  bool     // "!pattern": re-include
	dirOnly bool     // "pattern/": directories only
	nodir   bool     // no "/" inside: matched against the last component
	// literal is the length of the prefix of text without any special
	// character (git's nowildcardlen): equal to len(text) for a plain name.
	literal int
}

// parsePattern reads one ignore-file line, as git does (dir.c's
// add_patterns_from_buffer and parse_path_pattern). ok is false for a line
// that is no pattern (empty or a comment).
func parsePattern(line string, domain []string) (p pattern, ok bool) {
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return p, false
	}
	p.domain = domain
	if line[0] == '!' {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = line[:len(line)-1]
	}
	p.nodir = !strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/") // anchored: matched against the whole path
	p.text = line
	p.literal = strings.IndexAny(line, `*?[\`)
	if p.literal < 0 {
		p.literal = len(line)
	}
	return p, line != ""
}

// trimTrailingSpaces drops trailing spaces unless a backslash quotes them
// (git's trim_trailing_spaces; tabs are kept).
func trimTrailingSpaces(s string) string {
	last := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if last < 0 {
				last = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			last = -1
		default:
			last = -1
		}
	}
	if last >= 0 {
		return s[:last]
	}
	return s
}

// match reports whether the pattern matches path (components from the
// root), a directory when isDir. Only the path itself is tested: whether
// an ancestor is ignored is the caller's question.
func (p *pattern) match(path []string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if len(path) <= len(p.domain) {
		return false
	}
	for i, d := range p.domain {
		if path[i] != d {
			return false
		}
	}
	if p.nodir {
		name := path[len(path)-1]
		if p.literal == len(p.text) {
			return name == p.text
		}
		return wildmatch(p.text, name, false)
	}
	rel := strings.Join(path[len(p.domain):], "/")
	// As git's match_pathname: the literal prefix is compared, and only
	// the rest goes to wildmatch (which matters for "**" after it).
	if !strings.HasPrefix(rel, p.text[:p.literal]) {
		return false
	}
	return wildmatch(p.text[p.literal:], rel[p.literal:], true)
}

// Results of dowild besides a match and no match: abort the whole match,
// or return to the nearest "**".
const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// wildmatch reports whether text matches the glob pattern as git's
// wildmatch does; with pathname, "*", "?" and classes do not match "/",
// and "**" between slashes matches any number of directories.
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// dowild is wildmatch.c's dowild, byte for byte (without case folding).
func dowild(p, text string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pc := p[pi]
		if ti == len(text) && pc != '*' {
			return wmAbortAll
		}
		var tc byte
		if ti < len(text) {
			tc = text[ti]
		}
		switch pc {
		case '\\':
			// A literal match with the next character (none: no match).
			pi++
			if pi == len(p) || tc != p[pi] {
				return wmNoMatch
			}
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
		case '*':
			var matchSlash bool
			pi++
			if pi < len(p) && p[pi] == '*' {
				prev := pi - 2
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				if (prev < 0 || p[prev] == '/') &&
					(pi == len(p) || p[pi] == '/' || p[pi] == '\\' && pi+1 < len(p) && p[pi+1] == '/') {
					// "**/" may match no directory at all.
					if pi < len(p) && p[pi] == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = !pathname
				}
			} else {
				matchSlash = !pathname
			}
			if pi == len(p) {
				// A trailing "**" matches everything, a trailing "*" only
				// what holds no more slashes.
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmAbortToStarStar
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				// One star and a slash: the rest of this directory name.
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti += slash
				// The slash is consumed by the loop.
				continue
			}
			for {
				if ti == len(text) {
					break
				}
				if !isGlobSpecial(p[pi]) {
					// Skip to the next occurrence of the literal after the star.
					lit := p[pi]
					for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != lit {
						ti++
					}
					if ti == len(text) || text[ti] != lit {
						if matchSlash {
							return wmAbortAll
						}
						return wmAbortToStarStar
					}
				}
				if m := dowild(p[pi:], text[ti:], pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && text[ti] == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			if pi == len(p) {
				return wmAbortAll
			}
			c := p[pi]
			if c == '^' {
				c = '!'
			}
			negated := c == '!'
			if negated {
				pi++
				if pi == len(p) {
					return wmAbortAll
				}
				c = p[pi]
			}
			var prev byte
			matched := false
			for {
				switch {
				case c == '\\':
					pi++
					if pi == len(p) {
						return wmAbortAll
					}
					c = p[pi]
					if tc == c {
						matched = true
					}
				case c == '-' && prev != 0 && pi+1 < len(p) && p[pi+1] != ']':
					pi++
					c = p[pi]
					if c == '\\' {
						pi++
						if pi == len(p) {
							return wmAbortAll
						}
						c = p[pi]
					}
					if tc <= c && tc >= prev {
						matched = true
					}
					c = 0 // the next prev
				case c == '[' && pi+1 < len(p) && p[pi+1] == ':':
					s := pi + 2
					end := strings.IndexByte(p[s:], ']')
					if end < 0 {
						return wmAbortAll
					}
					q := s + end // p[q] == ']'
					if q-s-1 < 0 || p[q-1] != ':' {
						// No ":]": a plain '['.
						if tc == '[' {
							matched = true
						}
						c = '['
						break
					}
					m, ok := charClass(p[s:q-1], tc)
					if !ok {
						return wmAbortAll // a malformed [:class:]
					}
					if m {
						matched = true
					}
					pi = q
					c = 0
				default:
					if tc == c {
						matched = true
					}
				}
				prev = c
				pi++
				if pi == len(p) {
					return wmAbortAll
				}
				c = p[pi]
				if c == ']' {
					break
				}
			}
			if matched == negated || pathname && tc == '/' {
				return wmNoMatch
			}
		default:
			if tc != pc {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass answers a POSIX character class ([:name:]) for c; ok is false
// for an unknown name.
func charClass(name string, c byte) (match, ok bool) {
	isUpper := 'A' <= c && c <= 'Z'
	isLower := 'a' <= c && c <= 'z'
	isDigit := '0' <= c && c <= '9'
	switch name {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !(isUpper || isLower || isDigit), true
	case "space":
		return c == ' ' || c >= '\t' && c <= '\r', true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F', true
	}
	return false, false
}
