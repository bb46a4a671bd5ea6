package objects

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/klauspost/compress/zstd"
)

// Delta records (encDelta): an object stored as a git-format delta on
// another object of the same type, its base, which may live in any pack.
// The stored bytes are
//
//	base id [32] | depth u8 | inner enc u8 | inner bytes
//
// where the inner bytes (raw, or zstd) are a git delta: the LEB128 sizes of
// the base and of this object, then copy-from-base and insert instructions.
// Reading resolves the base through the store (by id, like any read),
// checks the two declared sizes before patching, and re-hashes the result:
// a delta record is verified exactly like a whole one.

const (
	// MaxDeltaDepth bounds delta chains. An object edited once per
	// checkpoint is stored as a delta on its previous version, so its chain
	// grows by one per edit until the next version is stored whole: the
	// whole copy is amortised over MaxDeltaDepth+1 versions (about 3% of a
	// whole record per version at 32), while reading the deepest version
	// costs MaxDeltaDepth+1 record reads and MaxDeltaDepth patches of a
	// small object (tens of microseconds each). git's default, 50, is for
	// packs read far less often than snap reads on rewind and diff.
	// Readers refuse longer chains (and so cycles) as corrupt.
	MaxDeltaDepth = 32

	// deltaMaxObject: objects (and bases) larger than this are always
	// stored whole. Large files are chunked; an edit of one already costs
	// about one chunk.
	deltaMaxObject = 1 << 20

	deltaHeaderSize = IDSize + 2 // base id, depth, inner encoding
)

// maxDeltaLen bounds the decoded length of a delta producing size bytes:
// what the reader accepts, and so what the writer may store. git deltas
// from DiffDelta take about size*128/127 + 20 bytes at worst (all inserts).
func maxDeltaLen(size int) int { return 2*size + 64 }

// parseDeltaRecord splits the stored bytes of a delta record.
func parseDeltaRecord(stored []byte) (base ID, depth int, innerEnc byte, inner []byte, err error) {
	if len(stored) < deltaHeaderSize {
		return ID{}, 0, 0, nil, fmt.Errorf("%w: delta record of %d bytes", ErrCorrupt, len(stored))
	}
	copy(base[:], stored)
	depth, innerEnc = int(stored[IDSize]), stored[IDSize+1]
	if depth < 1 || depth > MaxDeltaDepth {
		return ID{}, 0, 0, nil, fmt.Errorf("%w: delta depth %d outside [1, %d]", ErrCorrupt, depth, MaxDeltaDepth)
	}
	if innerEnc != encRaw && innerEnc != encZstd {
		return ID{}, 0, 0, nil, fmt.Errorf("%w: unknown delta encoding %d", ErrCorrupt, innerEnc)
	}
	return base, depth, innerEnc, stored[deltaHeaderSize:], nil
}

// deltaBytes decodes the inner bytes of a delta record for an object of
// size bytes, refusing more than maxDeltaLen(size).
func deltaBytes(innerEnc byte, inner []byte, size uint32) ([]byte, error) {
	limit := maxDeltaLen(int(size))
	if innerEnc == encRaw {
		if len(inner) > limit {
			return nil, fmt.Errorf("%w: delta of %d bytes for an object of %d", ErrCorrupt, len(inner), size)
		}
		return inner, nil
	}
	var h zstd.Header
	if err := h.Decode(inner); err != nil || (h.HasFCS && h.FrameContentSize > uint64(limit)) {
		return nil, fmt.Errorf("%w: zstd delta frame declares more than %d bytes", ErrCorrupt, limit)
	}
	if h.HasFCS {
		return decompress(inner, encZstd, uint32(h.FrameContentSize))
	}
	// zstd leaves the size out of frames of fewer than 256 bytes: decode
	// at most limit bytes (the decoder's cap limit stops a longer frame).
	out, err := decoder().DecodeAll(inner, make([]byte, 0, limit))
	if err != nil {
		return nil, fmt.Errorf("%w: zstd delta: %v", ErrCorrupt, err)
	}
	return out, nil
}

// deltaSizes parses the source and target sizes that open a git delta
// (LEB128, 7 bits a byte, least significant first), refusing encodings
// longer than 5 bytes: sizes never exceed MaxObjectSize.
func deltaSizes(delta []byte) (src, tgt uint64, err error) {
	var n int
	for i := range 2 {
		var v uint64
		ok := false
		for shift := 0; shift < 35 && n < len(delta); shift += 7 {
			c := delta[n]
			n++
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				ok = true
				break
			}
		}
		if !ok {
			return 0, 0, fmt.Errorf("%w: delta header truncated or overlong", ErrCorrupt)
		}
		if i == 0 {
			src = v
		} else {
			tgt = v
		}
	}
	return src, tgt, nil
}

// decodeDelta returns the object that the delta record of e (its stored
// bytes) decodes to. budget is how many more delta records the chain may
// hold, this one included.
func (s *Store) decodeDelta(e indexEntry, stored []byte, budget int) ([]byte, error) {
	base, _, innerEnc, inner, err := parseDeltaRecord(stored)
	if err != nil {
		return nil, err
	}
	if budget < 1 {
		return nil, fmt.Errorf("%w: delta chain longer than %d records (or a cycle) at %s", ErrCorrupt, MaxDeltaDepth, e.id.Short())
	}
	if base == e.id {
		return nil, fmt.Errorf("%w: %s is a delta on itself", ErrCorrupt, e.id.Short())
	}
	delta, err := deltaBytes(innerEnc, inner, e.size)
	if err != nil {
		return nil, err
	}
	srcSize, tgtSize, err := deltaSizes(delta)
	if err != nil {
		return nil, err
	}
	if tgtSize != uint64(e.size) {
		return nil, fmt.Errorf("%w: delta produces %d bytes, index says %d", ErrCorrupt, tgtSize, e.size)
	}
	src, err := s.readBase(e, base, budget-1)
	if err != nil {
		return nil, err
	}
	if srcSize != uint64(len(src)) || len(src) == 0 {
		return nil, fmt.Errorf("%w: delta expects a base of %d bytes, base %s has %d", ErrCorrupt, srcSize, base.Short(), len(src))
	}
	// Both sizes are checked: PatchDelta allocates at most e.size bytes.
	out, err := packfile.PatchDelta(src, delta)
	if err != nil {
		return nil, fmt.Errorf("%w: delta on %s: %v", ErrCorrupt, base.Short(), err)
	}
	if len(out) != int(e.size) {
		return nil, fmt.Errorf("%w: delta produced %d bytes, index says %d", ErrCorrupt, len(out), e.size)
	}
	return out, nil
}

// readBase returns the verified content of base, the base of the delta
// record of e, allowing its chain budget more delta records. A base that is
// not stored makes e's record corrupt; one that cannot be read for an I/O
// reason is that error.
func (s *Store) readBase(e indexEntry, base ID, budget int) ([]byte, error) {
	if t, data, ok := s.bases.get(base); ok && t == e.typ {
		return data, nil
	}
	for attempt := 0; ; attempt++ {
		loc, ok := s.lookup(base)
		if !ok {
			var err error
			if loc, err = s.lookupAfterReload(base); err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil, fmt.Errorf("%w: delta base %s of %s is missing", ErrCorrupt, base, e.id)
				}
				return nil, fmt.Errorf("delta base %s of %s: %w", base.Short(), e.id.Short(), err)
			}
		}
		if loc.e.typ != e.typ {
			return nil, fmt.Errorf("%w: delta base %s of %s %s is a %s", ErrCorrupt, base.Short(), e.typ, e.id.Short(), loc.e.typ)
		}
		raw, err := readRecordBytes(loc.pack, loc.e)
		if err == nil && loc.e.enc == encDelta {
			if _, depth, _, _, perr := parseDeltaRecord(raw[recordHeader:]); perr == nil && depth > budget {
				if alt := s.shallowerCopy(loc, depth, budget); alt != loc {
					loc = alt
					raw, err = readRecordBytes(loc.pack, loc.e)
				}
			}
		}
		var data []byte
		if err == nil {
			data, err = s.decodeRecord(raw, loc.e, budget)
		}
		if errors.Is(err, fs.ErrNotExist) && attempt == 0 {
			s.Reload() // the pack was rewritten by a gc: look the base up again
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("delta base %s of %s, in pack %s: %w", base.Short(), e.id.Short(), loc.pack.name, err)
		}
		s.bases.put(base, loc.e.typ, data)
		return data, nil
	}
}

// shallowerCopy returns the shallowest copy of loc's object, when loc's
// record, at depth, is deeper than budget and another copy fits; else loc.
// Copies of one object written by different writers may have different
// depths, and each process indexes one of them: a delta written on a
// shallow copy must still read when the index holds a deep one. Only reads
// of such chains pay for the search.
func (s *Store) shallowerCopy(loc location, depth, budget int) location {
	best, bestDepth := loc, depth
	for _, c := range s.copiesOf(loc.e.id) {
		if c == loc {
			continue
		}
		if _, d, err := deltaHead(c.pack, c.e); err == nil && d < bestDepth {
			best, bestDepth = c, d
		}
	}
	if bestDepth > budget {
		return loc
	}
	return best
}

// copiesOf returns every indexed pack's copy of id (the in-memory index
// holds only one).
func (s *Store) copiesOf(id ID) []location {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []location
	for _, p := range s.packs {
		if e, ok := p.find(id); ok {
			out = append(out, location{p, e})
		}
	}
	return out
}

// deltaHead returns the base and depth of the record of e, reading only its
// first bytes: zero and 0 for a whole record.
func deltaHead(p *packFile, e indexEntry) (base ID, depth int, err error) {
	if e.enc != encDelta {
		return ID{}, 0, nil
	}
	if e.stored < deltaHeaderSize {
		return ID{}, 0, fmt.Errorf("%w: delta record of %s has %d bytes", ErrCorrupt, e.id.Short(), e.stored)
	}
	f, err := p.file()
	if err != nil {
		return ID{}, 0, err
	}
	var b [deltaHeaderSize]byte
	if _, err := f.ReadAt(b[:], int64(e.offset)+recordHeader); err != nil {
		if errors.Is(err, io.EOF) {
			return ID{}, 0, fmt.Errorf("%w: record truncated", ErrCorrupt)
		}
		return ID{}, 0, err
	}
	base, depth, _, _, err = parseDeltaRecord(b[:])
	return base, depth, err
}

// DeltaBase reports how the copy of id that reads use is stored: as a
// delta on base at depth (1 + the base's), or whole (zero base, depth 0).
// It reads the record's first bytes only: the base is not checked. An
// object not stored is ErrNotFound.
func (s *Store) DeltaBase(id ID) (base ID, depth int, err error) {
	loc, ok := s.lookup(id)
	if !ok {
		return ID{}, 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	base, depth, err = deltaHead(loc.pack, loc.e)
	if err != nil {
		return ID{}, 0, fmt.Errorf("object %s in pack %s: %w", id.Short(), loc.pack.name, err)
	}
	return base, depth, nil
}

// PutDelta is Put, except that when base is an object of type t committed
// in the store (not merely pending in this writer) whose chain is shorter
// than MaxDeltaDepth, data is stored as a delta on it if that takes at most
// half the bytes of the whole (compressed) record. Objects larger than
// 1 MiB, and any failure to read base, fall back to a whole record; the id
// is the same either way. base is typically the previous version of the
// same tree or file; it may be zero.
func (w *Writer) PutDelta(t Type, data []byte, base ID) (ID, error) {
	return w.put(t, data, base)
}

// deltaRecord returns the stored bytes of a delta record turning base into
// data (of type t), or false when base cannot serve or the delta is not
// small (see maxDeltaLen).
func (s *Store) deltaRecord(t Type, data []byte, base ID) ([]byte, bool) {
	if len(data) == 0 || len(data) > deltaMaxObject {
		return nil, false
	}
	loc, ok := s.lookup(base)
	if !ok || loc.e.typ != t || loc.e.size == 0 || loc.e.size > deltaMaxObject {
		return nil, false
	}
	_, depth, err := deltaHead(loc.pack, loc.e)
	if err != nil || depth >= MaxDeltaDepth {
		return nil, false
	}
	_, src, err := s.Read(base)
	if err != nil {
		return nil, false
	}
	delta := packfile.DiffDelta(src, data)
	if len(delta) > maxDeltaLen(len(data)) {
		return nil, false
	}
	inner, innerEnc := compress(delta, false)
	if out, err := packfile.PatchDelta(src, delta); err != nil || !bytes.Equal(out, data) {
		return nil, false // never store a delta that does not reproduce data
	}
	rec := make([]byte, 0, deltaHeaderSize+len(inner))
	rec = append(rec, base[:]...)
	rec = append(rec, byte(depth+1), innerEnc)
	return append(rec, inner...), true
}
