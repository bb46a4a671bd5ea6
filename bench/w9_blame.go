package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// W9 blame: a file of W9Lines lines edited over W9Steps checkpoints (each
// rewrites a few random lines and inserts one), recorded by snap and
// committed to a shadow git repository the same way; then `snap blame`
// against `git blame`, at git's defaults and after `git gc` with a
// commit graph (its best configuration for history walks). Median of
// -runs, alternating.

const rowBlame = "`blame` of the file"

func runW9(b *bench) error {
	const W = "W9"
	if !b.hasGit {
		b.rep.skip(W, rowBlame, "git", "git is not installed")
		return nil
	}
	root, err := b.dir("w9")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir := filepath.Join(root, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(b.cfg.Seed), 9))
	lines := make([]string, b.cfg.W9Lines)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d: %x", i, rng.Uint64())
	}
	file := filepath.Join(dir, "big.txt")
	write := func() error { return os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644) }
	if err := write(); err != nil {
		return err
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	g, err := newGitPeer(filepath.Join(root, "git"), dir, true)
	if err != nil {
		return err
	}
	b.logf("W9: %d lines, %d checkpoints", b.cfg.W9Lines, b.cfg.W9Steps)
	for step := 0; step <= b.cfg.W9Steps; step++ {
		if step > 0 {
			for k := 0; k < 3; k++ {
				lines[rng.IntN(len(lines))] = fmt.Sprintf("edit %d.%d: %x", step, k, rng.Uint64())
			}
			at := rng.IntN(len(lines) + 1)
			lines = append(lines[:at], append([]string{fmt.Sprintf("insert %d", step)}, lines[at:]...)...)
			if err := write(); err != nil {
				return err
			}
		}
		actor := "agent"
		if step%5 == 4 {
			actor = "user"
		}
		if _, _, err := s.checkpoint("--actor", actor); err != nil {
			return err
		}
		if err := g.checkpoint(fmt.Sprintf("step %d", step)); err != nil {
			return err
		}
	}
	var snapD, gitD, gitBestD []time.Duration
	blameSnap := func() error {
		d, err := measure(func() error { _, err := s.run("blame", "big.txt"); return err })
		snapD = append(snapD, d)
		return err
	}
	blameGit := func(out *[]time.Duration) func() error {
		return func() error {
			d, err := measure(func() error { _, err := g.git("blame", "big.txt"); return err })
			*out = append(*out, d)
			return err
		}
	}
	for i := 0; i < b.cfg.Runs; i++ {
		if err := alternate(i, blameSnap, blameGit(&gitD)); err != nil {
			return err
		}
	}
	if err := g.gc(); err != nil {
		return err
	}
	if _, err := g.git("commit-graph", "write", "--reachable"); err != nil {
		return err
	}
	for i := 0; i < b.cfg.Runs; i++ {
		if err := alternate(i, blameSnap, blameGit(&gitBestD)); err != nil {
			return err
		}
	}
	rep := b.rep
	rep.timeRow(W, rowBlame, median(snapD), "`git blame`, git defaults", median(gitD), 0, "")
	rep.timeRow(W, rowBlame+" (git at its best)", median(snapD), "`git blame` after `git gc` and `git commit-graph write`", median(gitBestD), 0, "")
	rep.note("W9: a %d-line file edited over %d checkpoints (3 lines rewritten and 1 inserted each; every fifth checkpoint marked --actor user), one git commit per checkpoint; median of %d run(s).",
		b.cfg.W9Lines, b.cfg.W9Steps, b.cfg.Runs)
	return nil
}
