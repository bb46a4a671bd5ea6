package refs

import (
	"fmt"
	"strings"
)

const (
	// MaxComponentLen is the longest legal name component, in bytes.
	MaxComponentLen = 128
	// MaxNameLen is the longest legal ref name, in bytes.
	MaxNameLen = 1024
)

// ValidComponent reports whether s is a legal ref-name component, which is
// also the rule for session and label names: 1 to 128 bytes matching
// [A-Za-z0-9][A-Za-z0-9._-]*, not ending in ".lock". The error wraps
// ErrBadName.
func ValidComponent(s string) error {
	if reason := componentProblem(s); reason != "" {
		return fmt.Errorf("%w %q: %s", ErrBadName, s, reason)
	}
	return nil
}

// ValidName reports whether name is a legal ref name: one or more legal
// components (see ValidComponent) joined by "/", at most MaxNameLen bytes.
// The error wraps ErrBadName.
func ValidName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrBadName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w %.40q...: longer than %d bytes", ErrBadName, name, MaxNameLen)
	}
	for c := range strings.SplitSeq(name, "/") {
		if reason := componentProblem(c); reason != "" {
			return fmt.Errorf("%w %q: component %q: %s", ErrBadName, name, c, reason)
		}
	}
	return nil
}

// validPrefix checks a List prefix: "" or complete legal components each
// followed by "/", optionally followed by the start of a component.
func validPrefix(prefix string) error {
	if len(prefix) > MaxNameLen {
		return fmt.Errorf("%w: prefix longer than %d bytes", ErrBadName, MaxNameLen)
	}
	comps := strings.Split(prefix, "/")
	for i, c := range comps {
		if i == len(comps)-1 {
			if c != "" && !allowedChars(c) {
				return fmt.Errorf("%w: prefix %q: %q cannot start a component", ErrBadName, prefix, c)
			}
			break
		}
		if reason := componentProblem(c); reason != "" {
			return fmt.Errorf("%w: prefix %q: component %q: %s", ErrBadName, prefix, c, reason)
		}
	}
	return nil
}

// ComponentProblem says what makes s an illegal name component ("" when
// it is legal): the reason ValidComponent gives, without the error.
func ComponentProblem(s string) string { return componentProblem(s) }

func componentProblem(s string) string {
	switch {
	case s == "":
		return "empty component"
	case len(s) > MaxComponentLen:
		return fmt.Sprintf("longer than %d bytes", MaxComponentLen)
	case !isAlnum(s[0]):
		return "must start with an ASCII letter or digit"
	case !allowedChars(s):
		return "only ASCII letters, digits, '.', '_' and '-' are allowed"
	case strings.HasSuffix(s, ".lock"):
		return `must not end in ".lock"`
	}
	return ""
}

// allowedChars reports whether s is a non-empty string that starts with a
// letter or digit and holds only letters, digits, '.', '_' and '-'.
func allowedChars(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// The names of the refs the engine keeps, built and parsed here only:
// a session's head, an archived session's head and a label. (What a
// session is, is the engine's business; these are only names.)
const (
	SessionsPrefix = "sessions/" // List prefix of the live sessions' heads
	ArchivePrefix  = "archive/"  // List prefix of the archived sessions' heads
	LabelsPrefix   = "labels/"   // List prefix of the labels
)

// SessionHead is the ref of session's head.
func SessionHead(session string) string { return SessionsPrefix + session + "/head" }

// ArchivedHead is the ref of an archived session's head.
func ArchivedHead(session string) string { return ArchivePrefix + session + "/head" }

// Label is the ref of label name.
func Label(name string) string { return LabelsPrefix + name }

// SessionOf parses a session head's ref (SessionHead or ArchivedHead):
// the session's name, whether it is archived, and whether ref is one.
func SessionOf(ref string) (session string, archived, ok bool) {
	for _, p := range []string{SessionsPrefix, ArchivePrefix} {
		if rest, in := strings.CutPrefix(ref, p); in {
			if s, head := strings.CutSuffix(rest, "/head"); head && s != "" && !strings.Contains(s, "/") {
				return s, p == ArchivePrefix, true
			}
		}
	}
	return "", false, false
}

// LabelOf parses a label's ref: the label's name, and whether ref is one.
func LabelOf(ref string) (string, bool) {
	name, ok := strings.CutPrefix(ref, LabelsPrefix)
	return name, ok && name != ""
}
