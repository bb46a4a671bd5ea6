package objects

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// ChunkRef is one entry of a chunk list: a blob (level 0) or a chunk list
// one level down, and the number of content bytes it stands for.
type ChunkRef struct {
	ID   ID
	Size uint64
}

// ChunkList is a large blob: the concatenation of its entries' contents.
// At Level 0 entries are blobs (chunks); at Level n > 0 they are chunk lists
// of Level n-1. Lists are cut where an entry's id ends in fanoutBits zero
// bits (content-defined, so an edit rewrites one list per level, not the
// whole list), which keeps a 1 KiB edit of a 1 GiB file to a few KiB of
// list objects.
type ChunkList struct {
	Level   uint8
	Entries []ChunkRef
}

// Chunk list limits.
const (
	MaxChunkListLevel   = 8
	MaxChunkListEntries = 1024
	fanoutMask          = 15 // cut after an entry whose id's last byte has these bits clear: ~16 entries a list
)

// Size is the total content length.
func (l *ChunkList) Size() uint64 {
	var n uint64
	for _, e := range l.Entries {
		n += e.Size
	}
	return n
}

// Encode returns the canonical encoding:
//
//	level u8 | uvarint count | count × { id [32] | uvarint size }
func (l *ChunkList) Encode() []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(l.Entries)*(IDSize+binary.MaxVarintLen64))
	b = append(b, l.Level)
	b = binary.AppendUvarint(b, uint64(len(l.Entries)))
	for _, e := range l.Entries {
		b = append(b, e.ID[:]...)
		b = binary.AppendUvarint(b, e.Size)
	}
	return b
}

// DecodeChunkList parses and validates a chunk list: level in range, 1 to
// MaxChunkListEntries entries, every size > 0, canonical, no trailing bytes.
func DecodeChunkList(data []byte) (*ChunkList, error) {
	r := reader{B: data}
	l := &ChunkList{Level: r.Byte()}
	count := r.Uvarint()
	if r.Failed || l.Level > MaxChunkListLevel || count == 0 || count > MaxChunkListEntries {
		return nil, fmt.Errorf("%w: chunk list: bad header", ErrCorrupt)
	}
	l.Entries = make([]ChunkRef, count)
	var total uint64
	for i := range l.Entries {
		copy(l.Entries[i].ID[:], r.Bytes(IDSize))
		l.Entries[i].Size = r.Uvarint()
		if r.Failed {
			return nil, fmt.Errorf("%w: chunk list: entry %d truncated", ErrCorrupt, i)
		}
		if l.Entries[i].Size == 0 || l.Entries[i].Size > 1<<62 || total+l.Entries[i].Size > 1<<62 {
			return nil, fmt.Errorf("%w: chunk list: entry %d has bad size", ErrCorrupt, i)
		}
		total += l.Entries[i].Size
	}
	if len(r.B) != 0 {
		return nil, fmt.Errorf("%w: chunk list: %d trailing bytes", ErrCorrupt, len(r.B))
	}
	if !bytes.Equal(l.Encode(), data) {
		return nil, fmt.Errorf("%w: chunk list: non-canonical encoding", ErrCorrupt)
	}
	return l, nil
}

// splitLists groups refs into lists at content-defined cut points, at most
// MaxChunkListEntries each.
func splitLists(refs []ChunkRef) [][]ChunkRef {
	var out [][]ChunkRef
	start := 0
	for i, r := range refs {
		if cutAfter(r, i+1-start) {
			out = append(out, refs[start:i+1])
			start = i + 1
		}
	}
	if start < len(refs) {
		out = append(out, refs[start:])
	}
	return out
}

// cutAfter reports whether splitLists ends a list after entry r, the n-th
// of its list.
func cutAfter(r ChunkRef, n int) bool {
	return r.ID[IDSize-1]&fanoutMask == 0 || n == MaxChunkListEntries
}
