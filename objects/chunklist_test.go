package objects

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestDecodeChunkListRoundTrip(t *testing.T) {
	id1, id2 := Hash(TypeBlob, []byte("1")), Hash(TypeBlob, []byte("2"))
	many := make([]ChunkRef, MaxChunkListEntries)
	for i := range many {
		many[i] = ChunkRef{Hash(TypeBlob, []byte{byte(i), byte(i >> 8)}), uint64(i + 1)}
	}
	cases := []struct {
		name string
		l    ChunkList
	}{
		{"one entry", ChunkList{Entries: []ChunkRef{{id1, 1}}}},
		{"two entries", ChunkList{Entries: []ChunkRef{{id1, 16 << 10}, {id2, 5}}}},
		{"max level", ChunkList{Level: MaxChunkListLevel, Entries: []ChunkRef{{id1, 1 << 40}}}},
		{"max entries", ChunkList{Level: 1, Entries: many}},
		{"max total", ChunkList{Entries: []ChunkRef{{id1, 1<<62 - 1}, {id2, 1}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := DecodeChunkList(c.l.Encode())
			if err != nil {
				t.Fatal(err)
			}
			if l.Level != c.l.Level || len(l.Entries) != len(c.l.Entries) || l.Size() != c.l.Size() {
				t.Fatalf("got level %d, %d entries, size %d", l.Level, len(l.Entries), l.Size())
			}
			for i := range l.Entries {
				if l.Entries[i] != c.l.Entries[i] {
					t.Fatalf("entry %d differs", i)
				}
			}
		})
	}
}

func TestDecodeChunkListRefuses(t *testing.T) {
	id1, id2 := Hash(TypeBlob, []byte("1")), Hash(TypeBlob, []byte("2"))
	good := (&ChunkList{Entries: []ChunkRef{{id1, 100}, {id2, 200}}}).Encode()
	tooMany := make([]ChunkRef, MaxChunkListEntries+1)
	for i := range tooMany {
		tooMany[i] = ChunkRef{id1, 1}
	}
	one := (&ChunkList{Entries: []ChunkRef{{id1, 1}}}).Encode()
	nonCanonSize := append(append([]byte(nil), one[:len(one)-1]...), 0x81, 0x00)
	nonCanonCount := append([]byte{0, 0x81, 0x00}, one[2:]...)

	cases := []struct {
		name string
		data []byte
	}{
		{"empty input", []byte{}},
		{"level 9", (&ChunkList{Level: MaxChunkListLevel + 1, Entries: []ChunkRef{{id1, 1}}}).Encode()},
		{"level 255", (&ChunkList{Level: 255, Entries: []ChunkRef{{id1, 1}}}).Encode()},
		{"zero entries", (&ChunkList{}).Encode()},
		{"too many entries", (&ChunkList{Entries: tooMany}).Encode()},
		{"zero size first", (&ChunkList{Entries: []ChunkRef{{id1, 0}, {id2, 1}}}).Encode()},
		{"zero size last", (&ChunkList{Entries: []ChunkRef{{id1, 1}, {id2, 0}}}).Encode()},
		{"size above 2^62", (&ChunkList{Entries: []ChunkRef{{id1, 1<<62 + 1}}}).Encode()},
		{"total above 2^62", (&ChunkList{Entries: []ChunkRef{{id1, 1 << 62}, {id2, 1}}}).Encode()},
		{"total wraps uint64", (&ChunkList{Entries: []ChunkRef{{id1, 1 << 62}, {id2, 1 << 62}, {id1, 1 << 62}, {id2, 1 << 62}}}).Encode()},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"trailing entry", append(append([]byte(nil), good...), good[2:2+IDSize+2]...)},
		{"non-canonical size", nonCanonSize},
		{"non-canonical count", nonCanonCount},
		{"huge count", append([]byte{0}, binary.AppendUvarint(nil, 1<<40)...)},
	}
	for n := 0; n < len(good); n++ {
		cases = append(cases, struct {
			name string
			data []byte
		}{"truncated", good[:n]})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := DecodeChunkList(c.data)
			if err == nil {
				t.Fatalf("DecodeChunkList accepted %x: %+v", c.data, l)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

func TestSplitLists(t *testing.T) {
	var refs []ChunkRef
	for i := 0; i < 5000; i++ {
		refs = append(refs, ChunkRef{Hash(TypeBlob, []byte{byte(i), byte(i >> 8)}), 1})
	}
	// A run with no cut point at all must still be split at the limit.
	var nocut []ChunkRef
	for i := 0; len(nocut) < 3000; i++ {
		id := Hash(TypeBlob, []byte{byte(i), byte(i >> 8), 1})
		if id[IDSize-1]&fanoutMask != 0 {
			nocut = append(nocut, ChunkRef{id, 1})
		}
	}
	for _, in := range [][]ChunkRef{nil, refs[:1], refs, nocut} {
		groups := splitLists(in)
		var joined []ChunkRef
		for gi, g := range groups {
			if len(g) == 0 || len(g) > MaxChunkListEntries {
				t.Fatalf("group %d has %d entries", gi, len(g))
			}
			for i, r := range g {
				cut := r.ID[IDSize-1]&fanoutMask == 0
				if cut && i != len(g)-1 {
					t.Fatalf("group %d continues past a cut point", gi)
				}
				if !cut && i == len(g)-1 && gi != len(groups)-1 && len(g) != MaxChunkListEntries {
					t.Fatalf("group %d ends without a cut point", gi)
				}
			}
			joined = append(joined, g...)
		}
		if len(joined) != len(in) {
			t.Fatalf("groups hold %d refs, want %d", len(joined), len(in))
		}
		for i := range in {
			if joined[i] != in[i] {
				t.Fatalf("ref %d reordered", i)
			}
		}
	}
}

// chunksForTest puts two chunks (not yet committed) and returns the store,
// the writer, the chunk ids and their contents.
func chunksForTest(t *testing.T) (*Store, *Writer, ID, ID, []byte, []byte) {
	s, _ := openStoreForTest(t)
	w := s.NewWriter()
	c1, c2 := bytes.Repeat([]byte("one "), 25), []byte("two two two")
	id1, err := w.Put(TypeBlob, c1)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := w.Put(TypeBlob, c2)
	if err != nil {
		t.Fatal(err)
	}
	return s, w, id1, id2, c1, c2
}

func putListForTest(t *testing.T, w *Writer, level uint8, refs ...ChunkRef) ID {
	t.Helper()
	id, err := w.Put(TypeChunkList, (&ChunkList{Level: level, Entries: refs}).Encode())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestWriteBlobHandBuiltLists(t *testing.T) {
	s, w, id1, id2, c1, c2 := chunksForTest(t)
	n1, n2 := uint64(len(c1)), uint64(len(c2))
	want := append(append([]byte(nil), c1...), c2...)

	good0 := putListForTest(t, w, 0, ChunkRef{id1, n1}, ChunkRef{id2, n2})
	a0 := putListForTest(t, w, 0, ChunkRef{id1, n1})
	b0 := putListForTest(t, w, 0, ChunkRef{id2, n2})
	good1 := putListForTest(t, w, 1, ChunkRef{a0, n1}, ChunkRef{b0, n2})
	good2 := putListForTest(t, w, 2, ChunkRef{good1, n1 + n2})

	chunkTooLong := putListForTest(t, w, 0, ChunkRef{id1, n1}, ChunkRef{id2, n2 + 1})
	chunkTooShort := putListForTest(t, w, 0, ChunkRef{id1, n1 - 1}, ChunkRef{id2, n2})
	subTooLong := putListForTest(t, w, 1, ChunkRef{a0, n1}, ChunkRef{b0, n2 + 7})
	subTooShort := putListForTest(t, w, 1, ChunkRef{a0, n1 - 1}, ChunkRef{b0, n2})
	levelSkip := putListForTest(t, w, 2, ChunkRef{a0, n1})         // level 2 pointing at level 0
	levelSame := putListForTest(t, w, 1, ChunkRef{good1, n1 + n2}) // level 1 pointing at level 1
	listAsChunk := putListForTest(t, w, 0, ChunkRef{a0, n1})       // level 0 pointing at a list
	blobAsList := putListForTest(t, w, 1, ChunkRef{id1, n1})       // level 1 pointing at a blob
	missing := putListForTest(t, w, 0, ChunkRef{id1, n1}, ChunkRef{Hash(TypeBlob, []byte("gone")), 4})
	treeID, err := w.Put(TypeTree, (&Tree{}).Encode())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		id   ID
	}{{"level 0", good0}, {"level 1", good1}, {"level 2", good2}} {
		var out bytes.Buffer
		n, err := s.WriteBlob(c.id, &out)
		if err != nil || n != int64(len(want)) || !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: WriteBlob = %d, %v; content ok %v", c.name, n, err, bytes.Equal(out.Bytes(), want))
		}
		if got, err := s.ReadBlob(c.id, int64(len(want))); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: ReadBlob: %v", c.name, err)
		}
		if _, err := s.ReadBlob(c.id, int64(len(want))-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: ReadBlob over the limit: %v, want ErrTooLarge", c.name, err)
		}
	}

	for _, c := range []struct {
		name string
		id   ID
		want error
	}{
		{"chunk longer than recorded", chunkTooLong, ErrCorrupt},
		{"chunk shorter than recorded", chunkTooShort, ErrCorrupt},
		{"sub-list longer than recorded", subTooLong, ErrCorrupt},
		{"sub-list shorter than recorded", subTooShort, ErrCorrupt},
		{"level skipped", levelSkip, ErrCorrupt},
		{"same level", levelSame, ErrCorrupt},
		{"level 0 entry is a list", listAsChunk, ErrCorrupt},
		{"level 1 entry is a blob", blobAsList, ErrCorrupt},
		{"missing chunk", missing, ErrNotFound},
		{"a tree is not content", treeID, ErrCorrupt},
		{"unknown id", Hash(TypeBlob, []byte("nope")), ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.WriteBlob(c.id, io.Discard)
			if !errors.Is(err, c.want) {
				t.Fatalf("WriteBlob = %v, want %v", err, c.want)
			}
			if _, err := s.ReadBlob(c.id, 1<<20); !errors.Is(err, c.want) {
				t.Fatalf("ReadBlob = %v, want %v", err, c.want)
			}
		})
	}
}

// A chunked blob written by PutBytes reads back through every level, and a
// fresh store agrees.
func TestPutBytesChunkedReadsBack(t *testing.T) {
	s, dir := openStoreForTest(t)
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i*7 + i/4096)
	}
	w := s.NewWriter()
	id, err := w.PutBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if typ, _ := s.TypeOf(id); typ != TypeChunkList {
		t.Fatalf("type %v", typ)
	}
	got, err := reopenForTest(t, dir).ReadBlob(id, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadBlob: %v", err)
	}
}
