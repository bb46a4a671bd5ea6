package snap_test

import (
	"sync"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

// Two undos at once on one Repo (two requests to one snap ui) reverse the
// last two operations, never the same one twice (adversarial U6: both read
// the undo stack before either took the move lock).
func TestConcurrentUndosReverseTwoOperations(t *testing.T) {
	for round := 0; round < 5; round++ {
		r, root := snaptest.NewRepo(t)
		snaptest.WriteFiles(t, root, map[string]string{"a.txt": "1\n"})
		c1 := checkpoint(t, r, snap.CheckpointOptions{})
		snaptest.WriteFiles(t, root, map[string]string{"a.txt": "2\n", "b.txt": "b\n"})
		checkpoint(t, r, snap.CheckpointOptions{})
		if _, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String(), All: true}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		undone := make([]int64, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := r.Undo(ctx, "")
				if err == nil {
					undone[i] = res.Op.Seq
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v / %v", round, errs[0], errs[1])
		}
		if undone[0] == undone[1] {
			t.Fatalf("round %d: both undos reversed op #%d", round, undone[0])
		}
	}
}
