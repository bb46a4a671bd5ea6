package ui_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// luminance is a colour's relative luminance (WCAG 2), from #rgb or
// #rrggbb.
func luminance(t *testing.T, hex string) float64 {
	t.Helper()
	h := strings.TrimPrefix(hex, "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	if len(h) != 6 {
		t.Fatalf("colour %q: want #rgb or #rrggbb", hex)
	}
	var c [3]float64
	for i := range c {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", hex, err)
		}
		s := float64(v) / 255
		if s <= 0.03928 {
			c[i] = s / 12.92
		} else {
			c[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}

// contrast is the WCAG 2 contrast ratio of two colours.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// The colours of app.css's custom properties, as they are used together:
// body text at least 4.5:1 against what it is drawn on (WCAG 2 AA, 1.4.3),
// the focus outline at least 3:1 against the page around it (1.4.11). The
// browser test measures the rendered pages as well.
func TestColourContrast(t *testing.T) {
	css, err := os.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	root := regexp.MustCompile(`(?s):root\s*\{(.*?)\}`).FindSubmatch(css)
	if root == nil {
		t.Fatal("app.css has no :root block")
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-fA-F]{3,6})\s*;`).FindAllStringSubmatch(string(root[1]), -1) {
		vars[m[1]] = m[2]
	}
	colour := func(name string) string {
		if strings.HasPrefix(name, "#") {
			return name
		}
		v, ok := vars[name]
		if !ok {
			t.Fatalf("app.css :root has no --%s", name)
		}
		return v
	}
	for _, c := range []struct {
		fg, bg string
		min    float64
		what   string
	}{
		{"fg", "bg", 4.5, "body text"},
		{"fg", "panel", 4.5, "text in panels and tables"},
		{"muted", "bg", 4.5, "secondary text"},
		{"muted", "panel", 4.5, "secondary text in panels"},
		{"muted", "add", 4.5, "secondary text in an added message"},
		{"muted", "del", 4.5, "secondary text in a removed message"},
		{"accent", "bg", 4.5, "links"},
		{"accent", "panel", 4.5, "links in panels"},
		{"add-fg", "add", 4.5, "added lines"},
		{"del-fg", "del", 4.5, "removed lines, errors, escaped characters"},
		{"del-fg", "panel", 4.5, "errors in the dialog"},
		{"fg", "warn", 4.5, "notices"},
		{"#ffffff", "danger", 4.5, "the Rewind button"},
		{"#ffffff", "accent", 4.5, "the head badge"},
		{"#f4f4f4", "top", 4.5, "the header"},
		{"focus", "bg", 3, "the focus outline"},
		{"focus", "panel", 3, "the focus outline on panels"},
		{"top-focus", "top", 3, "the focus outline in the header"},
	} {
		if r := contrast(t, colour(c.fg), colour(c.bg)); r < c.min {
			t.Errorf("%s: %s on %s is %.2f:1, want at least %.1f:1", c.what, colour(c.fg), colour(c.bg), r, c.min)
		}
	}
}
