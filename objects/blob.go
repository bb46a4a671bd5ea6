package objects

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc" // registers "fastcdc-v1.0.0"
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
// their refs to refs. base, when not nil, names for each new chunk an
// object to store it as a delta on (PutDelta; zero for none).
func (w *Writer) putChunks(r io.Reader, refs []ChunkRef, base func(chunk []byte) ID) ([]ChunkRef, int64, error) {
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
			var b ID
			if base != nil {
				b = base(chunk)
			}
			id, perr := w.PutDelta(TypeBlob, chunk, b)
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
// falls back to PutBytes. (A last chunk of base smaller than the minimum
// chunk size is re-chunked with the new bytes, so appends do not leave a
// trail of tiny chunks.)
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
	bases := appendBases{old: data[:off], leaves: prev.leaves}
	if n := len(leaves); n > 0 && leaves[n-1].Size < chunkMin {
		off -= leaves[n-1].Size
		leaves = leaves[:n-1]
	}
	refs, _, err := w.putChunks(bytes.NewReader(data[off:]), leaves, bases.pick)
	if err != nil {
		return ID{}, err
	}
	return w.putLists(refs, 0, prev.lists)
}

// anchorLen is how many bytes at a chunk's start (or end) must equal an old
// chunk's for PutBytesAppend to take that chunk as the delta base.
const anchorLen = 32

// appendBases picks delta bases for the chunks PutBytesAppend adds: old is
// the previous content, the concatenation of leaves.
type appendBases struct {
	old    []byte
	leaves []ChunkRef
	starts []int // start offsets of leaves in old, computed on first use
}

// pick returns the newest old chunk that starts with the same anchorLen
// bytes as chunk, else the newest that ends with the same bytes, else the
// last old chunk. Comparing a few dozen bytes per old chunk costs
// microseconds for a document of thousands of chunks, and catches a new
// chunk that is an edited copy of an old one (content-defined cuts fall at
// the same places in repeated text).
func (b *appendBases) pick(chunk []byte) ID {
	n := len(b.leaves)
	if n == 0 {
		return ID{}
	}
	if len(chunk) < anchorLen {
		return b.leaves[n-1].ID
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
	for i := n - 1; i >= 0; i-- {
		if s := b.starts[i]; b.leaves[i].Size >= anchorLen && bytes.Equal(b.old[s:s+anchorLen], head) {
			return b.leaves[i].ID
		}
	}
	for i := n - 1; i >= 0; i-- {
		if e := b.starts[i] + int(b.leaves[i].Size); b.leaves[i].Size >= anchorLen && bytes.Equal(b.old[e-anchorLen:e], tail) {
			return b.leaves[i].ID
		}
	}
	return b.leaves[n-1].ID
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
// an entry or two). Every other list is final (appends only add lists
// after it), and so is the last one when it ends at a cut point and its
// last entry is final (a chunk appends keep, or a final list): those are
// stored whole. Every append reads all the lists, and a delta chain on
// each final one (one link per entry it gained, about 16) would cost more
// time than the ~30 bytes a list it saves.
func (w *Writer) putLists(refs []ChunkRef, level uint8, prev [][]ID) (ID, error) {
	final := len(refs) > 0 && refs[len(refs)-1].Size >= chunkMin // PutBytesAppend keeps it
	for {
		groups := splitLists(refs)
		next := make([]ChunkRef, 0, len(groups))
		for i, g := range groups {
			l := ChunkList{Level: level, Entries: g}
			var base ID
			if i == len(groups)-1 {
				final = final && listClosed(g)
				if !final && int(level) < len(prev) && i < len(prev[level]) {
					base = prev[level][i]
				}
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
