package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/blake3"

	"github.com/snapcore-dev/snap/internal/bin"
	"github.com/snapcore-dev/snap/objects"
)

// The cache file (doc.go, "On-disk format"): a block per directory, then a
// table of the blocks, then a footer. Only the table is decoded when the
// file is loaded; a block when its directory is first used.
const (
	magic       = "SNAPSTC3"                // SNAPSTC1 and SNAPSTC2 load as corrupt: one re-hash
	footerMagic = "SNAPSTCE"                // ends the file
	footerSize  = 8 + 4 + 32 + 8            // table offset, blocks, blake3 of the table, footerMagic
	statSize    = 8 + 8 + 8 + 8 + 4 + 8     // size, mtime, ctime, inode, mode, recorded
	entryTail   = statSize + objects.IDSize // what follows a file's name in a block
	tableTail   = 4 + 4 + 4 + 4             // what follows a directory in the table
	hasListing  = 1                         // block flag
)

// cacheFile is a cache file as read: its bytes, and its table.
type cacheFile struct {
	data   []byte
	dirs   []string                   // sorted; substrings of data
	blocks []block                    // dirs[i]'s
	states []atomic.Pointer[dirState] // dirs[i]'s, once decoded (Cache.fileState)

	// index maps each directory to its block, built once lookups are many
	// (a full scan): bisecting 25,000 names per file looked up costs more.
	index    atomic.Pointer[map[string]int32]
	searches atomic.Int32
	once     sync.Once
}

// indexAfter: searches of the table before find builds its index.
const indexAfter = 1024

// block locates one directory's block in the file.
type block struct {
	off, n, crc, files uint32
}

// find returns the index of directory dir's block.
func (f *cacheFile) find(dir string) (int, bool) {
	if m := f.index.Load(); m != nil {
		i, ok := (*m)[dir]
		return int(i), ok
	}
	if f.searches.Add(1) == indexAfter {
		f.once.Do(func() {
			m := make(map[string]int32, len(f.dirs))
			for i, d := range f.dirs {
				m[d] = int32(i)
			}
			f.index.Store(&m)
		})
	}
	return slices.BinarySearch(f.dirs, dir)
}

// decode decodes block i; an error wraps ErrCorrupt.
func (f *cacheFile) decode(i int) (*dirState, error) {
	b := f.blocks[i]
	raw := f.data[b.off : b.off+b.n]
	if crc32.Checksum(raw, bin.Castagnoli) != b.crc {
		return nil, fmt.Errorf("%w: block of %q: checksum mismatch", ErrCorrupt, f.dirs[i])
	}
	d := &decoder{all: unsafe.String(unsafe.SliceData(raw), len(raw))}
	return d.block(f.dirs[i], b.files)
}

// block decodes a directory's block (named dir, with files entries).
func (d *decoder) block(dir string, files uint32) (*dirState, error) {
	s := &dirState{}
	switch flags := d.bytes("flags", 1); {
	case d.err != nil:
	case flags == "\x01":
		l := &listing{}
		l.Stat, l.Recorded = d.stat("directory")
		n := d.uvarint("name count", uint64(len(d.all)-d.pos)/2) // a name takes at least 2 bytes
		l.Names = make([]string, 0, n)
		for j := uint64(0); j < n && d.err == nil; j++ {
			name := d.string("name", 0)
			if d.err == nil && (name == "" || j > 0 && name <= l.Names[j-1]) {
				return nil, fmt.Errorf("%w: names of %q unsorted", ErrCorrupt, dir)
			}
			l.Names = append(l.Names, name)
		}
		s.list = l
	case flags != "\x00":
		return nil, fmt.Errorf("%w: block of %q: bad flags", ErrCorrupt, dir)
	}
	if n := d.uvarint("file count", uint64(len(d.all))); d.err == nil && n != uint64(files) {
		return nil, fmt.Errorf("%w: block of %q: %d files, the table says %d", ErrCorrupt, dir, n, files)
	}
	if d.err == nil && uint64(files) > uint64(len(d.all)-d.pos)/(1+entryTail) {
		return nil, fmt.Errorf("%w: block of %q: file count too large", ErrCorrupt, dir)
	}
	if d.err == nil {
		s.names, s.ents = make([]string, files), make([]Entry, files)
	}
	for i := 0; i < int(files) && d.err == nil; i++ {
		name := d.string("name", entryTail)
		if d.err == nil && (name == "" || strings.IndexByte(name, '/') >= 0 || i > 0 && name <= s.names[i-1]) {
			return nil, fmt.Errorf("%w: files of %q unsorted or badly named", ErrCorrupt, dir)
		}
		s.names[i] = name
		e := &s.ents[i]
		e.Stat, e.Recorded = d.stat("entry")
		copy(e.ID[:], d.bytes("entry", objects.IDSize))
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.pos != len(d.all) {
		return nil, fmt.Errorf("%w: block of %q: %d trailing bytes", ErrCorrupt, dir, len(d.all)-d.pos)
	}
	return s, nil
}

// appendBlock encodes a directory's state as a block.
func (s *dirState) appendBlock(b []byte) []byte {
	if l := s.list; l != nil {
		b = append(b, hasListing)
		b = appendStat(b, l.Stat, l.Recorded)
		b = binary.AppendUvarint(b, uint64(len(l.Names)))
		for _, n := range l.Names {
			b = appendString(b, n)
		}
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(s.names)))
	for i, n := range s.names {
		b = appendString(b, n)
		b = appendStat(b, s.ents[i].Stat, s.ents[i].Recorded)
		b = append(b, s.ents[i].ID[:]...)
	}
	return b
}

// encodeLocked encodes the whole cache: the blocks of the directories
// used since it was loaded encoded again, the others copied as the file
// had them. It returns the file and its checksum (that of its table).
func (c *Cache) encodeLocked() ([]byte, []byte) {
	type dirOut struct {
		dir   string
		state *dirState // nil: the file's block raw is copied
		raw   block
	}
	out := make([]dirOut, 0, len(c.dirs))
	size := len(magic) + footerSize
	for d, s := range c.dirs {
		out = append(out, dirOut{dir: d, state: s})
	}
	if c.file != nil {
		for i, d := range c.file.dirs {
			o := dirOut{dir: d, state: c.file.states[i].Load(), raw: c.file.blocks[i]}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b dirOut) int { return strings.Compare(a.dir, b.dir) })
	for _, o := range out {
		size += binary.MaxVarintLen64 + len(o.dir) + tableTail
		if s := o.state; s == nil {
			size += int(o.raw.n)
		} else {
			size += 1 + statSize + 2*binary.MaxVarintLen64 + len(s.names)*(binary.MaxVarintLen64+entryTail)
			for _, n := range s.names {
				size += len(n)
			}
			if s.list != nil {
				for _, n := range s.list.Names {
					size += binary.MaxVarintLen64 + len(n)
				}
			}
		}
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	table := make([]byte, 0, len(out)*(binary.MaxVarintLen64+tableTail+16))
	n := 0
	for _, o := range out {
		off := len(b)
		var files, crc uint32
		if s := o.state; s == nil {
			b = append(b, c.file.data[o.raw.off:o.raw.off+o.raw.n]...)
			files, crc = o.raw.files, o.raw.crc
		} else if s.empty() {
			continue
		} else {
			b = s.appendBlock(b)
			files = uint32(len(s.names))
			crc = crc32.Checksum(b[off:], bin.Castagnoli)
		}
		table = appendString(table, o.dir)
		table = binary.LittleEndian.AppendUint32(table, uint32(off))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(b)-off))
		table = binary.LittleEndian.AppendUint32(table, crc)
		table = binary.LittleEndian.AppendUint32(table, files)
		n++
	}
	tableOff := len(b)
	b = append(b, table...)
	sum := blake3.Sum256(table)
	b = binary.LittleEndian.AppendUint64(b, uint64(tableOff))
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, sum[:]...)
	b = append(b, footerMagic...)
	return b, b[len(b)-len(footerMagic)-32 : len(b)-len(footerMagic)]
}

func appendStat(b []byte, st Stat, recorded int64) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Mtime))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Ctime))
	b = binary.LittleEndian.AppendUint64(b, st.Ino)
	b = binary.LittleEndian.AppendUint32(b, uint32(st.Mode))
	return binary.LittleEndian.AppendUint64(b, uint64(recorded))
}

func decodeStat(b []byte) (Stat, int64) {
	return Stat{
		Size:  int64(binary.LittleEndian.Uint64(b)),
		Mtime: int64(binary.LittleEndian.Uint64(b[8:])),
		Ctime: int64(binary.LittleEndian.Uint64(b[16:])),
		Ino:   binary.LittleEndian.Uint64(b[24:]),
		Mode:  fs.FileMode(binary.LittleEndian.Uint32(b[32:])),
	}, int64(binary.LittleEndian.Uint64(b[36:]))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a part of a cache file. Strings are substrings of one
// string holding that part, not allocations of their own.
type decoder struct {
	all string
	pos int
	err error
}

// uvarint reads a canonical uvarint no larger than max.
func (d *decoder) uvarint(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	b := d.all[d.pos:min(len(d.all), d.pos+binary.MaxVarintLen64)]
	n, k := binary.Uvarint([]byte(b))
	if k <= 0 || n > max {
		d.err = fmt.Errorf("%w: %s truncated or too large", ErrCorrupt, what)
		return 0
	}
	if k != len(binary.AppendUvarint(nil, n)) {
		d.err = fmt.Errorf("%w: %s: non-canonical length", ErrCorrupt, what)
		return 0
	}
	d.pos += k
	return n
}

// bytes returns the next n bytes.
func (d *decoder) bytes(what string, n int) string {
	if d.err != nil {
		return ""
	}
	if n < 0 || n > len(d.all)-d.pos {
		d.err = fmt.Errorf("%w: %s truncated", ErrCorrupt, what)
		return ""
	}
	s := d.all[d.pos : d.pos+n]
	d.pos += n
	return s
}

// string reads a length-prefixed string, followed by at least tail bytes.
func (d *decoder) string(what string, tail int) string {
	n := d.uvarint(what, uint64(len(d.all)))
	if d.err == nil && n > uint64(len(d.all)-d.pos-tail) {
		d.err = fmt.Errorf("%w: %s truncated", ErrCorrupt, what)
	}
	return d.bytes(what, int(n))
}

func (d *decoder) stat(what string) (Stat, int64) {
	if b := d.bytes(what, statSize); d.err == nil {
		return decodeStat([]byte(b))
	}
	return Stat{}, 0
}

func (d *decoder) u32(what string) uint32 {
	if b := d.bytes(what, 4); d.err == nil {
		return binary.LittleEndian.Uint32([]byte(b))
	}
	return 0
}

// Decode parses a cache file's footer and table, checking the table's
// checksum, that directories are strictly sorted and that the blocks lie
// one after the other between the header and the table. Blocks are
// checked (CRC-32C, structure) when their directory is first used: a
// damaged one loads as an empty directory. The cache shares data's memory:
// data must not be modified afterwards.
func Decode(data []byte) (*Cache, error) {
	if len(data) < len(magic)+footerSize || string(data[:len(magic)]) != magic ||
		string(data[len(data)-len(footerMagic):]) != footerMagic {
		return nil, fmt.Errorf("%w: bad header or footer", ErrCorrupt)
	}
	foot := data[len(data)-footerSize:]
	tableOff := binary.LittleEndian.Uint64(foot)
	nblocks := binary.LittleEndian.Uint32(foot[8:])
	sum := foot[12 : 12+32]
	if tableOff < uint64(len(magic)) || tableOff > uint64(len(data)-footerSize) || len(data) > math32 {
		return nil, fmt.Errorf("%w: bad table offset", ErrCorrupt)
	}
	table := data[tableOff : len(data)-footerSize]
	if got := blake3.Sum256(table); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: table checksum mismatch", ErrCorrupt)
	}
	if uint64(nblocks) > uint64(len(table))/(1+tableTail) {
		return nil, fmt.Errorf("%w: bad block count", ErrCorrupt)
	}
	f := &cacheFile{data: data, dirs: make([]string, nblocks), blocks: make([]block, nblocks),
		states: make([]atomic.Pointer[dirState], nblocks)}
	c := New()
	c.file, c.sum = f, sum
	d := &decoder{all: unsafe.String(unsafe.SliceData(table), len(table))}
	next := uint32(len(magic))
	for i := range f.dirs {
		dir := d.string("directory", tableTail)
		b := block{off: d.u32("offset"), n: d.u32("length"), crc: d.u32("checksum"), files: d.u32("file count")}
		if d.err != nil {
			return nil, d.err
		}
		if i > 0 && dir <= f.dirs[i-1] || strings.HasPrefix(dir, "/") || strings.HasSuffix(dir, "/") {
			return nil, fmt.Errorf("%w: directories unsorted or badly named at %q", ErrCorrupt, dir)
		}
		if b.off != next || b.n == 0 || uint64(b.off)+uint64(b.n) > tableOff {
			return nil, fmt.Errorf("%w: block of %q out of place", ErrCorrupt, dir)
		}
		next = b.off + b.n
		f.dirs[i], f.blocks[i] = dir, b
		c.count += int(b.files)
	}
	if uint64(next) != tableOff {
		return nil, fmt.Errorf("%w: %d bytes between the blocks and the table", ErrCorrupt, tableOff-uint64(next))
	}
	if d.pos != len(d.all) {
		return nil, fmt.Errorf("%w: %d trailing bytes in the table", ErrCorrupt, len(d.all)-d.pos)
	}
	return c, nil
}

// math32: a cache file's offsets are 32-bit.
const math32 = 1<<32 - 1
