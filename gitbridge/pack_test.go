package gitbridge_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/snaptest"
)

// packs lists a repository's pack files and counts its loose objects.
func packs(t *testing.T, gitDir string) (packs []string, loose int) {
	t.Helper()
	packs, _ = filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*"))
	dirs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "??"))
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		loose += len(ents)
	}
	return packs, loose
}

// bareBridge is a new bare repository and the bridge of r to it.
func bareBridge(t *testing.T, r *snap.Repo) (string, *gitbridge.Bridge) {
	t.Helper()
	bare := t.TempDir()
	git(t, bare, "init", "-q", "--bare")
	b, err := gitbridge.Open(r, bare)
	if err != nil {
		t.Fatal(err)
	}
	return bare, b
}

// A session whose transcript grows at every step: the export is one pack,
// git reads every version of every file and transcript from it, and the
// transcript's versions are deltas (a chain cut at git's depth), so the
// pack holds a fraction of what the versions add up to.
func TestExportWritesOnePackWithDeltas(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	conv := filepath.Join(t.TempDir(), "transcript.jsonl")
	// A session resumed: the transcript is 100 KB before the first step.
	os.WriteFile(conv, []byte(strings.Repeat(`{"role":"user","text":"an earlier message"}`+"\n", 2400)), 0o644)
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("src/f%02d.go", i)] = strings.Repeat(fmt.Sprintf("// file %d line\n", i), 200)
	}
	snaptest.WriteFiles(t, root, files)
	var ids []snap.ID
	var convs []string
	versions := 0 // bytes of every transcript version
	const steps = 70
	for s := range steps {
		f := fmt.Sprintf("src/f%02d.go", rng.IntN(30))
		lines := strings.SplitAfter(files[f], "\n")
		at := rng.IntN(len(lines))
		files[f] = strings.Join(lines[:at], "") + fmt.Sprintf("// step %d\n", s) + strings.Join(lines[at:], "")
		snaptest.WriteFiles(t, root, map[string]string{f: files[f]})
		fh, _ := os.OpenFile(conv, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintf(fh, `{"role":"user","step":%d,"text":%q}`+"\n", s, strings.Repeat("words ", 300)+strconv.Itoa(rng.Int()))
		fh.Close()
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Summary: fmt.Sprintf("step %d", s),
			State: []snap.StateDoc{{Name: snap.ConversationDoc, Source: conv}}})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(conv)
		ids, convs = append(ids, res.ID), append(convs, string(data))
		versions += len(data)
	}

	bare, b := bareBridge(t, r)
	res, err := b.Export(ctx, gitbridge.ExportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects < 100 {
		t.Fatalf("only %d objects: the test wants a pack", res.Objects)
	}
	ps, loose := packs(t, bare)
	if len(ps) != 2 || loose != 0 {
		t.Fatalf("objects/pack %q and %d loose objects, want one pack and its index, nothing loose", ps, loose)
	}
	for _, p := range ps { // as git leaves its packs (torture/pack-findings 01)
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: mode %v, want 0444", filepath.Base(p), fi.Mode())
		}
	}
	git(t, bare, "fsck", "--strict", "--no-dangling")
	verify := git(t, bare, "verify-pack", "-v", strings.TrimSuffix(ps[0], ".idx")+".idx")
	if !strings.Contains(verify, "chain length = 1:") {
		t.Fatalf("no deltas in the pack:\n%s", verify)
	}
	if strings.Contains(verify, "chain length = 51:") {
		t.Fatalf("a delta chain longer than git's depth (50):\n%s", verify)
	}
	// Past git's depth the transcript's chain goes on from its segment's
	// root: no later version is a whole copy ("SHA blob SIZE PACKED
	// OFFSET" without a depth and base).
	whole := 0
	for _, l := range strings.Split(verify, "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[1] == "blob" {
			if size, _ := strconv.Atoi(f[2]); size > 60000 {
				whole++
			}
		}
	}
	if whole != 1 {
		t.Fatalf("%d transcript versions are whole copies in the pack, want only the first:\n%s", whole, verify)
	}
	var pack os.FileInfo
	for _, p := range ps {
		if strings.HasSuffix(p, ".pack") {
			pack, _ = os.Stat(p)
		}
	}
	if int(pack.Size()) > versions/5 {
		t.Errorf("the pack is %d bytes; the transcript's versions alone add up to %d", pack.Size(), versions)
	}
	for i, id := range ids {
		if i%9 != 0 && i != len(ids)-1 {
			continue // git runs twice per checkpoint read back
		}
		c := commitOf(t, bare, id)
		state := strings.TrimSpace(git(t, bare, "log", "-1", "--format=%(trailers:key=Snap-State,valueonly,separator=)", c))
		if got := git(t, bare, "show", state+":conversation"); got != convs[i] {
			t.Fatalf("checkpoint %d: the conversation read back from the pack differs", i)
		}
	}
	last := commitOf(t, bare, ids[len(ids)-1])
	for f, want := range files {
		if got := git(t, bare, "show", last+":"+f); got != want {
			t.Fatalf("%s at the last checkpoint differs", f)
		}
	}

	// Ten more steps: a second, small export goes in loose, as git's own
	// fetch unpacks fewer than transfer.unpackLimit objects.
	for s := range 10 {
		snaptest.WriteFiles(t, root, map[string]string{"src/f00.go": files["src/f00.go"] + fmt.Sprintf("// more %d\n", s)})
		if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{Summary: "more"}); err != nil {
			t.Fatal(err)
		}
	}
	res2, err := b.Export(ctx, gitbridge.ExportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	ps2, loose2 := packs(t, bare)
	if len(ps2) != 2 || loose2 != res2.Objects || res2.Objects == 0 {
		t.Fatalf("second export: %d objects written, %d loose, packs %q", res2.Objects, loose2, ps2)
	}
	git(t, bare, "fsck", "--strict", "--no-dangling")
	again, err := b.Export(ctx, gitbridge.ExportOptions{All: true})
	if err != nil || again.Objects != 0 || len(again.RefsUpdated) != 0 {
		t.Fatalf("third export: %+v, %v", again, err)
	}
}

// A blob over the pack's delta size is streamed into the pack whole, and
// a pack that holds one is kept whatever its count.
func TestExportStreamsABigBlobIntoThePack(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r, root := snaptest.NewRepo(t)
	big := make([]byte, 17<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < len(big); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			big[i+j] = byte(v >> (8 * j))
		}
	}
	if err := os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkpoint(ctx, snap.CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	bare, b := bareBridge(t, r)
	if _, err := b.Export(ctx, gitbridge.ExportOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	ps, loose := packs(t, bare)
	if len(ps) != 2 || loose != 0 {
		t.Fatalf("objects/pack %q and %d loose objects, want the big blob's pack", ps, loose)
	}
	git(t, bare, "fsck", "--strict", "--no-dangling")
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(big))
	h.Write(big)
	want := fmt.Sprintf("%x", h.Sum(nil))
	if got := strings.TrimSpace(git(t, bare, "rev-parse", "refs/snap/sessions/default:big.bin")); got != want {
		t.Fatalf("big.bin is %s in git, want %s", got, want)
	}
	if got := git(t, bare, "cat-file", "blob", want); !bytes.Equal([]byte(got), big) {
		t.Fatal("big.bin read back from the pack differs")
	}
}

// An export that fails half way leaves no pack behind and moves no ref.
func TestExportCanceledLeavesNoPack(t *testing.T) {
	needGit(t)
	r, root := snaptest.NewRepo(t)
	for s := range 40 {
		files := map[string]string{}
		for i := range 5 {
			files[fmt.Sprintf("d%d/f%d.txt", s%3, i)] = strings.Repeat(fmt.Sprintf("%d %d\n", s, i), 50)
		}
		snaptest.WriteFiles(t, root, files)
		if _, err := r.Checkpoint(context.Background(), snap.CheckpointOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bare, b := bareBridge(t, r)
	if _, err := b.Export(&cancelAfter{Context: context.Background(), n: 100}, gitbridge.ExportOptions{All: true}); err == nil {
		t.Fatal("the export was not canceled")
	}
	ents, _ := os.ReadDir(filepath.Join(bare, "objects", "pack"))
	_, loose := packs(t, bare)
	if len(ents) != 0 || loose != 0 {
		t.Fatalf("a canceled export left %d files in objects/pack and %d loose objects", len(ents), loose)
	}
	if refs := git(t, bare, "for-each-ref"); refs != "" {
		t.Fatalf("a canceled export set refs:\n%s", refs)
	}
	// Then it runs whole.
	if _, err := b.Export(context.Background(), gitbridge.ExportOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	git(t, bare, "fsck", "--strict", "--no-dangling")
}

// cancelAfter is a context canceled once its Err has been asked n times.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}
