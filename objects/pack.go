package objects

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/zeebo/blake3"

	"github.com/snapcore-dev/snap/storage"
)

// Pack file layout (all integers little-endian):
//
//	header   "SNAPPACK" | version u32                                  12 bytes
//	records  { type u8 | enc u8 | size u32 | stored u32 | data }…     enc 0 raw, 1 zstd, 2 delta
//	delta    data = base id [32] | depth u8 | inner enc u8 | inner bytes
//	         inner enc 0 raw / 1 zstd; the inner bytes decode to a git
//	         delta (copy/insert instructions, preceded by the LEB128 source
//	         and target sizes) that turns the canonical bytes of base, an
//	         object of the same type, into this object's; depth is 1 + the
//	         base's (0 for a whole record), at most MaxDeltaDepth
//	index    count × { id [32] | type u8 | enc u8 | offset u64 | stored u32 | size u32 }
//	         sorted by id, offset pointing at the record header
//	footer   index offset u64 | count u32 | blake3-256(index) | "SNAPEND1"
//
// A pack is written to a temporary file, fsync'd, and renamed to
// packs/<blake3(index) hex>.pack; it is never modified afterwards.
const (
	packMagic      = "SNAPPACK"
	packEndMagic   = "SNAPEND1"
	packVersion    = 1
	packHeaderSize = 12
	recordHeader   = 10
	indexEntrySize = IDSize + 1 + 1 + 8 + 4 + 4
	packFooterSize = 8 + 4 + 32 + 8
	maxPackEntries = 1 << 26
	packFileSuffix = ".pack"
	packTempPrefix = "pack-" // then the writer's pid and "-": see TempPackPID
)

// indexEntry locates one object inside a pack.
type indexEntry struct {
	id     ID
	typ    Type
	enc    byte
	offset uint64
	stored uint32 // bytes in the pack, excluding the record header
	size   uint32 // decoded bytes
}

func packHeader() []byte {
	b := make([]byte, packHeaderSize)
	copy(b, packMagic)
	binary.LittleEndian.PutUint32(b[8:], packVersion)
	return b
}

func recordHeaderBytes(e indexEntry) []byte {
	var b [recordHeader]byte
	b[0] = byte(e.typ)
	b[1] = e.enc
	binary.LittleEndian.PutUint32(b[2:], e.size)
	binary.LittleEndian.PutUint32(b[6:], e.stored)
	return b[:]
}

// encodeIndex returns the index and footer for entries (sorted in place).
func encodeIndex(entries []indexEntry, indexOffset uint64) (index, footer []byte) {
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].id[:], entries[j].id[:]) < 0 })
	index = make([]byte, 0, len(entries)*indexEntrySize)
	for _, e := range entries {
		index = append(index, e.id[:]...)
		index = append(index, byte(e.typ), e.enc)
		index = binary.LittleEndian.AppendUint64(index, e.offset)
		index = binary.LittleEndian.AppendUint32(index, e.stored)
		index = binary.LittleEndian.AppendUint32(index, e.size)
	}
	sum := blake3.Sum256(index)
	footer = binary.LittleEndian.AppendUint64(nil, indexOffset)
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(entries)))
	footer = append(footer, sum[:]...)
	footer = append(footer, packEndMagic...)
	return index, footer
}

// parseFooter validates a footer against the pack's size and returns where
// the index starts and how many entries it has.
func parseFooter(footer []byte, packSize int64) (offset uint64, count int, sum []byte, err error) {
	if len(footer) != packFooterSize || string(footer[packFooterSize-8:]) != packEndMagic {
		return 0, 0, nil, fmt.Errorf("%w: pack footer missing", ErrCorrupt)
	}
	offset = binary.LittleEndian.Uint64(footer)
	n := binary.LittleEndian.Uint32(footer[8:])
	// No overflow: n ≤ 2^26 and offset is checked against the size first.
	if n > maxPackEntries || offset < packHeaderSize || offset > uint64(packSize) ||
		uint64(packSize)-offset != uint64(n)*indexEntrySize+packFooterSize {
		return 0, 0, nil, fmt.Errorf("%w: pack footer inconsistent with file size", ErrCorrupt)
	}
	return offset, int(n), footer[12:44], nil
}

// DecodePackIndex parses and validates a pack index: checksum, sorted unique
// ids, known types and encodings, and every record lying inside the data
// region [packHeaderSize, dataEnd) without overlap.
func DecodePackIndex(index, sum []byte, dataEnd uint64) ([]indexEntry, error) {
	return decodePackIndex(index, sum, dataEnd)
}

// decodePackIndex is DecodePackIndex, used where the index must be trusted
// whole (gc, fsck: Store.CheckIndexes). Opening a store checks none of it
// (loadPack): an entry is decoded and checked when a lookup finds it
// (packFile.find), since every read re-hashes what it decodes, so a
// damaged index cannot make a read return wrong bytes (at worst an object
// looks absent, or its read fails). Decoding every entry at open was the
// cost of opening a store that grew with its number of objects.
func decodePackIndex(index, sum []byte, dataEnd uint64) ([]indexEntry, error) {
	if got := blake3.Sum256(index); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: pack index checksum mismatch", ErrCorrupt)
	}
	if len(index)%indexEntrySize != 0 {
		return nil, fmt.Errorf("%w: pack index length", ErrCorrupt)
	}
	entries := make([]indexEntry, len(index)/indexEntrySize)
	for i := range entries {
		e := &entries[i]
		*e = decodeEntry(index[i*indexEntrySize:])
		if err := e.valid(dataEnd); err != nil {
			return nil, err
		}
		if i > 0 && bytes.Compare(entries[i-1].id[:], e.id[:]) >= 0 {
			return nil, fmt.Errorf("%w: pack index unsorted or duplicate at %s", ErrCorrupt, e.id.Short())
		}
	}
	// Records must not overlap.
	spans := make([][2]uint64, len(entries))
	for i, e := range entries {
		spans[i] = [2]uint64{e.offset, e.offset + recordHeader + uint64(e.stored)}
	}
	slices.SortFunc(spans, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(spans); i++ {
		if spans[i-1][1] > spans[i][0] {
			return nil, fmt.Errorf("%w: pack records overlap at offset %d", ErrCorrupt, spans[i][0])
		}
	}
	return entries, nil
}

// decodeEntry decodes the index entry at the start of b.
func decodeEntry(b []byte) indexEntry {
	var e indexEntry
	copy(e.id[:], b)
	e.typ = Type(b[32])
	e.enc = b[33]
	e.offset = binary.LittleEndian.Uint64(b[34:])
	e.stored = binary.LittleEndian.Uint32(b[42:])
	e.size = binary.LittleEndian.Uint32(b[46:])
	return e
}

// valid checks an entry's structure: a known type and encoding, a size no
// object has beyond, a record lying inside the data region [packHeaderSize,
// dataEnd).
func (e *indexEntry) valid(dataEnd uint64) error {
	if !e.typ.Valid() || e.enc > encDelta || e.size > MaxObjectSize {
		return fmt.Errorf("%w: pack index entry %s: bad type, encoding or size", ErrCorrupt, e.id.Short())
	}
	if e.offset < packHeaderSize || e.offset > dataEnd || dataEnd-e.offset < recordHeader+uint64(e.stored) {
		return fmt.Errorf("%w: pack index entry %s points outside the pack", ErrCorrupt, e.id.Short())
	}
	return nil
}

// checkRecordHeader verifies that the record header at e.offset agrees with
// the index entry.
func checkRecordHeader(h []byte, e indexEntry) error {
	if len(h) != recordHeader || Type(h[0]) != e.typ || h[1] != e.enc ||
		binary.LittleEndian.Uint32(h[2:]) != e.size || binary.LittleEndian.Uint32(h[6:]) != e.stored {
		return fmt.Errorf("%w: record header of %s disagrees with the pack index", ErrCorrupt, e.id.Short())
	}
	return nil
}

// TempPackPID returns the pid of the process that wrote the temporary pack
// file name, or 0 when the name does not say.
func TempPackPID(name string) int {
	var pid int
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, packTempPrefix), "%d-", &pid); err != nil || !strings.HasPrefix(name, packTempPrefix) {
		return 0
	}
	return pid
}

// RemoveStaleTemps removes the temporary packs (tmp/) of writers that are
// gone: those not modified since cutoff (a live writer's file is recent,
// since it is being written), and younger ones whose name carries the pid
// of a process that no longer exists. It returns how many files and bytes
// it removed (with dryRun, would remove).
func (s *Store) RemoveStaleTemps(cutoff time.Time, dryRun bool) (n int, bytes int64, err error) {
	tr, ok := s.blobs.(storage.TempRemover)
	if !ok {
		return 0, 0, nil // a store whose writers leave nothing behind
	}
	return tr.RemoveTemps(func(name string, modTime time.Time) bool {
		pid := TempPackPID(name)
		deadWriter := pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		return !modTime.After(cutoff) || deadWriter
	}, dryRun)
}
