package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// W2 long session: W2Steps checkpoints of a W2Files-file project; each step
// edits 1–5 files and appends two messages (about 4 KB) to a JSONL transcript.
//
// Where the transcript lives: snap gets it with --conversation FILE, from a
// file outside the project (as Claude Code keeps it, under ~/.claude). Shadow
// git has no other place for it than its work tree, so there the transcript is
// the tracked file .agent/transcript.jsonl and every commit versions it.
//
// Five stores advance in lockstep, in alternating order each step: snap, shadow
// git (gc.auto=0), shadow git with git's defaults (automatic gc on), and a
// transcript-only pair (snap and git over a project holding one small file),
// whose stores measure what the transcript alone costs.

const transcriptRel = ".agent/transcript.jsonl"

func runW2(b *bench) error {
	const W = "W2"
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W2Files, b.cfg.Seed)
	root, err := b.dir("w2")
	if err != nil {
		return err
	}
	defer b.cleanup(root)

	snapDir, snapTDir := filepath.Join(root, "snap"), filepath.Join(root, "snap-transcript-only")
	convFile := filepath.Join(root, "claude", "session.jsonl") // outside every project
	gitWork, gitDir := filepath.Join(root, "git-work"), filepath.Join(root, "git-shadow.git")
	defWork, defDir := filepath.Join(root, "gitdef-work"), filepath.Join(root, "gitdef-shadow.git")
	gitTWork, gitTDir := filepath.Join(root, "git-transcript-only-work"), filepath.Join(root, "git-transcript-only.git")

	projects := []string{snapDir}
	transcripts := []string{convFile}
	if b.hasGit {
		projects = append(projects, gitWork, defWork)
		transcripts = append(transcripts, filepath.Join(gitWork, transcriptRel), filepath.Join(defWork, transcriptRel), filepath.Join(gitTWork, transcriptRel))
	}
	b.logf("W2: writing %d files (%s) into %d copies", t.n, formatBytes(float64(t.bytes())), len(projects))
	for _, d := range projects {
		if err := t.write(d); err != nil {
			return err
		}
	}
	for _, d := range []string{snapTDir, gitTWork} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "README"), []byte("transcript-only project\n"), 0o644); err != nil {
			return err
		}
	}
	for _, f := range transcripts {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return err
		}
	}

	s := &snapPeer{bin: b.cfg.Snap, dir: snapDir}
	sT := &snapPeer{bin: b.cfg.Snap, dir: snapTDir}
	for _, p := range []*snapPeer{s, sT} {
		if err := p.init(); err != nil {
			return err
		}
		// The project as it was before the session: not part of the timed steps.
		if _, _, err := p.checkpoint("-m", "start"); err != nil {
			return err
		}
	}
	var g, gDef, gT *gitPeer
	if b.hasGit {
		if g, err = newGitPeer(gitDir, gitWork, false); err != nil {
			return err
		}
		if gDef, err = newGitPeer(defDir, defWork, true); err != nil {
			return err
		}
		if gT, err = newGitPeer(gitTDir, gitTWork, false); err != nil {
			return err
		}
		for _, p := range []*gitPeer{g, gDef, gT} {
			if err := p.checkpoint("start"); err != nil {
				return err
			}
		}
	}

	r := rng(b.cfg.Seed, streamW2)
	cur := map[int][]byte{}
	var transcriptSize, copyBytes int64
	sm := samples{}
	settle()
	for i := 1; i <= b.cfg.W2Steps; i++ {
		if i%100 == 0 {
			b.logf("W2: checkpoint %d/%d", i, b.cfg.W2Steps)
		}
		// Edit 1–5 files: insert one to three lines somewhere in each.
		for _, f := range pick(r, t.n, 1+r.IntN(5)) {
			old, ok := cur[f]
			if !ok {
				old = t.content(f)
			}
			for k := 1 + r.IntN(3); k > 0; k-- {
				old = insertLine(old, r.IntN(countLines(old)+1), fmt.Sprintf("\t// step %d: %s", i, sentence(r, 6)))
			}
			cur[f] = old
			for _, d := range projects {
				if err := replaceFile(filepath.Join(d, filepath.FromSlash(t.path(f))), old); err != nil {
					return err
				}
			}
		}
		msgs := transcriptStep(src, r, i)
		for _, f := range transcripts {
			if err := appendFile(f, msgs); err != nil {
				return err
			}
		}
		transcriptSize += int64(len(msgs))
		copyBytes += transcriptSize

		msgID := fmt.Sprintf("msg_%06d", i)
		steps := []func() error{
			func() error {
				_, d, err := s.checkpoint("-m", msgID, "--conversation", convFile)
				sm.add("snap", d)
				return err
			},
			func() error {
				_, d, err := sT.checkpoint("-m", msgID, "--conversation", convFile)
				sm.add("snap transcript-only", d)
				return err
			},
		}
		if g != nil {
			for _, p := range []struct {
				key string
				g   *gitPeer
			}{{"git", g}, {"git defaults", gDef}, {"git transcript-only", gT}} {
				steps = append(steps, func() error {
					d, err := measure(func() error { return p.g.checkpoint(msgID) })
					sm.add(p.key, d)
					return err
				})
			}
		}
		if err := alternate(i, steps...); err != nil {
			return fmt.Errorf("checkpoint %d: %w", i, err)
		}
	}
	b.rep.note("W2: %d checkpoints of a %d-file project (%s); each edits 1–5 files and appends ~4 KB to a transcript that ends at %s. "+
		"snap reads the transcript with --conversation from outside the project; shadow git tracks it as %s in its work tree.",
		b.cfg.W2Steps, t.n, formatBytes(float64(t.bytes())), formatBytes(float64(transcriptSize)), transcriptRel)

	rep := b.rep
	if g == nil {
		for _, name := range []string{"checkpoint latency p50", "checkpoint latency p99", "`log -n 20`", rowStore, "transcript storage"} {
			rep.skip(W, name, "shadow git", "git not installed (apt-get install git)")
		}
		return nil
	}
	rep.timeRow(W, "checkpoint latency p50", percentile(sm["snap"], 50), "shadow git `add -A` + `commit`", percentile(sm["git"], 50), 0, "")
	rep.timeRow(W, "checkpoint latency p99", percentile(sm["snap"], 99), "shadow git `add -A` + `commit`", percentile(sm["git"], 99), 0, "")
	rep.timeRow(W, "checkpoint latency p99", percentile(sm["snap"], 99), "shadow git, git defaults (auto gc)", percentile(sm["git defaults"], 99), 0, "")
	rep.timeRow(W, fmt.Sprintf("%d checkpoints, total", b.cfg.W2Steps), sum(sm["snap"]), "shadow git, git defaults (auto gc)", sum(sm["git defaults"]), 0, "")

	// log -n 20 at the end.
	var snapLog, gitLog []time.Duration
	for k := 0; k < b.cfg.Runs; k++ {
		err := alternate(k,
			func() error {
				d, err := measure(func() error { _, err := s.run("log", "-n", "20"); return err })
				snapLog = append(snapLog, d)
				return err
			},
			func() error {
				d, err := measure(func() error { _, err := g.git("log", "-n", "20"); return err })
				gitLog = append(gitLog, d)
				return err
			})
		if err != nil {
			return err
		}
	}
	rep.timeRow(W, "`log -n 20` at the end", median(snapLog), "shadow git `log -n 20`", median(gitLog), 0, "")

	// Store bytes at the end (the project's starting tree included on both sides).
	snapBytes := s.storeBytes()
	rep.bytesRow(W, rowStore, snapBytes, "shadow git objects, loose", g.objectBytes(), 0, "")
	gcTime, err := measure(g.gc)
	if err != nil {
		return err
	}
	rep.bytesRow(W, rowStore, snapBytes, "shadow git objects after `git gc`", g.objectBytes(), 1.2, "")
	gDef.waitGC()
	packs, _ := filepath.Glob(filepath.Join(defDir, "objects", "pack", "*.pack"))
	rep.bytesRow(W, rowStore, snapBytes, "shadow git, git defaults (auto gc)", gDef.objectBytes(), 0, "")
	rep.note("W2: `git gc` after the session took %s (not counted); with git's defaults, automatic gc left %d pack file(s) (detached gc runs in the background, so its time is not in the latencies).",
		gcTime.Round(time.Millisecond), len(packs))

	// Transcript storage, from the transcript-only pair.
	snapT := sT.storeBytes()
	rep.bytesRow(W, "transcript storage", snapT, "shadow git objects, loose", gT.objectBytes(), 0, "")
	if err := gT.gc(); err != nil {
		return err
	}
	rep.bytesRow(W, "transcript storage", snapT, "shadow git objects after `git gc`", gT.objectBytes(), 1.5, "")
	rep.bytesRow(W, "transcript storage", snapT, "a copy of the transcript per checkpoint", copyBytes, 0, "")
	return w2Export(b, s, t, cur, r, convFile, sm["snap"])
}

// w2Export times 'snap git export' of the session into a bare repository:
// first all of it, against the time its checkpoints took; then after 10
// more checkpoints, against theirs; then again with nothing new.
func w2Export(b *bench, s *snapPeer, t *tree, cur map[int][]byte, r *rand.Rand, convFile string, took []time.Duration) error {
	const W = "W2"
	repo := filepath.Join(filepath.Dir(s.dir), "export.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	export := func() (time.Duration, error) {
		return measure(func() error { _, err := s.run("git", "export", "--repo", repo); return err })
	}
	first, err := export()
	if err != nil {
		return err
	}
	b.rep.timeRow(W, fmt.Sprintf("`git export`, %d checkpoints, first", len(took)), first,
		fmt.Sprintf("the %d checkpoints themselves", len(took)), sum(took), 1, "")
	// What the export leaves in git, against the store it came from (the
	// "snap" column is the git repository's objects here).
	b.rep.bytesRow(W, "`git export` objects in git", dirBytes(filepath.Join(repo, "objects"), nil), "the snap store", s.storeBytes(), 2, "")
	var more []time.Duration
	for i := 0; i < 10; i++ {
		f := r.IntN(t.n)
		old, ok := cur[f]
		if !ok {
			old = t.content(f)
		}
		cur[f] = insertLine(old, 0, fmt.Sprintf("// export step %d", i))
		if err := replaceFile(filepath.Join(s.dir, filepath.FromSlash(t.path(f))), cur[f]); err != nil {
			return err
		}
		if err := appendFile(convFile, []byte(fmt.Sprintf("{\"type\":\"user\",\"n\":%d}\n", i))); err != nil {
			return err
		}
		_, d, err := s.checkpoint("--conversation", convFile)
		if err != nil {
			return err
		}
		more = append(more, d)
	}
	incr, err := export()
	if err != nil {
		return err
	}
	b.rep.timeRow(W, "`git export`, 10 new checkpoints", incr, "those 10 checkpoints themselves", sum(more), 0, "")
	again, err := export()
	if err != nil {
		return err
	}
	b.rep.timeRow(W, "`git export`, nothing new", again, "one of those checkpoints (median)", median(more), 0, "")
	return nil
}

func appendFile(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
