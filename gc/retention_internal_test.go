package gc

import (
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// M42 (model, seed 923): a "message" op names a checkpoint recorded
// before (here an edit commit's end, which retention never counts); it
// took a place among a session's last KeepLast, and the oldest of them
// was expired.
func TestMessageOpsTakeNoPlaceInTheLastN(t *testing.T) {
	id := func(b byte) objects.ID { return objects.ID{b} }
	now := time.Now()
	ops := []refs.Op{
		{Kind: "checkpoint", Session: "s", Checkpoint: id(1), Time: now},
		{Kind: "checkpoint", Session: "s", Checkpoint: id(2), Time: now},
		{Kind: "edit-commit", Session: "s", Safety: id(2), Target: id(9), Time: now},
		{Kind: "checkpoint", Session: "s", Checkpoint: id(3), Time: now},
		{Kind: "message", Session: "s", Checkpoint: id(9), Time: now},
	}
	e := planExpiry(Policy{KeepLast: 3}, ops, nil, map[objects.ID]bool{}, now.Add(time.Hour))
	if len(e.expire) != 0 {
		t.Fatalf("expired %v; the session recorded 3 checkpoints, all among its last 3", e.expire)
	}
}
