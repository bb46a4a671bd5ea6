package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/agent/claudecode"
)

// Every way a hook can go wrong ends the same way for the agent: Hook
// returns (exit 0), within its bound, having printed nothing on stdout
// (Hook has no stdout); the log says why.
func TestHookFailuresNeverBlock(t *testing.T) {
	ctx := context.Background()
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	conv := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(conv, []byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o644)
	payload := func(fields map[string]any) []byte {
		p := map[string]any{"session_id": "s-1", "transcript_path": conv, "cwd": proj}
		for k, v := range fields {
			p[k] = v
		}
		b, _ := json.Marshal(p)
		return b
	}
	run := func(t *testing.T, in []byte, o agent.Options) string {
		t.Helper()
		var stderr bytes.Buffer
		start := time.Now()
		agent.Hook(ctx, bytes.NewReader(in), &stderr, o, claudecode.Parse)
		if d := time.Since(start); d > 8*time.Second {
			t.Fatalf("the hook took %s", d)
		}
		return stderr.String()
	}
	// The first event creates the store.
	if e := run(t, payload(map[string]any{"hook_event_name": "SessionStart", "source": "startup"}), agent.Options{}); e != "" {
		t.Fatalf("SessionStart: %s", e)
	}
	repo, err := snap.Open(snap.Options{Dir: proj})
	if err != nil {
		t.Fatalf("no store after the first event: %v", err)
	}
	defer repo.Close()
	for _, c := range []struct {
		name    string
		in      []byte
		stderr  string // "" = no problem
		logged  string
		records bool
	}{
		{"malformed JSON", []byte(`{"session_id": "s-1", "cwd": `), "malformed payload", "", false},
		{"not JSON at all", []byte("garbage"), "malformed payload", "", false},
		{"empty", nil, "malformed payload", "", false},
		{"unknown event", payload(map[string]any{"hook_event_name": "SomethingNew", "extra": 1}), "", "nothing to record", false},
		{"read-only tool", payload(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": map[string]any{"file_path": filepath.Join(proj, "a.txt")}}), "", "nothing to record", false},
		{"no cwd", []byte(`{"hook_event_name":"Stop","session_id":"s-1"}`), "no absolute cwd", "", false},
		{"relative cwd", payload(map[string]any{"hook_event_name": "Stop", "cwd": "proj"}), "no absolute cwd", "", false},
		{"edit outside the project", payload(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_x",
			"tool_input": map[string]any{"file_path": "/etc/passwd"}}), "outside the project", "the whole tree examined", true},
		{"missing transcript", payload(map[string]any{"hook_event_name": "Stop", "transcript_path": filepath.Join(proj, "nope.jsonl")}), "", "recorded", true},
		{"unknown fields", payload(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "fix the bug\nplease", "agent_id": "x", "new_field": []int{1}}), "", "recorded", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A change to record, so that recording shows.
			os.WriteFile(filepath.Join(proj, "a.txt"), []byte(c.name+"\n"), 0o644)
			before, _ := repo.Log(ctx, snap.LogOptions{Session: "s-1"})
			maintained := false // Maintain (the CLI's background gc) runs after a recorded event only
			e := run(t, c.in, agent.Options{Maintain: func(context.Context, *snap.Repo) { maintained = true }})
			if c.stderr == "" && e != "" || c.stderr != "" && !strings.Contains(e, c.stderr) {
				t.Fatalf("stderr %q, want %q", e, c.stderr)
			}
			if c.logged != "" {
				lines, _ := agent.ReadLog(repo, 1)
				if len(lines) != 1 || !strings.Contains(lines[0], c.logged) {
					t.Fatalf("log %q, want %q", lines, c.logged)
				}
			}
			after, _ := repo.Log(ctx, snap.LogOptions{Session: "s-1"})
			if got := len(after) > len(before); got != c.records {
				t.Fatalf("recorded a checkpoint: %v, want %v", got, c.records)
			}
			if maintained != c.records {
				t.Fatalf("Maintain ran: %v, want %v", maintained, c.records)
			}
		})
	}
	// The prompt's first line is the summary.
	if l, _ := repo.Log(ctx, snap.LogOptions{Session: "s-1", N: 1}); len(l) != 1 || l[0].Kind != "prompt" || l[0].Summary != "fix the bug" {
		t.Fatalf("last checkpoint: %+v", l)
	}

	// A busy store: another process holds the writer lock; the hook gives
	// up within its lock timeout and says so.
	t.Run("store busy", func(t *testing.T) {
		os.WriteFile(filepath.Join(proj, "a.txt"), []byte("changed\n"), 0o644)
		release, err := holdStore(t, repo)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		start := time.Now()
		e := run(t, payload(map[string]any{"hook_event_name": "Stop"}), agent.Options{LockTimeout: 300 * time.Millisecond, Timeout: 3 * time.Second})
		if !strings.Contains(e, "error") || time.Since(start) > 3*time.Second {
			t.Fatalf("busy store: stderr %q after %s", e, time.Since(start))
		}
	})
	// Giving up is logged in the store, not only on stderr (which agents
	// hide): here the hook waits for a busy store past its whole bound.
	t.Run("timeout logged", func(t *testing.T) {
		os.WriteFile(filepath.Join(proj, "a.txt"), []byte("changed again\n"), 0o644)
		release, err := holdStore(t, repo)
		if err != nil {
			t.Fatal(err)
		}
		e := run(t, payload(map[string]any{"hook_event_name": "Stop"}), agent.Options{LockTimeout: 5 * time.Second, Timeout: 300 * time.Millisecond})
		release()
		if !strings.Contains(e, "gave up") {
			t.Fatalf("stderr %q, want gave up", e)
		}
		if lines, _ := agent.ReadLog(repo, 1); len(lines) != 1 || !strings.Contains(lines[0], "gave up after 300ms") {
			t.Fatalf("log %q: the timeout is not in it", lines)
		}
		time.Sleep(time.Second) // the abandoned goroutine's checkpoint
	})
	// The whole hook is bounded even when the work is not: here the
	// payload never ends. (A bound of a nanosecond was not a test of it: a
	// small checkpoint can finish before the runtime fires the timer.)
	t.Run("timeout", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close() // ends the abandoned read
		var stderr bytes.Buffer
		start := time.Now()
		agent.Hook(ctx, r, &stderr, agent.Options{Timeout: 200 * time.Millisecond}, claudecode.Parse)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the hook took %s", d)
		}
		if e := stderr.String(); !strings.Contains(e, "gave up after 200ms") {
			t.Fatalf("stderr %q, want a timeout", e)
		}
	})
}

// holdStore takes the store's gc.lock exclusively, as a running gc sweep
// does: every writer waits for it.
// (A hook an earlier case gave up on may still hold it shared for a
// moment: it is retried for a few seconds.)
func holdStore(t *testing.T, repo *snap.Repo) (func(), error) {
	f, err := os.OpenFile(filepath.Join(repo.StoreDir, "gc.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if try == 100 {
			f.Close()
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
