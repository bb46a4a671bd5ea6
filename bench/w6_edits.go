package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// W6 staged edits on the W1 tree: an agent stages a change to each of three
// files (`snap edit replace`, which touches no file) and commits them at once
// (`snap edit commit`: safety checkpoint, the three files written through
// the move journal, an edit-commit checkpoint). The commit is compared with
// what a shadow-git agent pays for the same change: the three files written,
// then `git add -A` + `git commit`.

const (
	rowEditStage  = "`edit replace`, stage 1 change"
	rowEditCommit = "`edit commit` of 3 staged changes"
)

func runW6(b *bench) error {
	const W = "W6"
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W1Files, b.cfg.Seed)
	root, err := b.dir("w6")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	sdir, gdir := filepath.Join(root, "snap"), filepath.Join(root, "git")
	b.logf("W6: writing %d files (%s) into 2 copies", t.n, formatBytes(float64(t.bytes())))
	for _, d := range []string{sdir, gdir} {
		if err := t.write(d); err != nil {
			return err
		}
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: sdir}
	if err := s.init(); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("-m", "start"); err != nil {
		return err
	}
	g, err := newGitPeer(filepath.Join(root, "git.git"), gdir, false)
	if err != nil {
		return err
	}
	if err := g.checkpoint("start"); err != nil {
		return err
	}
	r := rng(b.cfg.Seed, streamW6)
	var stage, commit, gitCommit []time.Duration
	for run := 0; run < b.cfg.Runs; run++ {
		idx := r.Perm(t.n)[:3]
		err := alternate(run,
			func() error {
				settle()
				for _, i := range idx {
					p := t.path(i)
					data, err := os.ReadFile(filepath.Join(sdir, filepath.FromSlash(p)))
					if err != nil {
						return err
					}
					old := string(bytes.SplitN(data, []byte("\n"), 2)[0])
					d, err := measure(func() error {
						out, err := s.run("edit", "replace", p, "--old", old, "--new", old+fmt.Sprintf(" // w6 run %d", run), "--match", "A", "--json")
						if err == nil && !bytes.Contains(out, []byte(`"status": "editing"`)) {
							err = fmt.Errorf("edit replace %s: %s", p, out)
						}
						return err
					})
					if err != nil {
						return err
					}
					stage = append(stage, d)
				}
				var out []byte
				d, err := measure(func() (err error) {
					out, err = s.run("edit", "commit", fmt.Sprintf("w6 run %d", run), "--json")
					return err
				})
				if err != nil {
					return err
				}
				var res struct {
					Applied int      `json:"applied_changes"`
					Paths   []string `json:"paths"`
				}
				if err := json.Unmarshal(out, &res); err != nil || res.Applied != 3 || len(res.Paths) != 3 {
					return fmt.Errorf("edit commit: %s (%v)", out, err)
				}
				commit = append(commit, d)
				return nil
			},
			func() error {
				for _, i := range idx {
					p := filepath.Join(gdir, filepath.FromSlash(t.path(i)))
					data, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					line := bytes.IndexByte(data, '\n')
					if line < 0 {
						line = len(data)
					}
					edited := append(append(append([]byte(nil), data[:line]...), fmt.Sprintf(" // w6 run %d", run)...), data[line:]...)
					if err := replaceFile(p, edited); err != nil {
						return err
					}
				}
				settle()
				d, err := measure(func() error { return g.checkpoint(fmt.Sprintf("w6 run %d", run)) })
				if err != nil {
					return err
				}
				gitCommit = append(gitCommit, d)
				return nil
			})
		if err != nil {
			return err
		}
		// Both copies hold the same three edited files.
		for _, i := range idx {
			a, err1 := os.ReadFile(filepath.Join(sdir, filepath.FromSlash(t.path(i))))
			c, err2 := os.ReadFile(filepath.Join(gdir, filepath.FromSlash(t.path(i))))
			if err1 != nil || err2 != nil || !bytes.Equal(a, c) {
				return fmt.Errorf("after run %d, %s differs between the snap and git copies (%v %v)", run, t.path(i), err1, err2)
			}
		}
	}
	b.rep.timeRow(W, rowEditStage, median(stage), "", 0, 0, "")
	b.rep.timeRow(W, rowEditCommit, median(commit), "shadow git: the 3 files written, `add -A` + `commit`", median(gitCommit), 0, "")
	b.rep.note("W6: %d-file tree (%s); per run 3 files get a change staged with `edit replace` and committed at once; median of %d stages and %d commits.",
		t.n, formatBytes(float64(t.bytes())), len(stage), len(commit))
	return nil
}
