package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// W1 big tree: a project of W1Files files of real source text. Each of -runs
// repetitions takes, on every peer in alternating order: a first checkpoint
// (store removed before), a no-change checkpoint, 10 files changed, 1,000 files
// changed, a rewind over the 1,000 files and one over the 10.

const (
	rowFirst      = "first checkpoint"
	rowNoChange   = "no-change checkpoint"
	row10         = "10 files changed"
	row1000       = "1,000 files changed"
	rowRewind1000 = "rewind 1,000 files"
	rowRewind10   = "rewind 10 files"
	rowStore      = "store bytes"
)

// alternate runs steps in order on even runs and in reverse on odd ones, so
// machine noise hits every peer alike.
func alternate(run int, steps ...func() error) error {
	for i := range steps {
		k := i
		if run%2 == 1 {
			k = len(steps) - 1 - i
		}
		if err := steps[k](); err != nil {
			return err
		}
	}
	return nil
}

// copies are the per-peer copies of a generated tree, kept identical by
// applying every edit to each of them.
type copies struct {
	t    *tree
	dirs []string
	cur  map[int][]byte // files whose content differs from t.content
}

// edit gives every file in idx a new last line naming the edit.
func (c *copies) edit(idx []int, kind string, run int) error {
	for _, i := range idx {
		b := append(append([]byte(nil), c.t.content(i)...), fmt.Sprintf("// snap-bench edit %s run %d\n", kind, run)...)
		c.cur[i] = b
		for _, d := range c.dirs {
			if err := replaceFile(filepath.Join(d, filepath.FromSlash(c.t.path(i))), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// verify checks, byte for byte, that the files idx under dir hold state.
func (c *copies) verify(dir string, idx []int, state map[int][]byte) error {
	for _, i := range idx {
		want, ok := state[i]
		if !ok {
			want = c.t.content(i)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.t.path(i))))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s: %s differs from the checkpoint after rewind (%d bytes, want %d)", dir, c.t.path(i), len(got), len(want))
		}
	}
	return nil
}

// replaceFile writes a new file in place of name (unlink, then create), as
// many editors do. Rewriting in place (O_TRUNC) would be as fair to every peer
// but slower: on ext4, truncating a file with data makes its close wait for
// writeback (auto_da_alloc), which only slows the harness down.
func replaceFile(name string, b []byte) error {
	if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// samples collects durations per series name.
type samples map[string][]time.Duration

func (s samples) add(name string, d time.Duration) { s[name] = append(s[name], d) }

func runW1(b *bench) error {
	const W = "W1"
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W1Files, b.cfg.Seed)
	root, err := b.dir("w1")
	if err != nil {
		return err
	}
	defer b.cleanup(root)

	snapDir := filepath.Join(root, "snap")
	gitWork, gitDir := filepath.Join(root, "git-work"), filepath.Join(root, "git-shadow.git")
	ggWork, ggDir := filepath.Join(root, "gogit-work"), filepath.Join(root, "gogit-shadow.git")
	c := &copies{t: t, dirs: []string{snapDir, ggWork}, cur: map[int][]byte{}}
	if b.hasGit {
		c.dirs = append(c.dirs, gitWork)
	}
	b.logf("W1: writing %d files (%s) into %d copies", t.n, formatBytes(float64(t.bytes())), len(c.dirs))
	for _, d := range c.dirs {
		if err := t.write(d); err != nil {
			return err
		}
	}
	b.rep.note("W1: %d files, %s of Go toolchain source text (%s), alternating snap / shadow git / go-git, median of %d runs.",
		t.n, formatBytes(float64(t.bytes())), goroot(), b.cfg.Runs)

	s := &snapPeer{bin: b.cfg.Snap, dir: snapDir}
	var g *gitPeer
	var gg *goGitPeer
	defer func() {
		if gg != nil {
			gg.close()
		}
	}()
	ggSkipped := ""
	// goGit runs a go-git step unless go-git was stopped; a failure of go-git
	// itself skips its rows instead of failing the workload.
	goGit := func(fn func() error) error {
		if ggSkipped != "" {
			return nil
		}
		if err := fn(); err != nil {
			if gg != nil && gg.skipped != "" {
				ggSkipped = gg.skipped
			} else {
				ggSkipped = "go-git failed: " + err.Error()
			}
			b.logf("W1: %s", ggSkipped)
		}
		return nil
	}
	sm := samples{}

	// First checkpoint, from an empty store each run.
	for r := 0; r < b.cfg.Runs; r++ {
		b.logf("W1: first checkpoint, run %d/%d", r+1, b.cfg.Runs)
		err := alternate(r,
			func() error {
				if err := os.RemoveAll(filepath.Join(snapDir, ".snap")); err != nil {
					return err
				}
				if err := s.init(); err != nil {
					return err
				}
				settle()
				res, d, err := s.checkpoint("-m", "first")
				if err != nil {
					return err
				}
				if len(res.Files.Added) != t.n {
					return fmt.Errorf("first checkpoint added %d files, want %d", len(res.Files.Added), t.n)
				}
				sm.add("snap first", d)
				return nil
			},
			func() error {
				if !b.hasGit {
					return nil
				}
				if err := os.RemoveAll(gitDir); err != nil {
					return err
				}
				if g, err = newGitPeer(gitDir, gitWork, false); err != nil {
					return err
				}
				settle()
				d, err := measure(func() error { return g.checkpoint("first") })
				sm.add("git first", d)
				return err
			},
			func() error {
				return goGit(func() error {
					if gg != nil {
						gg.close()
					}
					if err := os.RemoveAll(ggDir); err != nil {
						return err
					}
					if gg, err = newGoGitPeer(ggDir, ggWork, b.cfg.GoGitTimeout); err != nil {
						return err
					}
					settle()
					d, err := gg.checkpoint()
					if err == nil {
						sm.add("gogit first", d)
					}
					return err
				})
			})
		if err != nil {
			return err
		}
	}

	// The rest runs on the stores of the last first checkpoint.
	n1000 := min(1000, t.n-10)
	for r := 0; r < b.cfg.Runs; r++ {
		b.logf("W1: changes and rewinds, run %d/%d", r+1, b.cfg.Runs)
		perm := rng(b.cfg.Seed, streamW1+uint64(r)).Perm(t.n)
		ten, thousand := perm[:10], perm[10:10+n1000]
		var snapP, snapA, gitP, gitA, ggP, ggA string

		// No change: snap checkpoint vs git status (and add + commit), go-git status.
		err := alternate(r,
			func() error {
				settle()
				res, d, err := s.checkpoint("-m", "nochange")
				snapP = res.ID
				sm.add("snap nochange", d)
				return err
			},
			func() error {
				if g == nil {
					return nil
				}
				settle()
				d, err := measure(g.status)
				if err != nil {
					return err
				}
				sm.add("git status", d)
				d, err = measure(func() error { return g.checkpoint("nochange") })
				if err != nil {
					return err
				}
				sm.add("git nochange", d)
				gitP, err = g.head()
				return err
			},
			func() error {
				return goGit(func() error {
					settle()
					d, err := gg.status()
					if err != nil {
						return err
					}
					sm.add("gogit status", d)
					// A commit (with nothing changed) marks the rewind target.
					resp, err := gg.call("commit", "")
					ggP = resp.Out
					return err
				})
			})
		if err != nil {
			return err
		}
		stateP := maps.Clone(c.cur)

		// 10 files changed, then 1,000 files changed.
		var stateA map[int][]byte
		for _, step := range []struct {
			name string
			idx  []int
		}{{"10", ten}, {"1000", thousand}} {
			if err := c.edit(step.idx, step.name, r); err != nil {
				return err
			}
			var snapID, gitID, ggID string
			err := alternate(r,
				func() error {
					settle()
					res, d, err := s.checkpoint("-m", "changed-"+step.name)
					if err == nil && len(res.Files.Modified) != len(step.idx) {
						err = fmt.Errorf("checkpoint after %s edits reports %d modified files", step.name, len(res.Files.Modified))
					}
					snapID = res.ID
					sm.add("snap changed "+step.name, d)
					return err
				},
				func() error {
					if g == nil {
						return nil
					}
					settle()
					d, err := measure(func() error { return g.checkpoint("changed " + step.name) })
					if err != nil {
						return err
					}
					sm.add("git changed "+step.name, d)
					gitID, err = g.head()
					return err
				},
				func() error {
					return goGit(func() error {
						settle()
						resp, err := gg.call("commit", "")
						if err == nil {
							sm.add("gogit changed "+step.name, time.Duration(resp.NS))
							ggID = resp.Out
						}
						return err
					})
				})
			if err != nil {
				return err
			}
			if step.name == "10" {
				snapA, gitA, ggA, stateA = snapID, gitID, ggID, maps.Clone(c.cur)
			}
		}

		// Rewind over the 1,000 files (to A), then over the 10 (to P).
		for _, step := range []struct {
			name          string
			snapTo, gitTo string
			ggTo          string
			idx           []int
			state         map[int][]byte
		}{{"1000", snapA, gitA, ggA, thousand, stateA}, {"10", snapP, gitP, ggP, ten, stateP}} {
			err := alternate(r,
				func() error {
					settle()
					res, d, err := s.rewind(step.snapTo)
					if err != nil {
						return err
					}
					if len(res.Restored) != len(step.idx) {
						return fmt.Errorf("rewind over %s files restored %d", step.name, len(res.Restored))
					}
					sm.add("snap rewind "+step.name, d)
					return c.verify(snapDir, step.idx, step.state)
				},
				func() error {
					if g == nil {
						return nil
					}
					settle()
					d, err := measure(func() error { return g.reset(step.gitTo) })
					if err != nil {
						return err
					}
					sm.add("git rewind "+step.name, d)
					return c.verify(gitWork, step.idx, step.state)
				},
				func() error {
					return goGit(func() error {
						settle()
						d, err := gg.reset(step.ggTo)
						if err != nil {
							return err
						}
						sm.add("gogit rewind "+step.name, d)
						if err := c.verify(ggWork, step.idx, step.state); err != nil {
							return fmt.Errorf("go-git reset --hard: %w", err)
						}
						return nil
					})
				})
			if err != nil {
				return err
			}
		}
		c.cur = stateP
	}

	rep := b.rep
	gitRow := func(name, snapKey, gitKey, peer string, target float64) {
		switch {
		case !b.hasGit:
			rep.skip(W, name, peer, "git not installed (apt-get install git)")
		default:
			rep.timeRow(W, name, median(sm["snap "+snapKey]), peer, median(sm[gitKey]), target, "")
		}
	}
	ggRow := func(name, snapKey, ggKey, peer string) {
		if d := sm[ggKey]; len(d) == b.cfg.Runs {
			rep.timeRow(W, name, median(sm["snap "+snapKey]), peer, median(d), 0, "")
		} else {
			rep.skip(W, name, peer, ggSkipped)
		}
	}
	gitRow(rowFirst, "first", "git first", "shadow git `add -A` + `commit`", 0.20)
	ggRow(rowFirst, "first", "gogit first", "go-git add-all + commit")
	gitRow(rowNoChange, "nochange", "git status", "shadow git `status`", 0.8)
	gitRow(rowNoChange, "nochange", "git nochange", "shadow git `add -A` + `commit`", 0)
	ggRow(rowNoChange, "nochange", "gogit status", "go-git status")
	gitRow(row10, "changed 10", "git changed 10", "shadow git `add -A` + `commit`", 0.5)
	ggRow(row10, "changed 10", "gogit changed 10", "go-git add-all + commit")
	gitRow(row1000, "changed 1000", "git changed 1000", "shadow git `add -A` + `commit`", 0)
	ggRow(row1000, "changed 1000", "gogit changed 1000", "go-git add-all + commit")
	gitRow(rowRewind10, "rewind 10", "git rewind 10", "shadow git `reset --hard`", 1.0/3)
	ggRow(rowRewind10, "rewind 10", "gogit rewind 10", "go-git reset --hard")
	gitRow(rowRewind1000, "rewind 1000", "git rewind 1000", "shadow git `reset --hard`", 0.5)
	ggRow(rowRewind1000, "rewind 1000", "gogit rewind 1000", "go-git reset --hard")
	if n1000 != 1000 {
		rep.note("W1: the tree has only %d files, so the \"1,000 files\" rows change %d files.", t.n, n1000)
	}

	// Store bytes at the end of W1 (loose git objects, then after git gc).
	snapBytes := s.storeBytes()
	if g != nil {
		rep.bytesRow(W, rowStore, snapBytes, "shadow git objects, loose", g.objectBytes(), 0, "")
		d, err := measure(g.gc)
		if err != nil {
			return err
		}
		rep.bytesRow(W, rowStore, snapBytes, "shadow git objects after `git gc`", g.objectBytes(), 0, "")
		rep.note("W1: `git gc` of the shadow repository took %s (not counted in any row).", d.Round(time.Millisecond))
	} else {
		rep.skip(W, rowStore, "shadow git", "git not installed (apt-get install git)")
	}
	if ggSkipped == "" {
		rep.bytesRow(W, rowStore, snapBytes, "go-git objects", gg.objectBytes(), 0, "")
	} else {
		rep.skip(W, rowStore, "go-git objects", ggSkipped)
	}
	if ggSkipped != "" {
		rep.note("W1: %s", ggSkipped)
	}
	return nil
}
