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
	refs, total, err := w.putChunks(r, nil)
	if err != nil {
		return ID{}, 0, err
	}
	id, err := w.putLists(refs, 0)
	return id, total, err
}

// putChunks splits r into content-defined chunks, stores them and appends
// their refs to refs.
func (w *Writer) putChunks(r io.Reader, refs []ChunkRef) ([]ChunkRef, int64, error) {
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
			id, perr := w.Put(TypeBlob, chunk)
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
func (w *Writer) PutBytesAppend(data []byte, base ID) (ID, error) {
	if base.IsZero() || len(data) <= SmallBlobMax {
		return w.PutBytes(data)
	}
	leaves, err := w.s.leafChunks(base, nil)
	if err != nil {
		return w.PutBytes(data)
	}
	var off uint64
	for _, c := range leaves {
		if off+c.Size > uint64(len(data)) || Hash(TypeBlob, data[off:off+c.Size]) != c.ID {
			return w.PutBytes(data)
		}
		off += c.Size
	}
	if n := len(leaves); n > 0 && leaves[n-1].Size < chunkMin {
		off -= leaves[n-1].Size
		leaves = leaves[:n-1]
	}
	refs, _, err := w.putChunks(bytes.NewReader(data[off:]), leaves)
	if err != nil {
		return ID{}, err
	}
	return w.putLists(refs, 0)
}

// leafChunks appends the level-0 entries (blobs) that make up the content
// id to out: id itself for a blob.
func (s *Store) leafChunks(id ID, out []ChunkRef) ([]ChunkRef, error) {
	loc, ok := s.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if loc.e.typ == TypeBlob {
		return append(out, ChunkRef{id, uint64(loc.e.size)}), nil
	}
	l, err := s.ReadChunkList(id)
	if err != nil {
		return nil, err
	}
	if l.Level == 0 {
		return append(out, l.Entries...), nil
	}
	for _, e := range l.Entries {
		if out, err = s.leafChunks(e.ID, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// putLists stores refs as chunk lists of the given level and, while more
// than one list results, lists of those lists one level up.
func (w *Writer) putLists(refs []ChunkRef, level uint8) (ID, error) {
	for {
		groups := splitLists(refs)
		next := make([]ChunkRef, 0, len(groups))
		for _, g := range groups {
			l := ChunkList{Level: level, Entries: g}
			id, err := w.Put(TypeChunkList, l.Encode())
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
