package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// W11 monitored tree: W1's tree (W1Files files) with `snap watch` running,
// against git at its best configuration for status on Linux
// (core.untrackedCache, feature.manyFiles, index v4; git's own fsmonitor
// daemon does not run on Linux) and snap without the daemon, in one run,
// alternating: a no-change checkpoint (git: `git status --porcelain`) and
// 10 files changed (git: `git add -A` and a commit, what a shadow-git
// checkpointer runs), then a rewind of those 10 files (git: `reset
// --hard` to the commit before). Every snap checkpoint with the daemon,
// and every rewind's safety capture, must report that it built on it
// ("monitored"), else the workload fails. Also a Claude Code PreToolUse
// hook of Bash (a full capture, with the transcript) on the watched copy
// with nothing changed since the last checkpoint, against `git status`.
// The targets are the issue's: at the default 20,000 files, and from
// 200,000 (-scale 10) those of that size; quick runs print none.

const (
	rowWatchNoChange = "no-change checkpoint, `snap watch` running"
	rowWatch10       = "10 files changed, `snap watch` running"
	rowScanNoChange  = "no-change checkpoint, no daemon (full scan)"
	rowWatchRewind10 = "rewind 10 files, `snap watch` running"
	rowWatchHook     = "PreToolUse Bash hook (full capture), nothing changed, `snap watch` running"
)

func runW11(b *bench) error {
	const W = "W11"
	if !b.hasGit {
		for _, r := range []string{rowWatchNoChange, rowWatch10, rowScanNoChange, rowWatchRewind10, rowWatchHook} {
			b.rep.skip(W, r, "git", "git is not installed")
		}
		return nil
	}
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W1Files, b.cfg.Seed)
	root, err := b.dir("w11")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	watched, scanned, gitWork := filepath.Join(root, "snap-watch"), filepath.Join(root, "snap-scan"), filepath.Join(root, "git-work")
	c := &copies{t: t, dirs: []string{watched, scanned, gitWork}, cur: map[int][]byte{}}
	for _, d := range c.dirs {
		if err := t.write(d); err != nil {
			return err
		}
	}
	w, s := &snapPeer{bin: b.cfg.Snap, dir: watched}, &snapPeer{bin: b.cfg.Snap, dir: scanned}
	for _, p := range []*snapPeer{w, s} {
		if err := p.init(); err != nil {
			return err
		}
		if _, _, err := p.checkpoint("-m", "first"); err != nil {
			return err
		}
	}
	if _, err := w.run("watch", "--idle", "10m"); err != nil {
		return err
	}
	defer w.run("watch", "--stop")
	if _, _, err := w.checkpoint("--allow-empty", "-m", "base"); err != nil { // the monitor's first base
		return err
	}
	g, err := newGitPeer(filepath.Join(root, "git-shadow.git"), gitWork, false)
	if err != nil {
		return err
	}
	for _, kv := range [][2]string{{"core.untrackedCache", "true"}, {"feature.manyFiles", "true"}, {"index.version", "4"}} {
		if _, err := g.git("config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	if err := g.checkpoint("first"); err != nil {
		return err
	}
	if _, err := g.git("update-index", "--index-version", "4"); err != nil {
		return err
	}
	if err := g.status(); err != nil { // (fills the untracked cache)
		return err
	}
	conv := filepath.Join(root, "claude", "session.jsonl")
	os.MkdirAll(filepath.Dir(conv), 0o755)
	if err := os.WriteFile(conv, []byte(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n"), 0o644); err != nil {
		return err
	}
	hook := func(step int) (time.Duration, error) {
		return w.hook(map[string]any{"hook_event_name": "PreToolUse", "session_id": "w11", "transcript_path": conv, "cwd": watched,
			"tool_name": "Bash", "tool_use_id": fmt.Sprintf("toolu_b%d", step), "tool_input": map[string]any{"command": "make test"}})
	}
	if _, err := hook(-1); err != nil { // the hook session's first checkpoint (not timed)
		return err
	}
	b.logf("W11: %d files, snap watch vs no daemon vs git at its best", t.n)
	sm := samples{}
	monitored := func(res checkpointResult) error {
		if !res.Monitored {
			return fmt.Errorf("a checkpoint with snap watch running did not build on it: %+v", res)
		}
		return nil
	}
	for r := 0; r < b.cfg.Runs; r++ {
		err := alternate(r,
			func() error {
				settle()
				res, d, err := w.checkpoint()
				sm.add("watch", d)
				if err == nil {
					err = monitored(res)
				}
				return err
			},
			func() error {
				settle()
				_, d, err := s.checkpoint()
				sm.add("scan", d)
				return err
			},
			func() error {
				settle()
				d, err := measure(g.status)
				sm.add("git status", d)
				return err
			},
			func() error {
				settle()
				d, err := hook(r)
				sm.add("watch hook", d)
				return err
			})
		if err != nil {
			return err
		}
		idx := make([]int, 10)
		for i := range idx {
			idx[i] = (r*97 + i*1009) % t.n
		}
		before := maps.Clone(c.cur)
		if err := c.edit(idx, "w11", r); err != nil {
			return err
		}
		err = alternate(r,
			func() error {
				settle()
				res, d, err := w.checkpoint()
				sm.add("watch 10", d)
				if err == nil && len(res.Files.Modified) != len(idx) {
					err = fmt.Errorf("the monitored checkpoint of 10 changed files modified %d", len(res.Files.Modified))
				}
				if err == nil {
					err = monitored(res)
				}
				return err
			},
			func() error {
				settle()
				_, _, err := s.checkpoint() // (keeps the copies' stores alike; not a row)
				return err
			},
			func() error {
				settle()
				d, err := measure(func() error { return g.checkpoint(fmt.Sprint("w11 ", r)) })
				sm.add("git 10", d)
				return err
			})
		if err != nil {
			return err
		}
		// Back over the 10 files. (The copy without the daemon keeps
		// them: no row reads it after this.)
		err = alternate(r,
			func() error {
				settle()
				res, d, err := w.rewind("@~1")
				if err == nil && len(res.Restored) != len(idx) {
					err = fmt.Errorf("the rewind over 10 files restored %d", len(res.Restored))
				}
				if err == nil && !res.SafetyMonitored {
					err = fmt.Errorf("a rewind with snap watch running scanned the tree for its safety capture")
				}
				sm.add("watch rewind 10", d)
				if err != nil {
					return err
				}
				return c.verify(watched, idx, before)
			},
			func() error {
				settle()
				d, err := measure(func() error { return g.reset("HEAD~1") })
				sm.add("git rewind 10", d)
				if err != nil {
					return err
				}
				return c.verify(gitWork, idx, before)
			})
		if err != nil {
			return err
		}
		c.cur = before
		// The agent's next step records the tree the rewind left (not
		// timed: the next round's no-change row is a checkpoint with
		// nothing changed since the last one, as before this row existed).
		if _, _, err := w.checkpoint("--allow-empty"); err != nil {
			return err
		}
	}
	// The hook recorded in its session, monitored, nothing new.
	out, err := w.run("log", "-s", "w11", "--json")
	if err != nil {
		return err
	}
	var hookLog struct {
		Checkpoints []json.RawMessage `json:"checkpoints"`
	}
	if err := json.Unmarshal(out, &hookLog); err != nil || len(hookLog.Checkpoints) != 1 {
		return fmt.Errorf("the hook session holds %d checkpoints, want 1 (nothing changed): %v", len(hookLog.Checkpoints), err)
	}
	// The targets, for 20,000 files and for 200,000 (quick runs'
	// small trees have none: the fixed costs dominate there).
	noChange, hookTarget, scan, ten, rewind := 0.25, 0.0, 1.0, 0.3, 0.3
	switch {
	case t.n >= 200_000:
		noChange, hookTarget = 0.1, 0.2
	case t.n < 20_000:
		noChange, scan, ten, rewind = 0, 0, 0, 0
	}
	rep := b.rep
	rep.timeRow(W, rowWatchNoChange, median(sm["watch"]), "`git status --porcelain`, best configuration", median(sm["git status"]), noChange, "")
	rep.timeRow(W, rowWatchHook, median(sm["watch hook"]), "`git status --porcelain`, best configuration", median(sm["git status"]), hookTarget, "")
	rep.timeRow(W, rowScanNoChange, median(sm["scan"]), "`git status --porcelain`, best configuration", median(sm["git status"]), scan, "")
	rep.timeRow(W, rowWatch10, median(sm["watch 10"]), "`git add -A` + commit, best configuration", median(sm["git 10"]), ten, "")
	rep.timeRow(W, rowWatchRewind10, median(sm["watch rewind 10"]), "`reset --hard`, best configuration", median(sm["git rewind 10"]), rewind, "")
	rep.note("W11: %d files; snap with `snap watch` running, snap without it, and git with core.untrackedCache, feature.manyFiles and index v4 (git's fsmonitor daemon does not run on Linux); median of %d run(s), alternating. Every monitored checkpoint is checked to have built on the daemon.",
		t.n, b.cfg.Runs)
	return nil
}
