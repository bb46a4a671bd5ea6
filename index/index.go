package index

import (
	"errors"
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

// dirState is one directory's part of the cache: the entries of the files
// directly in it and its listing. It is decoded from the directory's block
// of the cache file when the directory is first used, or made by a put.
type dirState struct {
	names []string // of the files with an entry, sorted
	ents  []Entry  // names[i]'s
	list  *listing // nil: none
}

func (d *dirState) find(name string) (int, bool) { return slices.BinarySearch(d.names, name) }

func (d *dirState) empty() bool { return len(d.names) == 0 && d.list == nil }

// Cache maps paths to entries. It is safe for concurrent use.
type Cache struct {
	saveMu sync.Mutex // serialises Save, so the newest snapshot is written last
	mu     sync.RWMutex
	// file is the cache file read (nil: none): its directories' blocks are
	// decoded on first use (into file.states, without a write lock: walkers
	// look up in parallel), and written back as they were when unused.
	// dirs holds the directories that are not in the file.
	file  *cacheFile
	dirs  map[string]*dirState
	count int // entries, counting those of blocks found damaged (see damaged)
	dirty bool
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
	// damaged counts the blocks of the file that did not check (their
	// directories load as empty) since the file was last written whole,
	// which the next save does; damagedFiles the entries the table gave
	// them (counted in count).
	damaged, damagedFiles atomic.Int64
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{dirs: map[string]*dirState{}, changed: map[string]bool{}, changedDirs: map[string]bool{}}
}

// Load reads the cache at path. A missing file gives an empty cache and no
// error; a corrupt one an empty cache and an error wrapping ErrCorrupt. It
// is LoadFS(nil, path).
func Load(path string) (*Cache, error) { return LoadFS(nil, path) }

// maxCacheFile: a stat cache file larger is not read (it is replaced by the
// next save): one of a million files takes about 100 MB.
const maxCacheFile = 1 << 30

// LoadFS is Load reading through vfs (nil means fsys.OS): the cache file,
// then what its journal adds. An unreadable file gives an empty cache and
// the error (fsys.ErrTooLarge for one over maxCacheFile). Only the file's
// directory table is decoded here; each directory's entries are decoded
// when it is first looked up.
func LoadFS(vfs fsys.FS, path string) (*Cache, error) {
	vfs = fsys.Or(vfs)
	data, err := fsys.ReadRegularMax(vfs, path, maxCacheFile)
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
	c.size = len(data)
	// (A save rewrites the file once its journal passes a sixteenth of it:
	// a journal far larger, which damage or a person made, is not read.)
	switch j, err := fsys.ReadRegularMax(vfs, JournalPath(path), int64(len(data))/4+1<<20); {
	case err == nil:
		if c.journal = c.replayJournal(j, c.sum); c.journal > 0 && c.journal < len(j) {
			c.journal = math.MaxInt32 // a batch that does not check: the next save writes the file whole
		}
	case errors.Is(err, fsys.ErrNotRegular), errors.Is(err, fsys.ErrTooLarge):
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
		c.file, c.dirs, c.count = l.file, l.dirs, l.count
		c.damaged.Store(l.damaged.Load()) // (found by its journal's replay)
		c.damagedFiles.Store(l.damagedFiles.Load())
		c.sum, c.size, c.journal = l.sum, l.size, l.journal
		c.mu.Unlock()
	})
}

// Dirty reports whether the cache changed since it was loaded or saved.
func (c *Cache) Dirty() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dirty || c.damaged.Load() > 0
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.load()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.count - int(c.damagedFiles.Load())
}

// splitPath splits a slash-separated path into its directory ("" for the
// root) and name.
func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// joinPath is the inverse of splitPath.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// stateLocked returns directory dir's state, decoding its block of the
// file on first use; with create, an empty one when it has none. dir may
// alias memory the caller reuses: it is copied when kept. c.mu must be
// held for writing.
func (c *Cache) stateLocked(dir string, create bool) *dirState {
	if d, ok := c.stateRLocked(dir); ok || !create {
		return d
	}
	d := &dirState{}
	c.dirs[strings.Clone(dir)] = d
	return d
}

// stateRLocked returns directory dir's state (nil: none) and whether it
// is known: in the file (decoded now if it was not) or among dirs. c.mu
// must be held, for reading at least.
func (c *Cache) stateRLocked(dir string) (*dirState, bool) {
	if c.file != nil {
		if i, ok := c.file.find(dir); ok {
			return c.fileState(i), true
		}
	}
	d, ok := c.dirs[dir]
	return d, ok
}

// fileState returns the state of the file's block i, decoding it on first
// use. Two walkers may decode it at once: one decoding is kept. A damaged
// block is an empty directory (its files are read again), counted until
// the next save rewrites the file whole.
func (c *Cache) fileState(i int) *dirState {
	f := c.file
	if d := f.states[i].Load(); d != nil {
		return d
	}
	d, err := f.decode(i)
	if err != nil {
		d = &dirState{}
	}
	if !f.states[i].CompareAndSwap(nil, d) {
		return f.states[i].Load()
	}
	if err != nil {
		c.damaged.Add(1)
		c.damagedFiles.Add(int64(f.blocks[i].files))
	}
	return d
}

// state returns directory dir's state for reading (nil: none), with c.mu
// held for reading; the caller calls the returned unlock when done.
func (c *Cache) state(dir string) (*dirState, func()) {
	c.mu.RLock()
	d, _ := c.stateRLocked(dir)
	return d, c.mu.RUnlock
}

// get returns the entry of path.
func (c *Cache) get(path string) (Entry, bool) {
	c.load()
	dir, name := splitPath(path)
	d, unlock := c.state(dir)
	defer unlock()
	if d == nil {
		return Entry{}, false
	}
	i, ok := d.find(name)
	if !ok {
		return Entry{}, false
	}
	return d.ents[i], true
}

// Lookup returns the cached id for path if the file, as st describes it, is
// known to be unchanged since it was hashed.
func (c *Cache) Lookup(path string, st Stat) (objects.ID, bool) {
	e, ok := c.get(path)
	if !ok || !e.trusted(st) {
		return objects.ID{}, false
	}
	return e.ID, true
}

// LookupBytes is Lookup with the path in a byte slice, which it does not
// keep: a walk can look paths up without making a string of each.
func (c *Cache) LookupBytes(path []byte, st Stat) (objects.ID, bool) {
	return c.Lookup(unsafe.String(unsafe.SliceData(path), len(path)), st)
}

// Previous returns the id the file at path hashed to when it was last
// read, whether or not it is unchanged since: the likely base of a delta
// for its new content.
func (c *Cache) Previous(path string) (objects.ID, bool) {
	e, ok := c.get(path)
	return e.ID, ok
}

// Recorded returns the stat and id recorded for path (by the last capture
// that read it, or a restore that wrote it), trusted or not.
func (c *Cache) Recorded(path string) (Stat, objects.ID, bool) {
	e, ok := c.get(path)
	return e.Stat, e.ID, ok
}

// Put records that the file at path, with stat st taken before it was read,
// hashed to id during a scan that began at scanStart.
func (c *Cache) Put(path string, st Stat, id objects.ID, scanStart time.Time) {
	c.load()
	c.mu.Lock()
	if c.putLocked(path, Entry{Stat: st, Recorded: scanStart.UnixNano(), ID: id}) {
		c.dirty = true
		c.noteChanged(c.changed, path)
	}
	c.mu.Unlock()
}

// putLocked sets path's entry and reports whether that changed it.
func (c *Cache) putLocked(path string, e Entry) bool {
	dir, name := splitPath(path)
	d := c.stateLocked(dir, true)
	i, ok := d.find(name)
	if ok {
		if d.ents[i] == e {
			return false
		}
		d.ents[i] = e
		return true
	}
	d.names = slices.Insert(d.names, i, name)
	d.ents = slices.Insert(d.ents, i, e)
	c.count++
	return true
}

// dropLocked forgets path's entry and reports whether there was one.
func (c *Cache) dropLocked(path string) bool {
	dir, name := splitPath(path)
	d := c.stateLocked(dir, false)
	if d == nil {
		return false
	}
	i, ok := d.find(name)
	if !ok {
		return false
	}
	d.names = slices.Delete(d.names, i, i+1)
	d.ents = slices.Delete(d.ents, i, i+1)
	c.count--
	return true
}

// Listing returns the sorted entry names of directory dir (slash-separated,
// "" for the root) recorded by PutListing, if the directory, as st describes
// it, is known to be unchanged since they were read: creating, removing or
// renaming an entry moves a directory's mtime and ctime. The slice is shared:
// callers must not modify it.
func (c *Cache) Listing(dir string, st Stat) ([]string, bool) {
	c.load()
	d, unlock := c.state(dir) // walkers look up in parallel: the write lock only to decode
	defer unlock()
	if d == nil || d.list == nil {
		return nil, false
	}
	l := d.list
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
	d := c.stateLocked(dir, true)
	rec := scanStart.UnixNano()
	if old := d.list; old != nil && old.Stat == st && old.Recorded == rec && slices.Equal(old.Names, names) {
		old.used.Store(true)
		return
	}
	l := &listing{Stat: st, Recorded: rec, Names: names}
	l.used.Store(true)
	d.list = l
	c.dirty = true
	c.noteChanged(c.changedDirs, dir)
}

// eachLocked calls fn for every directory's state, decoding every block
// of the file. c.mu must be held for writing.
func (c *Cache) eachLocked(fn func(dir string, d *dirState)) {
	if c.file != nil {
		for i, dir := range c.file.dirs {
			fn(dir, c.fileState(i))
		}
	}
	for dir, d := range c.dirs {
		fn(dir, d)
	}
}

// DropUnusedListings forgets the listings that were neither looked up nor
// put since the cache was loaded or last pruned: after a full scan, those
// of the directories that no longer exist (or are now ignored).
func (c *Cache) DropUnusedListings() {
	c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eachLocked(func(dir string, d *dirState) { // (a full scan decoded nearly all: what is left is unused)
		if d.list != nil && !d.list.used.Swap(false) {
			d.list = nil
			c.dirty = true
			c.noteChanged(c.changedDirs, dir)
		}
	})
}

// Retain drops every entry for which keep returns false (paths that a full
// scan no longer found).
func (c *Cache) Retain(keep func(path string) bool) {
	c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eachLocked(func(dir string, d *dirState) {
		for i := 0; i < len(d.names); {
			p := joinPath(dir, d.names[i])
			if keep(p) {
				i++
				continue
			}
			d.names = slices.Delete(d.names, i, i+1)
			d.ents = slices.Delete(d.ents, i, i+1)
			c.count--
			c.dirty = true
			c.noteChanged(c.changed, p)
		}
	})
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
	damaged := c.damaged.Load()
	if !c.dirty && damaged == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.sum != nil && damaged == 0 {
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
	data, sum := c.encodeLocked()
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
			c.sum, c.size, c.journal = sum, len(data), 0
			c.damaged.Add(-damaged)
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
