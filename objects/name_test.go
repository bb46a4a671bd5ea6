package objects

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	legal := []struct{ name, in string }{
		{"ascii", "main.go"},
		{"unicode", "résumé ünïcødé 文件.txt"},
		{"emoji", "🙂.md"},
		{"space inside", "my file.txt"},
		{"leading space", " x"},
		{"dotfile gitignore", ".gitignore"},
		{"git without dot", "git"},
		{"dot github", ".github"},
		{"foo.git", "foo.git"},
		{"dot gitmodules", ".gitmodules"},
		{"dot snapignore", ".snapignore"},
		{"snap without dot", "snap"},
		{"three dots", "..."},
		{"dot git suffix", "x.git"},
		{"git tilde 2", "GIT~2"},
		{"nbsp", "a\u00a0b"},
		{"tilde", "~"},
		{"colon elsewhere", "a:b"},
		{"dotgit prefix", ".gitx"},
		{"long", strings.Repeat("a", 255)},
	}
	for _, c := range legal {
		t.Run("legal/"+c.name, func(t *testing.T) {
			if err := ValidName(c.in); err != nil {
				t.Errorf("ValidName(%q) = %v, want nil", c.in, err)
			}
			if IsReservedName(c.in) {
				t.Errorf("IsReservedName(%q) = true", c.in)
			}
		})
	}

	refused := []struct {
		name, in string
		reserved bool // IsReservedName must also say so
	}{
		{"empty", "", false},
		{"dot", ".", false},
		{"dotdot", "..", false},
		{"slash", "a/b", false},
		{"leading slash", "/etc", false},
		{"backslash", `a\b`, false},
		{"NUL", "a\x00b", false},
		{"newline", "\n", false},
		{"tab inside", "a\tb", false},
		{"carriage return", "a\r", false},
		{"DEL", "\x7f", false},
		{"C1 control", "a\u0085b", false},
		{"escape", "\x1b[31m", false},
		{"invalid UTF-8", "a\xffb", false},
		{"truncated UTF-8", "\xe6\x96", false},
		{"overlong UTF-8 slash", "\xc0\xaf", false},
		{"surrogate half", "\xed\xa0\x80", false},
		{".git", ".git", true},
		{".GIT", ".GIT", true},
		{".Git", ".Git", true},
		{".git.", ".git.", true},
		{".git..", ".git..", true},
		{".git space", ".git ", true},
		{".git dot space", ".git. .", true},
		{".git::$INDEX_ALLOCATION", ".git::$INDEX_ALLOCATION", true},
		{".git:stream", ".git:x", true},
		{".git::$DATA", ".git::$DATA", true},
		{"GIT~1", "GIT~1", true},
		{"git~1", "git~1", true},
		{"git~1 trailing dot", "GIT~1.", true},
		{".snap", ".snap", true},
		{".SNAP", ".SNAP", true},
		{".Snap space", ".Snap ", true},
		{"SNAP~1", "SNAP~1", true},
		{".snap::$DATA", ".snap::$DATA", true},
		{"ZWNJ .g\u200cit", ".g\u200cit", true},
		{"ZWJ .gi\u200dt", ".gi\u200dt", true},
		{"LRM", "\u200e.git", true},
		{"BOM", ".git\ufeff", true},
		{"RLO", ".s\u202enap", true},
		{"inhibit swapping", ".\u206agit", true},
		{"ignorable and case", ".G\u200cIT.", true},
	}
	for _, c := range refused {
		t.Run("refused/"+c.name, func(t *testing.T) {
			err := ValidName(c.in)
			if err == nil {
				t.Fatalf("ValidName(%q) = nil, want an error", c.in)
			}
			if !errors.Is(err, ErrBadName) {
				t.Errorf("ValidName(%q) = %v, does not wrap ErrBadName", c.in, err)
			}
			if c.reserved && !IsReservedName(c.in) {
				t.Errorf("IsReservedName(%q) = false", c.in)
			}
		})
	}
}

func TestIsReservedNameOnlyExactDisguises(t *testing.T) {
	for _, n := range []string{".gitx", "x.git", ".git-credentials", ".gi", "git", ".snapshot", "snap~1x", "GIT~10"} {
		if IsReservedName(n) {
			t.Errorf("IsReservedName(%q) = true", n)
		}
	}
}
