package main

import (
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	p := newProject(t)
	eq(t, "default max-file-size", strings.TrimSpace(p.ok("config", "capture.max-file-size")), "")
	p.ok("config", "capture.max-file-size", "1K")
	eq(t, "max-file-size", strings.TrimSpace(p.ok("config", "capture.max-file-size")), "1024")
	p.write(map[string]string{"big.bin": strings.Repeat("x", 2000), "small.txt": "ok"})
	doc := p.json("checkpoint")
	skipped := get(t, doc, "skipped").([]any)
	if len(skipped) != 1 || !strings.Contains(skipped[0].(map[string]any)["reason"].(string), "max-file-size") {
		t.Fatalf("the configured limit did not apply: %v", skipped)
	}
	p.ok("config", "--unset", "capture.max-file-size")
	doc = p.json("checkpoint")
	eq(t, "added after unset", strings.Join(strs(t, get(t, doc, "files.added")), ","), "big.bin")

	eq(t, "json value", get(t, p.json("config", "gc.grace", "2h"), "value"), any("2h"))
	for _, args := range [][]string{{"config", "nope"}, {"config", "gc.grace", "soon"}, {"config"}, {"config", "capture.max-file-size", "0"}, {"config", "retention.keep-last", "many"}} {
		if r := p.run(args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}
