package snap_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

// keptPaths is the paths of a result's Kept, in order, each with its
// marks: "b.txt" or "f.txt(merged)" or "g.txt(conflict)".
func keptPaths(ks []snap.Kept) []string {
	out := []string{}
	for _, k := range ks {
		p := k.Path
		if k.Merged {
			p += "(merged)"
		}
		if k.Conflict {
			p += "(conflict)"
		}
		out = append(out, p)
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// N2 (2026-11-27 report): session A's rewind leaves alone what session B
// wrote and checkpointed since A's target; --all restores it all.
func TestRewindKeepsAnotherSessionsWork(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "A-attempt\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	snaptest.WriteFiles(t, root, map[string]string{"b.txt": "B's work\n"})
	b1 := checkpoint(t, r, snap.CheckpointOptions{Session: "B"})

	dry, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String(), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := keptPaths(dry.Kept); !sameStrings(got, []string{"b.txt"}) || len(dry.Deleted) != 0 {
		t.Fatalf("dry run: kept %v, deleted %v", got, dry.Deleted)
	}
	res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if got["a.txt"] != "a\n" || got["b.txt"] != "B's work\n" {
		t.Fatalf("after A's rewind: %v", got)
	}
	k := res.Kept[0]
	if k.Session != "B" || k.Actor != snap.ActorUnknown || k.Checkpoint != b1.ID || res.Target != c1.ID {
		t.Fatalf("kept %+v (target %s)", k, res.Target.Short())
	}
	// The head holds what is on disk: A's status is clean.
	st, err := r.Status(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean {
		t.Fatalf("status after a scoped rewind: %+v", st)
	}
	// Undo is exact.
	if _, err := r.Undo(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "A-attempt\n" || got["b.txt"] != "B's work\n" {
		t.Fatalf("after undo: %v", got)
	}
	// --all: as before actors.
	res, err = r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String(), All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["b.txt"] != "" || len(res.Kept) != 0 {
		t.Fatalf("after rewind --all: %v, kept %v", got, res.Kept)
	}
	snaptest.Fsck(t, r)
}

// The user's edits, recorded as theirs, survive the agent session's
// rewind: a whole file kept, a file where both wrote different lines
// merged, one where they wrote the same line kept as a conflict; and a
// file another session wrote that the agent then overwrote goes back to
// the other session's version, not to the target's.
func TestRewindKeepsTheUsersLines(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"f.txt": "1\n2\n3\n4\n5\n", "g.txt": "x\n", "h.txt": "h0\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
	snaptest.WriteFiles(t, root, map[string]string{"f.txt": "ONE\n2\n3\n4\n5\n", "g.txt": "agent\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent, Call: "toolu_1"})
	snaptest.WriteFiles(t, root, map[string]string{"f.txt": "ONE\n2\n3\n4\nFIVE\n", "g.txt": "user\n", "notes.md": "mine\n", "h.txt": "B\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorUser})
	snaptest.WriteFiles(t, root, map[string]string{"h.txt": "agent over B\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})

	res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	if got := keptPaths(res.Kept); !sameStrings(got, []string{"f.txt(merged)", "g.txt(conflict)", "h.txt(merged)", "notes.md"}) {
		t.Fatalf("kept %v", got)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	want := map[string]string{"f.txt": "1\n2\n3\n4\nFIVE\n", "g.txt": "user\n", "h.txt": "B\n", "notes.md": "mine\n"}
	if d := snaptest.Diff(want, got); d != "" {
		t.Fatalf("after the rewind:\n%s", d)
	}
	for _, k := range res.Kept {
		if k.Session != "A" || k.Actor != snap.ActorUser {
			t.Fatalf("kept %+v: want the user of session A", k)
		}
	}
	if _, err := r.Undo(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	got = snaptest.Snapshot(t, root, snaptest.SkipStore)
	want = map[string]string{"f.txt": "ONE\n2\n3\n4\nFIVE\n", "g.txt": "user\n", "h.txt": "agent over B\n", "notes.md": "mine\n"}
	if d := snaptest.Diff(want, got); d != "" {
		t.Fatalf("after undo:\n%s", d)
	}
	snaptest.Fsck(t, r)
}

// An undo of a rewind leaves alone what another session wrote after the
// rewind; undo --all does not; a redo keeps it too.
func TestUndoKeepsWhatAnotherSessionWroteSince(t *testing.T) {
	setup := func(t *testing.T) (*snap.Repo, string) {
		r, root := snaptest.NewRepo(t)
		snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a1\n"})
		c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
		snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a2\n"})
		checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
		if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String()}); err != nil {
			t.Fatal(err)
		}
		// B rewrites a.txt after A's rewind.
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("B\n"), 0o644)
		checkpoint(t, r, snap.CheckpointOptions{Session: "B"})
		return r, root
	}
	t.Run("scoped", func(t *testing.T) {
		r, root := setup(t)
		res, err := r.Undo(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "B\n" || len(res.Rewind.Kept) != 1 || res.Rewind.Kept[0].Session != "B" {
			t.Fatalf("after A's undo: %v, kept %+v", got, res.Rewind.Kept)
		}
		// The redo (back to a1) keeps it too: A's changes and B's overlap.
		res, err = r.Redo(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "B\n" || len(res.Rewind.Kept) != 1 || !res.Rewind.Kept[0].Conflict {
			t.Fatalf("after A's redo: %v, kept %+v", got, res.Rewind.Kept)
		}
	})
	t.Run("all", func(t *testing.T) {
		r, root := setup(t)
		if _, err := r.Undo(ctx, "A", snap.UndoOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "a2\n" {
			t.Fatalf("after undo --all: %v", got)
		}
	})
}

// M26 (model, issue 22): the user takes out the line the agent added and
// puts it back by hand; the session's rewind must not write the target's
// content over the user's last write (the lines cannot tell the user's
// line from the agent's: kept, as a conflict). The same with another
// session's two writes.
func TestRewindKeepsARewriteOfAnOwnVersion(t *testing.T) {
	for _, other := range []snap.CheckpointOptions{{Session: "A", Actor: snap.ActorUser}, {Session: "B"}} {
		r, root := snaptest.NewRepo(t)
		write := func(s string) { snaptest.WriteFiles(t, root, map[string]string{"f.txt": s}) }
		write("1\n")
		c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
		write("1\n2\n")
		checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
		write("1\n")
		checkpoint(t, r, other)
		write("1\n2\n")
		checkpoint(t, r, other)
		res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String()})
		if err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["f.txt"] != "1\n2\n" || !sameStrings(keptPaths(res.Kept), []string{"f.txt(conflict)"}) {
			t.Fatalf("other %+v: f.txt %q, kept %v", other, got["f.txt"], keptPaths(res.Kept))
		}
	}
}

// Adversarial A1, A2, A3 (torture/actors-findings): another session's
// change is read against the last tree any session recorded, not against
// that session's own (stale) previous checkpoint: B's deletions in its
// first checkpoint, and B setting a file back to what its old checkpoint
// had, are B's and kept; a kept deletion says so; the recorded end counts
// its bytes.
func TestKeptAgainstTheLastRecordedTree(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a1\n", "x": "x\n", "d/f": "f\n", "c.txt": "c1\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a2\n", "c.txt": "c-by-A\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	os.Remove(filepath.Join(root, "x"))
	os.RemoveAll(filepath.Join(root, "d"))
	snaptest.WriteFiles(t, root, map[string]string{"c.txt": "c1\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "B", Actor: snap.ActorAgent}) // B's first: its deletions are against nothing of its own
	res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if got["x"] != "" || got["d/f"] != "" || got["c.txt"] != "c1\n" || got["a.txt"] != "a1\n" {
		t.Fatalf("after A's rewind: %v", got)
	}
	// (c.txt is as the target has it: nothing to keep or move.)
	if k := keptPaths(res.Kept); !sameStrings(k, []string{"d/f", "x"}) {
		t.Fatalf("kept %v", k)
	}
	for _, k := range res.Kept {
		if k.Session != "B" || !k.Deleted {
			t.Fatalf("kept %+v", k)
		}
	}
	_, head, err := r.Head(ctx, "A")
	if err != nil || head.Stats.Bytes != int64(len("a1\n")+len("c1\n")) {
		t.Fatalf("the recorded end: %+v %v", head.Stats, err)
	}
}

// rewindKeepingRulesRemoval: c1 ignores build/; the user removes the
// .gitignore (checkpointed as theirs), build/out.txt appears, never
// checkpointed; a scoped rewind to c1 keeps the removal and, under c1's
// rules, leaves build/out.txt alone.
func rewindKeepingRulesRemoval(t *testing.T) (*snap.Repo, string, *snap.CheckpointResult) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "build/\n", "a.txt": "a\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	os.Remove(filepath.Join(root, ".gitignore"))
	checkpoint(t, r, snap.CheckpointOptions{Actor: snap.ActorUser})
	snaptest.WriteFiles(t, root, map[string]string{"build/out.txt": "x\n"})
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if err != nil || len(res.Kept) == 0 {
		t.Fatalf("rewind: %v, kept %v", err, res.Kept)
	}
	return r, root, c1
}

// M27 (model): the redo of a rewind that kept the user's removal of an
// ignore file protects what the rewind's target ignored, as the rewind
// did: build/out.txt, never checkpointed, is not deleted by the redo.
func TestRedoOfAScopedRewindKeepsItsRules(t *testing.T) {
	r, root, _ := rewindKeepingRulesRemoval(t)
	for _, step := range []func() (*snap.UndoResult, error){
		func() (*snap.UndoResult, error) { return r.Undo(ctx, "") },
		func() (*snap.UndoResult, error) { return r.Redo(ctx, "") },
	} {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
		if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["build/out.txt"] != "x\n" {
			t.Fatalf("build/out.txt lost: %v", got)
		}
	}
}

// M36 (model, seed 907): the redo of an actor-scoped rewind reads the
// ignore rules of the target the rewind was asked for (M27); once
// retention removed that checkpoint, the redo is refused, as for a target
// gone, rather than run under its end's rules, which protect less: here
// build/out.txt, which c1's rules ignored and the rewind kept, would be
// deleted.
func TestRedoOfAScopedRewindWhoseRulesExpiredIsRefused(t *testing.T) {
	r, root, c1 := rewindKeepingRulesRemoval(t)
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GC(ctx, snap.GCOptions{Policy: &snap.Policy{KeepLast: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Show(ctx, c1.ID); !errors.Is(err, snap.ErrExpired) {
		t.Fatalf("c1 after gc: %v, want it expired (the test's premise)", err)
	}
	before := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if _, err := r.Redo(ctx, ""); !errors.Is(err, snap.ErrNoCheckpoint) {
		t.Fatalf("redo with the rules' checkpoint expired: %v, want ErrNoCheckpoint", err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); !maps.Equal(got, before) {
		t.Fatalf("a refused redo changed the tree: %v, before %v", got, before)
	}
}

// M30 (model): redo of an actor-scoped rewind whose end holds an ignore
// file merged by lines reads the rules the rewind read (its target's), not
// its end's: the rewind deleted z.txt, which the merged .gitignore ignores,
// and the redo deletes it again (it kept it).
func TestRedoOfAScopedRewindIgnoresItsMergedRules(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "x1\n", "a.txt": "a\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "x1\nz.txt\n"})
	checkpoint(t, r, snap.CheckpointOptions{Actor: snap.ActorUser})
	snaptest.WriteFiles(t, root, map[string]string{".gitignore": "x0\nx1\n", "z.txt": "z\n"})
	res, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	if err != nil || len(res.Kept) != 1 || !res.Kept[0].Merged {
		t.Fatalf("rewind: %v, kept %+v", err, res.Kept)
	}
	after := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if _, ok := after["z.txt"]; ok || after[".gitignore"] != "x1\nz.txt\n" {
		t.Fatalf("after the rewind: %v", after)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Redo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	got := snaptest.Snapshot(t, root, snaptest.SkipStore)
	if _, ok := got["z.txt"]; ok || got[".gitignore"] != after[".gitignore"] || len(got) != len(after) {
		t.Fatalf("after the redo: %v, want %v (as after the rewind)", got, after)
	}
}

// M28 (model): undo right after a scoped rewind whose safety checkpoint
// was the head it found is exact: the scan of what changed since the
// undo's target starts where the working tree last held it, not where it
// was first recorded.
func TestUndoOfAScopedRewindOntoAnOldHead(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"f.txt": "1\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"f.txt": "2\n"})
	c2 := checkpoint(t, r, snap.CheckpointOptions{Actor: snap.ActorUser})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c2.ID.String()}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Undo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["f.txt"] != "1\n" || len(res.Rewind.Kept) != 0 {
		t.Fatalf("after the undo: %v, kept %v", got, keptPaths(res.Rewind.Kept))
	}
}

// A --path rewind whose every path is kept changes nothing, so it records
// nothing: no safety checkpoint, no end, no op for undo to find
// (adversarial A4); its dry run lists the same.
func TestPathRewindThatKeepsEverythingRecordsNothing(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "A"})
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "A1\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent})
	snaptest.WriteFiles(t, root, map[string]string{"b.txt": "B1\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "B"})
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "A2\n"}) // not yet recorded

	before, err := r.Ops(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	log0, err := r.Log(ctx, snap.LogOptions{Session: "A"})
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String(), Paths: []string{"b.txt"}, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if got := keptPaths(res.Kept); !sameStrings(got, []string{"b.txt"}) || len(res.Restored)+len(res.Deleted) != 0 || res.SafetyCheckpoint != nil {
			t.Fatalf("dry %v: kept %v, restored %v, deleted %v, safety %v", dry, got, res.Restored, res.Deleted, res.SafetyCheckpoint)
		}
	}
	after, err := r.Ops(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	log1, err := r.Log(ctx, snap.LogOptions{Session: "A"})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || len(log1) != len(log0) {
		t.Fatalf("a rewind that changed nothing recorded: ops %d -> %d, A's log %d -> %d", len(before), len(after), len(log0), len(log1))
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "A2\n" || got["b.txt"] != "B1\n" {
		t.Fatalf("tree: %v", got)
	}
	// A path of the session's own still goes back, beside a kept one.
	res, err := r.Rewind(ctx, snap.RewindOptions{Session: "A", Target: c1.ID.String(), Paths: []string{"a.txt", "b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore); got["a.txt"] != "a\n" || got["b.txt"] != "B1\n" || len(res.Kept) != 1 {
		t.Fatalf("tree: %v, kept %v", got, res.Kept)
	}
	snaptest.Fsck(t, r)
}

// A checkpoint records the program that took it for the agent; sessions
// name the last one (through checkpoints that name none, as a move's), log
// shows it on each, and a name that is not one is refused.
func TestCheckpointRecordsItsAgent(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	ctx := context.Background()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("1\n"), 0o644)
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "s", Agent: "claude-code", Actor: snap.ActorAgent}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("2\n"), 0o644)
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "t", AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	list, err := r.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list {
		got[s.Name] = s.Agent
	}
	if got["s"] != "claude-code" || got["t"] != "" {
		t.Fatalf("sessions' agents: %v; want s: claude-code, t: none", got)
	}
	log, err := r.Log(ctx, snap.LogOptions{Session: "s"})
	if err != nil || len(log) != 2 || log[0].Agent != "" || log[1].Agent != "claude-code" {
		t.Fatalf("log: %+v, %v", log, err)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "s", Agent: "bad/name", AllowEmpty: true}); !errors.Is(err, snap.ErrUsage) {
		t.Fatalf("an agent named bad/name: %v; want a usage error", err)
	}
}

// M38 (model, seed 911): the redo of a --path rewind whose every path
// another actor changed since keeps them all, and is still recorded: the
// redo moves the session's undo and redo stacks. (A4's "nothing to do,
// nothing recorded" is for a rewind asked for anew, not for its redo.)
func TestRedoOfAPathRewindThatKeepsEverythingIsRecorded(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"f": "v1\n"})
	c1 := checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, map[string]string{"f": "v2\n"})
	checkpoint(t, r, snap.CheckpointOptions{})
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), Paths: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	snaptest.WriteFiles(t, root, map[string]string{"f": "v3, another session's\n"})
	checkpoint(t, r, snap.CheckpointOptions{Session: "s2"})
	res, err := r.Redo(ctx, "")
	if err != nil || res.Rewind == nil || len(res.Rewind.Kept) != 1 {
		t.Fatalf("redo: %v, %+v", err, res)
	}
	if got := snaptest.Snapshot(t, root, snaptest.SkipStore)["f"]; got != "v3, another session's\n" {
		t.Fatalf("f after the redo: %q, want the other session's, kept", got)
	}
	ops, err := r.Ops(ctx, 1)
	if err != nil || len(ops) != 1 || ops[0].Kind != "redo" || ops[0].Session != snap.DefaultSession {
		t.Fatalf("the last op after the redo: %+v, %v; want the redo", ops, err)
	}
	if _, err := r.Redo(ctx, ""); !errors.Is(err, snap.ErrNothingToRedo) {
		t.Fatalf("a second redo: %v, want ErrNothingToRedo (the first consumed it)", err)
	}
}
