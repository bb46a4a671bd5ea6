package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// W4 big file: one W4Size file of incompressible bytes, checkpointed, then
// 1 MiB in its middle rewritten and checkpointed again. Measured once (each
// repetition would add a full copy of the file to the git stores): time, store
// growth and peak RSS of the snap process (see runRSS for the method).

const (
	rowBigFirst   = "first checkpoint"
	rowBigChanged = "checkpoint after 1 MiB changed"
	rowBigGrowth  = "store growth for the 1 MiB change"
	rowBigRSS     = "peak RSS"
)

func runW4(b *bench) error {
	const W = "W4"
	size := b.cfg.W4Size
	root, err := b.dir("w4")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	const name = "data.bin"
	snapDir := filepath.Join(root, "snap")
	gitWork, gitDir := filepath.Join(root, "git-work"), filepath.Join(root, "git-shadow.git")
	ggWork, ggDir := filepath.Join(root, "gogit-work"), filepath.Join(root, "gogit-shadow.git")
	dirs := []string{snapDir, ggWork}
	if b.hasGit {
		dirs = append(dirs, gitWork)
	}
	b.logf("W4: writing a %s file into %d copies", formatBytes(float64(size)), len(dirs))
	r := rng(b.cfg.Seed, streamW4)
	if err := writeRandom(dirs, name, 0, size, r, true); err != nil {
		return err
	}
	maxSize := fmt.Sprint(2 * size) // snap skips files over 1 GiB by default

	s := &snapPeer{bin: b.cfg.Snap, dir: snapDir}
	if err := s.init(); err != nil {
		return err
	}
	var g *gitPeer
	if b.hasGit {
		if g, err = newGitPeer(gitDir, gitWork, false); err != nil {
			return err
		}
	}
	gg, err := newGoGitPeer(ggDir, ggWork, b.cfg.GoGitTimeout)
	if err != nil {
		return err
	}
	defer gg.close()

	type result struct {
		snapTime, gitTime, ggTime    time.Duration
		snapRSS, gitRSS              int64
		snapGrowth, gitGrowth, ggGro int64
		ggErr                        error
	}
	// checkpoint takes one checkpoint on every peer: snap, then git, then go-git.
	checkpoint := func(label string) (res result, err error) {
		before := s.storeBytes()
		settle()
		var out []byte
		out, res.snapTime, res.snapRSS, err = runRSS(snapDir, b.cfg.Snap, "checkpoint", "--json", "-m", label, "--max-file-size", maxSize)
		if err != nil {
			return res, err
		}
		var cp checkpointResult
		if err := json.Unmarshal(out, &cp); err != nil {
			return res, fmt.Errorf("snap checkpoint --json: %w", err)
		}
		if len(cp.Skipped) > 0 || len(cp.Files.Added)+len(cp.Files.Modified) != 1 {
			return res, fmt.Errorf("snap checkpoint did not record %s: %s", name, out)
		}
		res.snapGrowth = s.storeBytes() - before
		if g != nil {
			before := g.objectBytes()
			settle()
			// add -A does the work (hashing, compressing); its RSS is git's peak.
			var add time.Duration
			_, add, res.gitRSS, err = runRSS(gitWork, "git", "--git-dir="+gitDir, "--work-tree="+gitWork, "add", "-A")
			if err != nil {
				return res, err
			}
			commit, err := measure(func() error {
				_, err := g.git("commit", "-q", "--allow-empty", "--no-verify", "-m", label)
				return err
			})
			if err != nil {
				return res, err
			}
			res.gitTime = add + commit
			res.gitGrowth = g.objectBytes() - before
		}
		before = gg.objectBytes()
		settle()
		if res.ggTime, res.ggErr = gg.checkpoint(); res.ggErr == nil {
			res.ggGro = gg.objectBytes() - before
		}
		return res, nil
	}

	b.logf("W4: first checkpoint")
	first, err := checkpoint("first")
	if err != nil {
		return err
	}
	// Rewrite 1 MiB in the middle.
	if err := writeRandom(dirs, name, size/2-(1<<19), 1<<20, r, false); err != nil {
		return err
	}
	b.logf("W4: checkpoint after 1 MiB changed")
	changed, err := checkpoint("changed")
	if err != nil {
		return err
	}

	rep := b.rep
	gitPeerName := "shadow git `add -A` + `commit`"
	for _, x := range []struct {
		name string
		res  result
	}{{rowBigFirst, first}, {rowBigChanged, changed}} {
		if g != nil {
			rep.timeRow(W, x.name, x.res.snapTime, gitPeerName, x.res.gitTime, 0, "")
		} else {
			rep.skip(W, x.name, gitPeerName, "git not installed (apt-get install git)")
		}
		if x.res.ggErr == nil {
			rep.timeRow(W, x.name, x.res.snapTime, "go-git add-all + commit", x.res.ggTime, 0, "")
		} else {
			rep.skip(W, x.name, "go-git add-all + commit", skipReason(gg, x.res.ggErr))
		}
	}
	if g != nil {
		rep.bytesRow(W, rowBigGrowth, changed.snapGrowth, "shadow git objects, loose", changed.gitGrowth, 0, "")
	}
	if changed.ggErr == nil {
		rep.bytesRow(W, rowBigGrowth, changed.snapGrowth, "go-git objects", changed.ggGro, 0, "")
	}
	for _, x := range []struct {
		name string
		res  result
	}{{rowBigRSS + ", first checkpoint", first}, {rowBigRSS + ", checkpoint after the change", changed}} {
		rep.add(row{Workload: W, Name: x.name, Unit: unitBytes, Snap: float64(x.res.snapRSS), TargetAbs: 256 << 20})
		if g != nil {
			rep.bytesRow(W, x.name, x.res.snapRSS, "shadow git `add -A`", x.res.gitRSS, 0, "")
		}
	}
	method := "/usr/bin/time -f %M"
	if _, err := os.Stat(timeBin); err != nil {
		method = "polling /proc/PID/status VmHWM every 2 ms (/usr/bin/time is absent)"
	}
	rep.note("W4: one %s file of pseudo-random bytes, measured once; snap runs with --max-file-size %s. Peak RSS is the child's own, read with %s (wait4's ru_maxrss would include the harness's RSS: Go starts children with vfork).",
		formatBytes(float64(size)), maxSize, method)
	return nil
}

// skipReason says why a go-git row is missing.
func skipReason(gg *goGitPeer, err error) string {
	if gg.skipped != "" {
		return gg.skipped
	}
	return "go-git failed: " + err.Error()
}

// writeRandom writes n random bytes at off into name in every dir (creating
// the files when create is set).
func writeRandom(dirs []string, name string, off, n int64, r *rand.Rand, create bool) error {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		flags := os.O_WRONLY
		if create {
			flags |= os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(filepath.Join(d, name), flags, 0o644)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	buf := make([]byte, 4<<20)
	for done := int64(0); done < n; {
		chunk := buf[:min(int64(len(buf)), n-done)]
		fillRandom(r, chunk)
		for _, f := range files {
			if _, err := f.WriteAt(chunk, off+done); err != nil {
				return err
			}
		}
		done += int64(len(chunk))
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return err
		}
	}
	files = nil
	return nil
}
