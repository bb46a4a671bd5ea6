package conversation

// A small validating JSON scanner for the JSONL hot path. encoding/json scans
// every byte at least twice (validate, then decode or skip) through a
// per-byte state machine; Claude Code records carry large members that a view
// never needs (toolUseResult holds whole file contents), so Parse and Count
// walk records with this scanner instead and pick out only what they use.
// It accepts exactly the documents json.Valid accepts (FuzzScanner checks
// that) and decodes strings as encoding/json does.

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// scanError is a syntax error found by the scanner. Its message is
// formatted only when asked for: ParsePage reads many lines of an object
// document as JSONL in case the document turns out to be JSONL.
type scanError struct {
	off     int
	msg     string // "exceeded max depth", or empty
	c       byte   // the unexpected byte, when context is set
	context string // where c was unexpected; msg and context empty for unexpected end of input
}

func (e *scanError) Error() string {
	if e.context != "" {
		var q string
		switch c := e.c; {
		case c == '\'':
			q = `'\''`
		case c == '"':
			q = `'"'`
		case c >= 0x20 && c < 0x7f:
			q = "'" + string(rune(c)) + "'"
		default:
			q = fmt.Sprintf("%q", []byte{c})
		}
		return fmt.Sprintf("invalid character %s %s at byte %d", q, e.context, e.off+1)
	}
	if e.msg == "" {
		return "truncated: unexpected end of input"
	}
	return fmt.Sprintf("%s at byte %d", e.msg, e.off+1)
}

func (e *scanError) eof() bool { return e.msg == "" && e.context == "" }

// errAt reports an unexpected byte at b[i], or the end of input.
func errAt(b []byte, i int, context string) error {
	if i >= len(b) {
		return &scanError{off: i}
	}
	return &scanError{off: i, c: b[i], context: context}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue validates the JSON value starting at b[i] (after white space) and
// returns the offset just past it.
func skipValue(b []byte, i, depth int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, &scanError{off: i}
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		if depth >= maxDepth {
			return i, &scanError{off: i, msg: "exceeded max depth"}
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, errAt(b, i, "looking for beginning of object key string")
			}
			var err error
			if i, err = skipString(b, i); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, errAt(b, i, "after object key")
			}
			if i, err = skipValue(b, i+1, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, &scanError{off: i}
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return i + 1, nil
			default:
				return i, errAt(b, i, "after object key:value pair")
			}
		}
	case c == '[':
		if depth >= maxDepth {
			return i, &scanError{off: i, msg: "exceeded max depth"}
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, &scanError{off: i}
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, nil
			default:
				return i, errAt(b, i, "after array element")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return i, errAt(b, i, "looking for beginning of value")
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) {
			return i + k, &scanError{off: i + k}
		}
		if b[i+k] != lit[k] {
			return i + k, errAt(b, i+k, "in literal "+lit+" (expecting '"+lit[k:k+1]+"')")
		}
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, &scanError{off: i}
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, errAt(b, i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		if !isDigit(b[i]) {
			return i, errAt(b, i, "after decimal point in numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		if !isDigit(b[i]) {
			return i, errAt(b, i, "in exponent of numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipString validates the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(b) {
				return i, &scanError{off: i}
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(b) {
						return i, &scanError{off: i}
					}
					if !isHex(b[i]) {
						return i, errAt(b, i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, errAt(b, i, "in string escape code")
			}
		case c < 0x20:
			return i, errAt(b, i, "in string literal")
		default:
			i++
		}
	}
	return i, &scanError{off: i}
}

// scanObject walks the object starting at b[i] == '{'. For each member it
// calls member with the key (raw, without quotes) and the offset of the value;
// member must return the offset just past the value (skipValue when it is not
// interested).
func scanObject(b []byte, i, depth int, member func(key []byte, v int) (int, error)) (int, error) {
	if depth >= maxDepth {
		return i, &scanError{off: i, msg: "exceeded max depth"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errAt(b, i, "looking for beginning of object key string")
		}
		kend, err := skipString(b, i)
		if err != nil {
			return kend, err
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, errAt(b, i, "after object key")
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		if i, err = member(key, i); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, errAt(b, i, "after object key:value pair")
		}
	}
}

// scanArray walks the array starting at b[i] == '['; elem works like
// scanObject's member.
func scanArray(b []byte, i, depth int, elem func(v int) (int, error)) (int, error) {
	if depth >= maxDepth {
		return i, &scanError{off: i, msg: "exceeded max depth"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		var err error
		if i, err = elem(i); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, &scanError{off: i}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, errAt(b, i, "after array element")
		}
	}
}

// stringAt reads the value at b[v]: its text when it is a string, "" for any
// other value (as encoding/json leaves a string field of the wrong type blank).
func stringAt(b []byte, v, depth int, dst *string) (int, error) {
	end, err := skipValue(b, v, depth)
	if err != nil {
		return end, err
	}
	if b[v] == '"' {
		*dst = unquote(b[v:end])
	} else {
		*dst = ""
	}
	return end, nil
}

// unquote decodes a valid JSON string literal (quotes included) the way
// encoding/json does: invalid UTF-8 and unpaired surrogates become U+FFFD.
func unquote(lit []byte) string {
	s := lit[1 : len(lit)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	buf := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			i++
			switch s[i] {
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r := hex4(s[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && allHex(s[i+2:i+6]) {
						if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
							buf = utf8.AppendRune(buf, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default: // '"', '\\', '/'
				buf = append(buf, s[i])
			}
			i++
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(buf)
}

func allHex(s []byte) bool {
	for _, c := range s {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
