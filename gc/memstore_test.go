package gc

import (
	"context"
	"testing"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/storage/memstore"
)

// The storage seam end to end: a store kept in memory (storage/memstore)
// is collected and checked as one on disk is.
func TestCollectAndFsckInMemory(t *testing.T) {
	st, err := objects.OpenBlobs(memstore.NewBlobs())
	if err != nil {
		t.Fatal(err)
	}
	f := &fx{t: t, st: st, rs: refs.OpenStorage(memstore.NewRefs()), now: 1700000000000000000}
	for _, content := range []string{"one", "two", "three"} {
		f.commitTree("s", func(w *objects.Writer) objects.ID {
			id, _ := f.tree(w, map[string]string{"a/file": content, "b": "same"})
			return id
		})
	}
	head, err := f.rs.Get("sessions/s/head")
	if err != nil {
		t.Fatal(err)
	}
	before := st.Stats()
	res, err := Collect(context.Background(), st, f.rs, Options{Policy: &Policy{KeepLast: 1}, Consolidate: true})
	if err != nil {
		t.Fatal(err)
	}
	after := st.Stats()
	if after.Objects >= before.Objects || after.Packs >= before.Packs || res.Expired != 2 {
		t.Fatalf("gc in memory: %+v -> %+v (%+v)", before, after, res)
	}
	if _, err := st.ReadCheckpoint(head); err != nil {
		t.Fatalf("head after gc: %v", err)
	}
	rep, err := Fsck(context.Background(), st, f.rs, true)
	if err != nil || rep.Corrupt() {
		t.Fatalf("fsck in memory: %+v %v", rep, err)
	}
}
