package objects

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/klauspost/compress/zstd"
)

// deltaTreeForTest returns a tree of n file entries; entry k's id depends on
// version v[k] (missing: 0).
func deltaTreeForTest(n int, v map[int]int) []byte {
	var tr Tree
	for i := 0; i < n; i++ {
		id := Hash(TypeBlob, []byte(fmt.Sprintf("content of file %d, version %d", i, v[i])))
		tr.Entries = append(tr.Entries, TreeEntry{Name: fmt.Sprintf("file_%03d.go", i), Mode: ModeFile, ID: id, Size: int64(1000 + 37*i + v[i])})
	}
	return tr.Encode()
}

// goSourceForTest returns about 5 KB of real Go source (this package's
// store.go, cut at a line end).
func goSourceForTest(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("store.go")
	if err != nil {
		t.Fatal(err)
	}
	src = src[:5000]
	return src[:bytes.LastIndexByte(src, '\n')+1]
}

// putCommitForTest stores data with PutDelta on base in a pack of its own.
func putCommitForTest(t *testing.T, s *Store, typ Type, data []byte, base ID) ID {
	t.Helper()
	w := s.NewWriter()
	id, err := w.PutDelta(typ, data, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return id
}

// mustReadForTest reads id from s and checks it is data.
func mustReadForTest(t *testing.T, s *Store, id ID, typ Type, data []byte) {
	t.Helper()
	gt, got, err := s.Read(id)
	if err != nil || gt != typ || !bytes.Equal(got, data) {
		t.Fatalf("Read %s = %v, %d bytes, %v; want %v, %d bytes", id.Short(), gt, len(got), err, typ, len(data))
	}
}

func depthForTest(t *testing.T, s *Store, id ID) (ID, int) {
	t.Helper()
	base, depth, err := s.DeltaBase(id)
	if err != nil {
		t.Fatal(err)
	}
	return base, depth
}

// A tree with one entry changed and a Go file with one line inserted are
// stored as small deltas on their previous versions, in a newer pack, and
// read back (also from a store opened afresh).
func TestDeltaRoundTripTreeAndBlob(t *testing.T) {
	s, dir := openStoreForTest(t)
	src := goSourceForTest(t)
	i := bytes.Index(src, []byte("\n\n")) + 1
	src2 := append(append(append([]byte(nil), src[:i]...), "// one inserted line, as an agent edit adds\n"...), src[i:]...)
	cases := []struct {
		name      string
		typ       Type
		old, new  []byte
		maxStored int64
	}{
		{"tree of 60 entries, one id changed", TypeTree, deltaTreeForTest(60, nil), deltaTreeForTest(60, map[int]int{17: 1}), 120},
		{"5 KB Go file, one line inserted", TypeBlob, src, src2, 150},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := putCommitForTest(t, s, c.typ, c.old, ID{})
			id := putCommitForTest(t, s, c.typ, c.new, base)
			info, _ := s.Info(id)
			whole, enc := compress(c.new, false)
			t.Logf("%s: %d bytes; whole record (enc %d) %d bytes stored, delta %d bytes stored (+%d header each)",
				c.name, len(c.new), enc, len(whole), info.Stored, recordHeader)
			if !info.Delta || info.Size != int64(len(c.new)) {
				t.Fatalf("stored as %+v, want a delta of %d bytes", info, len(c.new))
			}
			if info.Stored > c.maxStored || info.Stored*4 > int64(len(whole)) {
				t.Fatalf("delta takes %d bytes, whole %d: want at most %d", info.Stored, len(whole), c.maxStored)
			}
			if b, d := depthForTest(t, s, id); b != base || d != 1 {
				t.Fatalf("DeltaBase = %s, %d; want %s, 1", b.Short(), d, base.Short())
			}
			if st := s.StoredBytes()[c.typ]; st[1] < int64(len(c.old)/4) || st[0] != 2 {
				t.Fatalf("StoredBytes = %v", st)
			}
			mustReadForTest(t, s, id, c.typ, c.new)
			mustReadForTest(t, reopenForTest(t, dir), id, c.typ, c.new)
			if c.typ == TypeTree {
				if _, err := reopenForTest(t, dir).ReadTree(id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Each version deltas on the previous one until the chain reaches
// MaxDeltaDepth; the next is stored whole, and a new chain starts on it.
func TestDeltaChainCappedAtMaxDepth(t *testing.T) {
	s, dir := openStoreForTest(t)
	var ids []ID
	var datas [][]byte
	prev := ID{}
	for v := 0; v <= MaxDeltaDepth+3; v++ {
		data := deltaTreeForTest(40, map[int]int{v % 40: v + 1})
		id := putCommitForTest(t, s, TypeTree, data, prev)
		ids, datas = append(ids, id), append(datas, data)
		prev = id
	}
	for v, id := range ids {
		want := v % (MaxDeltaDepth + 1)
		if _, d := depthForTest(t, s, id); d != want {
			t.Fatalf("version %d: depth %d, want %d", v, d, want)
		}
	}
	s2 := reopenForTest(t, dir)
	for v, id := range ids {
		mustReadForTest(t, s, id, TypeTree, datas[v])
		mustReadForTest(t, s2, id, TypeTree, datas[v])
	}
	// Fsck-style verification of every pack passes.
	for _, p := range s2.PackInfo() {
		if err := s2.VerifyPack(p.Name, func(o ObjectInfo, err error) error { return err }); err != nil {
			t.Fatal(err)
		}
	}
}

// PutDelta stores whole records whenever the base cannot serve, and
// behaves exactly like Put otherwise (dedup, dry runs).
func TestPutDeltaFallsBackToWhole(t *testing.T) {
	s, _ := openStoreForTest(t)
	old, newData := deltaTreeForTest(60, nil), deltaTreeForTest(60, map[int]int{3: 1})
	blob := putCommitForTest(t, s, TypeBlob, old, ID{}) // same bytes, but a blob
	tiny := putCommitForTest(t, s, TypeTree, deltaTreeForTest(1, nil), ID{})
	empty := putCommitForTest(t, s, TypeTree, nil, ID{})

	w := s.NewWriter()
	pending, err := w.Put(TypeTree, old) // pending in this writer only
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]ID{
		"zero base":          {},
		"base only pending":  pending,
		"base of other type": blob,
		"base missing":       Hash(TypeTree, []byte("never stored")),
		"base empty":         empty,
		"base too different": tiny,
	}
	for name, base := range cases {
		w2 := s.NewWriter()
		id, err := w2.PutDelta(TypeTree, newData, base)
		if err != nil || id != Hash(TypeTree, newData) {
			t.Fatalf("%s: PutDelta = %s, %v", name, id.Short(), err)
		}
		if len(w2.entries) != 1 || w2.entries[0].enc == encDelta {
			t.Fatalf("%s: wrote %+v, want one whole record", name, w2.entries)
		}
		w2.Abort()
	}
	w.Abort()

	// Small content: the delta is not worth it.
	a := putCommitForTest(t, s, TypeBlob, []byte("package main\n"), ID{})
	b := putCommitForTest(t, s, TypeBlob, []byte("package main2\n"), a)
	if i, _ := s.Info(b); i.Delta {
		t.Fatal("a 14-byte blob stored as a delta")
	}
	// Dedup: an object already stored is not written again, base or not.
	base := putCommitForTest(t, s, TypeTree, old, ID{})
	w4 := s.NewWriter()
	if _, err := w4.PutDelta(TypeTree, old, base); err != nil || len(w4.entries) != 0 {
		t.Fatalf("dedup: %v, %d entries", err, len(w4.entries))
	}
	// A dry writer writes nothing and still returns ids and pending trees.
	d := s.NewDryWriter()
	id, err := d.PutDelta(TypeTree, newData, base)
	if err != nil || id != Hash(TypeTree, newData) || len(d.entries) != 0 || d.f != nil {
		t.Fatalf("dry PutDelta = %s, %v, %d entries", id.Short(), err, len(d.entries))
	}
	if _, err := d.ReadTree(id); err != nil {
		t.Fatal(err)
	}
	if name, err := d.Commit(); name != "" || err != nil {
		t.Fatalf("dry Commit = %q, %v", name, err)
	}
	if s.Has(id) {
		t.Fatal("dry writer stored an object")
	}
}

// PutBlobBase deltas small files on a previous blob only.
func TestPutBlobBase(t *testing.T) {
	s, dir := openStoreForTest(t)
	src := goSourceForTest(t)
	src2 := bytes.Replace(src, []byte("package objects"), []byte("package objects // edited"), 1)
	w := s.NewWriter()
	base, n, err := w.PutBlobBase(bytes.NewReader(src), ID{})
	if err != nil || n != int64(len(src)) {
		t.Fatal(n, err)
	}
	big := bytes.Repeat([]byte("large content is chunked, never a delta. "), 3000)
	bigID, _, err := w.PutBlobBase(bytes.NewReader(big), ID{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w = s.NewWriter()
	id, n, err := w.PutBlobBase(bytes.NewReader(src2), base)
	if err != nil || n != int64(len(src2)) {
		t.Fatal(n, err)
	}
	fromList, _, err := w.PutBlobBase(bytes.NewReader(src), bigID) // base is a chunk list: ignored
	if err != nil || fromList != base {
		t.Fatal(err)
	}
	big2 := append(append([]byte(nil), big...), "tail"...)
	big2ID, _, err := w.PutBlobBase(bytes.NewReader(big2), bigID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if i, _ := s.Info(id); !i.Delta {
		t.Fatalf("small edited file stored whole: %+v", i)
	}
	if i, _ := s.Info(big2ID); i.Delta || i.Type != TypeChunkList {
		t.Fatalf("large file: %+v", i)
	}
	s2 := reopenForTest(t, dir)
	for id, want := range map[ID][]byte{id: src2, big2ID: big2} {
		got, err := s2.ReadBlob(id, 1<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadBlob %s: %v", id.Short(), err)
		}
	}
}

// deltaRecordForTest is a delta record of typ for data on base, with the
// given depth byte, its delta raw (it is built by DiffDelta when nil).
func deltaRecordForTest(typ Type, data []byte, base ID, baseData []byte, depth byte, delta []byte) rawRecordForTest {
	if delta == nil {
		delta = packfile.DiffDelta(baseData, data)
	}
	stored := append(append(append([]byte(nil), base[:]...), depth, encRaw), delta...)
	return rawRecordForTest{id: Hash(typ, data), typ: typ, enc: encDelta, size: uint32(len(data)), stored: stored}
}

// leb128ForTest encodes v as a git delta header size.
func leb128ForTest(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Hand-built delta records that are damaged or hostile read as ErrCorrupt
// (never ErrNotFound, never wrong bytes, no panic, no large allocation).
func TestDeltaCorruptRecordsRefused(t *testing.T) {
	baseData := deltaTreeForTest(30, nil)
	data := deltaTreeForTest(30, map[int]int{5: 1})
	base := Hash(TypeTree, baseData)
	good := deltaRecordForTest(TypeTree, data, base, baseData, 1, nil)
	delta := packfile.DiffDelta(baseData, data)
	_, _, err := deltaSizes(delta)
	if err != nil {
		t.Fatal(err)
	}
	// delta with its two sizes replaced.
	withSizes := func(src, tgt uint64) []byte {
		rest := delta[len(leb128ForTest(uint64(len(baseData))))+len(leb128ForTest(uint64(len(data)))):]
		return append(append(leb128ForTest(src), leb128ForTest(tgt)...), rest...)
	}
	flipped := append([]byte(nil), good.stored...)
	flipped[len(flipped)-5] ^= 0x40
	blobBase := goodRecordForTest(TypeBlob, baseData)
	x, y := []byte("object x: "+strings.Repeat("x", 100)), []byte("object y: "+strings.Repeat("x", 100))
	xid, yid := Hash(TypeBlob, x), Hash(TypeBlob, y)
	var bomb bytes.Buffer
	zw, _ := zstd.NewWriter(&bomb, zstd.WithEncoderConcurrency(1))
	zw.Write(make([]byte, 8<<20))
	zw.Close()

	type recs = []rawRecordForTest
	cases := []struct {
		name string
		recs recs
		want []string // in the error message
	}{
		{"flipped delta byte", recs{goodRecordForTest(TypeTree, baseData), {id: good.id, typ: TypeTree, enc: encDelta, size: good.size, stored: flipped}}, nil},
		{"delta declares a huge target", recs{goodRecordForTest(TypeTree, baseData), deltaRecordForTest(TypeTree, data, base, baseData, 1, withSizes(uint64(len(baseData)), 60<<20))}, []string{"delta produces"}},
		{"delta declares another source size", recs{goodRecordForTest(TypeTree, baseData), deltaRecordForTest(TypeTree, data, base, baseData, 1, withSizes(uint64(len(baseData))+1, uint64(len(data))))}, []string{"expects a base of"}},
		{"overlong size", recs{goodRecordForTest(TypeTree, baseData), deltaRecordForTest(TypeTree, data, base, baseData, 1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x01})}, []string{"overlong"}},
		{"base of another type", recs{{id: base, typ: TypeBlob, enc: blobBase.enc, size: blobBase.size, stored: blobBase.stored}, good}, []string{"is a blob"}},
		{"missing base", recs{good}, []string{"missing", base.String(), good.id.String()}},
		{"depth 0", recs{goodRecordForTest(TypeTree, baseData), deltaRecordForTest(TypeTree, data, base, baseData, 0, nil)}, []string{"depth 0"}},
		{"depth too large", recs{goodRecordForTest(TypeTree, baseData), deltaRecordForTest(TypeTree, data, base, baseData, MaxDeltaDepth+1, nil)}, []string{"delta depth"}},
		{"self reference", recs{deltaRecordForTest(TypeTree, data, good.id, data, 1, nil)}, []string{"itself"}},
		{"two-cycle", recs{deltaRecordForTest(TypeBlob, x, yid, y, 2, nil), deltaRecordForTest(TypeBlob, y, xid, x, 1, nil)}, []string{"chain longer"}},
		{"short record", recs{{id: good.id, typ: TypeTree, enc: encDelta, size: good.size, stored: good.stored[:IDSize]}}, nil},
		{"zstd bomb inner", recs{goodRecordForTest(TypeTree, baseData), {id: good.id, typ: TypeTree, enc: encDelta, size: good.size,
			stored: append(append(append([]byte(nil), base[:]...), 1, encZstd), bomb.Bytes()...)}}, []string{"zstd delta"}},
		{"bad inner encoding", recs{goodRecordForTest(TypeTree, baseData), {id: good.id, typ: TypeTree, enc: encDelta, size: good.size,
			stored: append(append(append([]byte(nil), base[:]...), 1, 7), delta...)}}, []string{"delta encoding"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dir := openStoreForTest(t)
			sortRecordsForTest(c.recs)
			installPackForTest(t, dir, buildPackForTest(c.recs))
			s := reopenForTest(t, dir)
			for _, r := range c.recs {
				if r.enc != encDelta {
					continue
				}
				if !s.Has(r.id) {
					t.Fatal("pack not indexed")
				}
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				typ, got, err := s.Read(r.id)
				runtime.ReadMemStats(&ms1)
				if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) || got != nil {
					t.Fatalf("Read = %v, %d bytes, %v; want ErrCorrupt", typ, len(got), err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error %q does not say %q", err, w)
					}
				}
				if a := ms1.TotalAlloc - ms0.TotalAlloc; a > 4<<20 {
					t.Fatalf("refusing the record allocated %d bytes", a)
				}
			}
			n := 0
			err := s.VerifyPack(onlyPackNameForTest(t, dir), func(o ObjectInfo, err error) error {
				if o.Delta && !errors.Is(err, ErrCorrupt) {
					return fmt.Errorf("VerifyPack: delta %s: %v, want ErrCorrupt", o.ID.Short(), err)
				}
				n++
				return nil
			})
			if err != nil || n != len(c.recs) {
				t.Fatalf("VerifyPack: %v (%d records)", err, n)
			}
		})
	}
	// The good record reads, as a control.
	_, dir := openStoreForTest(t)
	installPackForTest(t, dir, buildPackForTest([]rawRecordForTest{goodRecordForTest(TypeTree, baseData), good}))
	mustReadForTest(t, reopenForTest(t, dir), good.id, TypeTree, data)
}

func onlyPackNameForTest(t *testing.T, dir string) string {
	t.Helper()
	p := onlyPackForTest(t, dir)
	return p[strings.LastIndexByte(p, '/')+1:]
}

// A hand-built chain one longer than MaxDeltaDepth is refused, though each
// record claims a legal depth; at exactly MaxDeltaDepth it reads.
func TestDeltaChainTooLongRefused(t *testing.T) {
	for _, n := range []int{MaxDeltaDepth, MaxDeltaDepth + 1} {
		_, dir := openStoreForTest(t)
		datas := [][]byte{deltaTreeForTest(20, nil)}
		recs := []rawRecordForTest{goodRecordForTest(TypeTree, datas[0])}
		for i := 1; i <= n; i++ {
			datas = append(datas, deltaTreeForTest(20, map[int]int{i % 20: i}))
			recs = append(recs, deltaRecordForTest(TypeTree, datas[i], Hash(TypeTree, datas[i-1]), datas[i-1], byte(min(i, MaxDeltaDepth)), nil))
		}
		sortRecordsForTest(recs)
		installPackForTest(t, dir, buildPackForTest(recs))
		s := reopenForTest(t, dir)
		_, _, err := s.Read(Hash(TypeTree, datas[n]))
		if n == MaxDeltaDepth && err != nil {
			t.Fatalf("chain of %d: %v", n, err)
		}
		if n > MaxDeltaDepth && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("chain of %d: %v, want ErrCorrupt", n, err)
		}
	}
}

// When the copy of a base that this store indexes is deeper than the one a
// delta was written on (two writers stored it differently), reading takes
// the shallow copy; Repack keeps the shallowest copy.
func TestDeltaBaseWithDeepAndShallowCopies(t *testing.T) {
	s, dir := openStoreForTest(t)
	// A chain of MaxDeltaDepth versions: the last, y, is at the maximum depth.
	var prev ID
	var y []byte
	for v := 0; v <= MaxDeltaDepth; v++ {
		y = deltaTreeForTest(40, map[int]int{v % 40: v + 1})
		prev = putCommitForTest(t, s, TypeTree, y, prev)
	}
	yid := prev
	if _, d := depthForTest(t, s, yid); d != MaxDeltaDepth {
		t.Fatalf("y at depth %d", d)
	}
	deep, _ := s.lookup(yid)
	// A second, whole copy of y, and x written as a delta on it (depth 1).
	x := deltaTreeForTest(40, map[int]int{39: 99})
	whole := goodRecordForTest(TypeTree, y)
	xrec := deltaRecordForTest(TypeTree, x, yid, y, 1, nil)
	recs := []rawRecordForTest{whole, xrec}
	sortRecordsForTest(recs)
	shallowPack := installPackForTest(t, dir, buildPackForTest(recs))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	searchFirstForTest(s, deep.pack) // this process finds the deep copy
	mustReadForTest(t, s, xrec.id, TypeTree, x)

	// Repacking the pack of the whole copy keeps it, though the index
	// reads y from a pack outside the set: that copy is deeper.
	spName := shallowPack[strings.LastIndexByte(shallowPack, '/')+1:]
	plan, err := s.PlanRepack([]string{spName}, func(ID) bool { return true })
	if err != nil || plan.Kept != 2 {
		t.Fatalf("plan %+v, %v: want y and x copied", plan, err)
	}
	np, _, err := s.Repack([]string{spName}, func(ID) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	shallowPack = dir + "/" + PacksDir + "/" + np
	s1 := reopenForTest(t, dir)
	if c := s1.copiesOf(yid); len(c) != 2 {
		t.Fatalf("%d copies of y after repacking the shallow one's pack", len(c))
	}
	for _, c := range s1.copiesOf(yid) {
		if c.e.enc == encDelta {
			searchFirstForTest(s1, c.pack) // find the deep copy
		}
	}
	mustReadForTest(t, s1, xrec.id, TypeTree, x)

	// Repacking everything keeps the whole copy of y.
	var names []string
	for _, p := range s.PackInfo() {
		names = append(names, p.Name)
	}
	if _, _, err := s.Repack(names, func(ID) bool { return true }); err != nil {
		t.Fatal(err)
	}
	s2 := reopenForTest(t, dir)
	if _, d := depthForTest(t, s2, yid); d != 0 {
		t.Fatalf("after repack y has depth %d, want the whole copy", d)
	}
	mustReadForTest(t, s2, xrec.id, TypeTree, x)
	if _, err := os.Stat(shallowPack); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old pack not removed")
	}
}

// Repack keeps the base of every delta record that stays, even when keep
// does not want the base: deltas it keeps, and deltas in packs outside the
// set. A base outside the set needs nothing.
func TestRepackKeepsDeltaBases(t *testing.T) {
	s, dir := openStoreForTest(t)
	v0, v1, v2 := deltaTreeForTest(60, nil), deltaTreeForTest(60, map[int]int{1: 1}), deltaTreeForTest(60, map[int]int{1: 1, 2: 1})
	other := deltaTreeForTest(60, map[int]int{50: 7})
	w := s.NewWriter()
	id0, _ := w.Put(TypeTree, v0)
	idO, _ := w.Put(TypeTree, other)
	p0, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	w = s.NewWriter()
	id1, _ := w.PutDelta(TypeTree, v1, id0)
	junk, _ := w.Put(TypeBlob, []byte("garbage"))
	p1, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	w = s.NewWriter()
	id2, _ := w.PutDelta(TypeTree, v2, id1) // depth 2, in a pack outside the set below
	idD, _ := w.PutDelta(TypeTree, deltaTreeForTest(60, map[int]int{50: 8}), idO)
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{id1, id2, idD} {
		if i, _ := s.Info(id); !i.Delta {
			t.Fatalf("%s not a delta", id.Short())
		}
	}
	// Only id2 and idD are wanted; p0 and p1 are rewritten.
	want := map[ID]bool{id2: true, idD: true}
	plan, err := s.PlanRepack([]string{p0, p1}, func(id ID) bool { return want[id] })
	if err != nil {
		t.Fatal(err)
	}
	if plan.Kept != 3 || plan.Dropped != 1 {
		t.Fatalf("plan %+v: want id0, id1 and other kept, junk dropped", plan)
	}
	if _, _, err := s.Repack([]string{p0, p1}, func(id ID) bool { return want[id] }); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, reopenForTest(t, dir)} {
		for _, id := range []ID{id0, id1, id2, idO, idD} {
			if _, _, err := st.Read(id); err != nil {
				t.Fatalf("%s after repack: %v", id.Short(), err)
			}
		}
		if st.Has(junk) {
			t.Fatal("junk kept")
		}
	}
	// Without anything needing them, bases go.
	var names []string
	for _, p := range s.PackInfo() {
		names = append(names, p.Name)
	}
	if _, _, err := s.Repack(names, func(id ID) bool { return id == idO }); err != nil {
		t.Fatal(err)
	}
	s2 := reopenForTest(t, dir)
	for id, kept := range map[ID]bool{idO: true, id0: false, id1: false, id2: false, idD: false} {
		if s2.Has(id) != kept {
			t.Fatalf("%s: kept %v, want %v", id.Short(), !kept, kept)
		}
	}
}

// A delta whose base another process removed (a gc) is found again after a
// reload; one whose base is gone for good is corrupt, not absent.
func TestDeltaBaseMissingAfterRemoval(t *testing.T) {
	s, dir := openStoreForTest(t)
	v0, v1 := deltaTreeForTest(60, nil), deltaTreeForTest(60, map[int]int{1: 1})
	base := putCommitForTest(t, s, TypeTree, v0, ID{})
	id := putCommitForTest(t, s, TypeTree, v1, base)
	info, _ := s.Info(base)
	if err := os.Remove(dir + "/" + PacksDir + "/" + info.Pack); err != nil {
		t.Fatal(err)
	}
	s2 := reopenForTest(t, dir)
	_, _, err := s2.Read(id)
	if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), base.String()) {
		t.Fatalf("Read = %v", err)
	}
	if b, d := depthForTest(t, s2, id); b != base || d != 1 {
		t.Fatal("DeltaBase", b, d)
	}
}

// searchFirstForTest makes lookups search p before every other pack.
func searchFirstForTest(s *Store, p *packFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	order := []*packFile{p}
	for _, q := range s.packOrder() {
		if q != p {
			order = append(order, q)
		}
	}
	s.order.Store(&order)
}

// zstd leaves the content size out of frames under 256 bytes: a delta
// whose compressed form is such a frame must read back (it once made
// acknowledged checkpoints unreadable).
func TestDeltaSmallZstdFrameWithoutSize(t *testing.T) {
	s, dir := openStoreForTest(t)
	src := goSourceForTest(t)
	base := putCommitForTest(t, s, TypeBlob, src, ID{})
	sizeless := 0
	for n := 8; n <= 64; n += 4 {
		ins := bytes.Repeat([]byte("delta "), n)
		data := append(append(append([]byte(nil), src[:1000]...), ins...), src[1000:]...)
		id := putCommitForTest(t, s, TypeBlob, data, base)
		loc, ok := s.lookup(id)
		if !ok {
			t.Fatal("not stored")
		}
		if loc.e.enc == encDelta {
			raw, err := readRecordBytes(loc.pack, loc.e)
			if err != nil {
				t.Fatal(err)
			}
			_, _, innerEnc, inner, err := parseDeltaRecord(raw[recordHeader:])
			var h zstd.Header
			if err == nil && innerEnc == encZstd && h.Decode(inner) == nil && !h.HasFCS {
				sizeless++
			}
		}
		mustReadForTest(t, reopenForTest(t, dir), id, TypeBlob, data)
	}
	if sizeless == 0 {
		t.Fatal("no delta was stored as a zstd frame without a declared size: the case is not exercised")
	}
}
