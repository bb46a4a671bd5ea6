package gc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// gcStore is a store with reachable checkpoints, an old pack of junk, an
// old pack mixing reachable objects and junk, and an old temporary file.
type gcStore struct {
	*fx
	files map[objects.ID]map[string]string // checkpoint -> its files
	junk  []objects.ID                     // unreachable objects in old packs
}

func newGCStore(t *testing.T) *gcStore {
	g := &gcStore{fx: newFx(t), files: map[objects.ID]map[string]string{}}
	commit := func(session string, files map[string]string) objects.ID {
		id, _ := g.commit(session, files)
		g.files[id] = files
		return id
	}
	commit("s", map[string]string{"README.md": "hello\n", "src/main.go": "package main\n"})
	commit("s", map[string]string{"README.md": "hello again\n", "src/main.go": "package main\n", "big.txt": strings.Repeat("large and chunked ", 8000)})
	// A session whose head ref was removed: only the op log names it now.
	old := commit("old", map[string]string{"kept.txt": "kept because the op log names it\n"})
	if err := g.rs.Delete("sessions/old/head", old); err != nil {
		t.Fatal(err)
	}
	if err := g.rs.Append(&refs.Op{Kind: "session-rm", Session: "old", Refs: []refs.RefChange{{Name: "sessions/old/head", Old: old}}}); err != nil {
		t.Fatal(err)
	}
	// Junk only.
	g.write(func(w *objects.Writer) {
		g.junk = append(g.junk, g.put(w, objects.TypeBlob, []byte("junk one")))
		g.junk = append(g.junk, g.put(w, objects.TypeBlob, []byte(strings.Repeat("junk two ", 100))))
	})
	// Reachable objects and junk in one pack.
	files := map[string]string{"mixed.txt": "in a pack with junk\n"}
	id, _ := g.commitTree("s", func(w *objects.Writer) objects.ID {
		g.junk = append(g.junk, g.put(w, objects.TypeBlob, []byte("junk three")))
		tree, _ := g.tree(w, files)
		return tree
	})
	g.files[id] = files
	if err := os.WriteFile(filepath.Join(g.dir, objects.TmpDir, "pack-crashed"), []byte("SNAPPACK partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, g.dir, 2*time.Hour)
	return g
}

// checkFiles reads back every checkpoint's files byte for byte.
func (g *gcStore) checkFiles(st *objects.Store) {
	g.t.Helper()
	for ck, files := range g.files {
		c, err := st.ReadCheckpoint(ck)
		if err != nil {
			g.t.Fatalf("checkpoint %s: %v", ck.Short(), err)
		}
		got := map[string]string{}
		err = objects.WalkTree(st, c.Tree, func(p string, e objects.TreeEntry) error {
			data, err := st.ReadBlob(e.ID, 1<<30)
			got[p] = string(data)
			return err
		})
		if err != nil {
			g.t.Fatalf("checkpoint %s: %v", ck.Short(), err)
		}
		if !maps.Equal(got, files) {
			g.t.Fatalf("checkpoint %s reads back different files", ck.Short())
		}
	}
}

func TestCollectRemovesUnreachable(t *testing.T) {
	g := newGCStore(t)
	// A young pack of junk: protected by the grace period.
	var young objects.ID
	g.write(func(w *objects.Writer) { young = g.put(w, objects.TypeBlob, []byte("young junk")) })

	roots, err := Roots(g.rs)
	if err != nil {
		t.Fatal(err)
	}
	reach, probs, err := Reachable(context.Background(), g.st, roots, nil)
	if err != nil || len(probs) > 0 {
		t.Fatalf("Reachable: %v %v", err, probs)
	}
	for _, id := range append(g.junk, young) {
		if _, ok := reach[id]; ok {
			t.Fatalf("junk %s reachable", id.Short())
		}
	}
	if len(reach)+len(g.junk)+1 != g.st.Stats().Objects {
		t.Fatalf("%d reachable + %d junk != %d objects", len(reach), len(g.junk)+1, g.st.Stats().Objects)
	}
	sizeBefore := g.st.Stats().PackBytes

	res, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Reachable: len(reach), Unreachable: len(g.junk) + 1, PacksRewritten: 1, PacksDeleted: 1, TempFilesRemoved: 1}
	got := *res
	got.BytesFreed = 0
	if got != want {
		t.Fatalf("Result %+v, want %+v", got, want)
	}
	tmpSize := int64(len("SNAPPACK partial"))
	if after := g.st.Stats().PackBytes; res.BytesFreed != sizeBefore-after+tmpSize || res.BytesFreed <= tmpSize {
		t.Fatalf("BytesFreed %d, packs went from %d to %d bytes", res.BytesFreed, sizeBefore, after)
	}

	fresh, rs := g.reopen()
	for _, st := range []*objects.Store{g.st, fresh} {
		for _, id := range g.junk {
			if st.Has(id) {
				t.Fatalf("unreachable %s survived", id.Short())
			}
		}
		if !st.Has(young) {
			t.Fatal("an object in a young pack was removed")
		}
		for id := range reach {
			if _, _, err := st.Read(id); err != nil {
				t.Fatal(err)
			}
		}
		g.checkFiles(st)
	}
	if des, _ := os.ReadDir(filepath.Join(g.dir, objects.TmpDir)); len(des) != 0 {
		t.Fatalf("tmp/ not empty: %v", des)
	}
	ops, _ := rs.Ops()
	if last := ops[len(ops)-1]; last.Kind != "gc" || len(last.Detail) == 0 {
		t.Fatalf("last op %+v, want a gc op", last)
	}
	g.mustBeClean()

	// Nothing left to do.
	res, err = Collect(context.Background(), fresh, rs, Options{Grace: time.Hour})
	if err != nil || res.PacksDeleted+res.PacksRewritten+res.TempFilesRemoved != 0 || res.BytesFreed != 0 {
		t.Fatalf("second Collect: %+v, %v", res, err)
	}
}

func TestCollectGraceProtectsYoungPacks(t *testing.T) {
	f := newFx(t)
	f.base()
	var junk objects.ID
	f.write(func(w *objects.Writer) { junk = f.put(w, objects.TypeBlob, []byte("fresh junk")) })
	os.WriteFile(filepath.Join(f.dir, objects.TmpDir, "pack-live"), []byte("being written"), 0o644)
	before := packsState(t, f.dir)

	res, err := Collect(context.Background(), f.st, f.rs, Options{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unreachable != 1 || res.PacksDeleted+res.PacksRewritten+res.TempFilesRemoved != 0 || res.BytesFreed != 0 {
		t.Fatalf("Result %+v: a young pack or temporary file was collected", res)
	}
	if after := packsState(t, f.dir); !maps.Equal(before, after) {
		t.Fatalf("packs changed:\n%v\n%v", before, after)
	}
	if !f.st.Has(junk) {
		t.Fatal("young junk removed")
	}

	// Grace 0: everything unreachable goes.
	res, err = Collect(context.Background(), f.st, f.rs, Options{})
	if err != nil || res.PacksDeleted != 1 || res.TempFilesRemoved != 1 {
		t.Fatalf("Collect with no grace: %+v, %v", res, err)
	}
	if fresh, _ := f.reopen(); fresh.Has(junk) {
		t.Fatal("junk survived")
	}
	f.mustBeClean()
}

func TestCollectDryRunChangesNothing(t *testing.T) {
	g := newGCStore(t)
	before := packsState(t, g.dir)
	opsBefore, _ := g.rs.Ops()

	dry, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := packsState(t, g.dir); !maps.Equal(before, after) {
		t.Fatalf("dry run changed the store:\n%v\n%v", before, after)
	}
	if ops, _ := g.rs.Ops(); len(ops) != len(opsBefore) {
		t.Fatal("dry run wrote to the op log")
	}
	fresh, _ := g.reopen()
	for _, id := range g.junk {
		if !fresh.Has(id) || !g.st.Has(id) {
			t.Fatal("dry run removed an object")
		}
	}
	if !dry.DryRun || dry.PacksDeleted != 1 || dry.PacksRewritten != 1 || dry.TempFilesRemoved != 1 || dry.BytesFreed <= 0 {
		t.Fatalf("dry run result %+v", dry)
	}

	real, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	real.DryRun = true
	if *real != *dry {
		t.Fatalf("dry run predicted %+v, the real run did %+v", dry, real)
	}
}

func TestCollectBusy(t *testing.T) {
	f := newFx(t)
	f.base()
	unlock, err := lockSweep(context.Background(), f.dir, DefaultLockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Collect(context.Background(), f.st, f.rs, Options{}); !errors.Is(err, ErrBusy) || !errors.Is(err, refs.ErrBusy) {
		t.Fatalf("Collect beside another gc: %v, want ErrBusy", err)
	}
}

func TestCollectRefusesWhenReachabilityIsUncertain(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, g *gcStore)
	}{
		{"unreadable reachable tree", func(t *testing.T, g *gcStore) {
			for ck := range g.files {
				c, _ := g.st.ReadCheckpoint(ck)
				flip(t, g.dir, info(t, g.st, c.Tree))
				return
			}
		}},
		{"damaged ref file", func(t *testing.T, g *gcStore) {
			os.WriteFile(filepath.Join(g.dir, "refs", "labels", "bad"), []byte("not an id\n"), 0o644)
		}},
		{"damaged op-log record", func(t *testing.T, g *gcStore) {
			p := filepath.Join(g.dir, "oplog")
			data, _ := os.ReadFile(p)
			data[5] ^= 1
			os.WriteFile(p, data, 0o644)
		}},
		{"missing checkpoint while a pack cannot be indexed", func(t *testing.T, g *gcStore) {
			for ck := range g.files {
				p := filepath.Join(g.dir, objects.PacksDir, info(t, g.st, ck).Pack)
				os.Truncate(p, 100)
				return
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGCStore(t)
			os.MkdirAll(filepath.Join(g.dir, "refs", "labels"), 0o755)
			tc.damage(t, g)
			before := packsState(t, g.dir)
			st, rs := g.reopen()
			_, err := Collect(context.Background(), st, rs, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Collect: %v, want a corruption error", err)
			}
			if after := packsState(t, g.dir); !maps.Equal(before, after) {
				t.Fatal("Collect changed the store although reachability was uncertain")
			}
		})
	}
}

func TestCollectRejectsNegativeGrace(t *testing.T) {
	f := newFx(t)
	if _, err := Collect(context.Background(), f.st, f.rs, Options{Grace: -time.Second}); err == nil {
		t.Fatal("negative grace accepted")
	}
}

// Temporary packs of a dead writer go at once; a live writer's young ones
// stay for the grace period.
func TestCollectRemovesDeadWritersTemps(t *testing.T) {
	f := newFx(t)
	f.base()
	tmp := filepath.Join(f.dir, objects.TmpDir)
	dead := filepath.Join(tmp, "pack-999999999-123")
	live := filepath.Join(tmp, fmt.Sprintf("pack-%d-456", os.Getpid()))
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("SNAPPACK partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Collect(context.Background(), f.st, f.rs, Options{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead writer's temporary pack kept: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live writer's young temporary pack removed: %v", err)
	}
	if res.TempFilesRemoved != 1 {
		t.Errorf("TempFilesRemoved = %d", res.TempFilesRemoved)
	}
}

// TestCollectConsolidatesGeometrically: gc --auto merges the small packs
// and leaves a pack far larger than all of them together as it is; once
// the merged packs grow to rival it, everything is merged. No object is
// lost, and packs holding garbage are still cleaned.
func TestCollectConsolidatesGeometrically(t *testing.T) {
	g := newGCStore(t) // a garbage-only pack, a mixed one, and clean ones
	big := g.write(func(w *objects.Writer) {
		for i := range 200 {
			noise := objects.Hash(objects.TypeBlob, fmt.Appendf(nil, "%d", i)) // incompressible
			g.put(w, objects.TypeBlob, bytes.Repeat(noise[:], 16))
		}
	})
	commitSmall := func(n int) {
		for i := range n {
			id, _ := g.commit("s", map[string]string{"README.md": fmt.Sprintf("small %d %d\n", n, i)})
			g.files[id] = map[string]string{"README.md": fmt.Sprintf("small %d %d\n", n, i)}
		}
	}
	commitSmall(5)
	packs := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range g.st.PackInfo() {
			m[p.Name] = true
		}
		return m
	}
	before := packs()
	res, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour, Consolidate: true})
	if err != nil {
		t.Fatal(err)
	}
	after := packs()
	// The big pack of unreachable blobs is young: never dropped, never
	// rewritten while it dwarfs the rest. The junk pack went; everything
	// else became one pack.
	if !after[big] {
		t.Fatalf("the big pack was rewritten (%+v)", res)
	}
	if len(after) != 2 || res.PacksDeleted != 1 || res.PacksRewritten != len(before)-2 {
		t.Fatalf("%d packs before, %d after, result %+v; want the big one and one merged pack", len(before), len(after), res)
	}
	for _, id := range g.junk {
		if g.st.Has(id) {
			t.Fatalf("junk %s survived", id.Short())
		}
	}
	g.checkFiles(g.st)

	// Small packs again: merged until the packs are in geometric shape
	// (each at least twice all smaller ones together), the big one kept.
	commitSmall(3)
	if _, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour, Consolidate: true}); err != nil {
		t.Fatal(err)
	}
	if after := packs(); len(after) > 3 || !after[big] || geometricMerge(g.st.PackInfo()) != nil {
		t.Fatalf("second consolidation left %v (big kept: %v)", g.st.PackInfo(), after[big])
	}

	// Without Consolidate, clean packs are not touched at all.
	commitSmall(2)
	n := len(packs())
	if res, err := Collect(context.Background(), g.st, g.rs, Options{Grace: time.Hour}); err != nil || res.PacksRewritten != 0 || len(packs()) != n {
		t.Fatalf("plain gc merged clean packs: %+v, %v", res, err)
	}
	fresh, _ := g.reopen()
	g.checkFiles(fresh)
	g.mustBeClean()
}

func TestGeometricMerge(t *testing.T) {
	pack := func(sizes ...int64) []objects.PackInfo {
		var ps []objects.PackInfo
		for i, s := range sizes {
			ps = append(ps, objects.PackInfo{Name: fmt.Sprint(i), Size: s})
		}
		return ps
	}
	names := func(ps []objects.PackInfo) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Name)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		sizes []int64
		want  string
	}{
		{nil, ""},
		{[]int64{10}, ""},
		{[]int64{10, 10}, "0,1"},
		{[]int64{10, 1000}, ""},              // one small pack: nothing to merge it with
		{[]int64{1000, 10, 10, 10}, "1,2,3"}, // the big pack stays
		{[]int64{10, 60, 10, 10}, "0,2,3"},   // 60 ≥ 2×30: stays
		{[]int64{10, 50, 10, 10}, "0,2,3,1"}, // 50 < 2×30: merged too
		{[]int64{1, 2, 6, 18, 54}, ""},       // geometric already
		{[]int64{1, 1, 6, 18, 54}, "0,1"},
		{[]int64{1, 2, 4, 8, 16}, "0,1,2,3,4"}, // 16 < 2×15
	} {
		if got := names(geometricMerge(pack(tc.sizes...))); got != tc.want {
			t.Errorf("geometricMerge(%v) = %q, want %q", tc.sizes, got, tc.want)
		}
	}
}

// A pack whose index is damaged but still well formed (a flipped checksum
// bit) opens, since opening checks only each entry's structure; gc checks
// every index in full first, leaves that pack alone and collects the rest,
// and fsck reports it.
func TestCollectNeverTrustsAnUncheckedIndex(t *testing.T) {
	g := newGCStore(t)
	var junk objects.ID
	name := g.write(func(w *objects.Writer) { junk = g.put(w, objects.TypeBlob, []byte("junk in a damaged pack")) })
	age(t, g.dir, 2*time.Hour)
	path := filepath.Join(g.dir, objects.PacksDir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-30] ^= 1 // inside the footer's index checksum
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	st, rs := g.reopen()
	if !st.Has(junk) {
		t.Fatal("opening the store refused a pack whose entries are well formed")
	}
	// gc checks the indexes first: the damaged pack counts as one that
	// cannot be indexed, left alone, and the healthy junk is still swept
	// (without the check, gc would only fail on it when reading its index
	// in full, and sweep nothing).
	res, err := Collect(context.Background(), st, rs, Options{Grace: time.Hour})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if _, bad := st.LoadErrors()[name]; !bad {
		t.Fatal("the damaged pack is not listed as unindexable")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("gc removed a pack whose index it could not trust: %v", err)
	}
	if res.PacksDeleted != 1 || st.Has(g.junk[0]) {
		t.Fatalf("the healthy junk pack was not swept: %+v", res)
	}
	rep := g.fsck(false)
	found := false
	for _, p := range rep.Problems {
		found = found || strings.Contains(p.Path, name)
	}
	if !found {
		t.Fatalf("fsck did not report the damaged index: %+v", rep.Problems)
	}
}
