package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// W7 agent hooks on the W1 tree: what `snap hook claude-code` costs the
// agent per tool call, process start included. A PreToolUse of Edit (the
// edit-set hint: only the named file is examined) is compared with
// `snap checkpoint --paths` of the same kind of change; a PreToolUse of
// Bash (a full capture) with `snap checkpoint`. Each measured call follows
// a one-file change, so every hook records a checkpoint.

const (
	rowHookEdit = "PreToolUse Edit hook"
	rowHookBash = "PreToolUse Bash hook"
)

func runW7(b *bench) error {
	const W = "W7"
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W1Files, b.cfg.Seed)
	root, err := b.dir("w7")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir := filepath.Join(root, "proj")
	b.logf("W7: writing %d files (%s)", t.n, formatBytes(float64(t.bytes())))
	if err := t.write(dir); err != nil {
		return err
	}
	conv := filepath.Join(root, "claude", "session.jsonl")
	os.MkdirAll(filepath.Dir(conv), 0o755)
	os.WriteFile(conv, []byte(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n"), 0o644)
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("--conversation", conv, "-s", "w7"); err != nil {
		return err
	}
	r := rng(b.cfg.Seed, streamW7)
	change := func(i, step int) (string, error) {
		p := t.path(i)
		full := filepath.Join(dir, filepath.FromSlash(p))
		data, err := os.ReadFile(full)
		if err != nil {
			return "", err
		}
		return full, replaceFile(full, append(data, fmt.Sprintf("// w7 %d\n", step)...))
	}
	hook := func(payload map[string]any) (time.Duration, error) {
		payload["session_id"], payload["transcript_path"], payload["cwd"] = "w7", conv, dir
		return s.hook(payload)
	}
	n := max(b.cfg.Runs*10, 10)
	var edit, paths, bash, full []time.Duration
	for step := 0; step < n; step++ {
		err := alternate(step,
			func() error {
				f, err := change(r.IntN(t.n), step)
				if err != nil {
					return err
				}
				settle()
				d, err := hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": fmt.Sprintf("toolu_%d", step),
					"tool_input": map[string]any{"file_path": f, "old_string": "a", "new_string": "b"}})
				edit = append(edit, d)
				return err
			},
			func() error {
				f, err := change(r.IntN(t.n), step)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(dir, f)
				settle()
				d, err := measure(func() error { _, err := s.run("checkpoint", "-s", "w7", "--paths", rel); return err })
				paths = append(paths, d)
				return err
			},
			func() error {
				if _, err := change(r.IntN(t.n), step); err != nil {
					return err
				}
				settle()
				d, err := hook(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": fmt.Sprintf("toolu_b%d", step),
					"tool_input": map[string]any{"command": "make test"}})
				bash = append(bash, d)
				return err
			},
			func() error {
				if _, err := change(r.IntN(t.n), step); err != nil {
					return err
				}
				settle()
				d, err := measure(func() error { _, err := s.run("checkpoint", "-s", "w7"); return err })
				full = append(full, d)
				return err
			})
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
	}
	// Every hook recorded its checkpoint.
	out, err := s.run("log", "-s", "w7", "--kind", "pre-tool", "--json")
	if err != nil {
		return err
	}
	var log struct {
		Checkpoints []json.RawMessage `json:"checkpoints"`
	}
	if err := json.Unmarshal(out, &log); err != nil || len(log.Checkpoints) != 2*n {
		return fmt.Errorf("%d pre-tool checkpoints, want %d (%v)", len(log.Checkpoints), 2*n, err)
	}
	b.rep.timeRow(W, rowHookEdit+", median", median(edit), "`checkpoint --paths` of one changed file", median(paths), 0, "")
	b.rep.timeRow(W, rowHookEdit+", p99", percentile(edit, 99), "`checkpoint --paths` of one changed file", percentile(paths, 99), 0, "")
	b.rep.timeRow(W, rowHookBash+", median", median(bash), "`checkpoint` (full capture)", median(full), 0, "")
	b.rep.timeRow(W, rowHookBash+", p99", percentile(bash, 99), "`checkpoint` (full capture)", percentile(full, 99), 0, "")
	b.rep.note("W7: %d-file tree (%s); %d calls of each kind, each after a one-file change, process start included; the hook also re-reads the transcript.",
		t.n, formatBytes(float64(t.bytes())), n)
	return nil
}
