package refs

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

func TestValidName(t *testing.T) {
	long128 := strings.Repeat("a", 128)
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"single component", "main", true},
		{"session head", "sessions/s-1/head", true},
		{"label with dots", "labels/v1.2.3", true},
		{"mixed legal chars", "A_b-c.D9", true},
		{"component of 128 bytes", "labels/" + long128, true},
		{"dots inside", "a..b", true},

		{"empty", "", false},
		{"dot", ".", false},
		{"dotdot", "..", false},
		{"traversal", "a/../b", false},
		{"dot component", "a/./b", false},
		{"empty component", "a//b", false},
		{"leading slash", "/a", false},
		{"trailing slash", "a/", false},
		{"leading dot", ".hidden", false},
		{"leading dot in later component", "labels/.x", false},
		{"leading dash", "-a", false},
		{"leading underscore", "_a", false},
		{"lock suffix", "x.lock", false},
		{"lock suffix in middle component", "a/x.lock/b", false},
		{"NUL", "a\x00b", false},
		{"newline", "a\nb", false},
		{"tab", "a\tb", false},
		{"DEL", "a\x7f", false},
		{"space", "a b", false},
		{"backslash", `a\b`, false},
		{"colon", "a:b", false},
		{"non-ASCII", "caf\u00e9", false},
		{"overlong component", "labels/" + long128 + "a", false},
		{"overlong name", strings.Repeat(long128+"/", 8) + "x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidName(tc.in)
			if tc.ok && err != nil {
				t.Fatalf("ValidName(%q) = %v, want nil", tc.in, err)
			}
			if !tc.ok && !errors.Is(err, ErrBadName) {
				t.Fatalf("ValidName(%q) = %v, want ErrBadName", tc.in, err)
			}
		})
	}
}

func TestValidComponent(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "default", true},
		{"uuid-like", "3f2a9c1e-0b7d-4c1e-9a53-5c8d2e7f6a10", true},
		{"slash", "a/b", false},
		{"empty", "", false},
		{"dotdot", "..", false},
		{"lock suffix", "s.lock", false},
		{"leading dot", ".s", false},
		{"control char", "s\x01", false},
		{"overlong", strings.Repeat("x", 129), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidComponent(tc.in)
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrBadName) {
				t.Fatalf("ValidComponent(%q) = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}

// TestBadNamesRefused checks that every API call validates names before
// touching the disk.
func TestBadNamesRefused(t *testing.T) {
	s := newStore(t)
	id := testID(1)
	for _, name := range []string{"", ".", "..", "a//b", "a/../b", ".x", "x.lock", "a\x00", strings.Repeat("z", 129)} {
		t.Run(strings.ToValidUTF8(name, "?"), func(t *testing.T) {
			if _, err := s.Get(name); !errors.Is(err, ErrBadName) {
				t.Errorf("Get: %v", err)
			}
			if err := s.Update(name, objects.ID{}, id); !errors.Is(err, ErrBadName) {
				t.Errorf("Update: %v", err)
			}
			if err := s.Delete(name, id); !errors.Is(err, ErrBadName) {
				t.Errorf("Delete: %v", err)
			}
			if err := s.Append(&Op{Kind: "label", Refs: []RefChange{{Name: name, New: id}}}); !errors.Is(err, ErrBadName) {
				t.Errorf("Append with ref %q: %v", name, err)
			}
			if name != "" { // "" is a legal session (none) and List prefix (all)
				if err := s.Append(&Op{Kind: "label", Session: name}); !errors.Is(err, ErrBadName) {
					t.Errorf("Append with session: %v", err)
				}
			}
		})
	}
	for _, prefix := range []string{"../", "a/../", "/", ".x", "a//", "x.lock/", "a\n"} {
		if _, err := s.List(prefix); !errors.Is(err, ErrBadName) {
			t.Errorf("List(%q): %v, want ErrBadName", prefix, err)
		}
	}
	for _, kind := range []string{"", "a b", "../x", "k.lock"} {
		if err := s.Append(&Op{Kind: kind}); !errors.Is(err, ErrBadName) {
			t.Errorf("Append(kind %q): %v, want ErrBadName", kind, err)
		}
	}
	if ops, err := s.Ops(); len(ops) != 0 || err != nil {
		t.Fatalf("refused appends left ops %v, %v", ops, err)
	}
}

// The engine's ref names round-trip through their constructors.
func TestEngineRefNames(t *testing.T) {
	if s, archived, ok := SessionOf(SessionHead("s1")); !ok || archived || s != "s1" {
		t.Fatalf("SessionOf(SessionHead): %q %v %v", s, archived, ok)
	}
	if s, archived, ok := SessionOf(ArchivedHead("s1")); !ok || !archived || s != "s1" {
		t.Fatalf("SessionOf(ArchivedHead): %q %v %v", s, archived, ok)
	}
	if l, ok := LabelOf(Label("v1")); !ok || l != "v1" {
		t.Fatalf("LabelOf(Label): %q %v", l, ok)
	}
	for _, bad := range []string{"sessions/a/b/head", "sessions//head", "labels/", "sessions/a", "x/a/head"} {
		if _, _, ok := SessionOf(bad); ok {
			t.Errorf("SessionOf(%q) accepted", bad)
		}
	}
	if _, ok := LabelOf("labels/"); ok {
		t.Error("LabelOf(labels/) accepted")
	}
}
