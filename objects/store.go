package objects

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/storage/fsstore"
)

// Store is the object store: immutable pack files (blobs of a
// storage.Blobs: under dir/packs for a store on disk), read
// through their indexes, kept in memory as read (sorted by id, with a
// 256-way fan-out) and searched pack by pack: opening costs one read and
// checksum of each index, not a hash table of every object. It is safe for
// concurrent use by many goroutines and many processes: writers only ever
// add new packs (by rename), so a reader sees a pack whole or not at all.
type Store struct {
	dir   string        // "" for a store not on disk
	blobs storage.Blobs // every pack operation goes through it

	mu    sync.RWMutex
	packs map[string]*packFile // by file name
	// order is the same, biggest first: lookups search each in turn,
	// without a lock (every walker of a capture asks, for every file), so
	// it is replaced, never changed in place.
	order       atomic.Pointer[[]*packFile]
	loadErrs    map[string]error // packs that could not be indexed, by file name
	readIndexes bool             // never map a pack's index (ReadIndexes)

	bases baseCache // decoded delta bases
}

type location struct {
	pack *packFile
	e    indexEntry
}

type packFile struct {
	blobs storage.Blobs
	name  string
	size  int64
	// index: its index as the pack holds it, entries of indexEntrySize
	// bytes sorted by id, decoded when used (entry); dataEnd: where its
	// records end (the index's offset). A large index is mapped from the
	// file (mapIndexMin), not read: a process looks up a few ids, and
	// reading 200,000 entries was most of a monitored checkpoint. Every
	// method that slices it keeps p alive until done (runtime.KeepAlive),
	// as a cleanup unmaps it once p is unreachable.
	index   []byte
	dataEnd uint64
	checked bool // the index passed the strict checks (see decodePackIndex)
	mapped  bool // index is mapped from the file

	// fan, built once a process has searched the index many times (a
	// capture of a large tree asks once per file), gives for the first 16
	// bits of an id the range of entries that start with them: a search is
	// then one or two cache misses instead of a probe per halving.
	fan      atomic.Pointer[[]uint32]
	searches atomic.Int32
	fanOnce  sync.Once

	mu sync.Mutex
	f  storage.BlobReader // opened on first read; a pack removed by gc stays readable through it
}

func (p *packFile) file() (storage.BlobReader, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		f, err := p.blobs.Open(p.name)
		if err != nil {
			return nil, err
		}
		p.f = f
	}
	return p.f, nil
}

func (p *packFile) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

// Directories inside the store.
const (
	PacksDir = "packs"
	TmpDir   = "tmp"
)

// Open opens the object store rooted at dir (the .snap directory), creating
// its directories if needed. A pack that cannot be indexed does not make Open
// fail: its objects are missing and Check reports it. It is OpenFS(dir, nil).
func Open(dir string) (*Store, error) { return OpenFS(dir, nil) }

// OpenFS is Open with every file operation of the store (reading, writing,
// fsyncing, renaming and removing packs and temporary files) made through
// fs; nil means fsys.OS. Fault-injection tests pass an fsys.Faulty.
func OpenFS(dir string, vfs fsys.FS) (*Store, error) {
	blobs, err := fsstore.NewBlobs(vfs, filepath.Join(dir, PacksDir), filepath.Join(dir, TmpDir), packTempPrefix)
	if err != nil {
		return nil, err
	}
	return open(dir, blobs)
}

// OpenBlobs opens an object store whose packs are the blobs of b (an
// in-memory store, or any other storage.Blobs); its Dir is "".
func OpenBlobs(b storage.Blobs) (*Store, error) { return open("", b) }

func open(dir string, blobs storage.Blobs) (*Store, error) {
	s := &Store{dir: dir, blobs: blobs, packs: map[string]*packFile{}, loadErrs: map[string]error{}}
	s.mu.Lock()
	_, err := s.reloadLocked() // packs that cannot be read now are tried again by the next Reload
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store directory ("" for a store not on disk).
func (s *Store) Dir() string { return s.dir }

// Blobs returns the storage the packs are kept in.
func (s *Store) Blobs() storage.Blobs { return s.blobs }

// Close releases open pack files.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.packs {
		p.close()
	}
	return nil
}

// Reload indexes packs added (by this or another process) since the last
// load, and forgets packs that were removed. A pack that cannot be read (an
// I/O error, as opposed to damage) is tried again at every Reload, and
// Reload returns those errors, joined, each naming its pack, after indexing
// every other pack: an object in such a pack is unavailable, not absent. A
// damaged pack (ErrCorrupt) is not retried; LoadErrors lists it, and the
// unreadable ones, until it is removed.
func (s *Store) Reload() error {
	// List under the lock: a pack committed by this process between the
	// listing and the lock would otherwise look removed.
	s.mu.Lock()
	defer s.mu.Unlock()
	packErrs, err := s.reloadLocked()
	if err != nil {
		return err
	}
	return packErrs
}

// reloadLocked is Reload; err is a failure to list packs/, packErrs the
// packs that could not be read.
func (s *Store) reloadLocked() (packErrs, err error) {
	names, err := listPacks(s.blobs)
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
	}
	// Forget removed packs first (a gc may have moved their objects into a
	// pack loaded below).
	changed := false
	for name, p := range s.packs {
		if !present[name] {
			delete(s.packs, p.name) // its file, if open, is left to the garbage collector: a reader may still use it
			changed = true
		}
	}
	defer func() {
		if changed {
			s.reorderLocked()
		}
	}()
	var unreadable []error
	for _, name := range names {
		if _, ok := s.packs[name]; ok {
			continue
		}
		if err, ok := s.loadErrs[name]; ok && errors.Is(err, ErrCorrupt) {
			continue // damaged: reading it again changes nothing
		}
		p, err := loadPack(s.blobs, name, false, !s.readIndexes)
		if errors.Is(err, fs.ErrNotExist) {
			delete(s.loadErrs, name) // removed since listed (by a gc)
			continue
		}
		if err != nil {
			s.loadErrs[name] = err
			if !errors.Is(err, ErrCorrupt) {
				unreadable = append(unreadable, fmt.Errorf("pack %s cannot be read: %w", name, err))
			}
			continue
		}
		delete(s.loadErrs, name)
		s.packs[name] = p
		changed = true
	}
	for name := range s.loadErrs {
		if !present[name] {
			delete(s.loadErrs, name)
		}
	}
	return errors.Join(unreadable...), nil
}

// dropPackLocked forgets a pack removed from disk. Its file, if open, is
// left to the garbage collector: a reader may still be using it.
func (s *Store) dropPackLocked(p *packFile) {
	delete(s.packs, p.name)
	s.reorderLocked()
}

// reorderLocked rebuilds the lookup order from s.packs.
func (s *Store) reorderLocked() {
	order := make([]*packFile, 0, len(s.packs))
	for _, p := range s.packs {
		order = append(order, p)
	}
	// Biggest first: most lookups are hits, and most hits are in the
	// pack that holds the bulk of the store (after a gc, all of it).
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.count() != b.count() {
			return a.count() > b.count()
		}
		return a.name < b.name
	})
	s.order.Store(&order)
}

// packOrder returns the packs in the order lookups search them.
func (s *Store) packOrder() []*packFile {
	if o := s.order.Load(); o != nil {
		return *o
	}
	return nil
}

// newPackFile describes an indexed pack: index is its index (sorted by
// id), dataEnd where its records end.
func newPackFile(blobs storage.Blobs, name string, size int64, index []byte, dataEnd uint64) *packFile {
	return &packFile{blobs: blobs, name: name, size: size, index: index, dataEnd: dataEnd}
}

// count is the number of entries of the pack's index.
func (p *packFile) count() int { return len(p.index) / indexEntrySize }

// entry decodes the index's entry i; false when it is malformed (a bad
// type, encoding or size, a record outside the pack): its object is as
// absent, and CheckIndexes reports the pack.
func (p *packFile) entry(i int) (indexEntry, bool) {
	e := decodeEntry(p.index[i*indexEntrySize:])
	runtime.KeepAlive(p)
	return e, e.valid(p.dataEnd) == nil
}

// entries decodes every well-formed entry of the index, in id order.
func (p *packFile) entries() []indexEntry {
	out := make([]indexEntry, 0, p.count())
	for i := range p.count() {
		if e, ok := p.entry(i); ok {
			out = append(out, e)
		}
	}
	return out
}

// find returns the entry of id in this pack. Ids are hashes, spread evenly
// over their range, so the search first interpolates (a few probes find
// the neighbourhood of one among 200,000, where bisection takes 18, each a
// cache miss in a large index), then bisects what is left. A damaged index
// (not sorted) costs no more than bisection: the probes are bounded.
func (p *packFile) find(id ID) (indexEntry, bool) {
	defer runtime.KeepAlive(p)
	lo, hi := 0, p.count()
	key := binary.BigEndian.Uint64(id[:8]) // compares as the first 8 bytes do
	// The interval holds ids whose keys lie in [kl, kh] (as far as the
	// index is sorted); interpolate while it is large.
	kl, kh := uint64(0), uint64(math.MaxUint64)
	if fan := p.fanout(); fan != nil {
		lo, hi = int((*fan)[key>>48]), int((*fan)[key>>48+1])
		kl, kh = key&^(1<<48-1), key|(1<<48-1)
	}
	keyAt := func(i int) uint64 { return binary.BigEndian.Uint64(p.index[i*indexEntrySize:]) }
	for probes := 0; probes < 4 && hi-lo > 64 && kl <= key && key <= kh && kl < kh; probes++ {
		frac := key - kl // (key-kl)/(kh-kl+1) as a 64-bit fraction, < 1
		if span := kh - kl + 1; span != 0 {
			frac, _ = bits.Div64(key-kl, 0, span)
		}
		m, _ := bits.Mul64(frac, uint64(hi-lo))
		i := lo + int(m)
		c := p.compareAt(i, key, id)
		switch {
		case c == 0:
			return p.entry(i)
		case c < 0:
			lo, kl = i+1, keyAt(i)
		default:
			hi, kh = i, keyAt(i)
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := p.compareAt(m, key, id); {
		case c == 0:
			return p.entry(m)
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return indexEntry{}, false
}

// fanAfter: searches of an index before its fanout is built.
const fanAfter = 4096

// fanout returns the index's fanout table once searches are many (nil
// before): fan[k] is the first entry whose id's first 16 bits are k or
// more, fan[65536] the count. Built in one pass over the index.
func (p *packFile) fanout() *[]uint32 {
	if fan := p.fan.Load(); fan != nil || p.searches.Add(1) < fanAfter {
		return fan
	}
	p.fanOnce.Do(func() {
		n := p.count()
		fan := make([]uint32, 1<<16+1)
		for i := range n {
			fan[int(binary.BigEndian.Uint16(p.index[i*indexEntrySize:]))+1]++
		}
		for k := 1; k < len(fan); k++ {
			fan[k] += fan[k-1]
		}
		runtime.KeepAlive(p)
		p.fan.Store(&fan)
	})
	return p.fan.Load()
}

// compareAt compares the id of index entry i with id (whose first 8 bytes
// are key).
func (p *packFile) compareAt(i int, key uint64, id ID) int {
	b := p.index[i*indexEntrySize : i*indexEntrySize+IDSize]
	c := cmp.Compare(binary.BigEndian.Uint64(b), key)
	if c == 0 {
		c = bytes.Compare(b[8:], id[8:])
	}
	runtime.KeepAlive(p)
	return c
}

func listPacks(blobs storage.Blobs) ([]string, error) {
	all, err := blobs.List("")
	if err != nil {
		return nil, err
	}
	names := all[:0]
	for _, name := range all {
		if strings.HasSuffix(name, packFileSuffix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// loadPack reads a pack's footer and index, validating the footer, and,
// when strict, the index (decodePackIndex); otherwise each entry is checked
// when a lookup finds it (packFile.entry).
func loadPack(blobs storage.Blobs, name string, strict, mapOK bool) (*packFile, error) {
	path := name // for messages: filepath.Base(path) is the pack's name
	f, err := blobs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size < packHeaderSize+packFooterSize {
		return nil, fmt.Errorf("%w: pack %s truncated (%d bytes)", ErrCorrupt, filepath.Base(path), size)
	}
	head := make([]byte, packHeaderSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	if string(head) != string(packHeader()) {
		return nil, fmt.Errorf("%w: pack %s: bad header", ErrCorrupt, filepath.Base(path))
	}
	footer := make([]byte, packFooterSize)
	if _, err := f.ReadAt(footer, size-packFooterSize); err != nil {
		return nil, err
	}
	off, count, sum, err := parseFooter(footer, size)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", filepath.Base(path), err)
	}
	var index []byte
	var unmap func()
	if m, ok := f.(storage.Mapper); ok && mapOK && !strict && count*indexEntrySize >= mapIndexMin {
		index, unmap, _ = m.Map(int64(off), int(count*indexEntrySize)) // (else read)
	}
	if index == nil {
		index = make([]byte, count*indexEntrySize)
		if _, err := f.ReadAt(index, int64(off)); err != nil {
			return nil, err
		}
	}
	if strict {
		if _, err := decodePackIndex(index, sum, off); err != nil {
			return nil, fmt.Errorf("pack %s: %w", filepath.Base(path), err)
		}
	}
	p := newPackFile(blobs, name, size, index, off)
	p.checked = strict
	if unmap != nil {
		p.mapped = true
		runtime.AddCleanup(p, func(unmap func()) { unmap() }, unmap)
	}
	return p, nil
}

// ReadIndexes makes the store read pack indexes into memory from now on
// rather than map them, and reads again those it mapped. A process that
// keeps the store open for long (a server, a daemon) calls it before it
// uses the store: a pack that something else truncates in place (a backup
// restored over the store, rsync --inplace) then fails the reads that need
// it, where a mapped index would fault the process (SIGBUS), as it would
// git. A command that runs for a moment keeps the mapping: it reads only
// what it looks up.
func (s *Store) ReadIndexes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readIndexes = true
	for name, p := range s.packs {
		if !p.mapped {
			continue
		}
		if q, err := loadPack(s.blobs, name, false, false); err == nil {
			q.checked = p.checked
			s.packs[name] = q
		} // (else it stays mapped: the file is gone or unreadable since, and the mapping still answers)
	}
	s.reorderLocked()
}

// mapIndexMin: a pack index at least this large is mapped rather than read
// (about 1,400 entries).
const mapIndexMin = 64 << 10

// CheckIndexes verifies in full (checksum, non-overlapping records) the
// index of every indexed pack that was only checked for structure when it
// was loaded. A damaged one is dropped and listed by LoadErrors, as if it
// had failed to load; the error is an I/O error that stopped a check. gc
// and fsck call it before they trust the indexes: a damaged index must
// never make gc take a pack for garbage.
func (s *Store) CheckIndexes() error {
	s.mu.RLock()
	var todo []*packFile
	for _, p := range s.packs {
		if !p.checked {
			todo = append(todo, p)
		}
	}
	s.mu.RUnlock()
	var errs []error
	for _, p := range todo {
		q, err := loadPack(p.blobs, p.name, true, false)
		if err == nil && !bytes.Equal(q.index, p.index) {
			// Lookups search the index read at open: the check vouches
			// for it only when it is the index just verified.
			err = fmt.Errorf("%w: pack %s: its index changed on disk since it was read", ErrCorrupt, p.name)
		}
		s.mu.Lock()
		switch {
		case err == nil:
			p.checked = true
		case errors.Is(err, ErrCorrupt):
			if s.packs[p.name] == p {
				s.loadErrs[p.name] = err
				s.dropPackLocked(p)
			}
		case !errors.Is(err, fs.ErrNotExist): // a pack removed meanwhile has nothing to check
			errs = append(errs, fmt.Errorf("pack %s cannot be read: %w", p.name, err))
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (s *Store) lookup(id ID) (location, bool) {
	for _, p := range s.packOrder() {
		if e, ok := p.find(id); ok {
			return location{p, e}, true
		}
	}
	return location{}, false
}

// Has reports whether the store holds id (without reading it).
func (s *Store) Has(id ID) bool {
	_, ok := s.lookup(id)
	return ok
}

// TypeOf returns the type of a stored object.
func (s *Store) TypeOf(id ID) (Type, bool) {
	loc, ok := s.lookup(id)
	return loc.e.typ, ok
}

// Read returns an object's type and canonical encoding, after checking that
// it hashes to id. It returns ErrNotFound or ErrCorrupt, never wrong bytes.
// An object that is in none of the packs read while some pack cannot be
// read (an I/O error) is unavailable, not absent: the error is then that
// I/O error, not ErrNotFound.
func (s *Store) Read(id ID) (Type, []byte, error) {
	loc, ok := s.lookup(id)
	if !ok {
		var err error
		if loc, err = s.lookupAfterReload(id); err != nil {
			return 0, nil, err
		}
	}
	data, err := s.readRecord(loc.pack, loc.e)
	if errors.Is(err, fs.ErrNotExist) {
		// The pack was rewritten by a gc (perhaps in another process)
		// since it was indexed: look the object up again.
		if loc, err = s.lookupAfterReload(id); err != nil {
			return 0, nil, err
		}
		data, err = s.readRecord(loc.pack, loc.e)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("object %s in pack %s: %w", id.Short(), loc.pack.name, err)
	}
	return loc.e.typ, data, nil
}

// lookupAfterReload reloads the pack list and looks id up again. Not found,
// the error is ErrNotFound, or, when the reload could not read every pack,
// why: the object may be in one of those.
func (s *Store) lookupAfterReload(id ID) (location, error) {
	rerr := s.Reload()
	if loc, ok := s.lookup(id); ok {
		return loc, nil
	}
	if rerr != nil {
		return location{}, fmt.Errorf("object %s unavailable: %w", id.Short(), rerr)
	}
	return location{}, fmt.Errorf("%w: %s", ErrNotFound, id)
}

// readRecord returns the decoded content of the record of e, verified.
func (s *Store) readRecord(p *packFile, e indexEntry) ([]byte, error) {
	_, data, err := s.readRecordRaw(p, e, MaxDeltaDepth)
	return data, err
}

// readRecordRaw returns the record of e exactly as it lies in the pack
// (header and stored bytes) and its decoded content, after checking that
// the content hashes to e.id. A delta record's base is read through the
// store; budget is how many delta records its chain may still hold.
func (s *Store) readRecordRaw(p *packFile, e indexEntry, budget int) (raw, data []byte, err error) {
	if raw, err = readRecordBytes(p, e); err != nil {
		return nil, nil, err
	}
	data, err = s.decodeRecord(raw, e, budget)
	return raw, data, err
}

// readRecordBytes returns the record of e as it lies in the pack, after
// checking its header against e.
func readRecordBytes(p *packFile, e indexEntry) ([]byte, error) {
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	raw := make([]byte, recordHeader+int(e.stored))
	if _, err := f.ReadAt(raw, int64(e.offset)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: record truncated", ErrCorrupt)
		}
		return nil, err
	}
	if err := checkRecordHeader(raw[:recordHeader], e); err != nil {
		return nil, err
	}
	return raw, nil
}

// decodeRecord decodes raw, the record of e, and checks that the content
// hashes to e.id.
func (s *Store) decodeRecord(raw []byte, e indexEntry, budget int) (data []byte, err error) {
	if e.enc == encDelta {
		data, err = s.decodeDelta(e, raw[recordHeader:], budget)
	} else {
		data, err = decompress(raw[recordHeader:], e.enc, e.size)
	}
	if err != nil {
		return nil, err
	}
	if Hash(e.typ, data) != e.id {
		return nil, fmt.Errorf("%w: content does not hash to its id", ErrCorrupt)
	}
	return data, nil
}

// readTyped reads id and checks its type.
func (s *Store) readTyped(id ID, want Type) ([]byte, error) {
	t, data, err := s.Read(id)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("%w: %s is a %s, not a %s", ErrCorrupt, id.Short(), t, want)
	}
	return data, nil
}

// ReadTree reads and validates a tree.
func (s *Store) ReadTree(id ID) (*Tree, error) {
	data, err := s.readTyped(id, TypeTree)
	if err != nil {
		return nil, err
	}
	return DecodeTree(data)
}

// ReadCheckpoint reads and validates a checkpoint.
func (s *Store) ReadCheckpoint(id ID) (*Checkpoint, error) {
	data, err := s.readTyped(id, TypeCheckpoint)
	if err != nil {
		return nil, err
	}
	return DecodeCheckpoint(data)
}

// ReadChunkList reads and validates a chunk list.
func (s *Store) ReadChunkList(id ID) (*ChunkList, error) {
	data, err := s.readTyped(id, TypeChunkList)
	if err != nil {
		return nil, err
	}
	return DecodeChunkList(data)
}

// FindPrefix returns the ids of type t (any type if t is 0) whose hex form
// starts with prefix, sorted.
func (s *Store) FindPrefix(prefix string, t Type) []ID {
	prefix = strings.ToLower(prefix)
	if len(prefix) > 2*IDSize {
		return nil // longer than any id: a prefix of none
	}
	var out []ID
	var raw []byte
	if len(prefix)%2 == 0 {
		raw, _ = hex.DecodeString(prefix)
	}
	s.Each(func(id ID, typ Type) {
		if t != 0 && typ != t {
			return
		}
		if raw != nil && len(raw) == len(prefix)/2 {
			if string(id[:len(raw)]) != string(raw) {
				return
			}
		} else if !strings.HasPrefix(id.String(), prefix) {
			return
		}
		out = append(out, id)
	})
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// Each calls fn once for every indexed object (not under the store's lock).
func (s *Store) Each(fn func(id ID, t Type)) {
	for _, loc := range s.objects() {
		fn(loc.e.id, loc.e.typ)
	}
}

// objects returns one location of every indexed object: the one lookup
// finds.
func (s *Store) objects() []location {
	order := s.packOrder()
	n := 0
	for _, p := range order {
		n += p.count()
	}
	out := make([]location, 0, n)
	var seen map[ID]bool // only needed when an object may be in two packs
	if len(order) > 1 {
		seen = make(map[ID]bool, n)
	}
	for _, p := range order {
		for _, e := range p.entries() {
			if seen != nil {
				if seen[e.id] {
					continue
				}
				seen[e.id] = true
			}
			out = append(out, location{p, e})
		}
	}
	return out
}

// StoreStats describes the store's size.
type StoreStats struct {
	Packs     int   `json:"packs"`
	Objects   int   `json:"objects"`
	PackBytes int64 `json:"pack_bytes"`
}

// Packs returns the number of packs indexed, without counting objects (see
// Stats).
func (s *Store) Packs() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.packs)
}

// Stats returns the number of packs and objects and the bytes they occupy.
// Counting distinct objects costs a pass over every index.
func (s *Store) Stats() StoreStats {
	objects := len(s.objects())
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := StoreStats{Packs: len(s.packs), Objects: objects}
	for _, p := range s.packs {
		st.PackBytes += p.size
	}
	return st
}

// Writer adds objects to the store as one new pack. Put may be called from
// many goroutines. Nothing is visible to readers, and nothing is durable,
// until Commit returns; Abort (or a crash) leaves only a temporary file,
// which is never read.
type Writer struct {
	s *Store

	mu        sync.Mutex
	f         storage.BlobWriter
	bw        *bufio.Writer
	off       uint64
	entries   []indexEntry
	pending   map[ID]struct{}
	trees     map[ID][]byte // pending trees, readable before Commit
	dryRun    bool          // compute ids only; write nothing
	wholeOnly bool          // store every object whole (tests: the reference deltas are measured against)
	newBytes  int64
	puts      atomic.Int64 // objects compressed so far
	err       error
}

// bulkAfter is the number of objects after which a Writer compresses with
// bulkEncoder: a first checkpoint or a large change, not a small one.
const bulkAfter = 64

// NewWriter starts a pack. The temporary file is created on the first new
// object, so a Writer that only finds existing objects costs nothing.
func (s *Store) NewWriter() *Writer {
	return &Writer{s: s, pending: map[ID]struct{}{}, trees: map[ID][]byte{}}
}

// NewDryWriter returns a Writer that computes ids (and keeps trees readable)
// without writing anything: for status, diff and dry runs.
func (s *Store) NewDryWriter() *Writer {
	w := s.NewWriter()
	w.dryRun = true
	return w
}

// Has reports whether id is already stored or pending in this writer.
func (w *Writer) Has(id ID) bool {
	if w.s.Has(id) {
		return true
	}
	w.mu.Lock()
	_, ok := w.pending[id]
	w.mu.Unlock()
	return ok
}

// Put stores an object given its canonical encoding and returns its id.
// Objects already in the store or in this writer are not written again.
func (w *Writer) Put(t Type, data []byte) (ID, error) { return w.put(t, data, ID{}) }

// put is Put, and PutDelta when base is not zero.
func (w *Writer) put(t Type, data []byte, bases ...ID) (ID, error) {
	if !t.Valid() {
		return ID{}, fmt.Errorf("put: invalid object type %d", t)
	}
	if len(data) > MaxObjectSize {
		return ID{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	id := Hash(t, data)
	if w.Has(id) {
		return id, nil
	}
	if w.dryRun {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.pending[id] = struct{}{}
		if t == TypeTree {
			w.trees[id] = append([]byte(nil), data...)
		}
		return id, nil
	}
	stored, enc := w.encode(t, data, bases)
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[id]; ok {
		return id, nil
	}
	if w.err != nil {
		return ID{}, w.err
	}
	if w.f == nil {
		f, err := w.s.blobs.Create("")
		if err != nil {
			w.err = err
			return ID{}, err
		}
		w.f, w.bw = f, bufio.NewWriterSize(f, 1<<20)
		if _, err := w.bw.Write(packHeader()); err != nil {
			w.err = err
			return ID{}, err
		}
		w.off = packHeaderSize
	}
	e := indexEntry{id: id, typ: t, enc: enc, offset: w.off, stored: uint32(len(stored)), size: uint32(len(data))}
	if _, err := w.bw.Write(recordHeaderBytes(e)); err != nil {
		w.err = err
		return ID{}, err
	}
	if _, err := w.bw.Write(stored); err != nil {
		w.err = err
		return ID{}, err
	}
	w.off += recordHeader + uint64(len(stored))
	w.newBytes += recordHeader + int64(len(stored))
	w.entries = append(w.entries, e)
	w.pending[id] = struct{}{}
	if t == TypeTree {
		w.trees[id] = append([]byte(nil), data...)
	}
	return id, nil
}

// encode returns the stored form of an object and its encoding: a delta on
// one of bases (the smallest) when one is at most 3/4 of the whole compressed record (less is not
// worth a chain read), else the whole record. A delta of at most 1/16 of
// the raw bytes is taken without compressing the whole object to compare:
// smaller than any whole record short of 16:1 compression, and most edits
// of a file are that.
func (w *Writer) encode(t Type, data []byte, bases []ID) ([]byte, byte) {
	var delta []byte
	for _, base := range bases {
		if base.IsZero() || w.wholeOnly {
			continue
		}
		if d, _ := w.s.deltaRecord(t, data, base); d != nil && (delta == nil || len(d) < len(delta)) {
			delta = d
		}
	}
	if delta != nil && len(delta) <= len(data)/16 {
		return delta, encDelta
	}
	stored, enc := compress(data, w.puts.Add(1) > bulkAfter)
	if delta != nil && len(delta) <= len(stored)*3/4 {
		return delta, encDelta
	}
	return stored, enc
}

// ReadTree reads a tree from this writer's pending objects or the store.
func (w *Writer) ReadTree(id ID) (*Tree, error) {
	w.mu.Lock()
	data, ok := w.trees[id]
	w.mu.Unlock()
	if ok {
		return DecodeTree(data)
	}
	return w.s.ReadTree(id)
}

// WriteBlob streams stored content (see Store.WriteBlob); pending objects
// are not readable until Commit.
func (w *Writer) WriteBlob(id ID, out io.Writer) (int64, error) { return w.s.WriteBlob(id, out) }

// NewBytes is the number of bytes written to the pack so far.
func (w *Writer) NewBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.newBytes
}

// Commit makes every object put so far durable and visible: it writes the
// index, fsyncs the pack, renames it into packs/ and fsyncs that directory.
// When it returns nil the objects survive a crash. It returns the pack's
// file name ("" when nothing new was written).
func (w *Writer) Commit() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		w.abortLocked()
		return "", w.err
	}
	if w.f == nil || w.dryRun {
		return "", nil
	}
	index, footer := encodeIndex(w.entries, w.off)
	name := hex.EncodeToString(footer[12:44]) + packFileSuffix
	err := func() error {
		if _, err := w.bw.Write(index); err != nil {
			return err
		}
		if _, err := w.bw.Write(footer); err != nil {
			return err
		}
		if err := w.bw.Flush(); err != nil {
			return err
		}
		return w.f.Commit(name)
	}()
	if err != nil {
		w.err = err
		w.abortLocked()
		return "", fmt.Errorf("commit pack: %w", err)
	}
	p := newPackFile(w.s.blobs, name, int64(w.off)+int64(len(index))+int64(len(footer)), index, w.off)
	p.checked = true // its index is what this writer just encoded
	w.s.mu.Lock()
	if _, ok := w.s.packs[name]; !ok {
		w.s.packs[name] = p
		w.s.reorderLocked()
	}
	w.s.mu.Unlock()
	w.f = nil
	w.entries = nil
	w.pending = map[ID]struct{}{}
	w.trees = map[ID][]byte{}
	return name, nil
}

// Abort discards everything put since the last Commit.
func (w *Writer) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked()
}

func (w *Writer) abortLocked() {
	if w.f != nil {
		w.f.Abort()
		w.f = nil
	}
	w.entries = nil
	w.pending = map[ID]struct{}{}
	w.trees = map[ID][]byte{}
}

// StoredBytes returns, per object type, the number of objects and the bytes
// their records occupy in packs (headers included).
func (s *Store) StoredBytes() map[Type][2]int64 {
	out := map[Type][2]int64{}
	for _, loc := range s.objects() {
		v := out[loc.e.typ]
		v[0]++
		v[1] += recordHeader + int64(loc.e.stored)
		out[loc.e.typ] = v
	}
	return out
}
