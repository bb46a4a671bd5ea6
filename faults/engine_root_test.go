package faults

// The engine's own operations under the harness: snap.Repo's Checkpoint
// and Rewind replace the compositions of engine_test.go (gc and ref update
// stay: they are the gc and refs calls themselves). Each call opens the
// repository through the seam, as a snap command does, and the retry opens
// it again.

import (
	"context"
	"path/filepath"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/fsys"
)

func init() {
	var kept []class
	for _, c := range classes {
		if c.name != "checkpoint" && c.name != "rewind" {
			kept = append(kept, c)
		}
	}
	classes = append(kept,
		class{
			name:     "snap.Checkpoint",
			parallel: true,
			call: func(ctx context.Context, l *live, fx *fixture) error {
				repo, err := snap.Open(snap.Options{Dir: l.root, FS: l.fs, Sys: l.sys})
				if err != nil {
					return err
				}
				defer repo.Close()
				res, err := repo.Checkpoint(ctx, snap.CheckpointOptions{Session: session})
				if err == nil {
					l.skipped = append(l.skipped, res.Skipped...)
				}
				return err
			},
			tolerated:  func(l *live, o fsys.Op) bool { return cachePath(l, o) },
			afterFault: checkpointAfterFault,
			afterRetry: checkpointAfterRetry,
		},
		class{
			name:     "snap.Rewind",
			parallel: true,
			call: func(ctx context.Context, l *live, fx *fixture) error {
				repo, err := snap.Open(snap.Options{Dir: l.root, FS: l.fs, Sys: l.sys})
				if err != nil {
					return err
				}
				defer repo.Close()
				res, err := repo.Rewind(ctx, snap.RewindOptions{Session: session, Target: fx.ck[0].String(), FilesOnly: true})
				if res != nil {
					l.skipped = append(l.skipped, res.Skipped...)
				}
				return err
			},
			tolerated: func(l *live, o fsys.Op) bool {
				return cachePath(l, o) || o.Name == "unlinkat" && o.Path == filepath.Join(l.root, "docs")
			},
			afterFault: rewindAfterFault,
			afterRetry: rewindAfterRetry,
		},
	)
}
