package objects

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// Tests of Writer.PutFileAppend: the same ids and the same stored bytes as
// PutBytesAppend (and as the in-memory implementation PutBytesAppend had
// before it shared PutFileAppend's code), with memory bounded whatever the
// size of the content.

// refPutBytesAppendForTest is PutBytesAppend as it was before it streamed:
// the reference PutFileAppend and PutBytesAppend are compared with. One
// change: putChunks appended to a slice sharing its array with the leaves
// pick offers, so after the first new chunk, pick offered that (pending,
// hence useless) chunk instead of base's last leaf; the full slice
// expression below keeps base's leaves, as PutFileAppend does.
func refPutBytesAppendForTest(w *Writer, data []byte, base ID) (ID, error) {
	if base.IsZero() {
		return w.PutBytes(data)
	}
	if len(data) <= SmallBlobMax {
		return w.PutDelta(TypeBlob, data, base)
	}
	prev, err := w.s.readContent(base)
	if err != nil {
		return w.PutBytes(data)
	}
	leaves := prev.leaves
	var off uint64
	for _, c := range leaves {
		if off+c.Size > uint64(len(data)) || Hash(TypeBlob, data[off:off+c.Size]) != c.ID {
			return w.PutBytes(data)
		}
		off += c.Size
	}
	bases := refAppendBasesForTest{old: data[:off], leaves: prev.leaves}
	if n := len(leaves); n > 0 {
		off -= leaves[n-1].Size
		leaves = leaves[: n-1 : n-1] // was leaves[:n-1]
	}
	refs, _, err := w.putChunks(bytes.NewReader(data[off:]), leaves, bases.pick)
	if err != nil {
		return ID{}, err
	}
	return w.putLists(refs, 0, prev.lists)
}

type refAppendBasesForTest struct {
	old    []byte
	leaves []ChunkRef
	starts []int
}

func (b *refAppendBasesForTest) pick(chunk []byte) []ID {
	n := len(b.leaves)
	if n == 0 {
		return nil
	}
	if len(chunk) < anchorLen {
		return []ID{b.leaves[n-1].ID}
	}
	if b.starts == nil {
		b.starts = make([]int, n)
		off := 0
		for i, c := range b.leaves {
			b.starts[i] = off
			off += int(c.Size)
		}
	}
	head, tail := chunk[:anchorLen], chunk[len(chunk)-anchorLen:]
	var out []ID
	for i := n - 1; i >= 0; i-- {
		if s := b.starts[i]; b.leaves[i].Size >= anchorLen && bytes.Equal(b.old[s:s+anchorLen], head) {
			out = append(out, b.leaves[i].ID)
			break
		}
	}
	for i := n - 1; i >= 0; i-- {
		if e := b.starts[i] + int(b.leaves[i].Size); b.leaves[i].Size >= anchorLen && bytes.Equal(b.old[e-anchorLen:e], tail) {
			if len(out) == 0 || out[0] != b.leaves[i].ID {
				out = append(out, b.leaves[i].ID)
			}
			break
		}
	}
	if len(out) == 0 {
		out = append(out, b.leaves[n-1].ID)
	}
	return out
}

// shortReadSeekerForTest returns at most max bytes per Read: PutFileAppend
// must not depend on how reads are split.
type shortReadSeekerForTest struct {
	r   *bytes.Reader
	max int
}

func (s *shortReadSeekerForTest) Read(p []byte) (int, error) {
	if len(p) > s.max {
		p = p[:s.max]
	}
	return s.r.Read(p)
}

func (s *shortReadSeekerForTest) Seek(off int64, whence int) (int64, error) {
	return s.r.Seek(off, whence)
}

// writtenForTest is what a writer has stored so far: its index entries and
// the bytes of its pack (records only; nothing is committed).
type writtenForTest struct {
	entries []indexEntry
	pack    []byte
}

func writtenByForTest(t *testing.T, w *Writer) writtenForTest {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := writtenForTest{entries: append([]indexEntry(nil), w.entries...)}
	if w.f != nil {
		if err := w.bw.Flush(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(w.f.(interface{ Name() string }).Name()) // the file-system store's temporary file
		if err != nil {
			t.Fatal(err)
		}
		out.pack = b
	}
	return out
}

func sameWrittenForTest(a, b writtenForTest) error {
	if len(a.entries) != len(b.entries) {
		return fmt.Errorf("%d objects stored, want %d", len(a.entries), len(b.entries))
	}
	for i := range a.entries {
		if a.entries[i] != b.entries[i] {
			return fmt.Errorf("object %d: stored %+v, want %+v", i, a.entries[i], b.entries[i])
		}
	}
	if !bytes.Equal(a.pack, b.pack) {
		return fmt.Errorf("pack bytes differ (%d and %d bytes)", len(a.pack), len(b.pack))
	}
	return nil
}

// appendAllWaysForTest stores data on base with the reference, with
// PutBytesAppend and with PutFileAppend (reading through a file, a reader
// that returns a few bytes per Read, and from a non-zero offset), each in a
// writer of its own; it checks that all give the same id and store the same
// records, commits the reference's writer and returns the id.
func appendAllWaysForTest(t *testing.T, s *Store, dir string, data []byte, base ID, what string) ID {
	t.Helper()
	ref := s.NewWriter()
	want, err := refPutBytesAppendForTest(ref, data, base)
	if err != nil {
		t.Fatalf("%s: reference: %v", what, err)
	}
	wantStored := writtenByForTest(t, ref)

	check := func(how string, put func(w *Writer) (ID, int64, error)) {
		t.Helper()
		w := s.NewWriter()
		defer w.Abort()
		id, n, err := put(w)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, how, err)
		}
		if id != want {
			t.Fatalf("%s: %s: id %s, want %s", what, how, id.Short(), want.Short())
		}
		if n != int64(len(data)) {
			t.Fatalf("%s: %s: length %d, want %d", what, how, n, len(data))
		}
		if err := sameWrittenForTest(writtenByForTest(t, w), wantStored); err != nil {
			t.Fatalf("%s: %s: %v", what, how, err)
		}
	}
	check("PutBytesAppend", func(w *Writer) (ID, int64, error) {
		id, err := w.PutBytesAppend(data, base)
		return id, int64(len(data)), err
	})
	name := filepath.Join(dir, "doc")
	junk := []byte("junk before the content")
	if err := os.WriteFile(name, append(append([]byte(nil), junk...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	check("PutFileAppend(file at offset)", func(w *Writer) (ID, int64, error) {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Seek(int64(len(junk)), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		return w.PutFileAppend(f, base)
	})
	check("PutFileAppend(short reads)", func(w *Writer) (ID, int64, error) {
		return w.PutFileAppend(&shortReadSeekerForTest{bytes.NewReader(data), 1000}, base)
	})
	if _, err := ref.Commit(); err != nil {
		t.Fatal(err)
	}
	mustReadBlobForTest(t, s, want, data)
	return want
}

func mustReadBlobForTest(t *testing.T, s *Store, id ID, data []byte) {
	t.Helper()
	got, err := s.ReadBlob(id, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadBlob(%s): %d bytes, %v; want %d bytes", id.Short(), len(got), err, len(data))
	}
}

// Many random documents and edits of every shape: appends of every size,
// appends that re-chunk a small last chunk, edits that are not appends,
// shrinks, the sizes around SmallBlobMax, the empty document, bases that
// are one blob, a chunk list, missing or not content at all.
func TestPutFileAppendMatchesPutBytesAppend(t *testing.T) {
	s, _ := openStoreForTest(t)
	tmp := t.TempDir()
	src := appendSourcesForTest(t)
	r := rand.New(rand.NewPCG(11, 11))

	// Fixed cases first.
	text := randomTextForTest(r, 400<<10)
	blob := appendAllWaysForTest(t, s, tmp, text[:40<<10], ID{}, "blob base")
	for _, n := range []int{0, 1, 40 << 10, 40<<10 + 100, SmallBlobMax - 1, SmallBlobMax, SmallBlobMax + 1, 200 << 10} {
		appendAllWaysForTest(t, s, tmp, text[:n], blob, fmt.Sprintf("%d bytes on a blob", n))
	}
	list := appendAllWaysForTest(t, s, tmp, text[:300<<10], ID{}, "chunk list base")
	for _, n := range []int{0, SmallBlobMax, SmallBlobMax + 1, 100 << 10, 300 << 10, 300<<10 + 1, 400 << 10} {
		appendAllWaysForTest(t, s, tmp, text[:n], list, fmt.Sprintf("%d bytes on a chunk list", n))
	}
	edited := append([]byte(nil), text...)
	edited[150<<10] ^= 1
	appendAllWaysForTest(t, s, tmp, edited, list, "an edit in the middle")
	edited = append([]byte(nil), text[:300<<10]...)
	edited[len(edited)-1] ^= 1
	appendAllWaysForTest(t, s, tmp, edited, list, "an edit of the last byte")
	tree, err := func() (ID, error) {
		w := s.NewWriter()
		id, err := w.Put(TypeTree, (&Tree{}).Encode())
		if err == nil {
			_, err = w.Commit()
		}
		return id, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	appendAllWaysForTest(t, s, tmp, text, tree, "a tree as base")
	appendAllWaysForTest(t, s, tmp, text, Hash(TypeBlob, []byte("not stored")), "a missing base")
	empty := appendAllWaysForTest(t, s, tmp, nil, ID{}, "empty")
	appendAllWaysForTest(t, s, tmp, text, empty, "on the empty blob")

	// A last chunk under chunkMin (and under anchorLen), re-chunked with
	// what is appended.
	doc := append([]byte(nil), text[:100<<10]...)
	prev := appendAllWaysForTest(t, s, tmp, doc, ID{}, "tail: base")
	small, tiny := 0, 0
	for i := 0; i < 30; i++ {
		c, err := s.readContent(prev)
		if err != nil {
			t.Fatal(err)
		}
		switch last := c.leaves[len(c.leaves)-1].Size; {
		case last < anchorLen:
			tiny++
		case last < chunkMin:
			small++
		}
		n := 1 + r.IntN(3000)
		if i%5 == 4 {
			n = 1 + r.IntN(20)
		}
		doc = append(doc, randomTextForTest(r, n)...)
		prev = appendAllWaysForTest(t, s, tmp, doc, prev, fmt.Sprintf("tail: step %d", i))
	}
	if small == 0 {
		t.Fatalf("no base ended with a chunk under %d bytes (%d under %d): the test needs some", chunkMin, tiny, anchorLen)
	}

	// A random session, as TestPutBytesAppendRoundTrip.
	doc, prev = nil, ID{}
	for i := 1; i <= 120; i++ {
		switch k := r.IntN(20); {
		case i%40 == 0: // not an append
			doc = append([]byte(nil), doc...)
			doc[r.IntN(len(doc))] ^= 1
		case i%50 == 0: // shrinks
			doc = append([]byte(nil), doc[:len(doc)/3]...)
		case k == 0:
			doc = append(doc, 'x')
		case k == 1:
			doc = append(doc, randomTextForTest(r, 20000+r.IntN(60000))...)
		case k < 5 && len(doc) > 0: // text the document already holds
			from := r.IntN(len(doc))
			doc = append(doc, doc[from:min(len(doc), from+1+r.IntN(30000))]...)
		default:
			doc = append(doc, transcriptStepForTest(src, r, i)...)
		}
		prev = appendAllWaysForTest(t, s, tmp, doc, prev, fmt.Sprintf("session step %d (%d bytes)", i, len(doc)))
	}
}

// A base whose chunks are larger than what PutFileAppend peeks at once
// (only a hand-built chunk list has them): the prefix is still verified and
// the anchors of such a chunk are its real first and last bytes.
func TestPutFileAppendLargeLeaves(t *testing.T) {
	s, _ := openStoreForTest(t)
	tmp := t.TempDir()
	r := rand.New(rand.NewPCG(12, 12))
	text := randomTextForTest(r, 3*peekMax)
	sizes := []int{peekMax + 7, 2*peekMax - 20, 100}
	w := s.NewWriter()
	var l ChunkList
	off := 0
	for _, n := range sizes {
		id, err := w.Put(TypeBlob, text[off:off+n])
		if err != nil {
			t.Fatal(err)
		}
		l.Entries = append(l.Entries, ChunkRef{id, uint64(n)})
		off += n
	}
	base, err := w.Put(TypeChunkList, l.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	doc := append(append([]byte(nil), text[:off]...), text[sizes[0]-5000:sizes[0]+3000]...) // repeats the end of the first leaf
	doc = append(doc, randomTextForTest(r, 10000)...)
	id := appendAllWaysForTest(t, s, tmp, doc, base, "large leaves")
	c, err := s.readContent(id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sizes[:2] {
		if c.leaves[i] != l.Entries[i] {
			t.Fatalf("leaf %d not kept", i)
		}
	}
	edited := append([]byte(nil), doc...)
	edited[peekMax+3] ^= 1 // in the first leaf, after the first peek
	appendAllWaysForTest(t, s, tmp, edited, base, "large leaves, edited")
}

// genReaderForTest is size bytes of pseudo-random text, the same at every
// offset for a seed, generated as it is read and seekable: a document as
// large as a test wants without holding it.
type genReaderForTest struct {
	seed, size, off int64
	block           []byte
	blockAt         int64 // offset of block, -1 for none
}

const genBlockForTest = 64 << 10

func newGenReaderForTest(seed, size int64) *genReaderForTest {
	return &genReaderForTest{seed: seed, size: size, block: make([]byte, genBlockForTest), blockAt: -1}
}

// genTableForTest maps random bytes to text: letters, spaces, newlines.
var genTableForTest = func() (t [256]byte) {
	for i := range t {
		switch c := i & 63; {
		case c < 52:
			t[i] = byte('a' + c%26)
		case c < 62:
			t[i] = ' '
		default:
			t[i] = '\n'
		}
	}
	return t
}()

func (g *genReaderForTest) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	at := g.off / genBlockForTest * genBlockForTest
	if at != g.blockAt {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(g.seed))
		binary.LittleEndian.PutUint64(seed[8:], uint64(at))
		_, _ = rand.NewChaCha8(seed).Read(g.block)
		for i, c := range g.block {
			g.block[i] = genTableForTest[c]
		}
		g.blockAt = at
	}
	n := copy(p, g.block[g.off-at:min(int64(genBlockForTest), g.size-at)])
	g.off += int64(n)
	return n, nil
}

func (g *genReaderForTest) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += g.off
	case io.SeekEnd:
		off += g.size
	}
	if off < 0 {
		return 0, fmt.Errorf("negative offset")
	}
	g.off = off
	return off, nil
}

// peakHeapForTest runs fn and returns by how much the heap grew above what
// it held before: the peak, sampled every millisecond, of the bytes of
// heap objects, alive or dead but not yet swept. That bounds from above
// what fn holds; the GC runs at 20% growth meanwhile, so that garbage
// does not hide it (at the default 100%, garbage alone would fill twice
// the heap the store and the zstd encoders hold). It also returns the peak
// growth of the live heap (marked at each GC).
func peakHeapForTest(fn func()) (heap, live uint64, took time.Duration) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (uint64, uint64) {
		metrics.Read(sample)
		return sample[0].Value.Uint64(), sample[1].Value.Uint64()
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	heap0, live0 := read()
	peakHeap, peakLive := heap0, live0
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	update := func() {
		h, l := read()
		peakHeap, peakLive = max(peakHeap, h), max(peakLive, l)
	}
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			update()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	fn()
	took = time.Since(start)
	close(done)
	wg.Wait()
	update()
	return peakHeap - heap0, peakLive - live0, took
}

// A 256 MiB document stored, then grown by 16 MiB and stored on the first
// version: the heap grows by a few MiB, not by the document's size.
// (Measured: about 15 MiB of heap, live or garbage, and 6 MiB live, mostly
// the writer's index entries; reading the document whole grows the heap by
// its size, which the test checks too, so the measure sees it.)
func TestPutFileAppendMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 256 MiB (about 5 s); skipped with -short")
	}
	const size, grown = 256 << 20, 272 << 20
	const maxHeap = 64 << 20
	s, _ := openStoreForTest(t)
	// Warm up: the zstd encoders of the process (pooled, a few MiB each)
	// and the writer's first pack are set up once, whatever the size.
	w := s.NewWriter()
	if _, _, err := w.PutFileAppend(newGenReaderForTest(2, 4<<20), ID{}); err != nil {
		t.Fatal(err)
	}
	w.Abort()

	// The measure sees a document held whole.
	heap, live, _ := peakHeapForTest(func() {
		b, _ := io.ReadAll(newGenReaderForTest(1, size))
		runtime.GC()
		runtime.KeepAlive(b)
	})
	if heap < size || live < size {
		t.Fatalf("reading %d MiB whole: the heap grew by %d MiB (live %d MiB): the measure does not work", size>>20, heap>>20, live>>20)
	}

	var base, id ID
	var err error
	put := func(dst *ID, n int64, on ID) func() {
		return func() {
			w := s.NewWriter()
			var got int64
			if *dst, got, err = w.PutFileAppend(newGenReaderForTest(1, n), on); err == nil && got != n {
				err = fmt.Errorf("length %d, want %d", got, n)
			}
			if err == nil {
				_, err = w.Commit()
			}
		}
	}
	heap, live, took := peakHeapForTest(put(&base, size, ID{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storing %d MiB: heap grew by %.1f MiB (live %.1f MiB), %v", size>>20, float64(heap)/(1<<20), float64(live)/(1<<20), took)
	if heap > maxHeap {
		t.Errorf("storing %d MiB grew the heap by %d MiB, want under %d MiB", size>>20, heap>>20, maxHeap>>20)
	}
	heap, live, took = peakHeapForTest(put(&id, grown, base))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("appending %d MiB to it: heap grew by %.1f MiB (live %.1f MiB), %v", (grown-size)>>20, float64(heap)/(1<<20), float64(live)/(1<<20), took)
	if heap > maxHeap {
		t.Errorf("appending grew the heap by %d MiB, want under %d MiB", heap>>20, maxHeap>>20)
	}
	// The append kept the base's chunks: all but the last (perhaps
	// re-chunked) are shared.
	old, err := s.readContent(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.readContent(id)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range old.leaves[:len(old.leaves)-1] {
		if c.leaves[i] != l {
			t.Fatalf("leaf %d of the base not kept", i)
		}
	}
	var total uint64
	for _, l := range c.leaves {
		total += l.Size
	}
	if total != grown {
		t.Fatalf("leaves hold %d bytes, want %d", total, grown)
	}
}

// A chunk of the appended text that starts like base's last chunk, which
// is re-chunked, is stored as a delta on it. (Before PutBytesAppend
// streamed, the first new chunk, pending and so no delta base, took the
// last chunk's place among the candidates after it was stored, and such a
// chunk was stored whole.)
func TestPutBytesAppendTailStaysDeltaBase(t *testing.T) {
	s, _ := openStoreForTest(t)
	r := rand.New(rand.NewPCG(12, 3))
	doc := randomTextForTest(r, 100<<10+r.IntN(20000))
	prev, _ := appendStepForTest(t, s, doc, ID{})
	c, err := s.readContent(prev)
	if err != nil {
		t.Fatal(err)
	}
	tail := c.leaves[len(c.leaves)-1]
	if tail.Size >= chunkMin || tail.Size < anchorLen {
		t.Fatalf("the last chunk has %d bytes; the test needs %d to %d", tail.Size, anchorLen, chunkMin)
	}
	// New text, then a copy of the end of the document (its last chunk
	// and what comes before it, so that a cut falls before the copy) and
	// of the new text.
	step := randomTextForTest(r, 12<<10)
	step = append(step, doc[len(doc)-3000:]...)
	step = append(step, step[:12<<10]...)
	doc = append(doc, step...)
	id, _ := appendStepForTest(t, s, doc, prev)
	if c, err = s.readContent(id); err != nil {
		t.Fatal(err)
	}
	onTail := 0
	for i, l := range c.leaves {
		if base, depth := depthForTest(t, s, l.ID); depth > 0 && base == tail.ID {
			onTail++
			t.Logf("chunk %d (%d bytes) is a delta on the old last chunk", i, l.Size)
		}
	}
	if onTail < 2 {
		t.Fatalf("%d new chunks stored as deltas on the old last chunk, want 2 (the first new chunk and the copy)", onTail)
	}
	mustReadBlobForTest(t, s, id, doc)
}
