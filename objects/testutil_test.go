package objects

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/storage/fsstore"
)

// Helpers shared by the tests of this package. Their names end in ForTest so
// they do not collide with helpers other test files may define.

// openStoreForTest opens a store in a fresh temporary directory.
func openStoreForTest(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// reopenForTest opens a second, independent Store on dir: it sees only what
// is on disk.
func reopenForTest(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawRecordForTest is one record of a hand-built pack. The index entry says
// id/typ/enc/size; the record holds stored verbatim, whatever it decodes to.
type rawRecordForTest struct {
	id     ID
	typ    Type
	enc    byte
	size   uint32
	stored []byte
}

// goodRecordForTest is the record Writer.Put would write for data.
func goodRecordForTest(t Type, data []byte) rawRecordForTest {
	stored, enc := compress(data, false)
	return rawRecordForTest{id: Hash(t, data), typ: t, enc: enc, size: uint32(len(data)), stored: stored}
}

// buildPackForTest lays out a complete pack file (header, records, index,
// footer) exactly as Writer.Commit does, but from arbitrary records.
func buildPackForTest(recs []rawRecordForTest) []byte {
	b := packHeader()
	entries := make([]indexEntry, 0, len(recs))
	for _, r := range recs {
		e := indexEntry{id: r.id, typ: r.typ, enc: r.enc, offset: uint64(len(b)), stored: uint32(len(r.stored)), size: r.size}
		b = append(b, recordHeaderBytes(e)...)
		b = append(b, r.stored...)
		entries = append(entries, e)
	}
	index, footer := encodeIndex(entries, uint64(len(b)))
	b = append(b, index...)
	return append(b, footer...)
}

// installPackForTest writes pack into dir/packs under the name Commit would
// give it (or a fixed name if the footer is unusable) and returns its path.
func installPackForTest(t testing.TB, dir string, pack []byte) string {
	t.Helper()
	name := "test.pack"
	if len(pack) >= packFooterSize {
		name = hex.EncodeToString(pack[len(pack)-packFooterSize+12:len(pack)-8]) + packFileSuffix
	}
	p := filepath.Join(dir, PacksDir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, pack, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// onlyPackForTest returns the path of the single pack in dir.
func onlyPackForTest(t testing.TB, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, PacksDir, "*"+packFileSuffix))
	if err != nil || len(m) != 1 {
		t.Fatalf("want exactly one pack, got %v (%v)", m, err)
	}
	return m[0]
}

// sampleObjectsForTest returns a small set of objects of every type, with
// both raw and zstd-compressed records: type and canonical encoding by id.
func sampleObjectsForTest() (map[ID]Type, map[ID][]byte) {
	types, datas := map[ID]Type{}, map[ID][]byte{}
	add := func(t Type, data []byte) ID {
		id := Hash(t, data)
		types[id], datas[id] = t, data
		return id
	}
	small := add(TypeBlob, []byte("hello\n"))                                                  // raw
	big := add(TypeBlob, []byte(repeatForTest("snap checkpoints are content-addressed ", 12))) // zstd
	add(TypeBlob, nil)                                                                         // empty
	cl := ChunkList{Entries: []ChunkRef{{small, 6}, {big, uint64(len(datas[big]))}}}
	add(TypeChunkList, cl.Encode())
	tr := Tree{Entries: []TreeEntry{
		{Name: "README.md", Mode: ModeFile, ID: small, Size: 6},
		{Name: "run.sh", Mode: ModeExec, ID: big, Size: int64(len(datas[big]))},
	}}
	tid := add(TypeTree, tr.Encode())
	cp := Checkpoint{Tree: tid, State: tid, Session: "s1", Kind: "manual", Time: 1700000000000000000}
	add(TypeCheckpoint, cp.Encode())
	return types, datas
}

func repeatForTest(s string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += s
	}
	return out
}

// isCorruptOrNotFound reports whether err is one of the two errors a read of
// damaged storage may give.
func isCorruptOrNotFound(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound)
}

// loadPackPath loads the pack file at path (loadPack names a blob of a
// storage.Blobs; tests name files).
func loadPackPath(vfs fsys.FS, path string, strict bool) (*packFile, error) {
	blobs, err := fsstore.NewBlobs(vfs, filepath.Dir(path), filepath.Dir(path), packTempPrefix)
	if err != nil {
		return nil, err
	}
	return loadPack(blobs, filepath.Base(path), strict, false)
}
