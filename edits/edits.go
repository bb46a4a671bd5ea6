// Package edits is the model of staged edits: changes to files an agent
// stages one by one, lettered A to Z, and commits together. It is pure: it
// finds where a text occurs in a file's content, names the candidates when
// it occurs more than once, keeps the pending changes of one edit session
// with their letters, refuses overlapping ones, applies them to a file's
// base content and renders previews. The engine (package snap) keeps the
// pending changes in the store, checks that files did not change since
// they were staged, and writes the result atomically.
//
// # Positions are in the base
//
// A path's base is its content when its first change was staged. Every
// change to that path is a position in the base (a byte offset and the text
// replaced there), so changes staged one after the other do not shift each
// other: they are applied together, from the last position to the first.
package edits

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Version is the version of the pending-changes document.
const Version = 1

// MaxChanges is how many changes one edit session holds: A to Z.
const MaxChanges = 26

// Kind is what a change does to its path.
type Kind string

const (
	Replace Kind = "replace" // replace Old at Offset with New
	Write   Kind = "write"   // the whole new content is New
	Delete  Kind = "delete"  // remove the file
)

// Change is one pending change.
type Change struct {
	ID     string `json:"change_id"` // "A" to "Z"
	Path   string `json:"path"`      // project-relative, with slashes
	Kind   Kind   `json:"kind"`
	Offset int    `json:"position"` // byte offset in the base (replace)
	Line   int    `json:"line"`     // 1-based line of Offset in the base (replace)
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"` // the replacement, or the whole content (write)
}

// End is the offset just past the text the change replaces.
func (c *Change) End() int { return c.Offset + len(c.Old) }

// File is a path's base: the content id of the file when its first change
// was staged ("" when the file did not exist).
type File struct {
	Path string `json:"path"`
	Base string `json:"base"`
}

// Pending is one session's edit session: the files touched and the
// changes, in the order staged.
type Pending struct {
	Version int      `json:"version"`
	Next    int      `json:"next"` // the next letter: 0 is A; letters are never reused in an edit session
	Files   []File   `json:"files"`
	Changes []Change `json:"changes"`
	// Committing: the txn of a commit under way. A commit killed before its
	// files moved leaves it set with the changes pending; the engine then
	// asks its op log whether that txn completed (see snap's settleEdits).
	Committing string `json:"committing,omitempty"`
}

// New returns an empty edit session.
func New() *Pending { return &Pending{Version: Version, Files: []File{}, Changes: []Change{}} }

// Letter is the letter of index i (0 is A).
func Letter(i int) string { return string(rune('A' + i)) }

// Base returns the recorded base of path, and whether it has one.
func (p *Pending) Base(path string) (string, bool) {
	for _, f := range p.Files {
		if f.Path == path {
			return f.Base, true
		}
	}
	return "", false
}

// Of returns the changes to path, in position order.
func (p *Pending) Of(path string) []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Path == path {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return a.Offset - b.Offset })
	return out
}

// Paths returns the paths with pending changes, sorted.
func (p *Pending) Paths() []string {
	var out []string
	for _, c := range p.Changes {
		if !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	slices.Sort(out)
	return out
}

// Staged returns the pending replacement of old at offset in path, if any.
func (p *Pending) Staged(path string, offset int, old string) *Change {
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Path == path && c.Kind == Replace && c.Offset == offset && c.Old == old {
			return c
		}
	}
	return nil
}

// Stage adds c (its ID is assigned) with base as its path's base when the
// path has none yet. It refuses a 27th change, and a change that overlaps
// a pending one: two replacements whose texts share a byte (or replace the
// same empty position), or any change beside a write or a delete of the
// same path.
func (p *Pending) Stage(c Change, base string) (*Change, error) {
	if p.Next >= MaxChanges {
		if dropped := p.Next - len(p.Changes); dropped > 0 {
			return nil, fmt.Errorf("%w: the letters A-Z of this edit session are used up (%d pending, %d dropped; letters are never reused); commit or revert the pending changes first", ErrFull, len(p.Changes), dropped)
		}
		return nil, fmt.Errorf("%w: an edit session holds at most %d changes (A-Z); commit or revert these first", ErrFull, MaxChanges)
	}
	for _, o := range p.Changes {
		if o.Path != c.Path {
			continue
		}
		if o.Kind != Replace || c.Kind != Replace {
			return nil, &OverlapError{Change: o.ID, msg: fmt.Sprintf("change %s already %ss %s; drop it first", o.ID, o.Kind, c.Path)}
		}
		if c.Offset < o.End() && o.Offset < c.End() || c.Offset == o.Offset {
			return nil, &OverlapError{Change: o.ID, msg: fmt.Sprintf("change %s already replaces line %d of %s there; drop it first", o.ID, o.Line, c.Path)}
		}
	}
	if _, ok := p.Base(c.Path); !ok {
		p.Files = append(p.Files, File{Path: c.Path, Base: base})
	}
	c.ID = Letter(p.Next)
	p.Next++
	p.Changes = append(p.Changes, c)
	return &p.Changes[len(p.Changes)-1], nil
}

// Drop removes change id; the later ones keep their letters. A path with
// no change left loses its base.
func (p *Pending) Drop(id string) (*Change, error) {
	i := slices.IndexFunc(p.Changes, func(c Change) bool { return c.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: no pending change %q (pending: %s)", ErrNoChange, id, p.ids())
	}
	c := p.Changes[i]
	p.Changes = slices.Delete(p.Changes, i, i+1)
	if len(p.Of(c.Path)) == 0 {
		p.Files = slices.DeleteFunc(p.Files, func(f File) bool { return f.Path == c.Path })
	}
	return &c, nil
}

func (p *Pending) ids() string {
	if len(p.Changes) == 0 {
		return "none"
	}
	ids := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

// Apply returns base with changes (all to one path) applied: replacements
// from the last position to the first; a write gives its content; a delete
// gives nil, false (the file goes).
func Apply(base []byte, changes []Change) (out []byte, exists bool, err error) {
	reps := []Change{}
	for _, c := range changes {
		switch c.Kind {
		case Write:
			return []byte(c.New), true, nil
		case Delete:
			return nil, false, nil
		}
		reps = append(reps, c)
	}
	slices.SortFunc(reps, func(a, b Change) int { return b.Offset - a.Offset })
	out = slices.Clone(base)
	for _, c := range reps {
		if c.Offset < 0 || c.End() > len(out) || string(out[c.Offset:c.End()]) != c.Old {
			return nil, false, fmt.Errorf("%w: change %s: %q is no longer at line %d", ErrStale, c.ID, short(c.Old), c.Line)
		}
		out = slices.Concat(out[:c.Offset], []byte(c.New), out[c.End():])
	}
	return out, true, nil
}

// LineOf is the 1-based line of offset in data.
func LineOf(data []byte, offset int) int {
	return bytes.Count(data[:min(offset, len(data))], []byte{'\n'}) + 1
}

// short is s cut to 40 bytes, for messages.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// OverlapError is ErrOverlap naming the pending change in the way.
type OverlapError struct {
	Change string // its letter
	msg    string
}

func (e *OverlapError) Error() string        { return ErrOverlap.Error() + ": " + e.msg }
func (e *OverlapError) Is(target error) bool { return target == ErrOverlap }
