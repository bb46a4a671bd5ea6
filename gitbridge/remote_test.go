package gitbridge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/snaptest"
)

// machineA is a project with a session of checkpoints (an abandoned
// branch, an executable, a symlink, a chunked file, a growing transcript)
// and a git repository; it returns the recorded checkpoints.
func machineA(t *testing.T) (*snap.Repo, string, []recorded) {
	t.Helper()
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	git(t, root, "init", "-q", "-b", "main")
	conv := filepath.Join(t.TempDir(), "transcript.jsonl")
	var recs []recorded
	step := func(files map[string]string, line string) snap.ID {
		snaptest.WriteFiles(t, root, files)
		f, _ := os.OpenFile(conv, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		f.WriteString(line + "\n")
		f.Close()
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: line,
			State: []snap.StateDoc{{Name: snap.ConversationDoc, Source: conv}}})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(conv)
		recs = append(recs, recorded{id: res.ID, files: snaptest.Snapshot(t, root, skipMeta), conv: string(data)})
		return res.ID
	}
	step(map[string]string{"a.txt": "one\n"}, "first")
	os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("a.txt", filepath.Join(root, "link"))
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte('a' + i*7%26)
	}
	os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644)
	second := step(map[string]string{"a.txt": "two\n"}, "second")
	step(map[string]string{"b.txt": "abandoned\n"}, "third")
	if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: second.String()}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "b.txt"))
	step(map[string]string{"c.txt": "four\n"}, "fourth")
	return r, root, recs
}

// ids lists the session's checkpoint ids, oldest first.
func ids(t *testing.T, r *snap.Repo, session string) []string {
	t.Helper()
	entries, err := r.Log(context.Background(), snap.LogOptions{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		out = append(out, entries[i].ID.String())
	}
	return out
}

// pullAndCheck pulls session s1 from url into a fresh project and checks
// that it lists the same checkpoints and that each rewinds byte-exact.
func pullAndCheck(t *testing.T, a *snap.Repo, recs []recorded, url string) *snap.Repo {
	t.Helper()
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	git(t, root, "init", "-q", "-b", "main")
	b, err := gitbridge.Open(r, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Pull(ctx, gitbridge.RemoteOptions{Remote: url, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 1 || !res.Sessions[0].Moved || res.Imported == 0 {
		t.Fatalf("pull: %+v", res)
	}
	if got, want := fmt.Sprint(ids(t, r, "s1")), fmt.Sprint(ids(t, a, "s1")); got != want {
		t.Fatalf("pulled log:\n%s\nwant\n%s", got, want)
	}
	// gc keeps what the import brought, abandoned branches included.
	if _, err := r.GC(ctx, snap.GCOptions{Grace: 0}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		out := t.TempDir()
		if _, err := r.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: rec.id.String(), StateOut: out}); err != nil {
			t.Fatal(err)
		}
		if d := snaptest.Diff(rec.files, snaptest.Snapshot(t, root, skipMeta)); d != "" {
			t.Fatalf("rewind to %s after pull: files differ:\n%s", rec.id.Short(), d)
		}
		if got, _ := os.ReadFile(filepath.Join(out, snap.ConversationDoc)); string(got) != rec.conv {
			t.Fatalf("rewind to %s after pull: conversation %q, want %q", rec.id.Short(), got, rec.conv)
		}
	}
	// A second pull brings nothing and moves nothing.
	again, err := b.Pull(ctx, gitbridge.RemoteOptions{Remote: url, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Imported != 0 {
		t.Fatalf("second pull imported %d", again.Imported)
	}
	return r
}

func TestPushPullFileRemote(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, root, recs := machineA(t)
	remote := t.TempDir()
	git(t, remote, "init", "-q", "--bare")
	git(t, root, "remote", "add", "origin", remote)
	b, err := gitbridge.Open(a, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Push(ctx, gitbridge.RemoteOptions{Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.UpToDate || len(res.Updated) == 0 {
		t.Fatalf("push: %+v", res)
	}
	again, err := b.Push(ctx, gitbridge.RemoteOptions{Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.UpToDate || again.Export.Commits != 0 {
		t.Fatalf("second push: %+v", again)
	}
	git(t, remote, "fsck", "--strict", "--no-dangling")
	bRepo := pullAndCheck(t, a, recs, remote)

	// The session moves on machine B; a pull must not overwrite that.
	if _, err := bRepo.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "on B", AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	// B is only ahead: a pull is a no-op, not a conflict.
	aheadB, _ := bRepo.Resolve(ctx, "s1", "@")
	if pr, err := func() (*gitbridge.PullResult, error) {
		bb, _ := gitbridge.Open(bRepo, "")
		return bb.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	}(); err != nil || pr.Sessions[0].Moved {
		t.Fatalf("pull into a session that is ahead: %+v, %v", pr, err)
	}
	if now, _ := bRepo.Resolve(ctx, "s1", "@"); now != aheadB {
		t.Fatal("a pull moved a head that was ahead")
	}
	snaptest.WriteFiles(t, root, map[string]string{"new-on-a": "x\n"})
	if _, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "on A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	headB, _ := bRepo.Resolve(ctx, "s1", "@")
	bb, _ := gitbridge.Open(bRepo, "")
	_, err = bb.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if !errors.Is(err, snap.ErrConflict) {
		t.Fatalf("pull over a head that moved: %v, want ErrConflict", err)
	}
	if now, _ := bRepo.Resolve(ctx, "s1", "@"); now != headB {
		t.Fatal("the refused pull moved the head")
	}

	// Incremental: machine C (another git.author) pulls, A moves on, C
	// pulls only what is new (its files found from the stored parent) and
	// agrees with A; C's checkpoint on top pushes as a fast-forward (C
	// reuses A's commits rather than re-exporting them as C's).
	c, _ := snaptest.NewRepo(t)
	if err := c.ConfigSet(ctx, "git.author", "Carol <carol@example.com>"); err != nil {
		t.Fatal(err)
	}
	cGit := t.TempDir()
	git(t, cGit, "init", "-q", "--bare")
	cb, err := gitbridge.Open(c, cGit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Pull(ctx, gitbridge.RemoteOptions{Remote: "file://" + remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	snaptest.WriteFiles(t, root, map[string]string{"sub/dir/later": "later\n", "a.txt": "changed again\n"})
	if _, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "later on A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	pr, err := cb.Pull(ctx, gitbridge.RemoteOptions{Remote: "file://" + remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Imported != 1 || !pr.Sessions[0].Moved {
		t.Fatalf("incremental pull: %+v", pr)
	}
	if got, want := fmt.Sprint(ids(t, c, "s1")), fmt.Sprint(ids(t, a, "s1")); got != want {
		t.Fatalf("after an incremental pull:\n%s\nwant\n%s", got, want)
	}
	if _, err := c.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "on C", AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Push(ctx, gitbridge.RemoteOptions{Remote: "file://" + remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatalf("C's push on top of A's history: %v", err)
	}
}

// A remote's session ref that is not a checkpoint commit is refused, naming
// it, and nothing is imported; credentials in a remote URL are never
// printed.
func TestPullRefusesAForeignHead(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, root, _ := machineA(t)
	remote := t.TempDir()
	git(t, remote, "init", "-q", "--bare")
	b, _ := gitbridge.Open(a, "")
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	// A plain commit on top of the session's head, pushed over it.
	tree := strings.TrimSpace(git(t, remote, "rev-parse", "refs/snap/sessions/s1^{tree}"))
	parent := strings.TrimSpace(git(t, remote, "rev-parse", "refs/snap/sessions/s1"))
	plain := strings.TrimSpace(git(t, remote, "commit-tree", tree, "-p", parent, "-m", "not a checkpoint"))
	git(t, remote, "update-ref", "refs/snap/sessions/s1", plain)
	r, _ := snaptest.NewRepo(t)
	g := t.TempDir()
	git(t, g, "init", "-q", "--bare")
	rb, err := gitbridge.Open(r, g)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rb.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if !errors.Is(err, snap.ErrCorrupt) || !strings.Contains(err.Error(), "not a snap checkpoint") {
		t.Fatalf("pull of a foreign head: %v", err)
	}
	if got := ids(t, r, "s1"); len(got) != 0 {
		t.Fatalf("imported %d checkpoints", len(got))
	}
	_, err = rb.Pull(ctx, gitbridge.RemoteOptions{Remote: "https://alice:s3cret-token@127.0.0.1:1/x.git", Sessions: []string{"s1"}})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("pull error: %v", err)
	}
	_ = root
}

func TestPushPullGitDaemon(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, _, recs := machineA(t)
	base := t.TempDir()
	git(t, base, "init", "-q", "--bare", "shared.git")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	daemon := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--base-path="+base, "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatal("git daemon did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := fmt.Sprintf("git://127.0.0.1:%d/shared.git", port)
	b, err := gitbridge.Open(a, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: url, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	again, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: url, Sessions: []string{"s1"}})
	if err != nil || !again.UpToDate {
		t.Fatalf("second push: %+v, %v", again, err)
	}
	pullAndCheck(t, a, recs, url)
}

// The paths a pulled checkpoint recorded its documents from are the other
// machine's (adversarial pass G1: a remote could name ~/.bashrc): a rewind
// here does not write them, and a checkpoint here does not read them.
func TestPulledPathsAreNotThisMachines(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, _, recs := machineA(t)
	remote := t.TempDir()
	git(t, remote, "init", "-q", "--bare")
	b, _ := gitbridge.Open(a, "")
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	node, _, err := a.ReadNode(ctx, recs[0].id)
	if err != nil {
		t.Fatal(err)
	}
	source := node.StateSources[snap.ConversationDoc] // A's transcript: "the other machine's" path
	before, _ := os.ReadFile(source)

	r, root := snaptest.NewRepo(t)
	g := t.TempDir()
	git(t, g, "init", "-q", "--bare")
	rb, _ := gitbridge.Open(r, g)
	if _, err := rb.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: recs[0].id.String()})
	if !errors.Is(err, snap.ErrPartial) || res == nil || len(res.Errors) != 1 || !slices.Contains(snap.AdviceOf(err), snap.Advice{Do: snap.DoStateOut}) {
		t.Fatalf("rewind to a pulled checkpoint: %v %+v", err, res)
	}
	if after, _ := os.ReadFile(source); string(after) != string(before) {
		t.Fatal("the rewind wrote the pulled checkpoint's transcript to the path recorded on the other machine")
	}
	if d := snaptest.Diff(recs[0].files, snaptest.Snapshot(t, root, skipMeta)); d != "" {
		t.Fatalf("files after the rewind:\n%s", d)
	}
	// A checkpoint here does not read that path either.
	os.WriteFile(source, []byte("a secret of this machine\n"), 0o644)
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	var conv strings.Builder
	head, _ := r.Resolve(ctx, "s1", "@")
	if err := r.CatState(ctx, head, snap.ConversationDoc, &conv); err != nil || strings.Contains(conv.String(), "secret") {
		t.Fatalf("the checkpoint after the pull read the other machine's path: %q, %v", conv.String(), err)
	}
}

// A push after a rewind and a new checkpoint here is accepted: the remote's
// head was this session's, and it stays reachable there as an abandoned
// branch (adversarial pass G11: every later push was refused).
func TestPushAfterRewind(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, root, recs := machineA(t)
	remote := t.TempDir()
	git(t, remote, "init", "-q", "--bare")
	b, _ := gitbridge.Open(a, "")
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	oldHead := strings.TrimSpace(git(t, remote, "rev-parse", "refs/snap/sessions/s1"))
	if _, err := a.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: recs[0].id.String()}); err != nil {
		t.Fatal(err)
	}
	snaptest.WriteFiles(t, root, map[string]string{"after-rewind": "x\n"})
	if _, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatalf("push after a rewind: %v", err)
	}
	// The old head is still reachable on the remote.
	if refs := git(t, remote, "for-each-ref", "--contains", oldHead, "--format=%(refname)"); !strings.Contains(refs, "refs/snap/abandoned/s1/") {
		t.Fatalf("the remote's old head %s is no longer kept by an abandoned ref: %q", oldHead, refs)
	}
	git(t, remote, "fsck", "--strict", "--no-dangling")
}

// A12 (torture/adversarial/2026-11-27): a push with --include-secret-files
// exports the same checkpoints as other commits (the held-back .env in
// their trees); it replaced the remote head a plain push had set, moving
// the head of everyone who had pulled. It is refused now, and the remote
// keeps its head.
func TestPushOfOtherExportRefused(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	a, root, _ := machineA(t)
	snaptest.WriteFiles(t, root, map[string]string{".env": "API_TOKEN=dev-only-value\n"})
	if _, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	remote := t.TempDir()
	git(t, remote, "init", "-q", "--bare")
	b, _ := gitbridge.Open(a, "")
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(git(t, remote, "rev-parse", "refs/snap/sessions/s1"))
	_, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}, IncludeSecretFiles: true})
	if !errors.Is(err, snap.ErrConflict) || !strings.Contains(err.Error(), "exported otherwise") {
		t.Fatalf("push --include-secret-files over a plain push: %v, want a conflict", err)
	}
	if now := strings.TrimSpace(git(t, remote, "rev-parse", "refs/snap/sessions/s1")); now != head {
		t.Fatalf("the remote head moved from %s to %s", head, now)
	}
	// The same options as before push as before (nothing new).
	if res, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}}); err != nil || !res.UpToDate {
		t.Fatalf("a plain push again: %+v, %v", res, err)
	}
}
