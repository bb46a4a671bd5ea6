package torture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKill9EditCommit kills 'snap edit commit' of changes to 20 files at
// random points. After the next command, the files are either all as
// before with the changes still pending, or all changed with nothing
// pending: never some of each, and never a lost change.
func TestKill9EditCommit(t *testing.T) {
	iterations := 25
	if long() {
		iterations = 200
	}
	rng := rngFor(7)
	proj := t.TempDir()
	const files = 20
	old := bytes.Repeat([]byte("line of text\n"), 20000) // ~250 KB each: a commit takes a while
	name := func(i int) string { return filepath.Join(proj, fmt.Sprintf("f%02d.txt", i)) }
	for i := range files {
		if err := os.WriteFile(name(i), append([]byte(fmt.Sprintf("value %d: old\n", i)), old...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := runSnap(proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	if r := runSnap(proj, "checkpoint"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	state := func() (olds, news int) {
		for i := range files {
			b, err := os.ReadFile(name(i))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case bytes.HasPrefix(b, []byte(fmt.Sprintf("value %d: old\n", i))):
				olds++
			case bytes.HasPrefix(b, []byte(fmt.Sprintf("value %d: new\n", i))):
				news++
			default:
				t.Fatalf("%s holds neither version: %.40q", name(i), b)
			}
		}
		return
	}
	pending := func() int {
		r := runSnap(proj, "edit", "status", "--json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		var st struct {
			Pending []json.RawMessage `json:"pending_changes"`
		}
		if err := json.Unmarshal(r.stdout, &st); err != nil {
			t.Fatal(err)
		}
		return len(st.Pending)
	}
	var typical time.Duration
	killed, completed, kept := 0, 0, 0
	for it := 0; it < iterations; it++ {
		from, to := "old", "new"
		if _, news := state(); news == files {
			from, to = "new", "old"
		}
		for i := range files {
			r := runSnap(proj, "edit", "replace", filepath.Base(name(i)), "--old", fmt.Sprintf("value %d: %s", i, from), "--new", fmt.Sprintf("value %d: %s", i, to))
			if r.code != 0 {
				t.Fatalf("iteration %d: %s", it, r)
			}
		}
		delay := time.Duration(rng.Float64() * 1.2 * float64(typical)) // the first commit runs whole: it measures
		if it == 0 {
			delay = -1
		}
		r := runSnapKill(proj, delay, "edit", "commit", "flip", "--json")
		if !r.killed {
			if r.code != 0 {
				t.Fatalf("iteration %d: %s", it, r)
			}
			typical = r.dur
		} else {
			killed++
		}
		// The next command settles a killed commit.
		n := pending()
		olds, news := state()
		switch {
		case n == 0 && (to == "new" && news == files || to == "old" && olds == files):
			completed++
		case n == files && (from == "old" && olds == files || from == "new" && news == files):
			kept++
			if r := runSnap(proj, "edit", "revert", "killed before it began"); r.code != 0 {
				t.Fatalf("iteration %d: %s", it, r)
			}
		default:
			t.Fatalf("iteration %d (killed %v after %v): %d changes pending, %d files old, %d new", it, r.killed, delay, n, olds, news)
		}
	}
	if r := runSnap(proj, "fsck", "--full"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	t.Logf("%d commits, %d killed: %d completed, %d left pending untouched", iterations, killed, completed, kept)
}
