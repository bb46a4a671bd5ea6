package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// W5 edit-set checkpoint: what a PreToolUse hook can do when it knows the file
// about to be edited: `snap checkpoint --paths P` examines P only and inherits
// the rest of the tree from the parent. Compared with a full checkpoint of the
// same W5Files-file tree in which nothing changed. (The hinted file was just
// changed, so the hinted checkpoint has real work to do.) Afterwards a full
// checkpoint must still catch a change the hint did not name.

const rowEditSet = "`checkpoint --paths P`, 1 path"

func runW5(b *bench) error {
	const W = "W5"
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W5Files, b.cfg.Seed)
	root, err := b.dir("w5")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir := filepath.Join(root, "snap")
	b.logf("W5: writing %d files (%s)", t.n, formatBytes(float64(t.bytes())))
	if err := t.write(dir); err != nil {
		return err
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	b.logf("W5: first checkpoint")
	first, firstTime, err := s.checkpoint("-m", "start")
	if err != nil {
		return err
	}
	if len(first.Files.Added) != t.n {
		return fmt.Errorf("first checkpoint added %d files, want %d", len(first.Files.Added), t.n)
	}

	c := &copies{t: t, dirs: []string{dir}, cur: map[int][]byte{}}
	r := rng(b.cfg.Seed, streamW5)
	var hinted, full []time.Duration
	for run := 0; run < b.cfg.Runs; run++ {
		p := r.IntN(t.n)
		err := alternate(run,
			func() error {
				if err := c.edit([]int{p}, "hinted", run); err != nil {
					return err
				}
				settle()
				res, d, err := s.checkpoint("--kind", "pre-tool", "--paths", t.path(p))
				if err != nil {
					return err
				}
				if !slices.Equal(res.Files.Modified, []string{t.path(p)}) || len(res.Files.Added)+len(res.Files.Deleted) > 0 {
					return fmt.Errorf("--paths %s recorded %+v", t.path(p), res.Files)
				}
				hinted = append(hinted, d)
				return nil
			},
			func() error {
				settle()
				res, d, err := s.checkpoint("-m", "full")
				if err != nil {
					return err
				}
				if n := len(res.Files.Added) + len(res.Files.Modified) + len(res.Files.Deleted); n > 0 {
					return fmt.Errorf("no-change checkpoint recorded %d changed files", n)
				}
				full = append(full, d)
				return nil
			})
		if err != nil {
			return err
		}
	}

	// A change the hint missed is caught by the next full checkpoint.
	idx := rng(b.cfg.Seed, streamW5+1).Perm(t.n)[:2]
	hint, missed := t.path(idx[0]), t.path(idx[1])
	if err := c.edit(idx, "missed", 0); err != nil {
		return err
	}
	res, _, err := s.checkpoint("--kind", "pre-tool", "--paths", hint)
	if err != nil {
		return err
	}
	if !slices.Equal(res.Files.Modified, []string{hint}) {
		return fmt.Errorf("--paths %s recorded %+v, want only the hinted file", hint, res.Files)
	}
	if res, _, err = s.checkpoint("-m", "after-hint"); err != nil {
		return err
	}
	if !slices.Equal(res.Files.Modified, []string{missed}) {
		return fmt.Errorf("full checkpoint after a --paths checkpoint recorded %+v, want %s modified (the change the hint missed)", res.Files, missed)
	}
	if _, err := os.Stat(filepath.Join(dir, ".snap")); err != nil {
		return err
	}

	b.rep.timeRow(W, rowEditSet, median(hinted), "snap full no-change checkpoint", median(full), 1.0/20, "")
	b.rep.note("W5: %d-file tree (%s), first full checkpoint %s; median of %d runs; a later full checkpoint caught the change a --paths hint did not name.",
		t.n, formatBytes(float64(t.bytes())), firstTime.Round(time.Millisecond), b.cfg.Runs)
	return nil
}
