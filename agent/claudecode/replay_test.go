package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/claudecode"
)

// realdata is the folder of real agent transcripts (../shared/realdata
// beside the module root).
func realdata(t *testing.T) string {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "realdata"))
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the real transcripts are not here (%s): the replay needs them", dir)
	}
	return dir
}

type record struct {
	Type          string          `json:"type"`
	Cwd           string          `json:"cwd"`
	SessionID     string          `json:"sessionId"`
	Message       json.RawMessage `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}

type toolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
	Content    string `json:"content"`
	Edits      []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
}

// replayRealSessions (the conformance suite's replay, TestConformance/replay)
// replays real Claude Code transcripts as the hook
// payloads Claude Code would have sent (SessionStart, UserPromptSubmit per
// human prompt, PreToolUse → the edit applied → PostToolUse per tool call,
// Stop), with the transcript growing as it did, starting from the files as
// the agent first saw them (each edited file's originalFile). Then it
// rewinds to the pre-tool checkpoint of every edit (msg:<tool_use_id>) and
// checks the files are exactly as before that edit and the transcript as it
// was.
func replayRealSessions(t *testing.T) {
	dir := realdata(t)
	for _, name := range []string{"entire-cli_f5e7d3c25b68_claude.jsonl", "entire-cli_8df6319ef9a6_claude.jsonl"} {
		t.Run(name, func(t *testing.T) { replay(t, filepath.Join(dir, name)) })
	}
}

func replay(t *testing.T, transcript string) {
	ctx := context.Background()
	data, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var recs []record
	var cwd, session string
	for _, l := range lines {
		var r record
		if json.Unmarshal(l, &r) != nil {
			recs = append(recs, record{}) // a line no parser reads: still part of the transcript
			continue
		}
		recs = append(recs, r)
		if cwd == "" && r.Cwd != "" {
			cwd, session = r.Cwd, r.SessionID
		}
	}
	// The files as the agent first saw them: an edited file's originalFile
	// at its first edit; a file first created by Write did not exist.
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	local := func(p string) string {
		rel, err := filepath.Rel(cwd, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("%s is outside the session's cwd %s", p, cwd)
		}
		return filepath.Join(proj, rel)
	}
	first := map[string]bool{}
	for _, r := range recs {
		var res struct {
			Type         string  `json:"type"`
			FilePath     string  `json:"filePath"`
			OriginalFile *string `json:"originalFile"`
		}
		if len(r.ToolUseResult) == 0 || json.Unmarshal(r.ToolUseResult, &res) != nil || res.FilePath == "" || first[res.FilePath] {
			continue
		}
		first[res.FilePath] = true
		if res.Type != "create" && res.OriginalFile != nil {
			os.MkdirAll(filepath.Dir(local(res.FilePath)), 0o755)
			os.WriteFile(local(res.FilePath), []byte(*res.OriginalFile), 0o644)
		}
	}
	os.MkdirAll(proj, 0o755)
	conv := filepath.Join(root, "claude", "transcript.jsonl")
	os.MkdirAll(filepath.Dir(conv), 0o755)
	tf, err := os.Create(conv)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()

	var hookTimes []time.Duration
	hook := func(payload map[string]any) {
		t.Helper()
		payload["session_id"], payload["transcript_path"], payload["cwd"] = session, conv, proj
		b, _ := json.Marshal(payload)
		var stderr bytes.Buffer
		start := time.Now()
		agent.Hook(ctx, bytes.NewReader(b), &stderr, agent.Options{}, claudecode.Parse)
		hookTimes = append(hookTimes, time.Since(start))
		if stderr.Len() > 0 {
			t.Fatalf("hook %s: %s", payload["hook_event_name"], stderr.String())
		}
	}
	type before struct {
		id    string
		files map[string]string
		conv  []byte
	}
	var edits []before
	hook(map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	for i, r := range recs {
		tf.Write(lines[i])
		switch r.Type {
		case "user":
			var m struct {
				Content json.RawMessage `json:"content"`
			}
			var prompt string
			if json.Unmarshal(r.Message, &m) == nil && json.Unmarshal(m.Content, &prompt) == nil {
				hook(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": prompt})
			}
		case "assistant":
			var m struct {
				Content []toolUse `json:"content"`
			}
			if json.Unmarshal(r.Message, &m) != nil {
				continue
			}
			for _, c := range m.Content {
				if c.Type != "tool_use" {
					continue
				}
				var in editInput
				json.Unmarshal(c.Input, &in)
				input := map[string]any{}
				json.Unmarshal(c.Input, &input)
				if in.FilePath != "" {
					input["file_path"] = local(in.FilePath)
				}
				hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": c.Name, "tool_use_id": c.ID, "tool_input": input})
				if c.Name == "Edit" || c.Name == "Write" || c.Name == "MultiEdit" {
					conv, _ := os.ReadFile(conv)
					edits = append(edits, before{c.ID, snapshot(t, proj), conv})
					apply(t, local(in.FilePath), c.Name, in)
				}
				hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": c.Name, "tool_use_id": c.ID, "tool_input": input})
			}
		}
	}
	hook(map[string]any{"hook_event_name": "Stop"})
	if len(edits) < 10 {
		t.Fatalf("only %d edits replayed", len(edits))
	}
	sort.Slice(hookTimes, func(i, j int) bool { return hookTimes[i] < hookTimes[j] })
	t.Logf("%d hooks, %d edits; hook time in process: median %s, max %s", len(hookTimes), len(edits),
		hookTimes[len(hookTimes)/2].Round(time.Microsecond), hookTimes[len(hookTimes)-1].Round(time.Microsecond))

	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	sess := agent.SessionName(claudecode.Name, session)
	for _, e := range edits {
		out := t.TempDir()
		if _, err := repo.Rewind(ctx, snap.RewindOptions{Session: sess, Target: "msg:" + e.id, StateOut: out}); err != nil {
			t.Fatalf("rewind msg:%s: %v", e.id, err)
		}
		if got := snapshot(t, proj); !equal(got, e.files) {
			t.Fatalf("after rewind msg:%s the files differ from before the edit", e.id)
		}
		if got, _ := os.ReadFile(filepath.Join(out, snap.ConversationDoc)); !bytes.Equal(got, e.conv) {
			t.Fatalf("after rewind msg:%s the transcript is %d bytes, want %d", e.id, len(got), len(e.conv))
		}
	}
	if rep, err := repo.Fsck(ctx, true); err != nil || rep.Corrupt() {
		t.Fatalf("fsck: %v %+v", err, rep)
	}
}

// apply performs an edit tool call as Claude Code does.
func apply(t *testing.T, path, tool string, in editInput) {
	t.Helper()
	old, _ := os.ReadFile(path)
	s := string(old)
	replace := func(o, n string, all bool) {
		if !strings.Contains(s, o) {
			t.Fatalf("%s: the edit's old_string is not in the file: the replay diverged", path)
		}
		if all {
			s = strings.ReplaceAll(s, o, n)
		} else {
			s = strings.Replace(s, o, n, 1)
		}
	}
	switch tool {
	case "Edit":
		replace(in.OldString, in.NewString, in.ReplaceAll)
	case "MultiEdit":
		for _, e := range in.Edits {
			replace(e.OldString, e.NewString, e.ReplaceAll)
		}
	case "Write":
		s = in.Content
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot reads every file under dir but the store.
func snapshot(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".snap" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
