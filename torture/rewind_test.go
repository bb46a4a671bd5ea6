package torture

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// TestRewindWithNoHead is what TestKill9 reported as an acknowledged safety
// checkpoint with "no conversation document": once `snap undo` has undone
// the session's first checkpoint the session has no head, and a rewind then
// takes its safety checkpoint without the state documents (they are only
// carried over from the head), yet still writes the target's transcript
// over the current one. The transcript as it was is in no checkpoint, and
// `snap undo` of the rewind fails (exit 1: the head it would restore is "no
// head") after having put the files back, but not the transcript.
func TestRewindWithNoHead(t *testing.T) {
	base := t.TempDir()
	proj, conv := filepath.Join(base, "project"), filepath.Join(base, "agent", "session.jsonl")
	for _, d := range []string{proj, filepath.Dir(conv)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun := func(args ...string) result {
		t.Helper()
		r := runSnap(proj, args...)
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		return r
	}
	mustRun("init")
	write(filepath.Join(proj, "f.txt"), "v1\n")
	write(conv, `{"type":"user","message":{"role":"user","content":"one"}}`+"\n")
	var ck struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(mustRun("checkpoint", "--json", "--conversation", conv).stdout, &ck); err != nil {
		t.Fatal(err)
	}
	mustRun("undo") // the session now has no head

	// Work goes on, then a rewind to the checkpoint.
	write(filepath.Join(proj, "f.txt"), "v2\n")
	before := `{"type":"user","message":{"role":"user","content":"one"}}` + "\n" +
		`{"type":"assistant","message":{"role":"assistant","content":"two"}}` + "\n"
	write(conv, before)
	var rw struct {
		Safety *string `json:"safety_checkpoint"`
	}
	if err := json.Unmarshal(mustRun("rewind", ck.ID, "--json").stdout, &rw); err != nil {
		t.Fatal(err)
	}
	if rw.Safety == nil {
		t.Fatal("the rewind reports no safety checkpoint")
	}
	if r := runSnap(proj, "cat", *rw.Safety, "--state", "conversation"); r.code != 0 || string(r.stdout) != before {
		t.Errorf("BUG: the safety checkpoint %s does not hold the transcript the rewind overwrote: %s (%q)", (*rw.Safety)[:12], r, r.stdout)
	}

	r := runSnap(proj, "undo", "--json")
	if r.code != 0 {
		t.Errorf("BUG: snap undo of the rewind: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "f.txt")); string(b) != "v2\n" {
		t.Errorf("after undo, f.txt = %q, want %q", b, "v2\n")
	}
	if b, _ := os.ReadFile(conv); string(b) != before {
		t.Errorf("BUG: after undo, the transcript is %q, want it as it was before the rewind, %q", b, before)
	}
}

// TestRewindOverEmptyDirectories is what TestKill9 reported as a rewind
// exiting 3 with "a directory is in the way: directory not empty": where the
// target has a file, the working tree has a directory holding only empty
// directories (what `rm a/b/file` leaves). Such a directory holds nothing a
// checkpoint records or that could be lost, yet only a directory that is
// itself empty is removed, so the file is not restored (and the head moves
// to the target anyway).
func TestRewindOverEmptyDirectories(t *testing.T) {
	proj := t.TempDir()
	if r := runSnap(proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	if err := os.WriteFile(filepath.Join(proj, "a"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runSnap(proj, "checkpoint", "--json")
	var ck struct {
		ID string `json:"id"`
	}
	if r.code != 0 || json.Unmarshal(r.stdout, &ck) != nil {
		t.Fatalf("%s", r)
	}
	if err := os.Remove(filepath.Join(proj, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(proj, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runSnap(proj, "rewind", ck.ID, "--json")
	if r.code != 0 {
		t.Errorf("BUG: %s\n  stdout: %s", r, oneLine(r.stdout, 600))
	}
	if b, err := os.ReadFile(filepath.Join(proj, "a")); err != nil || string(b) != "x\n" {
		t.Errorf("a not restored: %q, %v", b, err)
	}
}

// TestInterruptedRewindThenGC is what TestKill9 found when a rewind killed
// after moving the head to its target, but before recording itself in the
// op log, was followed by gc: the pre-rewind safety checkpoint (holding the
// uncheckpointed work the rewind replaced) is then referenced by nothing gc
// counts as a root, only by the engine's move journal; gc deletes it, the
// work is lost, and every later command that writes fails with exit 12
// ("completing an interrupted rewind: object not found") while fsck reports
// only a warning: a store that needs manual repair after a crash.
//
// The kill is made deterministic by failing the op-log append instead
// (oplog.lock replaced by a directory: the append cannot open it), which
// stops the rewind at the same point; packs are then aged past the grace
// period and gc runs with its default grace.
func TestInterruptedRewindThenGC(t *testing.T) {
	base := t.TempDir()
	proj, conv := filepath.Join(base, "project"), filepath.Join(base, "agent", "session.jsonl")
	store := filepath.Join(proj, ".snap")
	for _, d := range []string{proj, filepath.Dir(conv)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := func() string {
		t.Helper()
		r := runSnap(proj, "checkpoint", "--json", "--conversation", conv)
		var out struct {
			ID string `json:"id"`
		}
		if r.code != 0 || json.Unmarshal(r.stdout, &out) != nil {
			t.Fatalf("%s", r)
		}
		return out.ID
	}
	if r := runSnap(proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	write(filepath.Join(proj, "f.txt"), "one\n")
	write(conv, `{"n":1}`+"\n")
	c1 := ckpt()
	write(filepath.Join(proj, "f.txt"), "two\n")
	ckpt()
	// Work not checkpointed yet: only the rewind's safety checkpoint will
	// hold it.
	write(filepath.Join(proj, "f.txt"), "three: uncheckpointed work\n")

	lock := filepath.Join(store, "oplog.lock")
	if err := os.Remove(lock); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	rw := runSnap(proj, "rewind", c1, "--json")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if rw.code == 0 {
		t.Skipf("the rewind did not fail at its op-log append (%s): this engine records it elsewhere", rw)
	}
	t.Logf("rewind stopped before recording itself: %s", rw)
	if b, _ := os.ReadFile(filepath.Join(proj, "f.txt")); string(b) != "one\n" {
		t.Logf("f.txt after the stopped rewind: %q", b)
	}

	// Later: gc with the default grace period, the packs being old by now.
	old := time.Now().Add(-2 * time.Hour)
	des, _ := os.ReadDir(filepath.Join(store, "packs"))
	for _, de := range des {
		os.Chtimes(filepath.Join(store, "packs", de.Name()), old, old)
	}
	g := runSnap(proj, "gc", "--json")
	t.Logf("%s: %s", g, oneLine(g.stdout, 300))

	res, rep, err := fsck(proj)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fsck --full: exit %d\n%s", res.code, problemsText(rep.Problems))

	// The uncheckpointed work must still be in some checkpoint.
	found := false
	v, err := openView(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range v.st.FindPrefix("", objects.TypeCheckpoint) {
		if tree, _, _, err := v.content(id); err == nil && tree["f.txt"].Data == "three: uncheckpointed work\n" {
			found = true
		}
	}
	v.close()
	if !found {
		t.Errorf("BUG: WORK LOST: no checkpoint in the store holds f.txt as it was before the interrupted rewind")
	}
	// And the store must work without manual repair.
	write(filepath.Join(proj, "g.txt"), "more work\n")
	if r := runSnap(proj, "checkpoint", "--json", "--conversation", conv); r.code != 0 {
		t.Errorf("BUG: the store needs manual repair: %s", r)
	}
	if r := runSnap(proj, "undo", "--json"); r.code != 0 {
		t.Errorf("BUG: the store needs manual repair: %s", r)
	}
}
