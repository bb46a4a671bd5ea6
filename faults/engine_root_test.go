package faults

// The engine's own operations under the harness: snap.Repo's Checkpoint
// and Rewind. Each call opens the repository through the seam, as a snap
// command does, and the retry opens it again.

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/worktree"
)

func init() {
	classes = append(classes,
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
				return cachePath(l, o) || o.Name == "unlinkat" && o.Path == filepath.Join(l.root, "docs") ||
					o.Name == "renameat" && strings.Contains(o.Path, " -> "+filepath.Join(l.store, "trash")+string(filepath.Separator)) ||
					o.Name == "unlinkat" && strings.HasPrefix(filepath.Base(o.Path), worktree.TempPrefix)
			},
			afterFault: rewindAfterFault,
			afterRetry: rewindAfterRetry,
		},
	)
}
