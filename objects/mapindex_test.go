package objects

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A large pack index is mapped from the file, not read (a process looks up
// a few ids); lookups keep working after the pack file is deleted (another
// process's gc) and after the packFiles of earlier stores are collected
// (their cleanups unmap only their own mappings).
func TestLargePackIndexIsMapped(t *testing.T) {
	s, dir := openStoreForTest(t)
	n := mapIndexMin/indexEntrySize + 100
	ids, name := putBlobsForTest(t, s, n)
	for round := 0; round < 3; round++ {
		r := reopenForTest(t, dir)
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Skip("no /proc/self/maps:", err)
		}
		if round == 0 && !strings.Contains(string(maps), name) {
			t.Fatalf("the index of pack %s (%d entries) is not mapped", name, n)
		}
		for _, id := range ids {
			if !r.Has(id) {
				t.Fatalf("round %d: %s not found", round, id.Short())
			}
		}
		if _, data, err := r.Read(ids[n/2]); err != nil || binary.LittleEndian.Uint64(data) != uint64(n/2) {
			t.Fatalf("round %d: read %v, %v", round, data, err)
		}
		r.Close()
		runtime.GC() // the previous rounds' packFiles are unreachable: unmapped
	}
	r := reopenForTest(t, dir)
	if err := os.Remove(filepath.Join(dir, PacksDir, name)); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if !r.Has(ids[7]) {
		t.Fatal("the mapped index of a deleted pack file no longer answers")
	}
}

// Past fanAfter searches an index is searched through its fanout: every
// stored id is still found, and no absent one is.
func TestFindThroughFanout(t *testing.T) {
	s, dir := openStoreForTest(t)
	ids, _ := putBlobsForTest(t, s, 3000)
	r := reopenForTest(t, dir)
	for round := range 3 {
		for _, id := range ids {
			if !r.Has(id) {
				t.Fatalf("round %d: %s not found", round, id.Short())
			}
		}
	}
	p := r.packOrder()[0]
	if p.fan.Load() == nil {
		t.Fatalf("no fanout after %d searches", p.searches.Load())
	}
	for i := range 500 {
		if id := Hash(TypeBlob, []byte{byte(i), 'x', 'y'}); r.Has(id) {
			t.Fatalf("absent %s found", id.Short())
		}
	}
}

// After ReadIndexes (a server, a daemon) no index is mapped: a pack
// truncated in place under the process fails its reads, and lookups, which
// would fault on a mapped index, still answer.
func TestReadIndexesUnmapsForLongRunningProcesses(t *testing.T) {
	s, dir := openStoreForTest(t)
	ids, name := putBlobsForTest(t, s, mapIndexMin/indexEntrySize+100)
	r := reopenForTest(t, dir)
	if p := r.packs[name]; p == nil || !p.mapped {
		t.Fatal("the index was not mapped to begin with (the test's premise)")
	}
	r.ReadIndexes()
	if p := r.packs[name]; p == nil || p.mapped {
		t.Fatal("ReadIndexes left the index mapped")
	}
	path := filepath.Join(dir, PacksDir, name)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !r.Has(id) {
			t.Fatalf("%s not found after the truncation", id.Short())
		}
	}
	if _, _, err := r.Read(ids[len(ids)-1]); err == nil {
		t.Log("(the last object's record survived the truncation)")
	}
	r.Reload() // a new pack would be read, not mapped
	if p := r.packs[name]; p != nil && p.mapped {
		t.Fatal("a reload mapped the index again")
	}
}

// putBlobsForTest stores n small blobs (the numbers 0..n-1) in one pack of
// s and returns their ids and the pack's name.
func putBlobsForTest(t testing.TB, s *Store, n int) ([]ID, string) {
	t.Helper()
	w := s.NewWriter()
	ids := make([]ID, n)
	for i := range ids {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		id, err := w.Put(TypeBlob, b[:])
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	name, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return ids, name
}
