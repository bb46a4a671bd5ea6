package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// W12 history reads (issue 24): what reading the history costs as it grows.
// One project of 50 files, a checkpoint after each edit of one of them:
// after W12Small checkpoints, then after W12Big (the same history carried
// on), the store gc'd, `snap log -n 20` and `snap show @~3` against `git
// log -n 20` and `git show --stat HEAD~3` in a git repository holding the
// same history as commits (made with fast-import, then gc'd and given a
// commit graph: git at its best). W12Runs rounds each, the order flipped
// every round; medians. The target: the same cost at both sizes, within
// 2× git's. Two more rows have no git peer and the target of the same
// cost at both sizes: a no-change checkpoint (what most hook events are)
// and `show msg:ID` of the tenth newest checkpoint.

func rowHistLog(n int) string  { return fmt.Sprintf("`log -n 20` after %s checkpoints", commas(n)) }
func rowHistShow(n int) string { return fmt.Sprintf("`show @~3` after %s checkpoints", commas(n)) }
func rowHistCk(n int) string {
	return fmt.Sprintf("no-change checkpoint after %s checkpoints", commas(n))
}
func rowHistMsg(n int) string {
	return fmt.Sprintf("`show msg:ID` (the 10th newest) after %s checkpoints", commas(n))
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func runW12(b *bench) error {
	const W, files = "W12", 50
	root, err := b.dir("w12")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir, gitDir := filepath.Join(root, "proj"), filepath.Join(root, "git")
	for _, d := range []string{dir, gitDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	content := func(f, version int) string { return fmt.Sprintf("package p // file %d\n\nvar v = %d\n", f, version) }
	for f := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", f)), []byte(content(f, 0)), 0o644); err != nil {
			return err
		}
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	// The git repository's history, written by fast-import as it grows.
	var stream bytes.Buffer
	if b.hasGit {
		if _, err := run(gitDir, "git", "init", "-q", "-b", "main"); err != nil {
			return err
		}
	}
	made := 0
	grow := func(to int) error {
		stream.Reset()
		from := made // the import carries on the branch from the repository's tip
		for ; made < to; made++ {
			f := made % files
			data := content(f, made+1)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", f)), []byte(data), 0o644); err != nil {
				return err
			}
			if _, _, err := s.checkpoint("-m", fmt.Sprintf("msg_%d", made)); err != nil {
				return err
			}
			msg := fmt.Sprintf("checkpoint %d", made)
			fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter bench <bench@example.invalid> %d +0000\ndata %d\n%s\n", 1700000000+made, len(msg), msg)
			if made > 0 && made == from {
				fmt.Fprintf(&stream, "from refs/heads/main^0\n")
			}
			if made == 0 {
				for g := range files {
					c := content(g, 0)
					if g == f {
						c = data
					}
					fmt.Fprintf(&stream, "M 100644 inline f%02d.go\ndata %d\n%s\n", g, len(c), c)
				}
			} else {
				fmt.Fprintf(&stream, "M 100644 inline f%02d.go\ndata %d\n%s\n", f, len(data), data)
			}
		}
		if _, err := s.run("gc"); err != nil {
			return err
		}
		if !b.hasGit {
			return nil
		}
		cmd := exec.Command("git", "fast-import", "--quiet")
		cmd.Dir, cmd.Env, cmd.Stdin = gitDir, cleanEnv(), bytes.NewReader(stream.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git fast-import: %w: %s", err, out)
		}
		for _, args := range [][]string{{"gc", "-q"}, {"commit-graph", "write", "--reachable"}} {
			if _, err := run(gitDir, "git", args...); err != nil {
				return err
			}
		}
		if out, err := run(gitDir, "git", "rev-list", "--count", "main"); err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(made) {
			return fmt.Errorf("git holds %q commits, want %d: %v", out, made, err)
		}
		return nil
	}
	timed := func(dir, name string, args ...string) (time.Duration, error) {
		start := time.Now()
		out, err := run(dir, name, args...)
		d := time.Since(start)
		if err == nil && len(out) == 0 {
			err = fmt.Errorf("%s %s printed nothing", filepath.Base(name), strings.Join(args, " "))
		}
		return d, err
	}
	measure := func(n int) error {
		var sLog, sShow, sCk, sMsg, gLog, gShow []time.Duration
		add := func(to *[]time.Duration, dir, name string, args ...string) func() error {
			return func() error {
				d, err := timed(dir, name, args...)
				*to = append(*to, d)
				return err
			}
		}
		steps := []func() error{add(&sLog, dir, b.cfg.Snap, "log", "-n", "20"), add(&sShow, dir, b.cfg.Snap, "show", "@~3"),
			add(&sCk, dir, b.cfg.Snap, "checkpoint"), add(&sMsg, dir, b.cfg.Snap, "show", fmt.Sprintf("msg:msg_%d", max(n-10, 0)))}
		if b.hasGit {
			steps = append(steps, add(&gLog, gitDir, "git", "log", "-n", "20"), add(&gShow, gitDir, "git", "show", "--stat", "HEAD~3"))
		}
		for i := range b.cfg.W12Runs {
			if err := alternate(i, steps...); err != nil {
				return fmt.Errorf("after %d checkpoints, round %d: %w", n, i, err)
			}
		}
		b.rep.timeRow(W, rowHistCk(n), median(sCk), "", 0, 0, "")
		b.rep.timeRow(W, rowHistMsg(n), median(sMsg), "", 0, 0, "")
		if !b.hasGit {
			b.rep.timeRow(W, rowHistLog(n), median(sLog), "", 0, 0, "")
			b.rep.timeRow(W, rowHistShow(n), median(sShow), "", 0, 0, "")
			return nil
		}
		b.rep.timeRow(W, rowHistLog(n), median(sLog), "`git log -n 20` (gc'd, commit graph)", median(gLog), 2, "")
		b.rep.timeRow(W, rowHistShow(n), median(sShow), "`git show --stat HEAD~3`", median(gShow), 2, "")
		return nil
	}
	start := time.Now()
	for _, n := range []int{b.cfg.W12Small, b.cfg.W12Big} {
		if err := grow(n); err != nil {
			return err
		}
		if err := measure(n); err != nil {
			return err
		}
	}
	b.rep.note("W12: one history of %s checkpoints (50 files, one edited per checkpoint), measured after %s and after %s, the store gc'd, "+
		"git's the same history as commits (fast-import, gc, commit graph); %d rounds each, the order flipped every round; %s in all. "+
		"Target: the same cost at both sizes, within 2× git's.",
		commas(b.cfg.W12Big), commas(b.cfg.W12Small), commas(b.cfg.W12Big), b.cfg.W12Runs, time.Since(start).Round(time.Second))
	return nil
}
