package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	if newProgress(&bytes.Buffer{}) != nil {
		t.Fatal("progress drawn on something that is not a terminal")
	}
	var buf bytes.Buffer
	p := &progress{w: &buf, start: time.Now()}
	p.update("marking", 10, 0)
	if buf.Len() != 0 {
		t.Fatalf("drawn within the first half second: %q", buf.String())
	}
	p.start = time.Now().Add(-time.Second)
	p.update("marking", 12345, 0)
	p.update("marking", 12346, 0) // throttled
	p.last = time.Time{}
	p.update("repacking", 3, 4)
	p.done()
	out := buf.String()
	for _, want := range []string{"gc: marking 12345 objects", "gc: repacking 3/4 (75%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %q", want, out)
		}
	}
	if strings.Contains(out, "12346") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("throttling or final erase wrong: %q", out)
	}
}
