package snap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

// Broken transcript lines are stored byte for byte and reported by the
// view; they never fail a checkpoint.
func TestBrokenTranscriptStoredExactly(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"f": "x"})
	doc := `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}{"type":"user"` + "\n" +
		"not json at all\n" +
		`{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"trunc`
	res := checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "conversation", Data: []byte(doc)}}})
	var sb strings.Builder
	if err := r.CatState(ctx, res.ID, "conversation", &sb); err != nil || sb.String() != doc {
		t.Fatalf("stored bytes differ: %v", err)
	}
	page, err := r.Conversation(ctx, mustResolve(t, r, "", "@"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total < 2 || len(page.Problems) == 0 {
		t.Fatalf("view: %d messages, problems %v", page.Total, page.Problems)
	}
}

// Real transcripts (../shared/realdata) checkpoint and view correctly: the
// Claude transcripts' Edit/Write calls appear, the Gemini session has 13
// messages, paging works.
func TestRealTranscripts(t *testing.T) {
	dir := "../shared/realdata"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real data not found at %s: skipping", dir)
	}
	cases := []struct {
		file     string
		messages int
		edits    int // Edit + Write calls
	}{
		{"entire-cli_f5e7d3c25b68_claude.jsonl", -1, 12},
		{"entire-cli_8df6319ef9a6_claude.jsonl", -1, 25},
		{"entire-cli_ab2b9748b105_gemini.json", 13, -1},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			r, root := snaptest.NewRepo(t)
			snaptest.WriteFiles(t, root, map[string]string{"f": "x"})
			d, err := snap.ReadStateDoc("conversation", filepath.Join(dir, tc.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			res := checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{d}})
			page, err := r.Conversation(ctx, mustResolve(t, r, "", "@"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Messages != page.Total {
				t.Errorf("log count %d, view %d", res.Stats.Messages, page.Total)
			}
			if tc.messages >= 0 && page.Total != tc.messages {
				t.Errorf("%d messages, want %d", page.Total, tc.messages)
			}
			edits := 0
			for _, m := range page.Messages {
				for _, c := range m.ToolCalls {
					if c.Name == "Edit" || c.Name == "Write" {
						edits++
						if !strings.Contains(string(c.Input), "file_path") {
							t.Errorf("edit without file_path: %s", c.Input)
						}
					}
				}
			}
			if tc.edits >= 0 && edits != tc.edits {
				t.Errorf("%d Edit/Write calls in the view, want %d", edits, tc.edits)
			}
			p2, err := r.Conversation(ctx, mustResolve(t, r, "", "@"), 2, 3)
			if err != nil || len(p2.Messages) != 3 || p2.Messages[0].Index != 2 || p2.Total != page.Total {
				t.Errorf("paging: %+v %v", p2, err)
			}
		})
	}
}

// Show previews the conversation (its first user and last assistant
// message) unless asked not to read it (ShowOptions.NoPreview, for a
// caller that pages the conversation itself).
func TestShowWithoutPreview(t *testing.T) {
	r, _ := snaptest.NewRepo(t)
	doc := `{"type":"user","message":{"role":"user","content":"hello"}}` + "\n" +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}` + "\n"
	res := checkpoint(t, r, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "conversation", Data: []byte(doc)}}})
	full, err := r.Show(ctx, res.ID)
	if err != nil || full.Conversation == nil || full.Conversation.FirstUser != "hello" {
		t.Fatalf("show: %+v, %v", full, err)
	}
	brief, err := r.Show(ctx, res.ID, snap.ShowOptions{NoPreview: true})
	if err != nil || brief.Conversation != nil || len(brief.State) != 1 || brief.State[0].Size != int64(len(doc)) {
		t.Fatalf("show without preview: %+v, %v", brief, err)
	}
}
