package snap_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

// Blame attributes each line to the checkpoint that first recorded it: the
// agent's tool calls, the user's edit, another session's line, through a
// rewind and with the prompt each agent line answered.
func TestBlame(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	write := func(s string) { snaptest.WriteFiles(t, root, map[string]string{"f.txt": s}) }
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Kind: "prompt", Summary: "write f", Actor: snap.ActorUser, AllowEmpty: true})
	write("one\ntwo\nthree\n")
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent, Call: "toolu_1"})
	write("one\ntwo\nthree\nfour (user)\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorUser})
	write("one\ntwo\nthree\nfour (user)\nfive (B)\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "B"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Kind: "prompt", Summary: "fix two", Actor: snap.ActorUser, AllowEmpty: true})
	write("one\nTWO\nthree\nfour (user)\nfive (B)")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent, Call: "toolu_2"})

	res, err := r.Blame(ctx, snap.BlameOptions{Session: "A", Path: "f.txt"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Lines {
		got = append(got, fmt.Sprintf("%d %s %s %s %q %q", l.Line, l.Session, l.Actor, l.MessageID, l.Prompt, l.Text))
	}
	want := []string{
		`1 A agent toolu_1 "write f" "one"`,
		`2 A agent toolu_2 "fix two" "TWO"`,
		`3 A agent toolu_1 "write f" "three"`,
		`4 A user  "write f" "four (user)"`,
		`5 B unknown  "" "five (B)"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("blame:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.Lines[0].Checkpoint != c1.ID {
		t.Fatalf("line 1 from %s, want %s", res.Lines[0].Checkpoint.Short(), c1.ID.Short())
	}
	// At an older checkpoint: only what it holds.
	old, err := r.Blame(ctx, snap.BlameOptions{Session: "A", Path: "f.txt", Ref: c1.ID.String()})
	if err != nil || len(old.Lines) != 3 || old.Lines[1].Text != "two" || old.Lines[1].MessageID != "toolu_1" {
		t.Fatalf("blame at %s: %+v %v", c1.ID.Short(), old, err)
	}
	// A path that is not there, a directory: clear errors.
	if _, err := r.Blame(ctx, snap.BlameOptions{Session: "A", Path: "nope.txt"}); err == nil || !strings.Contains(err.Error(), "nope.txt") {
		t.Fatalf("blame of a missing path: %v", err)
	}
}

// A text file whose earlier version was not text is blamed: the binary
// version holds no lines, so every line of the first text version after it
// is that version's (model finding M29: blame failed with "f.txt is not
// text (in checkpoint <the text one>)").
func TestBlameAfterABinaryVersion(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	write := func(s string) { snaptest.WriteFiles(t, root, map[string]string{"f.txt": s}) }
	write("one\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	write("\x00\x01binary")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	write("one\ntwo\n")
	c3 := checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorUser})
	write("one\ntwo\nthree\n")
	c4 := checkpoint(t, r, snap.CheckpointOptions{Session: "B", Actor: snap.ActorAgent})
	res, err := r.Blame(ctx, snap.BlameOptions{Session: "B", Path: "f.txt"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Lines {
		got = append(got, fmt.Sprintf("%d %s %s %s %q", l.Line, l.Session, l.Actor, l.Checkpoint.Short(), l.Text))
	}
	want := []string{
		fmt.Sprintf("1 A user %s %q", c3.ID.Short(), "one"),
		fmt.Sprintf("2 A user %s %q", c3.ID.Short(), "two"),
		fmt.Sprintf("3 B agent %s %q", c4.ID.Short(), "three"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("blame:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Contributions reads each checkpoint against the last tree any session
// recorded, not against its own parent: a line session B recorded between
// two checkpoints of A is B's, never A's (adversarial A1's shape, as it
// was in trace export).
func TestContributionsAgainstTheLastRecordedTree(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	write := func(s string) { snaptest.WriteFiles(t, root, map[string]string{"f.txt": s}) }
	write("zero\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
	write("zero\nB's line\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "B", Actor: snap.ActorAgent})
	write("zero\nB's line\nA's line\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})

	for _, c := range []struct {
		session string
		want    string
	}{{"A", "f.txt [[1 1]] 1; f.txt [[3 3]] 1"}, {"B", "f.txt [[2 2]] 1"}} {
		cs, err := r.Contributions(ctx, snap.ContributionOptions{Session: c.session})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range cs {
			for _, f := range x.Files {
				got = append(got, fmt.Sprintf("%s %v %d", f.Path, f.Ranges, f.Lines))
			}
		}
		if strings.Join(got, "; ") != c.want {
			t.Fatalf("session %s's contributions: %s, want %s", c.session, strings.Join(got, "; "), c.want)
		}
	}
}

// snap ui's adversarial pass (issue 23): with the pack of A's checkpoint
// cut short, blame credited its line to the session that recorded it next
// (B) instead of saying the store is damaged. A checkpoint the op log names
// and retention did not expire is never missing: reading it is an error.
func TestBlameOfADamagedCheckpointIsAnError(t *testing.T) {
	root := t.TempDir()
	r, _, err := snap.Init(snap.Options{Dir: root}) // (not snaptest's: its fsck at the end would fail)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	write := func(s string) { snaptest.WriteFiles(t, root, map[string]string{"f.txt": s}) }
	write("one\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	packs := func() map[string]bool {
		m := map[string]bool{}
		list, _ := filepath.Glob(filepath.Join(r.StoreDir, "packs", "*.pack"))
		for _, p := range list {
			m[p] = true
		}
		return m
	}
	before := packs()
	write("one\ntwo (A)\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	var damaged string
	for p := range packs() {
		if !before[p] {
			damaged = p
		}
	}
	write("one\ntwo (A)\nthree (B)\n")
	checkpoint(t, r, snap.CheckpointOptions{Session: "B", Actor: snap.ActorAgent})
	if damaged == "" {
		t.Fatal("no pack of A's second checkpoint found")
	}
	fi, err := os.Stat(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(damaged, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	r2, err := snap.Open(snap.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	res, err := r2.Blame(ctx, snap.BlameOptions{Session: "B", Path: "f.txt"})
	if err == nil {
		t.Fatalf("blame over a damaged checkpoint: no error; lines %+v", res.Lines)
	}
	if !errors.Is(err, snap.ErrCorrupt) {
		t.Fatalf("blame over a damaged checkpoint: %v; want ErrCorrupt", err)
	}
}
