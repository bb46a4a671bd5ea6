package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
)

func TestQuotePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"src/main.go", "src/main.go"},
		{"with space.txt", "with space.txt"},
		{"café/naïve.txt", "café/naïve.txt"},
		{"cafe\u0301", "cafe\u0301"}, // a combining mark prints
		{"日本語.md", "日本語.md"},
		{"dir/", "dir/"},
		{"", ""},
		{"new\nline", `"new\nline"`},
		{"tab\there", `"tab\there"`},
		{"bell\a\b\v\f\r", `"bell\a\b\v\f\r"`},
		{"evil\x1b[2J\x1b[31mRED", `"evil\033[2J\033[31mRED"`},
		{`say "hi"`, `"say \"hi\""`},
		{`back\slash`, `"back\\slash"`},
		{"del\x7f", `"del\177"`},
		{"latin1-\xe9", `"latin1-\351"`},                   // not UTF-8
		{"rlo-\u202etxt.exe", `"rlo-\342\200\256txt.exe"`}, // reverses what follows
		{"c1-\u0085", `"c1-\302\205"`},
		{"nul\x00", `"nul\000"`},
	} {
		if got := quotePath(tc.in); got != tc.want {
			t.Errorf("quotePath(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got, want := printable("cannot open \"a\\b\": \x1b[31m"), `cannot open "a\b": \033[31m`; got != want {
		t.Errorf("printable = %s, want %s", got, want)
	}
}

// Names in text output are quoted as git quotes them (F16): what capture
// skips, what show, status, diff and rewind list. JSON carries them as they
// are.
func TestTextOutputQuotesNames(t *testing.T) {
	p := newBareProject(t)
	p.ok("checkpoint")
	esc, nl := "evil\x1b[2J\x1b[31mRED", "new\nline"
	quote, rlo := `say "hi".txt`, "rlo-\u202etxt.exe"
	for _, n := range []string{esc, nl, quote, rlo} {
		if err := os.WriteFile(filepath.Join(p.dir, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qesc, qnl := `"evil\033[2J\033[31mRED"`, `"new\nline"`
	qquote, qrlo := `"say \"hi\".txt"`, `"rlo-\342\200\256txt.exe"`
	clean := func(what, out string, want ...string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\u202e") || strings.Contains(out, nl) {
			t.Errorf("%s prints a raw name:\n%q", what, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %s:\n%s", what, w, out)
			}
		}
	}
	clean("status", p.ok("status"), "skipped "+qesc+": ", "skipped "+qnl+": ", "A "+qquote, "A "+qrlo)
	clean("diff", p.ok("diff"), `+++ "b/say \"hi\".txt"`, `+++ "b/rlo-\342\200\256txt.exe"`)
	clean("diff --stat", p.ok("diff", "--stat"), " "+qquote+" ", " "+qrlo+" ")
	clean("checkpoint", p.ok("checkpoint"), "skipped "+qesc+": ", "skipped "+qnl+": ")
	clean("show", p.ok("show"), "A "+qquote, "A "+qrlo)
	clean("rewind", p.ok("rewind", "#1"), "deleted  "+qquote, "deleted  "+qrlo)
	clean("undo", p.ok("undo"), "restored "+qquote, "restored "+qrlo)
	doc := p.json("show")
	sameStrings(t, "show --json added", strs(t, get(t, doc, "files.added")), rlo, quote)
}

// An empty directory added, deleted or replacing a file is shown as such
// in a diff, never as file content.
func TestDiffShowsEmptyDirectories(t *testing.T) {
	res := &snap.DiffResult{Files: []snap.FileDiff{
		{Path: "cache", Status: "added", NewMode: "dir"},
		{Path: "logs", Status: "deleted", OldMode: "dir"},
		{Path: "x", Status: "modified", OldMode: "file", NewMode: "dir"},
	}}
	var b strings.Builder
	if err := writeDiff(&b, res); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "empty directory cache/ added\nempty directory logs/ deleted\nmode of x: file -> dir\n"; got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	if err := writeDiffStat(&b, res, "default"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" cache  | - -> dir (added)\n", " logs   | dir -> - (deleted)\n", " x      | file -> dir\n", "3 files changed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("diff --stat lacks %q:\n%s", want, b.String())
		}
	}
}
