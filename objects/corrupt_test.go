package objects

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"

	"github.com/snapcore-dev/snap/fsys"
)

var samplePack struct {
	once  sync.Once
	name  string
	bytes []byte
	err   error
}

// commitSampleForTest returns a fresh store directory holding one pack with
// the sample objects, its path and bytes, and the objects. The pack is made
// by Writer.Commit once per test binary (Commit fsyncs, which is slow on a
// busy disk); every caller gets its own copy in its own directory.
func commitSampleForTest(t *testing.T) (dir, path string, pack []byte, types map[ID]Type, datas map[ID][]byte) {
	t.Helper()
	types, datas = sampleObjectsForTest()
	samplePack.once.Do(func() {
		d, err := os.MkdirTemp("", "snap-sample-pack-")
		if err != nil {
			samplePack.err = err
			return
		}
		defer os.RemoveAll(d)
		s, err := Open(d)
		if err != nil {
			samplePack.err = err
			return
		}
		defer s.Close()
		w := s.NewWriter()
		for id, typ := range types {
			if got, err := w.Put(typ, datas[id]); err != nil || got != id {
				samplePack.err = fmt.Errorf("Put: %v", err)
				return
			}
		}
		if samplePack.name, samplePack.err = w.Commit(); samplePack.err != nil {
			return
		}
		samplePack.bytes, samplePack.err = os.ReadFile(filepath.Join(d, PacksDir, samplePack.name))
	})
	if samplePack.err != nil {
		t.Fatal(samplePack.err)
	}
	_, dir = openStoreForTest(t)
	pack = append([]byte(nil), samplePack.bytes...)
	path = filepath.Join(dir, PacksDir, samplePack.name)
	if err := os.WriteFile(path, pack, 0o644); err != nil {
		t.Fatal(err)
	}
	var raw, z int
	pf, err := loadPackPath(fsys.OS, path, true)
	if err != nil {
		t.Fatal(err)
	}
	entries := pf.entries()
	for _, e := range entries {
		if e.enc == encRaw {
			raw++
		} else {
			z++
		}
	}
	if raw == 0 || z == 0 || len(entries) != len(types) {
		t.Fatalf("sample pack should hold all %d objects, raw and zstd records: %d raw, %d zstd", len(types), raw, z)
	}
	return dir, path, pack, types, datas
}

// readAllForTest reads every object and checks it is either exactly right or
// refused with ErrCorrupt / ErrNotFound. It returns the errors by id.
func readAllForTest(t *testing.T, s *Store, types map[ID]Type, datas map[ID][]byte, what string) map[ID]error {
	t.Helper()
	errs := map[ID]error{}
	for id, want := range datas {
		typ, data, err := s.Read(id)
		if err != nil {
			if !isCorruptOrNotFound(err) {
				t.Fatalf("%s: Read %s: %v, want ErrCorrupt or ErrNotFound", what, id.Short(), err)
			}
			if data != nil {
				t.Fatalf("%s: Read %s returned bytes with an error", what, id.Short())
			}
			errs[id] = err
			continue
		}
		if typ != types[id] || !bytes.Equal(data, want) {
			t.Fatalf("%s: Read %s returned WRONG content (type %v)", what, id.Short(), typ)
		}
	}
	return errs
}

// recordAtForTest returns the index entry whose record (header and data)
// contains byte off of the pack, if any.
func recordAtForTest(entries []indexEntry, off uint64) (indexEntry, bool) {
	for _, e := range entries {
		if off >= e.offset && off < e.offset+recordHeader+uint64(e.stored) {
			return e, true
		}
	}
	return indexEntry{}, false
}

// Flip every byte of a committed pack in turn. A fresh store must either
// refuse the whole pack (header, index, footer damage: ErrNotFound) or
// refuse exactly the damaged record (ErrCorrupt); a store that had already
// indexed the pack must never return wrong bytes either.
func TestCorruptPackByteFlips(t *testing.T) {
	dir, path, pack, types, datas := commitSampleForTest(t)
	pf, err := loadPackPath(fsys.OS, path, true)
	if err != nil {
		t.Fatal(err)
	}
	entries := pf.entries()
	dataEnd := binary.LittleEndian.Uint64(pack[len(pack)-packFooterSize:])
	cached := reopenForTest(t, dir)
	readAllForTest(t, cached, types, datas, "before") // opens the pack file

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range pack {
		if i > 0 { // restore the previous byte
			if _, err := f.WriteAt(pack[i-1:i], int64(i-1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.WriteAt([]byte{pack[i] ^ 0x5a}, int64(i)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		errs := readAllForTest(t, s, types, datas, "fresh store")
		if uint64(i) < packHeaderSize || uint64(i) >= dataEnd {
			// Header, index or footer: opening checks only the structure
			// of the index, so some reads may still succeed (never with
			// wrong bytes, readAllForTest checks); once the indexes are
			// checked in full (as gc and fsck do), the pack cannot be
			// indexed at all.
			if err := s.CheckIndexes(); err != nil {
				t.Fatal(err)
			}
			errs = readAllForTest(t, s, types, datas, "after CheckIndexes")
			s.Close()
			for id := range datas {
				if !errors.Is(errs[id], ErrNotFound) {
					t.Fatalf("byte %d (outside records) flipped: %s: %v, want ErrNotFound", i, id.Short(), errs[id])
				}
			}
		} else {
			s.Close()
			e, ok := recordAtForTest(entries, uint64(i))
			if !ok {
				t.Fatalf("byte %d is in no record", i)
			}
			for id := range datas {
				switch {
				case id == e.id && (e.enc == encRaw || uint64(i) < e.offset+recordHeader):
					// Raw data and record headers have no slack: refused.
					if !errors.Is(errs[id], ErrCorrupt) {
						t.Fatalf("byte %d of record %s flipped: %v, want ErrCorrupt", i, id.Short(), errs[id])
					}
				case id != e.id && errs[id] != nil:
					t.Fatalf("byte %d of record %s flipped: unrelated object %s: %v", i, e.id.Short(), id.Short(), errs[id])
				}
			}
		}
		readAllForTest(t, cached, types, datas, "cached store")
	}
}

// Truncating a pack to any length makes it unindexable for a fresh store,
// and makes reads through a store that indexed it earlier fail cleanly.
func TestCorruptPackTruncated(t *testing.T) {
	dir, path, pack, types, datas := commitSampleForTest(t)
	cached := reopenForTest(t, dir)
	readAllForTest(t, cached, types, datas, "before")
	for n := len(pack) - 1; n >= 0; n-- {
		if err := os.Truncate(path, int64(n)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		errs := readAllForTest(t, s, types, datas, "fresh store")
		s.Close()
		for id := range datas {
			if !errors.Is(errs[id], ErrNotFound) {
				t.Fatalf("truncated to %d: %s: %v, want ErrNotFound", n, id.Short(), errs[id])
			}
		}
		errs = readAllForTest(t, cached, types, datas, "cached store")
		if n < packHeaderSize+recordHeader {
			for id := range datas {
				if !errors.Is(errs[id], ErrCorrupt) {
					t.Fatalf("truncated to %d: cached read of %s: %v, want ErrCorrupt", n, id.Short(), errs[id])
				}
			}
		}
	}
}

func TestCorruptPackGarbageAppended(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra func(pack []byte) []byte
	}{
		{"one byte", func([]byte) []byte { return []byte{0} }},
		{"text", func([]byte) []byte { return []byte("garbage after the footer\n") }},
		{"second footer", func(p []byte) []byte { return p[len(p)-packFooterSize:] }},
		{"whole pack again", func(p []byte) []byte { return p }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, path, pack, types, datas := commitSampleForTest(t)
			cached := reopenForTest(t, dir)
			readAllForTest(t, cached, types, datas, "before")
			if err := os.WriteFile(path, append(append([]byte(nil), pack...), c.extra(pack)...), 0o644); err != nil {
				t.Fatal(err)
			}
			errs := readAllForTest(t, reopenForTest(t, dir), types, datas, "fresh store")
			for id := range datas {
				if !errors.Is(errs[id], ErrNotFound) {
					t.Fatalf("%s: %v, want ErrNotFound", id.Short(), errs[id])
				}
			}
			// Records are untouched: a store that indexed the pack before
			// still reads them.
			if errs := readAllForTest(t, cached, types, datas, "cached store"); len(errs) != 0 {
				t.Fatalf("cached store: %v", errs)
			}
		})
	}
}

func TestCorruptPackFooter(t *testing.T) {
	setU64 := func(at int, v uint64) func([]byte) {
		return func(ft []byte) { binary.LittleEndian.PutUint64(ft[at:], v) }
	}
	addU32 := func(at int, d uint32) func([]byte) {
		return func(ft []byte) { binary.LittleEndian.PutUint32(ft[at:], binary.LittleEndian.Uint32(ft[at:])+d) }
	}
	for _, c := range []struct {
		name string
		edit func(footer []byte)
	}{
		{"offset zero", setU64(0, 0)},
		{"offset one less", func(ft []byte) { setU64(0, binary.LittleEndian.Uint64(ft)-1)(ft) }},
		{"offset one more", func(ft []byte) { setU64(0, binary.LittleEndian.Uint64(ft)+1)(ft) }},
		{"offset huge", setU64(0, 1<<63)},
		{"offset max", setU64(0, ^uint64(0))},
		{"count one more", addU32(8, 1)},
		{"count one less", addU32(8, ^uint32(0))},
		{"count max", func(ft []byte) { binary.LittleEndian.PutUint32(ft[8:], ^uint32(0)) }},
		{"checksum zeroed", func(ft []byte) { copy(ft[12:44], make([]byte, 32)) }},
		{"checksum bit", func(ft []byte) { ft[20] ^= 1 }},
		{"magic", func(ft []byte) { copy(ft[44:], "SNAPEND2") }},
		{"magic lowercase", func(ft []byte) { copy(ft[44:], "snapend1") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, path, pack, types, datas := commitSampleForTest(t)
			bad := append([]byte(nil), pack...)
			c.edit(bad[len(bad)-packFooterSize:])
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			s := reopenForTest(t, dir)
			readAllForTest(t, s, types, datas, "fresh store") // never wrong bytes
			if err := s.CheckIndexes(); err != nil {
				t.Fatal(err)
			}
			errs := readAllForTest(t, s, types, datas, "after CheckIndexes")
			for id := range datas {
				if !errors.Is(errs[id], ErrNotFound) {
					t.Fatalf("%s: %v, want ErrNotFound", id.Short(), errs[id])
				}
			}
			if _, bad := s.LoadErrors()[filepath.Base(path)]; !bad {
				t.Fatal("the damaged pack is not listed by LoadErrors")
			}
		})
	}
}

// A consistent pack whose index names an id that its record does not hash
// to: the read is refused, the forged bytes never returned.
func TestForgedRecordsRefused(t *testing.T) {
	good := []byte("the real content, long enough to be worth compressing: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	evil := []byte("the EVIL content, long enough to be worth compressing: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	if len(good) != len(evil) {
		t.Fatal("contents must have equal lengths")
	}
	zEvil := encoder().EncodeAll(evil, nil)
	tree := (&Tree{Entries: []TreeEntry{{Name: "a", Mode: ModeFile, ID: Hash(TypeBlob, good), Size: 1}}}).Encode()
	cases := []struct {
		name string
		rec  rawRecordForTest
	}{
		{"raw", rawRecordForTest{id: Hash(TypeBlob, good), typ: TypeBlob, enc: encRaw, size: uint32(len(evil)), stored: evil}},
		{"zstd", rawRecordForTest{id: Hash(TypeBlob, good), typ: TypeBlob, enc: encZstd, size: uint32(len(evil)), stored: zEvil}},
		{"type swapped", rawRecordForTest{id: Hash(TypeTree, tree), typ: TypeBlob, enc: encRaw, size: uint32(len(tree)), stored: tree}},
		{"raw declared as zstd", rawRecordForTest{id: Hash(TypeBlob, good), typ: TypeBlob, enc: encZstd, size: uint32(len(good)), stored: good}},
		{"zstd declared as raw", rawRecordForTest{id: Hash(TypeBlob, good), typ: TypeBlob, enc: encRaw, size: uint32(len(good)), stored: encoder().EncodeAll(good, nil)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dir := openStoreForTest(t)
			installPackForTest(t, dir, buildPackForTest([]rawRecordForTest{c.rec}))
			s := reopenForTest(t, dir)
			if !s.Has(c.rec.id) {
				t.Fatal("pack not indexed")
			}
			typ, data, err := s.Read(c.rec.id)
			if !errors.Is(err, ErrCorrupt) || data != nil {
				t.Fatalf("Read = %v, %q, %v; want ErrCorrupt", typ, data, err)
			}
			if _, err := s.ReadBlob(c.rec.id, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadBlob = %v, want ErrCorrupt", err)
			}
		})
	}
}

// Records whose zstd frame claims, or decodes to, more than the index says
// are refused with ErrCorrupt.
func TestDecompressionBombRefused(t *testing.T) {
	want := []byte("sixteen bytes!!\n")
	id := Hash(TypeBlob, want)
	streamed := func(parts ...[]byte) []byte { // frames without a content size
		var buf bytes.Buffer
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderCRC(false))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			zw.Write(p)
		}
		zw.Close()
		return buf.Bytes()
	}
	zeros := make([]byte, 8<<20)
	bigFCS := encoder().EncodeAll(zeros, nil) // declares 8 MiB
	var h zstd.Header
	if err := h.Decode(bigFCS); err != nil || !h.HasFCS || h.FrameContentSize != uint64(len(zeros)) {
		t.Fatalf("test frame: %v %+v", err, h)
	}
	// A frame whose header says 16 bytes, followed by a second frame of 8 MiB.
	twoFrames := append(encoder().EncodeAll(want, nil), bigFCS...)
	// A frame whose header lies: it says 16 bytes but holds 8 MiB.
	lying := append([]byte(nil), bigFCS...)
	{
		var lh zstd.Header
		if err := lh.Decode(lying); err != nil {
			t.Fatal(err)
		}
		fake := zstd.Header{SingleSegment: true, HasFCS: true, FrameContentSize: uint64(len(want))}
		hdr, _ := fake.AppendTo(nil)
		lying = append(hdr, lying[lh.HeaderSize:]...)
		var check zstd.Header
		if err := check.Decode(lying); err != nil || !check.HasFCS || check.FrameContentSize != uint64(len(want)) {
			t.Fatalf("lying frame header: %v %+v", err, check)
		}
	}

	cases := []struct {
		name   string
		stored []byte
	}{
		{"header claims 8 MiB", bigFCS},
		{"no content size, decodes to 8 MiB", streamed(zeros)},
		{"no content size, decodes past MaxObjectSize", rleFrameForTest(MaxObjectSize + 1<<20)},
		{"second frame of 8 MiB", twoFrames},
		{"header lies about its size", lying},
		{"right content then a skippable frame", append(encoder().EncodeAll(want, nil), 0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4)},
		{"empty frame", encoder().EncodeAll(nil, nil)},
		{"not zstd", []byte("definitely not a zstd frame")},
		{"no bytes", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dir := openStoreForTest(t)
			installPackForTest(t, dir, buildPackForTest([]rawRecordForTest{{id: id, typ: TypeBlob, enc: encZstd, size: uint32(len(want)), stored: c.stored}}))
			s := reopenForTest(t, dir)
			if !s.Has(id) {
				t.Fatal("pack not indexed")
			}
			_, data, err := s.Read(id)
			if err == nil && bytes.Equal(data, want) {
				return // a harmless trailer the decoder skips is fine
			}
			if !errors.Is(err, ErrCorrupt) || data != nil {
				t.Fatalf("Read = %d bytes, %v; want ErrCorrupt", len(data), err)
			}
		})
	}

	// An index entry claiming more than MaxObjectSize makes the pack
	// unindexable.
	_, dir := openStoreForTest(t)
	installPackForTest(t, dir, buildPackForTest([]rawRecordForTest{{id: id, typ: TypeBlob, enc: encZstd, size: MaxObjectSize + 1, stored: bigFCS}}))
	if _, _, err := reopenForTest(t, dir).Read(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oversized index entry: %v, want ErrNotFound", err)
	}
	if _, err := decompress(bigFCS, encZstd, MaxObjectSize+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("decompress over MaxObjectSize: %v", err)
	}
	if _, err := decompress(want, 7, uint32(len(want))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decompress unknown encoding: %v", err)
	}
}

// A damaged pack does not hide the objects of the other packs.
func TestCorruptPackDoesNotHideOthers(t *testing.T) {
	dir, path, pack, types, datas := commitSampleForTest(t)
	s := reopenForTest(t, dir)
	w := s.NewWriter()
	other, err := w.Put(TypeBlob, []byte("in another pack"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), pack...)
	bad[len(bad)-1] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := reopenForTest(t, dir)
	if _, data, err := s2.Read(other); err != nil || string(data) != "in another pack" {
		t.Fatalf("object of the intact pack: %q, %v", data, err)
	}
	readAllForTest(t, s2, types, datas, "damaged pack")
	if st := s2.Stats(); st.Packs != 1 || st.Objects != 1 {
		t.Fatalf("stats %+v, want 1 pack, 1 object", st)
	}
}

// BUG: DecodePackIndex checks offset+recordHeader+stored > dataEnd in
// wrapping uint64 arithmetic, so an entry with an offset near 2^64 passes.
// Reading it then fails with os.File.ReadAt's "negative offset" instead of
// ErrCorrupt, after allocating recordHeader+stored bytes (up to 4 GiB for
// stored = 0xffffffff).
func TestPackIndexOffsetOverflowRefused(t *testing.T) {
	id := Hash(TypeBlob, nil)
	entries := []indexEntry{{id: id, typ: TypeBlob, enc: encRaw, offset: ^uint64(0) - recordHeader + 1, stored: 0, size: 0}}
	index, footer := encodeIndex(entries, packHeaderSize)
	if got, err := DecodePackIndex(index, footer[12:44], packHeaderSize); err == nil {
		t.Errorf("DecodePackIndex accepted a record at offset %d (wraps to %d): %+v",
			got[0].offset, got[0].offset+recordHeader+uint64(got[0].stored), got)
	}

	// End to end: the pack is a header followed by that index.
	pack := append(packHeader(), index...)
	pack = append(pack, footer...)
	_, dir := openStoreForTest(t)
	installPackForTest(t, dir, pack)
	s := reopenForTest(t, dir)
	if _, _, err := s.Read(id); !isCorruptOrNotFound(err) {
		t.Errorf("Read of a record at a wrapping offset: %v, want ErrCorrupt or ErrNotFound", err)
	}
}

// BUG: parseFooter checks offset+count*indexEntrySize+packFooterSize ==
// packSize in wrapping uint64 arithmetic, so a footer whose offset lies past
// the end of the file (near 2^64) is accepted. loadPack then fails with
// "negative offset" (not ErrCorrupt) when it reads the index.
func TestParseFooterOffsetOverflowRefused(t *testing.T) {
	var packSize int64 = 100
	var count uint32 = 10
	off := uint64(packSize) - uint64(count)*indexEntrySize - packFooterSize // wraps
	sum := blake3.Sum256(nil)
	footer := binary.LittleEndian.AppendUint64(nil, off)
	footer = binary.LittleEndian.AppendUint32(footer, count)
	footer = append(footer, sum[:]...)
	footer = append(footer, packEndMagic...)
	if o, n, _, err := parseFooter(footer, packSize); err == nil {
		t.Errorf("parseFooter accepted index offset %d with %d entries in a %d-byte pack", o, n, packSize)
	}
}

// BUG: Writer.Put does not check the object type. An object of an unknown
// type is written to the pack index, and every later Open refuses the whole
// pack (DecodePackIndex: "bad type"), so the valid objects committed with it
// vanish although Commit reported them durable.
func TestPutInvalidTypeDoesNotPoisonPack(t *testing.T) {
	s, dir := openStoreForTest(t)
	w := s.NewWriter()
	good, err := w.Put(TypeBlob, []byte("valid object"))
	if err != nil {
		t.Fatal(err)
	}
	_, errBad := w.Put(Type(0), []byte("object of no type"))
	_, errBad9 := w.Put(Type(9), []byte("object of type 9"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if errBad == nil || errBad9 == nil {
		t.Logf("Put accepted invalid types (errors %v, %v)", errBad, errBad9)
	}
	if _, data, err := reopenForTest(t, dir).Read(good); err != nil || string(data) != "valid object" {
		t.Fatalf("after committing a pack that also holds invalid types, a fresh store cannot read a valid object: %v", err)
	}
}

// rleFrameForTest hand-builds a zstd frame without a content size made of
// RLE blocks: n zero bytes from a few KiB of input.
func rleFrameForTest(n int) []byte {
	const block = 128 << 10
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3} // magic, no FCS, window 2^17
	for n > 0 {
		size := min(n, block)
		n -= size
		h := uint32(size)<<3 | 1<<1 // RLE block
		if n == 0 {
			h |= 1 // last block
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

func TestRLEFrameHelper(t *testing.T) {
	d, _ := zstd.NewReader(nil) // the store's decoder refuses frames larger than their record
	defer d.Close()
	out, err := d.DecodeAll(rleFrameForTest(300<<10+5), nil)
	if err != nil || len(out) != 300<<10+5 || bytes.Count(out, []byte{0}) != len(out) {
		t.Fatalf("rle frame: %d bytes, %v", len(out), err)
	}
}

// CheckIndexes vouches for the index lookups search, the one read when the
// store opened: when that differs from the index it verifies (read damaged,
// or changed on disk since), the pack is dropped as damaged.
func TestCheckIndexesComparesTheIndexInUse(t *testing.T) {
	dir, path, _, types, datas := commitSampleForTest(t)
	s := reopenForTest(t, dir)
	name := filepath.Base(path)
	s.mu.Lock()
	p := s.packs[name]
	bad := append([]byte(nil), p.index...)
	bad[IDSize] ^= 0x7f // the first entry's type, as if read damaged
	p.index = bad
	s.mu.Unlock()
	readAllForTest(t, s, types, datas, "before the check") // never wrong bytes
	if err := s.CheckIndexes(); err != nil {
		t.Fatal(err)
	}
	if _, dropped := s.LoadErrors()[name]; !dropped {
		t.Fatal("CheckIndexes vouched for a pack whose index in use is not the one on disk")
	}
}
