package objects

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers "fastcdc-v1.0.0"
	"github.com/zeebo/blake3"
)

// Content-defined chunking parameters. Changing them changes how new content
// is split (old objects stay readable) and so how well it dedups against
// what is already stored.
const (
	// SmallBlobMax: content up to this size is one blob, larger content a
	// chunk list.
	SmallBlobMax = 64 << 10
	chunkMin     = 4 << 10
	chunkNormal  = 8 << 10
	chunkMax     = 64 << 10
	chunkAlgo    = "fastcdc-v1.0.0"
)

var chunkOpts = chunkers.ChunkerOpts{MinSize: chunkMin, NormalSize: chunkNormal, MaxSize: chunkMax}

var headPool = sync.Pool{New: func() any { b := make([]byte, SmallBlobMax+1); return &b }}
var chunkBufPool = sync.Pool{New: func() any { b := make([]byte, 2*chunkMax); return &b }}

// PutBlob stores the content read from r until EOF and returns the id under
// which a tree refers to it (a blob, or a chunk list for content larger than
// SmallBlobMax) and its length. Memory use is bounded whatever the length.
func (w *Writer) PutBlob(r io.Reader) (ID, int64, error) { return w.PutBlobBase(r, ID{}) }

// PutBlobBase is PutBlob for new content of a path whose previous content
// was base (zero when there is none): content small enough to be one blob
// is stored with PutDelta on base, which serves only when it is a plain
// blob (not a chunk list).
func (w *Writer) PutBlobBase(r io.Reader, base ID) (ID, int64, error) {
	hp := headPool.Get().(*[]byte)
	defer headPool.Put(hp)
	head := *hp
	n, err := io.ReadFull(r, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		id, err := w.PutDelta(TypeBlob, head[:n], base)
		return id, int64(n), err
	case err != nil:
		return ID{}, 0, err
	}
	return w.putChunked(io.MultiReader(bytes.NewReader(head[:n]), r))
}

// PutBytes is PutBlob for content already in memory.
func (w *Writer) PutBytes(data []byte) (ID, error) {
	if len(data) <= SmallBlobMax {
		return w.Put(TypeBlob, data)
	}
	id, _, err := w.putChunked(bytes.NewReader(data))
	return id, err
}

func (w *Writer) putChunked(r io.Reader) (ID, int64, error) {
	refs, total, err := w.putChunks(r, nil, nil)
	if err != nil {
		return ID{}, 0, err
	}
	id, err := w.putLists(refs, 0, nil)
	return id, total, err
}

// putChunks splits r into content-defined chunks, stores them and appends
// their refs to refs. base, when not nil, names for each new chunk the
// objects to try as its delta base (the smallest delta wins; none, or zero
// ids, for none).
func (w *Writer) putChunks(r io.Reader, refs []ChunkRef, base func(chunk []byte) []ID) ([]ChunkRef, int64, error) {
	bp := chunkBufPool.Get().(*[]byte)
	defer chunkBufPool.Put(bp)
	opts := chunkOpts
	ch, err := chunkers.NewChunkerBuffer(chunkAlgo, r, &opts, *bp)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for {
		chunk, err := ch.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		if len(chunk) > 0 {
			var b []ID
			if base != nil {
				b = base(chunk)
			}
			id, perr := w.put(TypeBlob, chunk, b...)
			if perr != nil {
				return nil, 0, perr
			}
			refs = append(refs, ChunkRef{id, uint64(len(chunk))})
			total += int64(len(chunk))
		}
		if errors.Is(err, io.EOF) {
			return refs, total, nil
		}
	}
}

// PutBytesAppend stores data like PutBytes, except that when base names
// stored content that is a prefix of data (a transcript that grew), base's
// chunks are reused as they are and only the appended bytes are chunked:
// a growing document costs its new bytes, not a re-chunked tail. The
// prefix is verified chunk by chunk against base's ids, so any other edit
// falls back to PutBytes. base's last chunk is re-chunked with the new
// bytes: it ended where base ended, which need not be a cut the chunker
// makes in the longer content. So the id is always that of the same
// content stored by PutBytes (content addressing holds across stores and
// machines: the git bridge rebuilds a checkpoint from its content and gets
// the same id), at the cost of re-reading one chunk per append.
//
// What is new is stored as deltas (PutDelta) where that pays: content
// small enough to be one blob on base when base is one blob too (whatever
// the edit); each new chunk on the chunk of base that starts or ends with
// the same bytes (text the document repeats, such as a file shown again),
// else on base's last chunk (records of one transcript share much of
// their structure); each rewritten chunk list on base's list at the same
// level and position, which differs by a few appended entries. How an
// object is stored never changes its id: the ids are those of the same
// append stored whole.
func (w *Writer) PutBytesAppend(data []byte, base ID) (ID, error) {
	id, _, err := w.putAppend(&memSource{data: data}, base)
	return id, err
}

// PutFileAppend is PutBytesAppend for content read from f, from its
// current offset to EOF: the same ids and the same objects stored the same
// way, but the content is streamed. Memory is bounded by a few chunk
// buffers plus 64 bytes per chunk of base (the bytes each starts and ends
// with, which choose delta bases), whatever the size of the content;
// content of at most SmallBlobMax bytes is read whole. The prefix is
// verified as it is read; when it is not base's content, f is sought back
// to where it started and the content is stored whole, as PutBytes would.
// It returns the id and the length of the content.
func (w *Writer) PutFileAppend(f io.ReadSeeker, base ID) (ID, int64, error) {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return ID{}, 0, err
	}
	br := fileReaderPool.Get().(*bufio.Reader)
	br.Reset(f)
	defer func() {
		br.Reset(nil)
		fileReaderPool.Put(br)
	}()
	return w.putAppend(&fileSource{f: f, br: br, start: start}, base)
}

// appendSource is content that putAppend reads once, front to back (and
// from the start again when it stores the content whole).
type appendSource interface {
	// peek returns the next n bytes (n <= peekMax) without consuming them:
	// fewer only at the end of the content. The slice is valid until the
	// next call.
	peek(n int) ([]byte, error)
	// discard consumes n bytes that peek returned.
	discard(n int)
	// rest returns a reader of the content after what was consumed.
	rest() io.Reader
	// whole returns a reader of the whole content.
	whole() (io.Reader, error)
}

// peekMax is the most an appendSource peeks at once: the small-content
// decision (SmallBlobMax+1) and whole chunks (chunkMax) fit.
const peekMax = 256 << 10

var fileReaderPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, peekMax) }}

// memSource is content in memory: peeks are slices of it, copying nothing.
type memSource struct {
	data []byte
	off  int
}

func (m *memSource) peek(n int) ([]byte, error) { return m.data[m.off:min(m.off+n, len(m.data))], nil }
func (m *memSource) discard(n int)              { m.off += n }
func (m *memSource) rest() io.Reader            { return bytes.NewReader(m.data[m.off:]) }
func (m *memSource) whole() (io.Reader, error)  { return bytes.NewReader(m.data), nil }

// fileSource is content read from a file through a buffer of peekMax bytes.
type fileSource struct {
	f     io.ReadSeeker
	br    *bufio.Reader
	start int64
}

func (s *fileSource) peek(n int) ([]byte, error) {
	b, err := s.br.Peek(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b, err
}
func (s *fileSource) discard(n int)   { _, _ = s.br.Discard(n) }
func (s *fileSource) rest() io.Reader { return s.br }
func (s *fileSource) whole() (io.Reader, error) {
	if _, err := s.f.Seek(s.start, io.SeekStart); err != nil {
		return nil, err
	}
	s.br.Reset(s.f)
	return s.br, nil
}

// putAppend is PutBytesAppend and PutFileAppend: see there.
func (w *Writer) putAppend(src appendSource, base ID) (ID, int64, error) {
	head, err := src.peek(SmallBlobMax + 1)
	if err != nil {
		return ID{}, 0, err
	}
	if len(head) <= SmallBlobMax {
		id, err := w.PutDelta(TypeBlob, head, base) // Put when base is zero
		return id, int64(len(head)), err
	}
	consumed := false
	whole := func() (ID, int64, error) {
		r := src.rest()
		if consumed {
			var err error
			if r, err = src.whole(); err != nil {
				return ID{}, 0, err
			}
		}
		return w.putChunked(r)
	}
	if base.IsZero() {
		return whole()
	}
	prev, err := w.s.readContent(base)
	if err != nil {
		return whole()
	}
	leaves := prev.leaves
	bases := appendBases{leaves: leaves, anchors: make([]leafAnchors, len(leaves))}
	// base's last leaf ended where base ended, not necessarily at a cut
	// the chunker would make in the longer content: it is re-chunked with
	// the new bytes (tail holds its bytes), so the cuts, hence the id, are
	// those of the content chunked whole.
	retainTail := len(leaves) > 0
	var tail []byte
	h := blake3.New()
	var id ID
	var kept int64
	for i, c := range leaves {
		h.Reset()
		h.Write(blobTag[:])
		a := &bases.anchors[i]
		retain := retainTail && i == len(leaves)-1
		for left := c.Size; left > 0; {
			b, err := src.peek(int(min(left, peekMax)))
			if err != nil {
				return ID{}, 0, err
			}
			if len(b) == 0 {
				return whole() // the content is shorter than base
			}
			h.Write(b)
			if left == c.Size && c.Size >= anchorLen {
				copy(a.head[:], b)
			}
			// The last anchorLen bytes of the leaf, which may straddle two
			// peeks of a leaf larger than peekMax.
			if n := len(b); n >= anchorLen {
				copy(a.tail[:], b[n-anchorLen:])
			} else {
				copy(a.tail[:], a.tail[n:])
				copy(a.tail[anchorLen-n:], b)
			}
			if retain {
				tail = append(tail, b...)
			}
			left -= uint64(len(b))
			src.discard(len(b))
			consumed = true
		}
		if h.Sum(id[:0]); id != c.ID {
			return whole()
		}
		kept += int64(c.Size)
	}
	r := src.rest()
	if retainTail {
		// A full slice expression: putChunks appends to leaves, and must
		// not overwrite the last leaf, which bases still offers.
		leaves = leaves[: len(leaves)-1 : len(leaves)-1]
		kept -= int64(len(tail))
		r = io.MultiReader(bytes.NewReader(tail), r)
	}
	refs, n, err := w.putChunks(r, leaves, bases.pick)
	if err != nil {
		return ID{}, 0, err
	}
	id, err = w.putLists(refs, 0, prev.lists)
	return id, kept + n, err
}

var blobTag = [1]byte{byte(TypeBlob)}

// anchorLen is how many bytes at a chunk's start (or end) must equal an old
// chunk's for PutBytesAppend to take that chunk as the delta base.
const anchorLen = 32

// appendBases picks delta bases for the chunks PutBytesAppend adds: leaves
// are the previous content's chunks, anchors the bytes each starts and ends
// with (meaningful for chunks of at least anchorLen bytes).
type appendBases struct {
	leaves  []ChunkRef
	anchors []leafAnchors
}

type leafAnchors struct {
	head, tail [anchorLen]byte
}

// pick returns the delta bases to try for chunk: the newest old chunk that
// starts with the same anchorLen bytes and the newest that ends with them
// (a chunk that begins with base's re-chunked last chunk and continues
// into an edited copy of older text matches both ways), else the last old
// chunk. Comparing a few dozen bytes per old chunk costs microseconds for a
// document of thousands of chunks, and catches a new chunk that is an
// edited copy of an old one (content-defined cuts fall at the same places
// in repeated text).
func (b *appendBases) pick(chunk []byte) []ID {
	n := len(b.leaves)
	if n == 0 {
		return nil
	}
	if len(chunk) < anchorLen {
		return []ID{b.leaves[n-1].ID}
	}
	head, tail := chunk[:anchorLen], chunk[len(chunk)-anchorLen:]
	var out []ID
	for i := n - 1; i >= 0; i-- {
		if b.leaves[i].Size >= anchorLen && bytes.Equal(b.anchors[i].head[:], head) {
			out = append(out, b.leaves[i].ID)
			break
		}
	}
	for i := n - 1; i >= 0; i-- {
		if b.leaves[i].Size >= anchorLen && bytes.Equal(b.anchors[i].tail[:], tail) {
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

// Leaves returns the chunks of the content id, a blob or a chunk list, in
// order, with their sizes (a blob is its own one leaf), reading its chunk
// lists but no chunk: enough to read the content piecewise, or to find
// where two contents stop sharing their leading chunks without reading
// them. Nothing is verified beyond the lists read: a reader checks each
// chunk's size as it reads it.
func (s *Store) Leaves(id ID) ([]ChunkRef, error) {
	if _, ok := s.lookup(id); !ok {
		if _, err := s.lookupAfterReload(id); err != nil {
			return nil, err
		}
	}
	c, err := s.readContent(id)
	if err != nil {
		return nil, err
	}
	return c.leaves, nil
}

// storedContent is the shape of stored content: its level-0 entries (blobs)
// in order, and the ids of its chunk lists, by level, in order.
type storedContent struct {
	leaves []ChunkRef
	lists  [][]ID
}

// readContent returns the shape of the content id: for a blob, id itself
// as its one leaf.
func (s *Store) readContent(id ID) (*storedContent, error) {
	c := &storedContent{}
	loc, ok := s.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if loc.e.typ == TypeBlob {
		c.leaves = []ChunkRef{{id, uint64(loc.e.size)}}
		return c, nil
	}
	return c, s.readLists(id, c)
}

func (s *Store) readLists(id ID, c *storedContent) error {
	l, err := s.ReadChunkList(id)
	if err != nil {
		return err
	}
	for len(c.lists) <= int(l.Level) {
		c.lists = append(c.lists, nil)
	}
	c.lists[l.Level] = append(c.lists[l.Level], id)
	if l.Level == 0 {
		c.leaves = append(c.leaves, l.Entries...)
		return nil
	}
	for _, e := range l.Entries {
		if err := s.readLists(e.ID, c); err != nil {
			return err
		}
	}
	return nil
}

// putLists stores refs as chunk lists of the given level and, while more
// than one list results, lists of those lists one level up.
//
// prev, when not nil, holds the ids of the previous version's lists by
// level (see storedContent), and refs are level-0 entries (blobs): the last
// list of each level, the one the next append rewrites, is stored as a
// delta on the list at the same level and position in prev (it differs by
// an entry or two; the next append re-chunks its last leaf, so it always
// changes). Every other list is final (appends only add lists after it)
// and is stored whole: every append reads all the lists, and a delta chain
// on each final one (one link per entry it gained, about 16) would cost
// more time than the ~30 bytes a list it saves.
func (w *Writer) putLists(refs []ChunkRef, level uint8, prev [][]ID) (ID, error) {
	for {
		groups := splitLists(refs)
		next := make([]ChunkRef, 0, len(groups))
		for i, g := range groups {
			l := ChunkList{Level: level, Entries: g}
			var base ID
			if i == len(groups)-1 && int(level) < len(prev) && i < len(prev[level]) {
				base = prev[level][i]
			}
			id, err := w.PutDelta(TypeChunkList, l.Encode(), base)
			if err != nil {
				return ID{}, err
			}
			next = append(next, ChunkRef{id, l.Size()})
		}
		if len(next) == 1 {
			return next[0].ID, nil
		}
		if level == MaxChunkListLevel {
			return ID{}, fmt.Errorf("%w: too many chunks", ErrTooLarge)
		}
		refs, level = next, level+1
	}
}

// WriteBlob streams the content of a blob or chunk list to out, verifying
// every object and every recorded size on the way. It returns the number of
// bytes written.
func (s *Store) WriteBlob(id ID, out io.Writer) (int64, error) {
	t, data, err := s.Read(id)
	if err != nil {
		return 0, err
	}
	switch t {
	case TypeBlob:
		n, err := out.Write(data)
		return int64(n), err
	case TypeChunkList:
		l, err := DecodeChunkList(data)
		if err != nil {
			return 0, err
		}
		return s.writeList(l, out)
	}
	return 0, fmt.Errorf("%w: %s is a %s, not content", ErrCorrupt, id.Short(), t)
}

func (s *Store) writeList(l *ChunkList, out io.Writer) (int64, error) {
	var total int64
	for _, e := range l.Entries {
		var n int64
		if l.Level == 0 {
			data, err := s.readTyped(e.ID, TypeBlob)
			if err != nil {
				return total, err
			}
			if uint64(len(data)) != e.Size {
				return total, fmt.Errorf("%w: chunk %s has %d bytes, list says %d", ErrCorrupt, e.ID.Short(), len(data), e.Size)
			}
			w, err := out.Write(data)
			total += int64(w)
			if err != nil {
				return total, err
			}
			continue
		}
		sub, err := s.ReadChunkList(e.ID)
		if err != nil {
			return total, err
		}
		if sub.Level != l.Level-1 || sub.Size() != e.Size {
			return total, fmt.Errorf("%w: chunk list %s has level %d size %d, parent says level %d size %d",
				ErrCorrupt, e.ID.Short(), sub.Level, sub.Size(), l.Level-1, e.Size)
		}
		n, err = s.writeList(sub, out)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ReadBlob returns the whole content of a blob or chunk list, refusing
// content larger than limit bytes.
func (s *Store) ReadBlob(id ID, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := s.WriteBlob(id, &limitedWriter{&buf, limit})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type limitedWriter struct {
	w     io.Writer
	limit int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.limit {
		return 0, fmt.Errorf("%w: content exceeds %d bytes", ErrTooLarge, l.limit)
	}
	l.limit -= int64(len(p))
	return l.w.Write(p)
}
