package snap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
)

// Tests of the conversation diff by shared chunks (convdiff.go): the same
// result as comparing whole views, for stored versions (chunk ids) and a
// live version (hashed at the stored chunks' cuts), and the shortcut taken
// where it applies.

// transcriptForTest is a Claude Code-like transcript of about size bytes:
// prompts, assistant messages written as several records, tool results
// with large members, now and then a record merging into an older message.
func transcriptForTest(r *rand.Rand, size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		switch r.IntN(5) {
		case 0:
			fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"prompt %d"}}`+"\n", i, i)
		case 1, 2:
			id := fmt.Sprintf("msg_%d", i)
			fmt.Fprintf(&b, `{"type":"assistant","uuid":"a%d","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"step %d"}]}}`+"\n", i, id, i)
			fmt.Fprintf(&b, `{"type":"assistant","uuid":"b%d","message":{"id":"%s","role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/f%d"}}]}}`+"\n", i, id, i, i)
		case 3:
			fmt.Fprintf(&b, `{"type":"user","uuid":"r%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"ok"}]},"toolUseResult":{"file":"%s"}}`+"\n", i, i-1, strings.Repeat("x", r.IntN(4000)))
		case 4:
			fmt.Fprintf(&b, `{"type":"assistant","uuid":"c%d","message":{"id":"msg_%d","role":"assistant","content":[{"type":"text","text":"more %d"}]}}`+"\n", i, max(0, i-1-r.IntN(3)), i)
		}
	}
	return b.Bytes()
}

// variantsForTest are versions of a that share a prefix with it: appended
// to (whole lines, a line completed, a record merging into a's last
// message), edited in the middle, truncated (at a line, mid-line).
func variantsForTest(r *rand.Rand, a []byte) map[string][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	more := transcriptForTest(r, 2000)
	mid := len(a) / 2
	line := bytes.LastIndexByte(a[:len(a)*3/4], '\n') + 1
	lastID := ""
	if i := bytes.LastIndex(a, []byte(`"id":"msg_`)); i >= 0 {
		lastID = string(a[i+6 : i+6+bytes.IndexByte(a[i+6:], '"')])
	}
	merge := fmt.Sprintf(`{"type":"assistant","message":{"id":"%s","content":[{"type":"text","text":"merged"}]}}`+"\n", lastID)
	return map[string][]byte{
		"appended":  cat(a, more),
		"completed": cat(a[:len(a)-1], []byte(`,"x":1}`+"\n"), more),
		"merging":   cat(a, []byte(merge)),
		"edited":    cat(a[:mid], []byte("EDIT"), a[mid+10:]),
		"cut-line":  a[:line],
		"cut-mid":   a[:mid],
		"rewritten": cat(a[:line], more),
	}
}

func checkConversationDiffForTest(t *testing.T, what string, got *conversation.DiffResult, a, b []byte) {
	t.Helper()
	want := conversation.Diff(conversation.Parse(a), conversation.Parse(b))
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%s: common %d, -%d +%d; whole views: common %d, -%d +%d", what,
			got.Common, len(got.Removed), len(got.Added), want.Common, len(want.Removed), len(want.Added))
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Fatalf("%s: JSON differs", what)
	}
}

func TestDiffConversationBySharedChunks(t *testing.T) {
	r, _, err := Init(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(6, 6))
	bases := map[string][]byte{"generated": transcriptForTest(rng, 600<<10)}
	for _, name := range []string{"entire-cli_8df6319ef9a6_claude.jsonl", "entire-cli_f5e7d3c25b68_claude.jsonl"} {
		if data, err := os.ReadFile(filepath.Join("..", "shared", "realdata", name)); err == nil {
			bases[name] = data
		} else {
			t.Logf("realdata: %v (not compared)", err)
		}
	}
	live := filepath.Join(t.TempDir(), "live.jsonl")
	for bname, a := range bases {
		for vname, b := range variantsForTest(rng, a) {
			for _, pair := range [][2][]byte{{a, b}, {b, a}} {
				what := fmt.Sprintf("%s %s", bname, vname)
				w := r.objects.NewWriter()
				idA, err := w.PutBytes(pair[0])
				if err != nil {
					t.Fatal(err)
				}
				idB, err := w.PutBytesAppend(pair[1], idA) // as a checkpoint stores it
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Commit(); err != nil {
					t.Fatal(err)
				}
				read := func(id objects.ID) ([]byte, error) { return r.objects.ReadBlob(id, maxDocSize) }

				// Stored versions: by chunk ids.
				da, _ := r.storedDoc(idA)
				db, _ := r.storedDoc(idB)
				if _, ok, err := conversationDiff(da, db); err != nil || !ok {
					t.Fatalf("%s: stored: no shortcut (%v)", what, err)
				}
				got, err := r.diffConversation(idA, idB, nil, read)
				if err != nil {
					t.Fatal(err)
				}
				checkConversationDiffForTest(t, what+" stored", got, pair[0], pair[1])

				// A live version (one more line), its id computed, not stored.
				now := append(bytes.Clone(pair[1]), []byte(`{"role":"user","content":"now"}`+"\n")...)
				if err := os.WriteFile(live, now, 0o644); err != nil {
					t.Fatal(err)
				}
				idL, err := r.objects.NewDryWriter().PutBytes(now)
				if err != nil {
					t.Fatal(err)
				}
				liveDocs := r.liveDocs(nil, map[objects.ID]string{idL: live})
				dl, _, _ := liveDocs(idL)
				if _, ok, err := conversationDiff(da, dl); err != nil || !ok {
					t.Fatalf("%s: live: no shortcut (%v)", what, err)
				}
				dl.close()
				got, err = r.diffConversation(idA, idL, liveDocs, read)
				if err != nil {
					t.Fatal(err)
				}
				checkConversationDiffForTest(t, what+" live", got, pair[0], now)
			}
		}
	}
}

// TestDiffWorkingTreeConversation runs Repo.Diff on a growing transcript:
// two checkpoints, then the live file grown again, each compared with the
// whole views.
func TestDiffWorkingTreeConversation(t *testing.T) {
	r, _, err := Init(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	src := filepath.Join(t.TempDir(), "session.jsonl")
	v1 := transcriptForTest(rng, 300<<10)
	v2 := append(bytes.Clone(v1), transcriptForTest(rng, 3000)...)
	v3 := append(bytes.Clone(v2), `{"type":"user","message":{"role":"user","content":"one more"}}`+"\n"...)
	var ids []objects.ID
	for _, v := range [][]byte{v1, v2} {
		if err := os.WriteFile(src, v, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := r.Checkpoint(context.Background(), CheckpointOptions{State: []StateDoc{{Name: ConversationDoc, Source: src}}, AllowEmpty: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	if err := os.WriteFile(src, v3, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from objects.ID
		to   *objects.ID
		a, b []byte
	}{{ids[0], &ids[1], v1, v2}, {ids[1], &ids[0], v2, v1}, {ids[1], nil, v2, v3}, {ids[0], nil, v1, v3}} {
		res, err := r.Diff(context.Background(), c.from, c.to, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.State) != 1 || res.State[0].Conversation == nil {
			t.Fatalf("state diffs: %+v", res.State)
		}
		checkConversationDiffForTest(t, fmt.Sprintf("%s..%v", c.from.Short(), c.to), res.State[0].Conversation, c.a, c.b)
	}
}
