package gitbridge_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/snaptest"
)

// These tests check the bridge with the real git binary: what git itself
// reads from what the bridge wrote.

func TestMain(m *testing.M) {
	// The developer's git configuration never reaches the git the tests run.
	home, err := os.MkdirTemp("", "gitbridge-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("GIT_AUTHOR_NAME", "user")
	os.Setenv("GIT_AUTHOR_EMAIL", "user@example.com")
	os.Setenv("GIT_COMMITTER_NAME", "user")
	os.Setenv("GIT_COMMITTER_EMAIL", "user@example.com")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("these tests need the git binary (make test installs it)")
	}
}

// git runs git in dir and returns its stdout; it fails the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// userState is everything of the user's repository the bridge must never
// change: HEAD, the index, refs outside refs/snap/, the working tree's
// status, the hooks that ran.
func userState(t testing.TB, dir string) string {
	t.Helper()
	index, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
	var refs []string
	for _, l := range strings.Split(git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if !strings.HasPrefix(l, "refs/snap/") {
			refs = append(refs, l)
		}
	}
	head, _ := gitErr(dir, "rev-parse", "HEAD")
	return strings.Join([]string{"HEAD " + head, "index " + string(index), "refs " + strings.Join(refs, ";"),
		// (The store is left out: any read of it may write its caches,
		// as an export writes a session's index.)
		"status " + git(t, dir, "status", "--porcelain", "--untracked-files=all", "--ignored", "--", ".", ":!.snap")}, "\n")
}

// skipMeta leaves out the store and the git directory.
func skipMeta(rel string) bool { return rel == ".snap" || rel == ".git" }

// archive extracts commit with git archive into a new directory.
func archive(t testing.TB, repo, commit string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "git archive --format=tar "+commit+" | tar -x -C "+dir)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	return dir
}

// commitOf finds the exported commit of checkpoint id among refs/snap/.
func commitOf(t testing.TB, repo string, id snap.ID) string {
	t.Helper()
	out := git(t, repo, "log", "--all", "--format=%H %(trailers:key=Snap-Checkpoint,valueonly,separator=)")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == id.String() {
			return f[0]
		}
	}
	t.Fatalf("no commit for checkpoint %s", id.Short())
	return ""
}

type recorded struct {
	id    snap.ID
	files map[string]string
	conv  string
	dirs  []string
}

func TestExportIsWhatGitReads(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	git(t, root, "init", "-q", "-b", "main")
	snaptest.WriteFiles(t, root, map[string]string{"README": "user's file\n", "src/a.go": "package a\n"})
	git(t, root, "add", "README")
	git(t, root, "commit", "-q", "-m", "user's commit")
	// A hook that would leave a trace if anything ran it.
	hook := filepath.Join(root, ".git", "hooks", "post-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+filepath.Join(root, "HOOK-RAN")+"\n"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "hooks", "reference-transaction"), []byte("#!/bin/sh\ntouch "+filepath.Join(root, "HOOK-RAN")+"\n"), 0o755)
	git(t, root, "add", "src/a.go") // staged, uncommitted: the user's work in progress
	os.Remove(filepath.Join(root, "HOOK-RAN"))

	conv := filepath.Join(t.TempDir(), "transcript.jsonl")
	var recs []recorded
	step := func(files map[string]string, line string) snap.ID {
		t.Helper()
		snaptest.WriteFiles(t, root, files)
		f, _ := os.OpenFile(conv, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		f.WriteString(line + "\n")
		f.Close()
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Summary: "step " + line, MessageID: "msg-" + line,
			State: []snap.StateDoc{{Name: snap.ConversationDoc, Source: conv}}})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(conv)
		rec := recorded{id: res.ID, files: snaptest.Snapshot(t, root, skipMeta), conv: string(data)}
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && rel != "." {
				if skipMeta(rel) {
					return filepath.SkipDir
				}
				if ents, _ := os.ReadDir(p); len(ents) == 0 {
					rec.dirs = append(rec.dirs, rel)
				}
			}
			return nil
		})
		recs = append(recs, rec)
		return res.ID
	}
	step(map[string]string{"src/b.go": "package b\n"}, `{"role":"user","content":"one"}`)
	os.MkdirAll(filepath.Join(root, "empty", "deeper"), 0o755)
	os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.Symlink("src/a.go", filepath.Join(root, "link"))
	big := bytes.Repeat([]byte("a line of a large file that is chunked\n"), 5000)
	os.WriteFile(filepath.Join(root, "big.txt"), big, 0o644)
	second := step(map[string]string{"src/a.go": "package a // changed\n"}, `{"role":"assistant","content":"two"}`)
	step(map[string]string{"src/c.go": "package c\n"}, `{"role":"user","content":"three"}`)
	// A rewind leaves the third checkpoint on an abandoned branch.
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: second.String()}); err != nil {
		t.Fatal(err)
	}
	step(map[string]string{"src/d.go": "package d\n"}, `{"role":"user","content":"four"}`)

	before := userState(t, root)
	b, err := gitbridge.Open(r, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Export(ctx, gitbridge.ExportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits == 0 || len(res.Sessions) != 1 || res.Sessions[0].Abandoned != 1 {
		t.Fatalf("export: %+v", res)
	}
	if after := userState(t, root); after != before {
		t.Fatalf("export changed the user's repository:\nbefore %s\nafter %s", before, after)
	}
	if _, err := os.Stat(filepath.Join(root, "HOOK-RAN")); err == nil {
		t.Fatal("a git hook ran")
	}
	git(t, root, "fsck", "--strict", "--no-dangling")

	for _, rec := range recs {
		c := commitOf(t, root, rec.id)
		dir := archive(t, root, c)
		if d := snaptest.Diff(rec.files, snaptest.Snapshot(t, dir, nil)); d != "" {
			t.Errorf("checkpoint %s: git archive differs from the files:\n%s", rec.id.Short(), d)
		}
		// Empty directories are empty trees: in the commit (so the
		// checkpoint round-trips), though git archive does not create them.
		trees := git(t, root, "ls-tree", "-r", "-t", "--name-only", c)
		for _, e := range rec.dirs {
			if !strings.Contains("\n"+trees, "\n"+e+"\n") {
				t.Errorf("checkpoint %s: empty directory %s not in the commit's tree:\n%s", rec.id.Short(), e, trees)
			}
		}
		msg := git(t, root, "log", "-1", "--format=%B", c)
		for _, want := range []string{"Snap-Checkpoint: " + rec.id.String(), "Snap-Session: default", "Snap-Kind: manual", "Snap-Message-Id: msg-"} {
			if !strings.Contains(msg, want) {
				t.Errorf("commit %s message lacks %q:\n%s", c, want, msg)
			}
		}
		state := git(t, root, "log", "-1", "--format=%(trailers:key=Snap-State,valueonly,separator=)", c)
		if got := git(t, root, "show", strings.TrimSpace(state)+":conversation"); got != rec.conv {
			t.Errorf("checkpoint %s: state commit's conversation = %q, want %q", rec.id.Short(), got, rec.conv)
		}
	}

	// A second export writes nothing and moves no ref.
	again, err := b.Export(ctx, gitbridge.ExportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Commits != 0 || again.Objects != 0 || len(again.RefsUpdated) != 0 {
		t.Fatalf("second export: %+v", again)
	}
	// The same checkpoints exported into another repository give the same
	// commits (author and time come from the checkpoint).
	bare := t.TempDir()
	git(t, bare, "init", "-q", "--bare")
	b2, err := gitbridge.Open(r, bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Export(ctx, gitbridge.ExportOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := git(t, bare, "rev-parse", "refs/snap/sessions/default"), git(t, root, "rev-parse", "refs/snap/sessions/default"); got != want {
		t.Fatalf("exported twice, different commits: %s and %s", got, want)
	}
	git(t, bare, "fsck", "--strict", "--no-dangling")
}
