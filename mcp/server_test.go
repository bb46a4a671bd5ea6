package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/mcp"
	"github.com/snapcore-dev/snap/snaptest"
)

// A client of the official Go SDK, over in-memory transports: the tools and
// their schemas, a whole staged-edit task (needs_match → match_id →
// preview → commit), a dry run then a confirmed rewind, undo, and errors as
// tool errors.
func TestGoClient(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "config.yaml"), []byte("a:\n  timeout: 30\nb:\n  timeout: 30\n"), 0o644)
	cs := connect(t, mcp.New(repo, mcp.Options{Session: "agent", Version: "test"}))

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s: no description or schema", tl.Name)
		}
	}
	sort.Strings(names)
	want := "checkpoint conversation diff log memo_begin_task memo_commit memo_commit_auto memo_preview memo_replace memo_revert memo_task_tree redo rewind show status undo"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("tools:\n%s\nwant\n%s", got, want)
	}

	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %v", name, text(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out
	}
	first := call("checkpoint", map[string]any{"summary": "start"})
	call("memo_begin_task", map[string]any{"goal": "raise the timeouts"})
	ans := call("memo_replace", map[string]any{"path": "config.yaml", "old_text": "timeout: 30", "new_text": "timeout: 60"})
	if ans["status"] != "needs_match" {
		t.Fatalf("memo_replace of a text found twice: %v", ans)
	}
	if c, _ := ans["candidates"].([]any); len(c) != 2 {
		t.Fatalf("candidates: %v", ans["candidates"])
	}
	// Advice in tool terms, not CLI commands.
	if a := mustJSON(ans); strings.Contains(a, "snap edit") || strings.Contains(a, "--match") || !strings.Contains(a, "match_id") {
		t.Fatalf("needs_match advice: %s", a)
	}
	ans = call("memo_replace", map[string]any{"path": "config.yaml", "old_text": "timeout: 30", "new_text": "timeout: 60", "match_id": "b"})
	if ans["status"] != "editing" {
		t.Fatalf("memo_replace with match_id: %v", ans)
	}
	if pv := call("memo_preview", map[string]any{}); !strings.Contains(mustJSON(pv), "timeout: 60") {
		t.Fatalf("preview: %v", pv)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "config.yaml")); strings.Contains(string(b), "60") {
		t.Fatal("a staged change touched the file")
	}
	if c := call("memo_commit", map[string]any{"summary": "b's timeout raised"}); c["status"] != "committed" {
		t.Fatalf("memo_commit: %v", c)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "config.yaml")); string(b) != "a:\n  timeout: 30\nb:\n  timeout: 60\n" {
		t.Fatalf("after the commit: %q", b)
	}
	if tree := call("memo_task_tree", nil); !strings.Contains(tree["text"].(string), "b's timeout raised") {
		t.Fatalf("task tree: %v", tree)
	}

	// rewind: a dry run changes nothing; confirm does; undo returns.
	dry := call("rewind", map[string]any{"ref": first["id"]})
	if dry["dry_run"] != true {
		t.Fatalf("rewind without confirm: %v", dry)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "config.yaml")); !strings.Contains(string(b), "60") {
		t.Fatal("the dry run changed the file")
	}
	call("rewind", map[string]any{"ref": first["id"], "confirm": true})
	if b, _ := os.ReadFile(filepath.Join(root, "config.yaml")); strings.Contains(string(b), "60") {
		t.Fatal("the confirmed rewind did not restore the file")
	}
	call("undo", nil)
	if b, _ := os.ReadFile(filepath.Join(root, "config.yaml")); !strings.Contains(string(b), "60") {
		t.Fatal("undo did not bring the commit back")
	}

	// Errors are tool errors with a message to act on; the server goes on.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "rewind", Arguments: map[string]any{"ref": "#99", "confirm": true}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "#99") {
		t.Fatalf("rewind to a missing checkpoint: %v %v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "memo_commit", Arguments: map[string]any{"summary": "nothing"}})
	if err != nil || !res.IsError || strings.Contains(text(res), "snap edit") || !strings.Contains(text(res), "memo_replace") {
		t.Fatalf("memo_commit with nothing staged: %v %v", err, text(res))
	}
	if l := call("log", map[string]any{"n": 3}); len(l["checkpoints"].([]any)) != 3 {
		t.Fatalf("log: %v", l)
	}
}

// connect is the Go SDK's client on srv over in-memory transports, closed
// with the test.
func connect(t *testing.T, srv *sdk.Server) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// buildSnap builds the snap binary (the complete build) for a test that
// runs it as a client would.
func buildSnap(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "snap")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/snapcore-dev/snap/cmd/snap").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// The same client over the command transport: 'snap mcp' as a real
// process on stdio, as MCP clients run it.
func TestGoClientOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the snap binary")
	}
	ctx := context.Background()
	bin := buildSnap(t)
	_, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644)
	// Enough files that the rewind below fills the trash past the
	// automatic gc's threshold (snap.AutoGCTrashFiles).
	many := func(v string) {
		for i := range snap.AutoGCTrashFiles {
			os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), []byte(v), 0o644)
		}
	}
	many("one")
	cmd := exec.Command(bin, "mcp", "-C", root, "-s", "stdio")
	cmd.Env = append(os.Environ(), "SNAP_NO_AUTO_GC=")
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint", Arguments: map[string]any{"summary": "over stdio"}})
	if err != nil || res.IsError {
		t.Fatalf("checkpoint: %v %v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "log", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(mustJSON(res.StructuredContent), "over stdio") {
		t.Fatalf("log: %v %v", err, res)
	}

	// A long-lived server still empties the trash a rewind fills: its
	// tools start the CLI's background gc as the CLI's commands do.
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("two\n"), 0o644)
	many("two")
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "rewind", Arguments: map[string]any{"ref": "@", "confirm": true}})
	if err != nil || res.IsError {
		t.Fatalf("rewind: %v %v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "one\n" {
		t.Fatalf("after the rewind: %q", b)
	}
	trash := filepath.Join(root, ".snap", "trash")
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, _ := os.ReadDir(trash)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trash still holds %d files 30 s after the rewind", len(left))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Wait for the background gc before the directory is removed.
	for try := 0; try < 200; try++ {
		gc := exec.Command(bin, "gc", "-C", root)
		gc.Env = append(os.Environ(), "SNAP_NO_AUTO_GC=1")
		if out, err := gc.CombinedOutput(); err == nil || !strings.Contains(string(out), "another gc") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The checkpoint tool records only a transcript as the conversation: a
// model cannot make the server (which runs with the user's rights) copy
// any file into the store and later write it back.
func TestConversationPathConfined(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	outside := t.TempDir()
	allowed := t.TempDir()
	for _, p := range []string{filepath.Join(outside, "t.jsonl"), filepath.Join(allowed, "t.jsonl"), filepath.Join(root, "chat.jsonl"), filepath.Join(outside, "id_rsa")} {
		os.WriteFile(p, []byte(`{"role":"user","content":"hi"}`+"\n"), 0o600)
	}
	os.Symlink(filepath.Join(outside, "t.jsonl"), filepath.Join(root, "link.jsonl"))
	srv := mcp.New(repo, mcp.Options{Session: "c", ConversationDirs: []string{allowed}})
	cs := connect(t, srv)
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(outside, "t.jsonl"), false},
		{filepath.Join(outside, "id_rsa"), false},
		{"/etc/passwd", false},
		{"chat.jsonl", false}, // relative
		{filepath.Join(root, "link.jsonl"), false},
		{filepath.Join(root, ".snap", "config"), false},
		{filepath.Join(root, "chat.jsonl"), true},
		{filepath.Join(allowed, "t.jsonl"), true},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint", Arguments: map[string]any{"conversation_path": c.path}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError == c.ok {
			t.Errorf("conversation_path %s: error %v (%s), want allowed %v", c.path, res.IsError, text(res), c.ok)
		}
	}
}

// A diff answer stays within max_bytes (default 64 KiB): files past it
// keep their counts, lose their patches, and the answer says so; paths
// narrow it. An empty session's log is a list, not null.
func TestDiffBounded(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(root, n+".txt"), []byte(strings.Repeat(n+" old line\n", 2000)), 0o644)
	}
	srv := mcp.New(repo, mcp.Options{Session: "d"})
	cs := connect(t, srv)
	call := func(name string, args map[string]any) (map[string]any, int) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out, len(b)
	}
	if l, _ := call("log", nil); l["checkpoints"] == nil {
		t.Fatalf("log of an empty session: %v", l)
	}
	call("checkpoint", nil)
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(root, n+".txt"), []byte(strings.Repeat(n+" new line\n", 2000)), 0o644)
	}
	d, size := call("diff", map[string]any{"max_bytes": 100000})
	if d["truncated"] != true || size > 150000 || len(d["files"].([]any)) != 3 {
		t.Fatalf("diff of 3 x 40 KB changes with max_bytes 100000: %d bytes, truncated %v", size, d["truncated"])
	}
	for _, f := range d["files"].([]any) {
		if f.(map[string]any)["lines_added"].(float64) != 2000 {
			t.Fatalf("counts lost: %v", f)
		}
	}
	d, _ = call("diff", map[string]any{"paths": []string{"b.txt"}, "max_bytes": 1 << 20})
	if files := d["files"].([]any); len(files) != 1 || d["truncated"] != false || files[0].(map[string]any)["patch"] == nil {
		t.Fatalf("diff of b.txt: %v", d)
	}
	if _, size := call("diff", nil); size > 80000 {
		t.Fatalf("default diff answer %d bytes", size)
	}
}

// N10 (2026-11-27 report): memo_begin_task validates parent_task_id as the
// CLI validates --parent (tasks.ParentArg): a negative id is refused (it
// was taken for the top level), 0 is the top level, absent the current
// task.
func TestBeginTaskParentAsTheCLI(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "f"), []byte("f\n"), 0o644)
	cs := connect(t, mcp.New(repo, mcp.Options{Session: "agent", Version: "test"}))
	begin := func(args map[string]any) (map[string]any, string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memo_begin_task", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out, text(res), res.IsError
	}
	if _, _, isErr := begin(map[string]any{"goal": "outer"}); isErr {
		t.Fatal("the first begin failed")
	}
	if _, msg, isErr := begin(map[string]any{"goal": "bad", "parent_task_id": -3}); !isErr || !strings.Contains(msg, "-3 is not a task id") {
		t.Fatalf("parent_task_id -3: error %v, %q", isErr, msg)
	}
	out, msg, isErr := begin(map[string]any{"goal": "top", "parent_task_id": 0})
	if isErr {
		t.Fatalf("parent_task_id 0: %s", msg)
	}
	if task, ok := out["task"].(map[string]any); !ok || task["id"] != float64(2) || task["parent"] != nil && task["parent"] != float64(0) {
		t.Fatalf("parent_task_id 0 began %v, want task 2 at the top level", out["task"])
	}
	out, _, _ = begin(map[string]any{"goal": "child"})
	if task, _ := out["task"].(map[string]any); task["parent"] != float64(2) {
		t.Fatalf("a begin with no parent_task_id: parent %v, want the current task 2", task["parent"])
	}
}

// An agent's rewind through the MCP server keeps what another session
// wrote since its target and lists it in kept; all: true puts it back too;
// undo takes all as well.
func TestRewindKeepsAnotherSession(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	cs := connect(t, mcp.New(repo, mcp.Options{Session: "agent", Version: "test"}))
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", name, err, text(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out
	}
	first := call("checkpoint", map[string]any{"summary": "start"})
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("B's work\n"), 0o644)
	if _, err := repo.Checkpoint(ctx, snap.CheckpointOptions{Session: "B"}); err != nil {
		t.Fatal(err)
	}
	res := call("rewind", map[string]any{"ref": first["id"], "confirm": true})
	kept, _ := res["kept"].([]any)
	if len(kept) != 1 || kept[0].(map[string]any)["path"] != "b.txt" || kept[0].(map[string]any)["session"] != "B" {
		t.Fatalf("rewind: kept %v", res["kept"])
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); err != nil {
		t.Fatalf("B's file after the agent's rewind: %v", err)
	}
	call("undo", map[string]any{"all": true})
	res = call("rewind", map[string]any{"ref": first["id"], "confirm": true, "all": true})
	if kept, _ := res["kept"].([]any); len(kept) != 0 {
		t.Fatalf("rewind all: kept %v", res["kept"])
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); err == nil {
		t.Fatal("rewind with all: true left b.txt")
	}
}

// A server started in a project with no store makes one and runs as a
// server all the same: a record damaged in the op log while it runs is
// skipped by its next log as by a fresh command's (it opened the store it
// made as a one-shot command does, keeping what it had read of the log:
// torture/index2-findings/01).
func TestServerThatMadeTheStoreRereadsTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the snap binary")
	}
	ctx := context.Background()
	bin := buildSnap(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "mcp", "-C", root, "-s", "stdio")
	cmd.Env = append(os.Environ(), "SNAP_NO_AUTO_GC=1")
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	logged := func() string {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "log", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("log: %v %v", err, res)
		}
		return mustJSON(res.StructuredContent)
	}
	for i := 1; i <= 3; i++ {
		os.WriteFile(filepath.Join(root, "a.txt"), []byte(fmt.Sprint(i)), 0o644)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint", Arguments: map[string]any{"summary": fmt.Sprintf("step-%d", i)}})
		if err != nil || res.IsError {
			t.Fatalf("checkpoint: %v %v", err, res)
		}
	}
	logged()
	if l := logged(); !strings.Contains(l, "step-2") {
		t.Fatalf("before the damage the log lacks step-2: %s", l)
	}
	logPath := filepath.Join(root, ".snap", "oplog")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.IndexByte(data, '\n') + 1
	data[second+10] ^= 1 // inside record 2, step-2's
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, err := exec.Command(bin, "log", "-C", root, "--json").Output()
	if err != nil || strings.Contains(string(fresh), "step-2") {
		t.Fatalf("a fresh log after the damage (want no step-2): %v %s", err, fresh)
	}
	if l := logged(); strings.Contains(l, "step-2") {
		t.Fatalf("the server still lists the damaged record's checkpoint: %s", l)
	}
}
