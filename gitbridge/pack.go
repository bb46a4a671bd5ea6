package gitbridge

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/klauspost/compress/zlib"
)

// An export writes its objects into one git pack, each blob and tree a
// delta against the same path's object in the parent checkpoint when that
// saves space, as git's own pack-objects would (it cannot know the paths
// so exactly); a transcript that grew by a few messages costs those
// messages, not another compressed copy of all of it. Deltas point back
// into the same pack only (OFS_DELTA), so the pack stands alone, and no
// chain is deeper than git's default (pack.depth 50): a chain at that depth
// goes on from a delta against its segment's root, which becomes the next
// segment's root (a transcript's 1,000 versions are 1,000 deltas, where
// cutting the chain made 20 whole copies), until the roots' own chain is
// that deep and a whole copy starts again. Objects over
// packDeltaMax are streamed into the pack whole, never held in memory.
// Fewer than git's transfer.unpackLimit objects are written loose
// instead, as git's own fetch does, so that many small exports do not
// leave many small packs.
const (
	packMaxDepth   = 50
	packDeltaMax   = 16 << 20 // larger objects are written whole, streamed
	packDiffMax    = 8 << 20  // a base larger than this is tried only as a prefix
	packCacheBytes = 32 << 20 // recent objects' contents kept as delta bases; as much again for roots
	unpackLimit    = 100
	packTempPrefix = "tmp_pack_snap_" // git's prune removes tmp_ files it finds old
)

// Object kinds in a pack record's header (git's pack format).
const (
	packOfsDelta = 6
)

// packEntry is where an object is in the pack being written.
type packEntry struct {
	off   int64
	crc   uint32
	typ   plumbing.ObjectType
	base  plumbing.Hash // the delta's base, zero when stored whole
	depth int
	root  plumbing.Hash // the first object of its segment of the chain (itself for a root)
}

// packWriter writes objects into a temporary pack file in the repository's
// objects/pack directory; finish names it, with its index, as git does.
type packWriter struct {
	fs    billy.Filesystem           // the repository's (objects/ in its common directory)
	dir   string                     // objects/pack on the disk ("" unknown): where finish sets modes
	st    storer.EncodedObjectStorer // the repository's objects, for what it has and loose writes
	f     billy.File                 // nil until the first object
	out   *bufio.Writer
	off   int64 // bytes written to f through out
	objs  map[plumbing.Hash]*packEntry
	order []plumbing.Hash
	big   int // objects streamed whole: the pack is kept whatever its count
	cache contentCache
	roots contentCache // the contents of segments' roots, the next segment's bases
	zw    *zlib.Writer
}

func newPackWriter(fs billy.Filesystem, st storer.EncodedObjectStorer, gitDir string) *packWriter {
	return &packWriter{fs: fs, st: st, dir: packDirOf(gitDir), objs: map[plumbing.Hash]*packEntry{}}
}

// packDirOf is the objects/pack directory of the repository whose git
// directory is gitDir ("" when gitDir is): in its common directory for a
// linked worktree, as git and go-git find it.
func packDirOf(gitDir string) string {
	if gitDir == "" {
		return ""
	}
	dir := gitDir
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		if dir = strings.TrimSpace(string(c)); !filepath.IsAbs(dir) {
			dir = filepath.Join(gitDir, dir)
		}
	}
	return filepath.Join(dir, "objects", "pack")
}

// has reports whether the pack or the repository holds h.
func (p *packWriter) has(h plumbing.Hash) bool {
	if _, ok := p.objs[h]; ok {
		return true
	}
	return p.st.HasEncodedObject(h) == nil
}

// add writes an object of type typ and content data (kept by the writer as
// a possible delta base: the caller must not change it) unless the pack or
// the repository has it, as a delta against base when base is an object of
// the same type in this pack whose content is still at hand and the delta
// is under half the object. wrote says whether it was written.
func (p *packWriter) add(typ plumbing.ObjectType, data []byte, base plumbing.Hash) (h plumbing.Hash, wrote bool, err error) {
	h = plumbing.ComputeHash(typ, data)
	if p.has(h) {
		return h, false, nil
	}
	e := &packEntry{typ: typ, root: h}
	if b, ok := p.objs[base]; ok && b.typ == typ {
		root := b.root // this object's root, unless it starts a segment
		src := p.cache.get(base)
		if b.depth >= packMaxDepth {
			base, b, root, src = b.root, p.objs[b.root], h, nil
			if b.depth+1 < packMaxDepth {
				if src = p.roots.get(base); src == nil {
					_, src, _, _ = p.get(base)
				}
			}
		}
		if src != nil {
			if d := deltaOf(src, data); d != nil {
				e.base, e.depth, e.root = base, b.depth+1, root
				err = p.record(h, e, packOfsDelta, int64(len(d)), b.off, func(w io.Writer) error {
					_, err := w.Write(d)
					return err
				})
			}
		}
	}
	if e.base.IsZero() {
		err = p.record(h, e, int(typ), int64(len(data)), 0, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	p.cache.put(h, data)
	if e.root == h && len(data) >= 64<<10 { // (a small one is cheap to read back)
		p.roots.put(h, data)
	}
	return h, true, nil
}

// addStream writes a blob of size bytes that write produces (called once
// to hash it and again to store it, when the repository lacks it), whole.
func (p *packWriter) addStream(size int64, write func(io.Writer) error) (h plumbing.Hash, wrote bool, err error) {
	hasher := plumbing.NewHasher(plumbing.BlobObject, size)
	if err := write(hasher); err != nil {
		return plumbing.ZeroHash, false, err
	}
	h = hasher.Sum()
	if p.has(h) {
		return h, false, nil
	}
	n := &countWriter{}
	err = p.record(h, &packEntry{typ: plumbing.BlobObject}, int(plumbing.BlobObject), size, 0, func(w io.Writer) error {
		return write(io.MultiWriter(w, n))
	})
	if err == nil && n.n != size {
		err = fmt.Errorf("blob %s: %d bytes written, %d expected", h, n.n, size)
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	p.big++
	return h, true, nil
}

// record appends one object: its header (kind, size), the distance back
// to its base for a delta, and its body compressed.
func (p *packWriter) record(h plumbing.Hash, e *packEntry, kind int, size, baseOff int64, body func(io.Writer) error) error {
	if p.f == nil {
		f, err := p.fs.TempFile(path.Join("objects", "pack"), packTempPrefix)
		if err != nil {
			return fmt.Errorf("git pack: %w", err)
		}
		p.f, p.out, p.off = f, bufio.NewWriterSize(f, 1<<20), 0
		if _, err := p.out.Write(make([]byte, 12)); err != nil { // the header, written by finish
			return err
		}
		p.off = 12
	}
	e.off = p.off
	crc := crc32.NewIEEE()
	w := &countWriter{w: io.MultiWriter(p.out, crc)}
	hdr := packObjectHeader(kind, size)
	if kind == packOfsDelta {
		hdr = append(hdr, packOffset(e.off-baseOff)...)
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	if p.zw == nil {
		p.zw = zlib.NewWriter(w)
	} else {
		p.zw.Reset(w)
	}
	err := body(p.zw)
	if cerr := p.zw.Close(); err == nil {
		err = cerr
	}
	p.off += w.n
	if err != nil {
		return err
	}
	e.crc = crc.Sum32()
	p.objs[h] = e
	p.order = append(p.order, h)
	return nil
}

// get returns the type and content of an object in the pack (nil, false
// when it is not there).
func (p *packWriter) get(h plumbing.Hash) (plumbing.ObjectType, []byte, bool, error) {
	e, ok := p.objs[h]
	if !ok {
		return plumbing.InvalidObject, nil, false, nil
	}
	if data := p.cache.get(h); data != nil {
		return e.typ, data, true, nil
	}
	if err := p.out.Flush(); err != nil {
		return e.typ, nil, true, err
	}
	r := bufio.NewReader(io.NewSectionReader(p.f, e.off, p.off-e.off))
	c, err := r.ReadByte()
	for err == nil && c&0x80 != 0 { // the size, known from the inflated body
		c, err = r.ReadByte()
	}
	if err == nil && !e.base.IsZero() {
		c, err = r.ReadByte()
		for err == nil && c&0x80 != 0 {
			c, err = r.ReadByte()
		}
	}
	var body []byte
	if err == nil {
		var zr io.ReadCloser
		if zr, err = zlib.NewReader(r); err == nil {
			body, err = io.ReadAll(zr)
			zr.Close()
		}
	}
	if err == nil && !e.base.IsZero() {
		var base []byte
		if _, base, _, err = p.get(e.base); err == nil {
			body, err = packfile.PatchDelta(base, body)
		}
	}
	if err != nil {
		return e.typ, nil, true, fmt.Errorf("git pack being written: object %s: %w", h, err)
	}
	return e.typ, body, true, nil
}

// finish makes the pack part of the repository: with its header and
// checksum, synced, named pack-<checksum>.pack beside its index as git
// names them; or, under unpackLimit objects, as loose objects. The writer
// is then empty, ready for more.
func (p *packWriter) finish() (err error) {
	if p.f == nil {
		return nil
	}
	defer p.abort()
	if err := p.out.Flush(); err != nil {
		return err
	}
	if len(p.order) < unpackLimit && p.big == 0 {
		for _, h := range p.order {
			typ, data, _, err := p.get(h)
			if err != nil {
				return err
			}
			obj := p.st.NewEncodedObject()
			obj.SetType(typ)
			obj.SetSize(int64(len(data)))
			w, err := obj.Writer()
			if err == nil {
				_, err = w.Write(data)
			}
			if err == nil {
				_, err = p.st.SetEncodedObject(obj)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	hdr := append([]byte("PACK"), 0, 0, 0, 2)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(p.order)))
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := p.f.Write(hdr); err != nil {
		return err
	}
	sum := sha1.New()
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.CopyN(sum, p.f, p.off); err != nil {
		return err
	}
	var checksum plumbing.Hash
	copy(checksum[:], sum.Sum(nil))
	if _, err := p.f.Write(checksum[:]); err != nil { // at the end: the copy read up to it
		return err
	}
	if err := syncClose(p.f); err != nil {
		return err
	}
	iw := new(idxfile.Writer)
	for _, h := range p.order {
		e := p.objs[h]
		iw.Add(h, uint64(e.off), e.crc)
	}
	if err := iw.OnFooter(checksum); err != nil {
		return err
	}
	idx, err := iw.Index()
	if err != nil {
		return err
	}
	idxFile, err := p.fs.TempFile(path.Join("objects", "pack"), packTempPrefix)
	if err != nil {
		return err
	}
	defer p.fs.Remove(idxFile.Name()) // gone once renamed
	if _, err := idxfile.NewEncoder(idxFile).Encode(idx); err != nil {
		idxFile.Close()
		return err
	}
	if err := syncClose(idxFile); err != nil {
		return err
	}
	name := path.Join("objects", "pack", "pack-"+checksum.String())
	// The pack first: a reader finds a pack by its index.
	for _, mv := range [][2]string{{p.f.Name(), name + ".pack"}, {idxFile.Name(), name + ".idx"}} {
		if p.dir != "" {
			// Read-only, as git leaves its packs (readable by the group of
			// a shared repository: torture/pack-findings 01). On the disk
			// itself: go-git's file systems have no chmod.
			os.Chmod(filepath.Join(p.dir, path.Base(mv[0])), 0o444)
		}
		if err := p.fs.Rename(mv[0], mv[1]); err != nil {
			return fmt.Errorf("git pack: %w", err)
		}
	}
	if r, ok := p.st.(interface{ Reindex() }); ok {
		r.Reindex()
	}
	return nil
}

// abort removes the pack being written, if any, and empties the writer.
func (p *packWriter) abort() {
	if p.f != nil {
		p.f.Close()
		p.fs.Remove(p.f.Name())
	}
	p.f, p.out, p.off, p.big = nil, nil, 0, 0
	p.objs, p.order = map[plumbing.Hash]*packEntry{}, nil
	p.cache, p.roots = contentCache{}, contentCache{}
}

func syncClose(f billy.File) error {
	if s, ok := f.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// packObjectHeader is a pack record's header: its kind and size.
func packObjectHeader(kind int, size int64) []byte {
	c := byte(kind<<4) | byte(size&15)
	size >>= 4
	var hdr []byte
	for size != 0 {
		hdr = append(hdr, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(hdr, c)
}

// packOffset encodes an OFS_DELTA's distance back to its base.
func packOffset(ofs int64) []byte {
	var b [10]byte
	i := len(b) - 1
	b[i] = byte(ofs & 0x7f)
	for ofs >>= 7; ofs != 0; ofs >>= 7 {
		ofs--
		i--
		b[i] = 0x80 | byte(ofs&0x7f)
	}
	return b[i:]
}

// deltaOf is a git delta that makes target from base, or nil when it
// would not save half of target. A target that extends its base (a
// transcript, a log) is recognised by its prefix, in time proportional to
// the bytes compared; otherwise bases up to packDiffMax are indexed.
func deltaOf(base, target []byte) []byte {
	var d []byte
	switch {
	case len(base) > 0 && bytes.HasPrefix(target, base):
		d = appendDeltaSize(nil, len(base))
		d = appendDeltaSize(d, len(target))
		for off := 0; off < len(base); off += 0x10000 {
			d = appendCopy(d, off, min(0x10000, len(base)-off))
		}
		for rest := target[len(base):]; len(rest) > 0; {
			n := min(len(rest), 0x7f)
			d = append(append(d, byte(n)), rest[:n]...)
			rest = rest[n:]
			if len(d) >= len(target)/2 {
				return nil
			}
		}
	case len(base) <= packDiffMax && len(target) <= packDeltaMax:
		d = packfile.DiffDelta(base, target)
	}
	if d == nil || len(d) >= len(target)/2 {
		return nil
	}
	return d
}

func appendDeltaSize(d []byte, n int) []byte {
	for n >= 0x80 {
		d = append(d, byte(n)|0x80)
		n >>= 7
	}
	return append(d, byte(n))
}

// appendCopy appends a delta instruction copying n (1 to 0x10000) bytes
// of the base from off.
func appendCopy(d []byte, off, n int) []byte {
	at := len(d)
	code := byte(0x80)
	d = append(d, 0)
	for i := 0; i < 4; i++ {
		if b := byte(off >> (8 * i)); b != 0 {
			code |= 1 << i
			d = append(d, b)
		}
	}
	if n != 0x10000 { // 0x10000 is written as no size bytes
		for i := 0; i < 3; i++ {
			if b := byte(n >> (8 * i)); b != 0 {
				code |= 0x10 << i
				d = append(d, b)
			}
		}
	}
	d[at] = code
	return d
}

// contentCache keeps the contents of the objects written last, up to
// packCacheBytes (one up to half of it), as bases for the next ones'
// deltas. (A snap process runs under a soft memory limit of 160 MiB,
// cmd/snap/main.go: more here made the collector run all the time.)
type contentCache struct {
	m     map[plumbing.Hash][]byte
	fifo  []plumbing.Hash
	bytes int
}

func (c *contentCache) get(h plumbing.Hash) []byte { return c.m[h] }

func (c *contentCache) put(h plumbing.Hash, data []byte) {
	if len(data) > packCacheBytes/2 {
		return
	}
	if c.m == nil {
		c.m = map[plumbing.Hash][]byte{}
	}
	c.m[h] = data
	c.fifo = append(c.fifo, h)
	c.bytes += len(data)
	for c.bytes > packCacheBytes {
		old := c.fifo[0]
		c.fifo = c.fifo[1:]
		c.bytes -= len(c.m[old])
		delete(c.m, old)
	}
}

// countWriter counts what goes through it (to w, when set).
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n := len(b)
	var err error
	if c.w != nil {
		n, err = c.w.Write(b)
	}
	c.n += int64(n)
	return n, err
}
