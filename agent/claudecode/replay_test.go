package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
		t.Run(name, func(t *testing.T) { replay(t, filepath.Join(dir, name), false) })
	}
}

// TestReplayBlameWithUserEdits replays the real sessions with a line of
// the user's appended to the file the agent last edited, before each
// prompt after the first and before each edit of that file again (issue
// 22): blame of every file at the end gives
// each injected line to the user, and each line an edit wrote to the agent
// with that edit's tool_use_id.
func TestReplayBlameWithUserEdits(t *testing.T) {
	dir := realdata(t)
	for _, name := range []string{"entire-cli_f5e7d3c25b68_claude.jsonl", "entire-cli_8df6319ef9a6_claude.jsonl"} {
		t.Run(name, func(t *testing.T) { replay(t, filepath.Join(dir, name), true) })
	}
}

// userMark marks the lines the replay injects as the user's.
const userMark = "USER-INJECTED-7f3a"

func replay(t *testing.T, transcript string, inject bool) {
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
	lastEdited := ""               // the file the agent edited last
	wrote := map[string][]string{} // path → the lines each edit wrote, as "tool_use_id\tline"
	injected := 0
	// injectLine appends a line of the user's to path, after its last
	// newline: no later edit's old_string stops matching.
	injectLine := func(path string) {
		b, _ := os.ReadFile(path)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		injected++
		b = append(b, fmt.Sprintf("%s %d\n", userMark, injected)...)
		os.WriteFile(path, b, 0o644)
	}
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
				if inject && lastEdited != "" {
					injectLine(lastEdited)
				}
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
				if inject && in.FilePath != "" && local(in.FilePath) == lastEdited && c.Name != "Write" {
					// The user edits the file between two of the agent's
					// edits of it: the edit's pre-tool capture finds it.
					injectLine(lastEdited)
				}
				hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": c.Name, "tool_use_id": c.ID, "tool_input": input})
				if c.Name == "Edit" || c.Name == "Write" || c.Name == "MultiEdit" {
					conv, _ := os.ReadFile(conv)
					edits = append(edits, before{c.ID, snapshot(t, proj), conv})
					apply(t, local(in.FilePath), c.Name, in)
					lastEdited = local(in.FilePath)
					for _, text := range append([]string{in.NewString, in.Content}, editTexts(in)...) {
						for _, l := range strings.Split(text, "\n") {
							wrote[lastEdited] = append(wrote[lastEdited], c.ID+"\t"+l)
						}
					}
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
	if inject {
		blameAll(t, repo, sess, proj, wrote, injected)
		return
	}
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

// editTexts are a MultiEdit's new strings.
func editTexts(in editInput) []string {
	var out []string
	for _, e := range in.Edits {
		out = append(out, e.NewString)
	}
	return out
}

// blameAll blames every file the agent edited, at the session's head: each
// injected line is the user's; each other line that no version before the
// session had, and that an edit wrote, is the agent's, with the id of an
// edit that wrote that line.
func blameAll(t *testing.T, repo *snap.Repo, sess, proj string, wrote map[string][]string, injected int) {
	ctx := context.Background()
	users, agents := 0, 0
	for path, ws := range wrote {
		rel, _ := filepath.Rel(proj, path)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		res, err := repo.Blame(ctx, snap.BlameOptions{Session: sess, Path: filepath.ToSlash(rel)})
		if err != nil {
			t.Fatalf("blame %s: %v", rel, err)
		}
		for _, l := range res.Lines {
			if strings.HasPrefix(l.Text, userMark) {
				users++
				if l.Actor != snap.ActorUser {
					t.Fatalf("%s:%d %q: actor %s, want user", rel, l.Line, l.Text, l.Actor)
				}
				continue
			}
			if l.Actor != snap.ActorAgent {
				continue // a line of the files as they were (the session start's: the user's)
			}
			agents++
			ok := false
			for _, w := range ws {
				if id, text, _ := strings.Cut(w, "\t"); id == l.MessageID && text == l.Text {
					ok = true
					break
				}
			}
			if !ok {
				t.Fatalf("%s:%d %q: attributed to tool call %q, which wrote no such line", rel, l.Line, l.Text, l.MessageID)
			}
		}
	}
	t.Logf("%d injected lines, %d found by blame as the user's; %d lines the agent's, each from its tool call", injected, users, agents)
	if injected == 0 || users == 0 || agents == 0 {
		t.Fatalf("injected %d, blamed on the user %d, on the agent %d", injected, users, agents)
	}
}
