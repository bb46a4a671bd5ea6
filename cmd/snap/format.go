package main

import (
	snap "github.com/snapcore-dev/snap"

	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// writeJSON writes v to w as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// emit writes v as JSON when asJSON, else calls human, whose writes reach
// w together when it returns: a field at a time, `snap log -n 20` made 331
// write system calls.
func emit(w io.Writer, asJSON bool, v any, human func(io.Writer) error) error {
	if asJSON {
		return writeJSON(w, v)
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	err := human(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// humanSize formats a byte count with binary units: 512 B, 3.0 KiB, 1.2 MiB.
func humanSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.0f %s", v, units[u])
}

// parseSize parses a byte count (see snap.ParseSize); errors are usage errors.
func parseSize(s string) (int64, error) {
	n, err := snap.ParseSize(s)
	if err != nil {
		return 0, usageErrorf("%v", err)
	}
	return n, nil
}

// when formats a checkpoint time for people, in local time.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// truncate cuts s to about n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// oneLine replaces line breaks and tabs so s prints on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", "⏎", "\n", "⏎", "\r", "⏎", "\t", " ").Replace(s)
}

// plural returns "1 file" / "2 files".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// indent prefixes every line of s with prefix.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// nonNil returns s, or an empty slice instead of nil (so JSON shows []).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// idOrNone is the short form of id, or "(none)" for the zero id.
func idOrNone(id snap.ID) string {
	if id.IsZero() {
		return "(none)"
	}
	return id.Short()
}

// trimRefPrefix shows a label's ref as the label's name.
func trimRefPrefix(name string) string {
	if l, ok := snap.LabelOf(name); ok {
		return l
	}
	return name
}

// row joins table cells with tabs, dropping empty cells at the end (which
// would leave trailing spaces).
func row(cells ...string) string {
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return strings.Join(cells, "\t")
}

// quotePath shows a file name (or path) in text output as git shows it with
// core.quotePath=false: as it is, unless it holds a control character, a
// double quote, a backslash, a byte that is not UTF-8 or a character that
// does not print (U+202E, which reverses the text after it, say); then in
// double quotes, with \a \b \t \n \v \f \r \" \\ and three-digit octal
// escapes for the other bytes of such characters, so nothing in a name can
// move the cursor, recolour the terminal or pass for another name. JSON
// output carries names as they are.
func quotePath(p string) string {
	if !needsQuote(p) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	b.WriteByte('"')
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x80 && cEscape[r] != 0:
			b.WriteByte('\\')
			b.WriteByte(cEscape[r])
		case r == utf8.RuneError && n <= 1, !strconv.IsPrint(r):
			for _, c := range []byte(p[i : i+n]) {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

// printable makes a message (an error, a reason) safe to print: control
// characters and characters that do not print are escaped as quotePath
// escapes them, quotes and backslashes left as they are, since a message
// may quote a name already (with %q).
func printable(s string) string {
	if !needsQuote(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < 0x80 && cEscape[r] != 0:
			b.WriteByte('\\')
			b.WriteByte(cEscape[r])
		case r == utf8.RuneError && n <= 1, !strconv.IsPrint(r):
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// cEscape maps the control characters C has a one-letter escape for to it.
var cEscape = [0x80]byte{'\a': 'a', '\b': 'b', '\t': 't', '\n': 'n', '\v': 'v', '\f': 'f', '\r': 'r'}

// needsQuote reports whether quotePath changes p.
func needsQuote(p string) bool {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			i++
			continue
		}
		if c < 0x80 {
			return true
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && n <= 1 || !strconv.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}
