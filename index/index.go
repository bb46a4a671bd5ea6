package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/zeebo/blake3"
)

// ErrCorrupt: the cache file does not decode. Load still returns an empty,
// usable cache with it.
var ErrCorrupt = errors.New("stat cache corrupt")

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
func (e *Entry) trusted(st Stat) bool {
	if e.Stat != st {
		return false
	}
	margin := racyMargin
	if st.Mtime%1e9 == 0 {
		margin = racyMarginCoarse
	}
	return st.Mtime < e.Recorded-int64(margin)
}

// Cache maps paths to entries. It is safe for concurrent use.
type Cache struct {
	saveMu sync.Mutex // serialises Save, so the newest snapshot is written last
	mu     sync.RWMutex
	slot   map[string]int32 // path → its entry in ents
	ents   []Entry          // entries, in load order then as Put; a Retained path's stays unreferenced
	paths  []string         // the path of each of ents
	sorted bool             // paths is sorted (loaded, nothing added since): Save need not sort
	dirty  bool
}

// New returns an empty cache.
func New() *Cache { return &Cache{slot: map[string]int32{}} }

// Load reads the cache at path. A missing file gives an empty cache and no
// error; a corrupt one an empty cache and an error wrapping ErrCorrupt. It
// is LoadFS(nil, path).
func Load(path string) (*Cache, error) { return LoadFS(nil, path) }

// LoadFS is Load reading through vfs (nil means fsys.OS). An unreadable
// file gives an empty cache and the error.
func LoadFS(vfs fsys.FS, path string) (*Cache, error) {
	data, err := fsys.Or(vfs).ReadFile(path)
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
	return c, nil
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.slot)
}

// Lookup returns the cached id for path if the file, as st describes it, is
// known to be unchanged since it was hashed.
func (c *Cache) Lookup(path string, st Stat) (objects.ID, bool) {
	c.mu.RLock()
	i, ok := c.slot[path]
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
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.slot[path]
	if !ok {
		return objects.ID{}, false
	}
	return c.ents[i].ID, true
}

// Put records that the file at path, with stat st taken before it was read,
// hashed to id during a scan that began at scanStart.
func (c *Cache) Put(path string, st Stat, id objects.ID, scanStart time.Time) {
	e := Entry{Stat: st, Recorded: scanStart.UnixNano(), ID: id}
	c.mu.Lock()
	if i, ok := c.slot[path]; !ok {
		c.slot[path] = int32(len(c.ents))
		c.ents = append(c.ents, e)
		c.paths = append(c.paths, path)
		c.sorted = false
		c.dirty = true
	} else if c.ents[i] != e {
		c.ents[i] = e
		c.dirty = true
	}
	c.mu.Unlock()
}

// Retain drops every entry for which keep returns false (paths that a full
// scan no longer found).
func (c *Cache) Retain(keep func(path string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.slot {
		if !keep(p) {
			delete(c.slot, p)
			c.dirty = true
		}
	}
}

// Save writes the cache to path atomically (temporary file and rename) if it
// changed since it was loaded. It does not fsync: a cache lost in a crash
// only costs a re-hash. It is SaveFS(nil, path).
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
	data := c.encodeLocked()
	c.dirty = false
	c.mu.Unlock()
	defer func() {
		if err != nil { // still unsaved: the next Save tries again
			c.mu.Lock()
			c.dirty = true
			c.mu.Unlock()
		}
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
	return nil
}

const (
	magic     = "SNAPSTC1"
	entryTail = 8 + 8 + 8 + 8 + 4 + 8 + objects.IDSize
)

func (c *Cache) encodeLocked() []byte {
	paths := make([]string, 0, len(c.slot))
	size := len(magic) + 4 + 32
	for i, p := range c.paths {
		if c.slot[p] == int32(i) { // not Retained away
			paths = append(paths, p)
			size += binary.MaxVarintLen64 + len(p) + entryTail
		}
	}
	if !c.sorted {
		sort.Strings(paths)
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(paths)))
	for _, p := range paths {
		e := c.ents[c.slot[p]]
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Size))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Mtime))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Ctime))
		b = binary.LittleEndian.AppendUint64(b, e.Ino)
		b = binary.LittleEndian.AppendUint32(b, uint32(e.Mode))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Recorded))
		b = append(b, e.ID[:]...)
	}
	sum := blake3.Sum256(b)
	return append(b, sum[:]...)
}

// Decode parses a cache file, validating its checksum and that paths are
// strictly sorted.
func Decode(data []byte) (*Cache, error) {
	if len(data) < len(magic)+4+32 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := blake3.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	count := binary.LittleEndian.Uint32(body[len(magic):])
	b := body[len(magic)+4:]
	if uint64(count) > uint64(len(b)/(1+entryTail)) {
		return nil, fmt.Errorf("%w: bad count", ErrCorrupt)
	}
	c := &Cache{slot: make(map[string]int32, count), ents: make([]Entry, count), paths: make([]string, count), sorted: true}
	// One string holds every path: each is a substring of it, not an
	// allocation of its own.
	all := string(b)
	pos := 0 // offset of b in all
	prev := ""
	for i := uint32(0); i < count; i++ {
		n, k := binary.Uvarint(b)
		if k > 0 && k != len(binary.AppendUvarint(nil, n)) {
			return nil, fmt.Errorf("%w: entry %d: non-canonical length", ErrCorrupt, i)
		}
		if k <= 0 || n == 0 || n > uint64(len(b)-k) || uint64(len(b)-k)-n < entryTail {
			return nil, fmt.Errorf("%w: entry %d truncated", ErrCorrupt, i)
		}
		p := all[pos+k : pos+k+int(n)]
		b = b[k+int(n):]
		pos += k + int(n) + entryTail
		if i > 0 && p <= prev {
			return nil, fmt.Errorf("%w: paths unsorted at %q", ErrCorrupt, p)
		}
		prev = p
		e := &c.ents[i]
		e.Size = int64(binary.LittleEndian.Uint64(b))
		e.Mtime = int64(binary.LittleEndian.Uint64(b[8:]))
		e.Ctime = int64(binary.LittleEndian.Uint64(b[16:]))
		e.Ino = binary.LittleEndian.Uint64(b[24:])
		e.Mode = fs.FileMode(binary.LittleEndian.Uint32(b[32:]))
		e.Recorded = int64(binary.LittleEndian.Uint64(b[36:]))
		copy(e.ID[:], b[44:])
		b = b[entryTail:]
		c.slot[p] = int32(i)
		c.paths[i] = p
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	return c, nil
}
