package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/zeebo/blake3"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
)

// Stat is what the cache compares to decide that a file is unchanged.
type Stat struct {
	Size  int64
	Mtime int64 // Unix ns
	Ctime int64 // Unix ns
	Ino   uint64
	Mode  fs.FileMode
}

// StatOf extracts a Stat from an lstat result.
func StatOf(fi fs.FileInfo) Stat {
	st := Stat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ctime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
		st.Ino = sys.Ino
	}
	return st
}

// Entry is one cached path.
type Entry struct {
	Stat
	Recorded int64 // Unix ns: when the scan that hashed the content began
	ID       objects.ID
}

// Racy-clean margins (see the package comment).
const (
	racyMargin       = 50 * time.Millisecond
	racyMarginCoarse = 2 * time.Second
)

// trusted reports whether an entry recorded for st can be believed without
// reading the file.
func (e *Entry) trusted(st Stat) bool { return e.Stat == st && notRacy(st, e.Recorded) }

// notRacy reports whether st's mtime and ctime are older than recorded (the
// start of the scan that read what st describes) by the racy margin: a
// change after that read would have moved them.
func notRacy(st Stat, recorded int64) bool {
	margin := racyMargin
	if st.Mtime%1e9 == 0 {
		margin = racyMarginCoarse
	}
	return max(st.Mtime, st.Ctime) < recorded-int64(margin)
}

// listing is a directory's entry names as last read, with the directory's
// stat taken before the read.
type listing struct {
	Stat
	Recorded int64       // Unix ns: when the scan that read the names began
	Names    []string    // sorted
	used     atomic.Bool // looked up or put since the cache was loaded or last pruned
}

// Cache maps paths to entries. It is safe for concurrent use.
type Cache struct {
	saveMu  sync.Mutex // serialises Save, so the newest snapshot is written last
	mu      sync.RWMutex
	slot    map[string]int32    // path → its entry in ents
	ents    []Entry             // entries, in load order then as Put; a Retained path's stays unreferenced
	paths   []string            // the path of each of ents
	gone    []bool              // ents Retained away (nil: none yet; else as long as ents)
	sorted  bool                // paths is sorted (loaded, nothing added since): Save need not sort
	dirs    map[string]*listing // directory path ("" is the root) → its listing
	dirList []string            // the keys of dirs, sorted
	dirty   bool
	// What changed since the cache was loaded or saved (journal.go): paths
	// and directories, put or dropped.
	changed, changedDirs map[string]bool
	// The cache file this cache was read from or saved as: its checksum
	// (nil: none), its size, and how much of its journal there is.
	sum           []byte
	size, journal int
	// lazy, when set, reads the cache on its first use (LoadLazy).
	lazy     func() *Cache
	lazyOnce sync.Once
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{slot: map[string]int32{}, dirs: map[string]*listing{}, changed: map[string]bool{}, changedDirs: map[string]bool{}}
}

// Load reads the cache at path. A missing file gives an empty cache and no
// error; a corrupt one an empty cache and an error wrapping ErrCorrupt. It
// is LoadFS(nil, path).
func Load(path string) (*Cache, error) { return LoadFS(nil, path) }

// LoadFS is Load reading through vfs (nil means fsys.OS): the cache file,
// then what its journal adds. An unreadable file gives an empty cache and
// the error.
func LoadFS(vfs fsys.FS, path string) (*Cache, error) {
	vfs = fsys.Or(vfs)
	data, err := fsys.ReadRegular(vfs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return New(), err
	}
	c, err := Decode(data)
	if err != nil {
		return New(), err
	}
	c.sum, c.size = data[len(data)-32:], len(data)
	switch j, err := fsys.ReadRegular(vfs, JournalPath(path)); {
	case err == nil:
		if c.journal = c.replayJournal(j, c.sum); c.journal > 0 && c.journal < len(j) {
			c.journal = math.MaxInt32 // a batch that does not check: the next save writes the file whole
		}
	case errors.Is(err, fsys.ErrNotRegular):
		c.journal = math.MaxInt32 // the next save writes the file whole, and removes this
	}
	return c, nil
}

// LoadLazy is LoadFS, but the file is read only when the cache is first
// looked up or changed: a capture that needs no stat (the watch daemon
// vouches nothing changed) costs nothing of it. A cache that cannot be
// read is an empty one.
func LoadLazy(vfs fsys.FS, path string) *Cache {
	c := New()
	c.lazy = func() *Cache {
		l, _ := LoadFS(vfs, path)
		return l
	}
	return c
}

// load reads a lazy cache, once.
func (c *Cache) load() {
	if c.lazy == nil {
		return
	}
	c.lazyOnce.Do(func() {
		l := c.lazy()
		c.mu.Lock()
		c.slot, c.ents, c.paths, c.gone, c.sorted, c.dirs, c.dirList = l.slot, l.ents, l.paths, l.gone, l.sorted, l.dirs, l.dirList
		c.sum, c.size, c.journal = l.sum, l.size, l.journal
		c.mu.Unlock()
	})
}

// Dirty reports whether the cache changed since it was loaded or saved.
func (c *Cache) Dirty() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dirty
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.load()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.slot)
}

// Lookup returns the cached id for path if the file, as st describes it, is
// known to be unchanged since it was hashed.
func (c *Cache) Lookup(path string, st Stat) (objects.ID, bool) {
	return c.LookupBytes(unsafe.Slice(unsafe.StringData(path), len(path)), st)
}

// LookupBytes is Lookup with the path in a byte slice, which it does not
// keep: a walk can look paths up without making a string of each.
func (c *Cache) LookupBytes(path []byte, st Stat) (objects.ID, bool) {
	c.load()
	c.mu.RLock()
	i, ok := c.slot[string(path)] // no allocation: a map index
	var e Entry
	if ok {
		e = c.ents[i]
	}
	c.mu.RUnlock()
	if !ok || !e.trusted(st) {
		return objects.ID{}, false
	}
	return e.ID, true
}

// Previous returns the id the file at path hashed to when it was last
// read, whether or not it is unchanged since: the likely base of a delta
// for its new content.
func (c *Cache) Previous(path string) (objects.ID, bool) {
	c.load()
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.slot[path]
	if !ok {
		return objects.ID{}, false
	}
	return c.ents[i].ID, true
}

// Recorded returns the stat and id recorded for path (by the last capture
// that read it, or a restore that wrote it), trusted or not.
func (c *Cache) Recorded(path string) (Stat, objects.ID, bool) {
	c.load()
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.slot[path]
	if !ok {
		return Stat{}, objects.ID{}, false
	}
	return c.ents[i].Stat, c.ents[i].ID, true
}

// Put records that the file at path, with stat st taken before it was read,
// hashed to id during a scan that began at scanStart.
func (c *Cache) Put(path string, st Stat, id objects.ID, scanStart time.Time) {
	c.load()
	e := Entry{Stat: st, Recorded: scanStart.UnixNano(), ID: id}
	c.mu.Lock()
	if i, ok := c.slot[path]; !ok {
		c.slot[path] = int32(len(c.ents))
		c.ents = append(c.ents, e)
		c.paths = append(c.paths, path)
		if c.gone != nil {
			c.gone = append(c.gone, false)
		}
		c.sorted = false
		c.dirty = true
		c.noteChanged(c.changed, path)
	} else if c.ents[i] != e {
		c.ents[i] = e
		c.dirty = true
		c.noteChanged(c.changed, path)
	}
	c.mu.Unlock()
}

// Listing returns the sorted entry names of directory dir (slash-separated,
// "" for the root) recorded by PutListing, if the directory, as st describes
// it, is known to be unchanged since they were read: creating, removing or
// renaming an entry moves a directory's mtime and ctime. The slice is shared:
// callers must not modify it.
func (c *Cache) Listing(dir string, st Stat) ([]string, bool) {
	c.load()
	c.mu.RLock() // walkers look up in parallel: never the write lock here
	defer c.mu.RUnlock()
	l, ok := c.dirs[dir]
	if !ok {
		return nil, false
	}
	l.used.Store(true)
	if l.Stat != st || !notRacy(st, l.Recorded) {
		return nil, false
	}
	return l.Names, true
}

// PutListing records the sorted entry names of directory dir, read after
// its stat st was taken, during a scan that began at scanStart. The cache
// keeps names; callers must not modify it afterwards.
func (c *Cache) PutListing(dir string, st Stat, names []string, scanStart time.Time) {
	c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := scanStart.UnixNano()
	old, known := c.dirs[dir]
	if known && old.Stat == st && old.Recorded == rec && slices.Equal(old.Names, names) {
		old.used.Store(true)
		return
	}
	if !known {
		i, _ := slices.BinarySearch(c.dirList, dir)
		c.dirList = slices.Insert(c.dirList, i, dir)
	}
	l := &listing{Stat: st, Recorded: rec, Names: names}
	l.used.Store(true)
	c.dirs[dir] = l
	c.dirty = true
	c.noteChanged(c.changedDirs, dir)
}

// DropUnusedListings forgets the listings that were neither looked up nor
// put since the cache was loaded or last pruned: after a full scan, those
// of the directories that no longer exist (or are now ignored).
func (c *Cache) DropUnusedListings() {
	c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirList = slices.DeleteFunc(c.dirList, func(d string) bool {
		l := c.dirs[d]
		if l.used.Swap(false) {
			return false
		}
		delete(c.dirs, d)
		c.dirty = true
		c.noteChanged(c.changedDirs, d)
		return true
	})
}

// Retain drops every entry for which keep returns false (paths that a full
// scan no longer found).
func (c *Cache) Retain(keep func(path string) bool) {
	c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, i := range c.slot {
		if !keep(p) {
			if c.gone == nil {
				c.gone = make([]bool, len(c.ents))
			}
			c.gone[i] = true
			delete(c.slot, p)
			c.dirty = true
			c.noteChanged(c.changed, p)
		}
	}
}

// Save writes what changed in the cache since it was loaded (or saved) to
// path: appended to the journal of the cache file it read when there is
// one and the journal stays small, else the whole cache to path atomically
// (temporary file and rename), the journal removed. It does not fsync: a
// cache lost in a crash only costs a re-hash. It is SaveFS(nil, path).
func (c *Cache) Save(path string) error { return c.SaveFS(nil, path) }

// SaveFS is Save writing through vfs (nil means fsys.OS). On error the file
// at path is unchanged (the old cache, or none), the temporary file is
// removed (best effort), and the cache stays dirty, so the next Save tries
// again.
func (c *Cache) SaveFS(vfs fsys.FS, path string) (err error) {
	vfs = fsys.Or(vfs)
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	if c.sum != nil {
		if batch := c.encodeBatchLocked(max(journalMin, c.size/16) - c.journal); batch != nil {
			// What changes while the batch is written goes in the next.
			sum, fresh, changed, changedDirs := c.sum, c.journal == 0, c.changed, c.changedDirs
			c.changed, c.changedDirs, c.dirty = map[string]bool{}, map[string]bool{}, false
			c.mu.Unlock()
			ok := appendJournal(vfs, path, sum, batch, fresh)
			c.mu.Lock()
			if ok {
				if fresh {
					c.journal = len(journalMagic) + len(sum)
				}
				c.journal += len(batch)
				c.mu.Unlock()
				return nil
			}
			c.dirty = true // written whole below, with everything
			maps.Copy(c.changed, changed)
			maps.Copy(c.changedDirs, changedDirs)
		}
	}
	data := c.encodeLocked()
	c.dirty = false
	clear(c.changed)
	clear(c.changedDirs)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		switch {
		case err != nil: // still unsaved: the next Save tries again, whole
			c.dirty, c.sum = true, nil
		case c.dirty: // changed meanwhile, against no file it knows: whole again
			c.sum = nil
		default:
			c.sum, c.size, c.journal = data[len(data)-32:], len(data), 0
		}
		c.mu.Unlock()
	}()
	if err := vfs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := vfs.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		vfs.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		vfs.Remove(f.Name())
		return err
	}
	if err := vfs.Rename(f.Name(), path); err != nil {
		vfs.Remove(f.Name())
		return err
	}
	// The journal named the file replaced: not read again, but removed.
	vfs.Remove(JournalPath(path))
	return nil
}

const (
	magic     = "SNAPSTC2"            // SNAPSTC1 (no listings) loads as corrupt: one re-hash
	statSize  = 8 + 8 + 8 + 8 + 4 + 8 // size, mtime, ctime, inode, mode, recorded
	entryTail = statSize + objects.IDSize
)

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

func (c *Cache) encodeLocked() []byte {
	live := make([]int32, 0, len(c.slot)) // indexes of the entries to write, in path order
	size := len(magic) + 4 + 4 + 32
	for i, p := range c.paths {
		if c.gone == nil || !c.gone[i] {
			live = append(live, int32(i))
			size += binary.MaxVarintLen64 + len(p) + entryTail
		}
	}
	if !c.sorted {
		slices.SortFunc(live, func(a, b int32) int { return strings.Compare(c.paths[a], c.paths[b]) })
	}
	dirs := c.dirList
	for _, d := range dirs {
		size += 2*binary.MaxVarintLen64 + len(d) + statSize
		for _, n := range c.dirs[d].Names {
			size += binary.MaxVarintLen64 + len(n)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(live)))
	for _, i := range live {
		e := c.ents[i]
		b = appendString(b, c.paths[i])
		b = appendStat(b, e.Stat, e.Recorded)
		b = append(b, e.ID[:]...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dirs)))
	for _, d := range dirs {
		l := c.dirs[d]
		b = appendString(b, d)
		b = appendStat(b, l.Stat, l.Recorded)
		b = binary.AppendUvarint(b, uint64(len(l.Names)))
		for _, n := range l.Names {
			b = appendString(b, n)
		}
	}
	sum := blake3.Sum256(b)
	return append(b, sum[:]...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the body of a cache file. Strings are substrings of one
// string holding the whole body, not allocations of their own.
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

// Decode parses a cache file, validating its checksum and that paths are
// strictly sorted. The cache's strings share data's memory (copying a cache
// of 20,000 paths cost a third of loading it): data must not be modified
// afterwards.
func Decode(data []byte) (*Cache, error) {
	if len(data) < len(magic)+4+4+32 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := blake3.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := &decoder{all: unsafe.String(unsafe.SliceData(body), len(body)), pos: len(magic)}
	count := d.u32("count")
	if uint64(count) > uint64(len(body)/(1+entryTail)) {
		return nil, fmt.Errorf("%w: bad count", ErrCorrupt)
	}
	c := &Cache{slot: make(map[string]int32, count), ents: make([]Entry, count), paths: make([]string, count),
		dirs: map[string]*listing{}, sorted: true, changed: map[string]bool{}, changedDirs: map[string]bool{}}
	for i := uint32(0); i < count && d.err == nil; i++ {
		p := d.string("path", entryTail)
		if d.err == nil && (p == "" || i > 0 && p <= c.paths[i-1]) {
			return nil, fmt.Errorf("%w: paths unsorted at %q", ErrCorrupt, p)
		}
		e := &c.ents[i]
		e.Stat, e.Recorded = d.stat("entry")
		copy(e.ID[:], d.bytes("entry", objects.IDSize))
		c.slot[p] = int32(i)
		c.paths[i] = p
	}
	ndirs := d.u32("directory count")
	prev := ""
	for i := uint32(0); i < ndirs && d.err == nil; i++ {
		dir := d.string("directory", statSize)
		if d.err == nil && i > 0 && dir <= prev {
			return nil, fmt.Errorf("%w: directories unsorted at %q", ErrCorrupt, dir)
		}
		prev = dir
		l := &listing{}
		l.Stat, l.Recorded = d.stat("directory")
		n := d.uvarint("name count", uint64(len(body)-d.pos)/2) // a name takes at least 2 bytes
		l.Names = make([]string, 0, n)
		for j := uint64(0); j < n && d.err == nil; j++ {
			name := d.string("name", 0)
			if d.err == nil && (name == "" || j > 0 && name <= l.Names[j-1]) {
				return nil, fmt.Errorf("%w: names of %q unsorted", ErrCorrupt, dir)
			}
			l.Names = append(l.Names, name)
		}
		c.dirs[dir] = l
		c.dirList = append(c.dirList, dir)
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.pos != len(body) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(body)-d.pos)
	}
	return c, nil
}
