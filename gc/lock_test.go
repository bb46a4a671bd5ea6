package gc

import (
	"context"
	"time"

	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/storage/fsstore"
)

// lockSweep takes a gc's locks in the store directory dir, as Collect does.
func lockSweep(ctx context.Context, dir string, timeout time.Duration) (func(), error) {
	return storage.LockSweep(ctx, fsstore.NewLocker(dir), timeout)
}
