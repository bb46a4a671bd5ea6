package gitbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/snaptest"
)

// madeUpSecrets returns one made-up secret of each kind the export must
// redact, built at run time (no secret-shaped literal in the source).
func madeUpSecrets() map[string]string {
	r := rand.New(rand.NewSource(11))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rnd := func(set string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = set[r.Intn(len(set))]
		}
		return string(b)
	}
	var pem strings.Builder
	pem.WriteString("-----BEGIN OPENSSH " + "PRIVATE KEY-----\n")
	for range 5 {
		pem.WriteString(rnd(alnum+"+/", 70) + "\n")
	}
	pem.WriteString("-----END OPENSSH " + "PRIVATE KEY-----")
	return map[string]string{
		"aws":       "AKIA" + rnd("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
		"github":    "ghp_" + rnd(alnum, 36),
		"gitlab":    "glpat-" + rnd(alnum, 20),
		"slack":     "xoxb-" + rnd("0123456789", 11) + "-" + rnd("0123456789", 13) + "-" + rnd(alnum, 24),
		"openai":    "sk-proj-" + rnd(alnum, 74) + "T3Blbk" + "FJ" + rnd(alnum, 74),
		"anthropic": "sk-ant-" + "api03-" + rnd(alnum, 93) + "AA",
		"pem":       pem.String(),
		"jwt":       "eyJhbGciOiJSUzI1NiJ9.eyJ" + rnd(alnum, 50) + "." + rnd(alnum+"_-", 60),
		"api_key":   rnd(alnum, 40),
	}
}

// forms are the ways a secret can appear in a git object: as is, and
// JSON-escaped (a transcript), and each line of a multi-line one.
func forms(secret string) []string {
	b, _ := json.Marshal(secret)
	out := []string{secret, string(b[1 : len(b)-1])}
	if strings.Contains(secret, "\n") {
		lines := strings.Split(secret, "\n")
		out = append(out, lines[1:len(lines)-1]...)
	}
	return out
}

// allObjects is every object of a git repository, as git cat-file prints
// them.
func allObjects(t *testing.T, dir string) string {
	t.Helper()
	return git(t, dir, "cat-file", "--batch-all-objects", "--batch")
}

func assertNone(t *testing.T, what, text string, secrets map[string]string) {
	t.Helper()
	for kind, s := range secrets {
		for _, f := range forms(s) {
			if strings.Contains(text, f) {
				t.Errorf("%s holds the %s secret (%.12s…)", what, kind, f)
			}
		}
	}
}

func userLine(i int, text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "uuid": fmt.Sprint(i), "message": map[string]any{"role": "user", "content": text}})
	return string(b) + "\n"
}

func TestPushRedactsSecrets(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	secrets := madeUpSecrets()
	a, root := snaptest.NewRepo(t)
	git(t, root, "init", "-q", "-b", "main")
	snaptest.WriteFiles(t, root, map[string]string{
		"main.go":         "package main\n",
		".env.example":    "API_KEY=\n",
		".env":            "API_KEY=" + secrets["api_key"] + "\n",
		"keys/id_rsa":     secrets["pem"] + "\n",
		"keys/id_rsa.pub": "ssh-rsa AAAA user@host\n",
	})
	git(t, root, "add", "main.go", ".env.example")
	conv := filepath.Join(t.TempDir(), "transcript.jsonl")
	var transcript strings.Builder
	i := 0
	for _, k := range []string{"aws", "github", "gitlab", "slack", "openai", "anthropic", "pem", "jwt"} {
		transcript.WriteString(userLine(i, "the agent reads the logs"))
		transcript.WriteString(userLine(i+1, "found "+secrets[k]+" in the output"))
		i += 2
	}
	transcript.WriteString(userLine(i, "cat .env\nAPI_KEY="+secrets["api_key"]+"\n"))
	os.WriteFile(conv, []byte(transcript.String()), 0o644)
	state := []snap.StateDoc{{Name: snap.ConversationDoc, Source: conv}}
	first, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "first", State: state})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(conv, os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(userLine(100, "and again "+secrets["github"]))
	f.Close()
	snaptest.WriteFiles(t, root, map[string]string{"main.go": "package main // two\n"})
	second, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", Summary: "rotated " + secrets["github"], State: state})
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := os.ReadFile(conv)
	exactFiles := snaptest.Snapshot(t, root, skipMeta)

	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, "", "init", "-q", "--bare", remote)
	b, err := gitbridge.Open(a, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing of any secret in the remote, nor in the local repository
	// the export wrote to.
	assertNone(t, "the remote", allObjects(t, remote), secrets)
	assertNone(t, "the project's git repository", allObjects(t, root), secrets)
	kinds := map[string]bool{}
	for _, s := range res.Export.Secrets {
		kinds[s.Kind] = true
		if s.Fingerprint == "" || s.Where == "" {
			t.Errorf("secret report %+v", s)
		}
	}
	for _, k := range []string{"aws-access-token", "github-pat", "gitlab-pat", "slack-bot-token", "openai-api-key", "anthropic-api-key", "private-key", "jwt", "generic-api-key"} {
		if !kinds[k] {
			t.Errorf("no %s among the redacted secrets %v", k, kinds)
		}
	}
	js, _ := json.Marshal(res)
	assertNone(t, "the push's report", string(js), secrets)
	if got := strings.Join(res.Export.HeldBack, " "); got != ".env keys/id_rsa" {
		t.Errorf("held back %q, want .env keys/id_rsa", got)
	}
	se := res.Export.Sessions[0]
	if se.Head != second.ID.String() || se.Exported == "" || se.Exported == se.Head {
		t.Fatalf("session export %+v: want the local head and a different exported id", se)
	}
	// The commit says what it was made from; git reads the files as
	// exported: the tracked .env.example and the public key are there.
	msg := git(t, remote, "log", "-1", "--format=%B", "refs/snap/sessions/s1")
	if !strings.Contains(msg, "Snap-Redacted-From: "+second.ID.String()) || !strings.Contains(msg, "Snap-Checkpoint: "+se.Exported) || !strings.Contains(msg, "Snap-Held-Back: yes") {
		t.Errorf("commit message:\n%s", msg)
	}
	files := git(t, remote, "ls-tree", "-r", "--name-only", "refs/snap/sessions/s1")
	if files != ".env.example\nkeys/id_rsa.pub\nmain.go\n" {
		t.Errorf("exported files:\n%s", files)
	}

	// Pushing again sends nothing and writes nothing.
	again, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.UpToDate || again.Export.Commits != 0 || again.Export.Objects != 0 || len(again.Export.Secrets) != 0 {
		t.Fatalf("second push: %+v", again.Export)
	}

	// The local store keeps the exact bytes: a rewind restores them.
	out := t.TempDir()
	if _, err := a.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: first.ID.String(), StateOut: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: second.ID.String(), StateOut: out}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, snap.ConversationDoc)); string(got) != string(exact) {
		t.Errorf("local rewind: the transcript is not the exact one")
	}
	if d := snaptest.Diff(exactFiles, snaptest.Snapshot(t, root, skipMeta)); d != "" {
		t.Errorf("local rewind: files differ:\n%s", d)
	}

	// Pulling its own push back changes nothing here: the commits stand
	// for the checkpoints they were made from.
	pulled, err := b.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Imported != 0 || pulled.Sessions[0].Moved || pulled.Sessions[0].Head != second.ID {
		t.Fatalf("own pull: %+v", pulled)
	}

	// Another store pulls the redacted checkpoints, under their own ids,
	// and rewinds to them: placeholders and all.
	c, croot := snaptest.NewRepo(t)
	git(t, croot, "init", "-q", "-b", "main")
	cb, err := gitbridge.Open(c, "")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := cb.Pull(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Imported != 2 || cp.Sessions[0].Head.String() != se.Exported {
		t.Fatalf("pull elsewhere: %+v, want head %s", cp, se.Exported)
	}
	// Its export is the same commits: it pushes nothing new.
	cres, err := cb.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !cres.UpToDate || cres.Export.Commits != 0 {
		t.Errorf("push from the pulling store: %+v", cres.Export)
	}
	out = t.TempDir()
	if _, err := c.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: se.Exported, StateOut: out}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, snap.ConversationDoc))
	assertNone(t, "the pulled transcript", string(got), secrets)
	if !bytes.Contains(got, []byte("[REDACTED:github-pat]")) || bytes.Count(got, []byte("\n")) != bytes.Count(exact, []byte("\n")) {
		t.Errorf("pulled transcript:\n%s", got)
	}
	sc := bufio.NewScanner(bytes.NewReader(got))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("pulled transcript line is not JSON: %s", sc.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(croot, ".env")); err == nil {
		t.Errorf("the pulled checkpoint has .env")
	}
	if data, _ := os.ReadFile(filepath.Join(croot, "main.go")); string(data) != "package main // two\n" {
		t.Errorf("pulled main.go %q", data)
	}

	// Asked to, an export includes the secret files (the documents are
	// redacted all the same); a default push after it still holds them back.
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	git(t, "", "init", "-q", "--bare", mirror)
	mb, err := gitbridge.Open(a, mirror)
	if err != nil {
		t.Fatal(err)
	}
	inc, err := mb.Export(ctx, gitbridge.ExportOptions{Sessions: []string{"s1"}, IncludeSecretFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(inc.HeldBack) != 0 || strings.Join(inc.SecretFilesIncluded, " ") != ".env keys/id_rsa" {
		t.Errorf("include: %+v", inc)
	}
	objs := allObjects(t, mirror)
	if !strings.Contains(objs, secrets["api_key"]) || strings.Contains(objs, secrets["github"]) {
		t.Errorf("--include-secret-files: want .env's key in the mirror and no transcript secret")
	}
	if _, err := b.Export(ctx, gitbridge.ExportOptions{Sessions: []string{"s1"}, IncludeSecretFiles: true}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.git")
	git(t, "", "init", "-q", "--bare", other)
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: other, Sessions: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	assertNone(t, "a default push after an export with secret files", allObjects(t, other), secrets)
}

// A4 (torture/adversarial/2026-11-27): a push redacted the documents and
// the summary, but not the record's other texts (message id, labels, the
// paths documents were read from), the file names, or the session names. Now
// the record's texts are redacted, a file whose name holds a secret is held
// back, and --all leaves out a session whose name holds one: no object or
// ref of the remote holds the key, and redact --check reports each.
func TestPushRedactsMetadata(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	key := madeUpSecrets()["aws"]
	a, root := snaptest.NewRepo(t)
	git(t, root, "init", "-q", "-b", "main")
	snaptest.WriteFiles(t, root, map[string]string{"main.go": "package main\n", "notes-" + key + ".txt": "x\n"})
	dir := filepath.Join(t.TempDir(), "tok-"+key)
	os.MkdirAll(dir, 0o755)
	conv := filepath.Join(dir, "conv.jsonl")
	os.WriteFile(conv, []byte(userLine(0, "hi")), 0o644)
	id, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", MessageID: "msg_" + key, Labels: []string{"lbl-" + key},
		State: []snap.StateDoc{{Name: snap.ConversationDoc, Source: conv}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Checkpoint(ctx, snap.CheckpointOptions{Session: "sess-" + key, AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	node, _, err := a.ReadNode(ctx, id.ID)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := gitbridge.RecordSecrets(node)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Field)
	}
	if want := []string{"message_id", "label", "state_sources:conversation"}; !slices.Equal(got, want) {
		t.Errorf("RecordSecrets: %q, want %q", got, want)
	}
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, "", "init", "-q", "--bare", remote)
	b, err := gitbridge.Open(a, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, Sessions: []string{"sess-" + key}}); !errors.Is(err, snap.ErrUsage) || strings.Contains(err.Error(), key) {
		t.Fatalf("push of a session whose name holds a key: %v, want a usage error that does not repeat it", err)
	}
	res, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: remote, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Export.SessionsHeldBack != 1 || !slices.Equal(res.Export.HeldBack, []string{"notes-" + key + ".txt"}) {
		t.Errorf("held back: %d sessions, files %q", res.Export.SessionsHeldBack, res.Export.HeldBack)
	}
	if all := allObjects(t, remote) + git(t, remote, "for-each-ref"); strings.Contains(all, key) {
		i := strings.Index(all, key)
		t.Fatalf("the remote holds the key: ...%s...", all[max(0, i-80):i])
	}
}
