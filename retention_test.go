package snap_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

// Issue acceptance: 30 checkpoints of a 200 KB random file, one labelled,
// then gc keeping the last 5 with no time window and no grace: exactly the
// last 5 and the labelled one remain, the store shrinks to under half, fsck
// --full is clean and all six restore exactly.
func TestRetentionKeepsLastAndLabelled(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	rng := rand.NewChaCha8([32]byte{7})
	p := filepath.Join(root, "data.bin")
	contents := map[objects.ID][]byte{}
	var ids []objects.ID
	for i := 0; i < 30; i++ {
		data := make([]byte, 200<<10)
		rng.Read(data)
		os.WriteFile(p, data, 0o644)
		o := snap.CheckpointOptions{}
		if i == 10 {
			o.Labels = []string{"keep-me"}
		}
		res := checkpoint(t, r, o)
		ids = append(ids, res.ID)
		contents[res.ID] = data
	}
	before := storeBytes(t, r)
	res, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 5}})
	if err != nil {
		t.Fatal(err)
	}
	after := storeBytes(t, r)
	t.Logf("gc: %+v; store %d → %d bytes", res, before, after)
	if res.Expired != 24 || res.Kept != 6 {
		t.Fatalf("expired %d kept %d, want 24 and 6", res.Expired, res.Kept)
	}
	if after*2 >= before {
		t.Fatalf("store %d → %d bytes: not under half", before, after)
	}
	want := map[objects.ID]bool{ids[10]: true}
	for _, id := range ids[25:] {
		want[id] = true
	}
	var left []objects.ID
	r.Objects().Each(func(id objects.ID, typ objects.Type) {
		if typ == objects.TypeCheckpoint {
			left = append(left, id)
		}
	})
	if len(left) != 6 {
		t.Fatalf("%d checkpoints remain, want 6", len(left))
	}
	for _, id := range left {
		if !want[id] {
			t.Fatalf("checkpoint %s should have expired", id.Short())
		}
	}
	log, err := r.Log(ctx, snap.LogOptions{})
	if err != nil || len(log) != 6 {
		t.Fatalf("log after gc: %d entries, %v", len(log), err)
	}
	snaptest.Fsck(t, r)
	for id := range want {
		if _, err := r.Rewind(ctx, snap.RewindOptions{Target: id.String()}); err != nil {
			t.Fatalf("rewind to %s: %v", id.Short(), err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, contents[id]) {
			t.Fatalf("%s does not restore exactly", id.Short())
		}
	}
	// Expired checkpoints are reported as such, never half-read.
	if _, err := r.Resolve(ctx, "", "#3"); err == nil {
		t.Fatal("#3 resolved after it expired")
	}
	if _, err := r.Resolve(ctx, "", ids[3].String()); err == nil {
		t.Fatal("an expired id resolved")
	}
}

// gc and checkpoints in one process under -race: every acknowledged
// checkpoint stays restorable while gc runs with no grace period.
func TestGCConcurrentWithCheckpoints(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	done := make(chan struct{})
	gcErr := make(chan error, 1)
	go func() {
		defer close(gcErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := gc.Collect(ctx, r.Objects(), r.Refs(), gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 3}, Consolidate: true}); err != nil {
				gcErr <- err
				return
			}
		}
	}()
	type ack struct {
		id      objects.ID
		content string
	}
	var acks []ack
	for i := 0; i < 40; i++ {
		content := string(rune('a'+i%26)) + "-" + string(rune('A'+i%7))
		snaptest.WriteFiles(t, root, map[string]string{"f.txt": content, "shared.txt": "same every time"})
		res := checkpoint(t, r, snap.CheckpointOptions{})
		acks = append(acks, ack{res.ID, content})
	}
	close(done)
	if err := <-gcErr; err != nil {
		t.Fatalf("gc: %v", err)
	}
	// The last 3 are kept by the policy; all must read back.
	for _, a := range acks[len(acks)-3:] {
		var buf bytes.Buffer
		if err := r.Cat(ctx, a.id, "f.txt", &buf); err != nil || buf.String() != a.content {
			t.Fatalf("checkpoint %s: %q, %v", a.id.Short(), buf.String(), err)
		}
	}
}

// The Repo's clock stamps checkpoints and op-log records, and retention
// measures by it: a test (or an importer replaying history) needs no sleep.
func TestInjectedClock(t *testing.T) {
	_, root := snaptest.NewRepo(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	r, err := snap.Open(snap.Options{Dir: root, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 3 {
		now = t0.Add(time.Duration(i) * time.Hour)
		writeFile(t, filepath.Join(root, "f"), fmt.Sprint(i))
		checkpoint(t, r, snap.CheckpointOptions{})
	}
	log, err := r.Log(ctx, snap.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || !log[0].Time.Equal(t0.Add(2*time.Hour)) || !log[2].Time.Equal(t0) {
		t.Fatalf("checkpoint times: %+v", log)
	}
	ops, err := r.Ops(ctx, 0)
	if err != nil || len(ops) == 0 || !ops[0].Time.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("op-log times: %+v %v", ops, err)
	}
	now = t0.Add(3 * time.Hour)
	res, err := r.GC(ctx, snap.GCOptions{Policy: &snap.Policy{KeepLast: 1, KeepWithin: 90 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	// Within 90 minutes of the injected now: the last checkpoint's op, which
	// names its parent (so it stays undoable); only the first expires. By
	// the real clock every op would be old and two would expire.
	if res.Expired != 1 || res.Kept != 2 {
		t.Fatalf("expired %d, kept %d by the injected clock, want 1 and 2 (%+v)", res.Expired, res.Kept, res)
	}
}
