package snap

import (
	"fmt"
	"strings"

	"github.com/snapcore-dev/snap/refs"
)

// Names: what a session, a label, a kind or a state document may be
// called (a legal ref component, refs.ComponentProblem).

func sessionName(s string) (string, error) {
	if s == "" {
		s = DefaultSession
	}
	return s, checkName("session name", s)
}

func validStateName(n string) error { return checkName("state document name", n) }

// checkName checks a name (a session, label, kind or state document) is a
// legal component: ErrUsage saying what is wrong with it otherwise.
func checkName(what, s string) error {
	if reason := refs.ComponentProblem(s); reason != "" {
		return fmt.Errorf("%w: %s %q: %s", ErrUsage, what, s, reason)
	}
	return nil
}

// validLabel checks a label name: a legal name that cannot be mistaken for
// another REF form — not 6 or more hex digits (an id prefix) and not
// HEAD (the head's alias).
func validLabel(l string) error {
	if err := checkName("label", l); err != nil {
		return err
	}
	if len(l) >= 6 && isHex(l) {
		return fmt.Errorf("%w: label %q looks like a checkpoint id; add a letter outside a-f", ErrUsage, l)
	}
	if strings.EqualFold(l, "HEAD") {
		return fmt.Errorf("%w: label %q is reserved (an alias of @)", ErrUsage, l)
	}
	return nil
}
