package objects

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestWriteFuzzSeeds regenerates the checked-in seed corpora under
// testdata/fuzz/ from objects encoded by this package, valid and near-valid.
// It only runs when SNAP_WRITE_FUZZ_SEEDS=1; files named seed-* are
// rewritten, inputs found by the fuzzer (hash names) are kept.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("SNAP_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set SNAP_WRITE_FUZZ_SEEDS=1 to regenerate testdata/fuzz seeds")
	}
	w := newSeedWriterForTest(t)

	id1, id2, id3 := Hash(TypeBlob, []byte("a")), Hash(TypeBlob, []byte("b")), Hash(TypeTree, nil)

	// Trees.
	full := Tree{Entries: []TreeEntry{
		{Name: " lead space", Mode: ModeFile, ID: id1, Size: 0},
		{Name: ".gitignore", Mode: ModeFile, ID: id1, Size: 12},
		{Name: "bin", Mode: ModeDir, ID: id3, Size: 1 << 40},
		{Name: "link", Mode: ModeSymlink, ID: id2, Size: 7},
		{Name: "run.sh", Mode: ModeExec, ID: id2, Size: 300},
		{Name: "résumé – ünïcødé.txt", Mode: ModeFile, ID: id1, Size: 1 << 62},
	}}
	one := Tree{Entries: []TreeEntry{{Name: "a", Mode: ModeFile, ID: id1, Size: 1}}}
	two := Tree{Entries: []TreeEntry{{Name: "a", Mode: ModeFile, ID: id1, Size: 1}, {Name: "b", Mode: ModeDir, ID: id3, Size: 200}}}
	w.seed("FuzzDecodeTree", "empty", (&Tree{}).Encode())
	w.seed("FuzzDecodeTree", "one", one.Encode())
	w.seed("FuzzDecodeTree", "two", two.Encode())
	w.seed("FuzzDecodeTree", "full", full.Encode())
	swapped := Tree{Entries: []TreeEntry{two.Entries[1], two.Entries[0]}}
	w.seed("FuzzDecodeTree", "unsorted", swapped.Encode())
	dup := Tree{Entries: []TreeEntry{one.Entries[0], one.Entries[0]}}
	w.seed("FuzzDecodeTree", "duplicate", dup.Encode())
	for _, m := range []Mode{0, 5, 255} {
		bad := Tree{Entries: []TreeEntry{{Name: "a", Mode: m, ID: id1, Size: 1}}}
		w.seed("FuzzDecodeTree", fmt.Sprintf("mode-%d", m), bad.Encode())
	}
	for i, n := range []string{".git", ".GIT ", "a/b", "..", "x\x00y", ".g\u200cit", "GIT~1", ".snap::$DATA"} {
		bad := Tree{Entries: []TreeEntry{{Name: n, Mode: ModeFile, ID: id1, Size: 1}}}
		w.seed("FuzzDecodeTree", fmt.Sprintf("badname-%d", i), bad.Encode())
	}
	w.seed("FuzzDecodeTree", "trailing", append(two.Encode(), 0))
	w.seed("FuzzDecodeTree", "truncated", two.Encode()[:len(two.Encode())-1])
	w.seed("FuzzDecodeTree", "noncanonical-count", append([]byte{0x81, 0x00}, one.Encode()[1:]...))
	nc := one.Encode()
	w.seed("FuzzDecodeTree", "noncanonical-size", append(nc[:len(nc)-1], 0x81, 0x00))
	w.seed("FuzzDecodeTree", "huge-count", []byte{0xff, 0xff, 0xff, 0xff, 0x0f})

	// Chunk lists.
	l0 := ChunkList{Level: 0, Entries: []ChunkRef{{id1, 16 << 10}}}
	l1 := ChunkList{Level: 1, Entries: []ChunkRef{{id1, 100}, {id2, 1 << 30}, {id3, 7}}}
	l8 := ChunkList{Level: 8, Entries: []ChunkRef{{id1, 1 << 62}}}
	w.seed("FuzzDecodeChunkList", "level0", l0.Encode())
	w.seed("FuzzDecodeChunkList", "level1", l1.Encode())
	w.seed("FuzzDecodeChunkList", "level8", l8.Encode())
	w.seed("FuzzDecodeChunkList", "level9", (&ChunkList{Level: 9, Entries: l0.Entries}).Encode())
	w.seed("FuzzDecodeChunkList", "empty", (&ChunkList{Level: 0}).Encode())
	w.seed("FuzzDecodeChunkList", "zero-size", (&ChunkList{Entries: []ChunkRef{{id1, 0}}}).Encode())
	w.seed("FuzzDecodeChunkList", "overflow", (&ChunkList{Entries: []ChunkRef{{id1, 1 << 62}, {id2, 1}}}).Encode())
	w.seed("FuzzDecodeChunkList", "trailing", append(l1.Encode(), 1))
	w.seed("FuzzDecodeChunkList", "truncated", l1.Encode()[:40])
	ncl := l0.Encode()
	w.seed("FuzzDecodeChunkList", "noncanonical-count", append([]byte{0, 0x81, 0x00}, ncl[2:]...))

	// Checkpoints.
	cpFull := Checkpoint{
		Tree: id3, State: id3, Parents: []ID{id1, id2},
		StateSources: map[string]string{"conversation": "/home/u/.claude/x.jsonl", "tasks": "tasks.json"},
		Session:      "sess-1", MessageID: "msg_01", Kind: "post-tool", Summary: "edit <main.go> & run",
		Labels: []string{"good", "v1"}, Time: 1700000000123456789,
		Stats: Stats{Files: 3, Bytes: 1234, Added: 1, Modified: 1, Deleted: 1, NewBytes: 99, Messages: -1},
	}
	cpMin := Checkpoint{Tree: id3, State: id2, Session: "s", Kind: "manual"}
	w.seed("FuzzDecodeCheckpoint", "full", cpFull.Encode())
	w.seed("FuzzDecodeCheckpoint", "minimal", cpMin.Encode())
	minEnc := string(cpMin.Encode())
	w.seed("FuzzDecodeCheckpoint", "whitespace", []byte(" "+minEnc))
	w.seed("FuzzDecodeCheckpoint", "trailing", []byte(minEnc+"{}"))
	w.seed("FuzzDecodeCheckpoint", "no-session", []byte(strings.Replace(minEnc, `"session":"s"`, `"session":""`, 1)))
	w.seed("FuzzDecodeCheckpoint", "unknown-field", []byte(strings.Replace(minEnc, `{`, `{"x":1,`, 1)))
	w.seed("FuzzDecodeCheckpoint", "upper-id", []byte(strings.Replace(minEnc, id3.String(), strings.ToUpper(id3.String()), 1)))
	w.seed("FuzzDecodeCheckpoint", "parents-null", []byte(strings.Replace(minEnc, `"parents":[]`, `"parents":null`, 1)))
	w.seed("FuzzDecodeCheckpoint", "short-id", []byte(strings.Replace(minEnc, id3.String(), id3.Short(), 1)))

	// Packs.
	types, datas := sampleObjectsForTest()
	var recs []rawRecordForTest
	for id, typ := range types {
		recs = append(recs, goodRecordForTest(typ, datas[id]))
	}
	sortRecordsForTest(recs)
	sample := buildPackForTest(recs)
	single := buildPackForTest([]rawRecordForTest{goodRecordForTest(TypeBlob, []byte("x"))})
	empty := buildPackForTest(nil)

	packParts := func(p []byte) (index, footer []byte, dataEnd uint64) {
		footer = p[len(p)-packFooterSize:]
		dataEnd = binary.LittleEndian.Uint64(footer)
		return p[dataEnd : len(p)-packFooterSize], footer, dataEnd
	}
	for name, p := range map[string][]byte{"sample": sample, "single": single, "empty": empty} {
		idx, ft, end := packParts(p)
		w.seed("FuzzDecodePackIndex", name, idx, ft, end, int64(len(p)))
		w.seed("FuzzReadPack", name, p, false)
		w.seed("FuzzReadPack", name+"-fixsum", p, true)
	}
	{
		idx, ft, end := packParts(sample)
		w.seed("FuzzDecodePackIndex", "size-off-by-one", idx, ft, end, int64(len(sample))+1)
		badMagic := append(append([]byte(nil), ft[:packFooterSize-1]...), '2')
		w.seed("FuzzDecodePackIndex", "bad-magic", idx, badMagic, end, int64(len(sample)))
		badType := append([]byte(nil), idx...)
		badType[32] = 9
		w.seed("FuzzDecodePackIndex", "bad-type", badType, ft, end, int64(len(sample)))
		swapped := append(append([]byte(nil), idx[indexEntrySize:2*indexEntrySize]...), idx[:indexEntrySize]...)
		swapped = append(swapped, idx[2*indexEntrySize:]...)
		w.seed("FuzzDecodePackIndex", "unsorted", swapped, ft, end, int64(len(sample)))
		overlap := append([]byte(nil), idx...)
		copy(overlap[indexEntrySize+34:], overlap[34:42]) // second entry at the first one's offset
		w.seed("FuzzDecodePackIndex", "overlap", overlap, ft, end, int64(len(sample)))
		w.seed("FuzzDecodePackIndex", "data-end-short", idx, ft, end-1, int64(len(sample)))
		w.seed("FuzzDecodePackIndex", "ragged", idx[:len(idx)-1], ft, end, int64(len(sample)))
	}
	{
		flipped := append([]byte(nil), sample...)
		flipped[packHeaderSize+recordHeader] ^= 0x20
		w.seed("FuzzReadPack", "flipped-record", flipped, false)
		w.seed("FuzzReadPack", "truncated", sample[:len(sample)-1], false)
		w.seed("FuzzReadPack", "garbage-appended", append(append([]byte(nil), sample...), "junk"...), false)
		forged := buildPackForTest([]rawRecordForTest{{id: Hash(TypeBlob, []byte("good")), typ: TypeBlob, enc: encRaw, size: 4, stored: []byte("evil")}})
		w.seed("FuzzReadPack", "forged", forged, false)
		var zbuf bytes.Buffer
		zw, _ := zstd.NewWriter(&zbuf)
		zw.Write(bytes.Repeat([]byte("a"), 4096))
		zw.Close()
		bomb := buildPackForTest([]rawRecordForTest{{id: Hash(TypeBlob, []byte("aaaa")), typ: TypeBlob, enc: encZstd, size: 4, stored: zbuf.Bytes()}})
		w.seed("FuzzReadPack", "zstd-no-fcs-bomb", bomb, false)
		// A record header that disagrees with its index entry.
		hdr := append([]byte(nil), single...)
		hdr[packHeaderSize+2]++
		w.seed("FuzzReadPack", "header-mismatch", hdr, true)
	}
	{
		// Delta records (encDelta): a tree and a blob on bases in the same
		// pack, then damaged variants.
		tb, tn := deltaTreeForTest(8, nil), deltaTreeForTest(8, map[int]int{3: 1})
		bb := []byte(repeatForTest("a line of a source file that an agent edits\n", 6))
		bn := append(append([]byte(nil), bb...), "one more line\n"...)
		td := deltaRecordForTest(TypeTree, tn, Hash(TypeTree, tb), tb, 1, nil)
		bd := deltaRecordForTest(TypeBlob, bn, Hash(TypeBlob, bb), bb, 1, nil)
		good := []rawRecordForTest{goodRecordForTest(TypeTree, tb), td, goodRecordForTest(TypeBlob, bb), bd}
		sortRecordsForTest(good)
		deltaPack := buildPackForTest(good)
		idx, ft, end := packParts(deltaPack)
		w.seed("FuzzDecodePackIndex", "delta", idx, ft, end, int64(len(deltaPack)))
		w.seed("FuzzReadPack", "delta", deltaPack, false)
		w.seed("FuzzReadPack", "delta-missing-base", buildPackForTest([]rawRecordForTest{td}), false)
		x, y := []byte("object x: "+repeatForTest("x", 100)), []byte("object y: "+repeatForTest("x", 100))
		cycle := []rawRecordForTest{deltaRecordForTest(TypeBlob, x, Hash(TypeBlob, y), y, 2, nil), deltaRecordForTest(TypeBlob, y, Hash(TypeBlob, x), x, 1, nil)}
		sortRecordsForTest(cycle)
		w.seed("FuzzReadPack", "delta-cycle", buildPackForTest(cycle), false)
		wrongType := []rawRecordForTest{goodRecordForTest(TypeBlob, tb), td}
		wrongType[0].id = Hash(TypeTree, tb) // the base indexed as a blob
		sortRecordsForTest(wrongType)
		w.seed("FuzzReadPack", "delta-base-wrong-type", buildPackForTest(wrongType), true)
		huge := bd
		huge.stored = append(append([]byte(nil), bd.stored[:deltaHeaderSize]...), leb128ForTest(uint64(len(bb)))...)
		huge.stored = append(huge.stored, leb128ForTest(60<<20)...)
		huge.stored = append(huge.stored, bd.stored[deltaHeaderSize+len(leb128ForTest(uint64(len(bb))))+len(leb128ForTest(uint64(len(bn)))):]...)
		w.seed("FuzzReadPack", "delta-huge-target", buildPackForTest([]rawRecordForTest{goodRecordForTest(TypeBlob, bb), huge}), false)
	}
	t.Logf("wrote %d seed files", w.n)
}

type seedWriterForTest struct {
	t    *testing.T
	n    int
	done map[string]bool
}

func newSeedWriterForTest(t *testing.T) *seedWriterForTest {
	return &seedWriterForTest{t: t, done: map[string]bool{}}
}

// seed writes one input in the "go test fuzz v1" format.
func (w *seedWriterForTest) seed(fuzzName, name string, args ...any) {
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	if !w.done[dir] {
		old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		for _, f := range old {
			os.Remove(f)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			w.t.Fatal(err)
		}
		w.done[dir] = true
	}
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", v)
		case uint64:
			fmt.Fprintf(&b, "uint64(%d)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		default:
			w.t.Fatalf("seed %s/%s: unsupported argument type %T", fuzzName, name, a)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(b.String()), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.n++
}

// sortRecordsForTest orders records by id so that generated packs are
// deterministic.
func sortRecordsForTest(recs []rawRecordForTest) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && bytes.Compare(recs[j-1].id[:], recs[j].id[:]) > 0; j-- {
			recs[j-1], recs[j] = recs[j], recs[j-1]
		}
	}
}
