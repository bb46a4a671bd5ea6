package objects

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// This file holds what gc and fsck need from the object layer: per-pack
// introspection (PackInfo, PackObjects, LoadErrors), whole-pack verification
// (VerifyPack) and rewriting packs without their unwanted objects (Repack).

// ObjectInfo describes one stored copy of an object, as its pack index
// records it. Nothing is read or verified to produce it.
type ObjectInfo struct {
	ID     ID
	Type   Type
	Size   int64  // length of the canonical (decoded) encoding
	Stored int64  // bytes the record's data occupies in the pack (header excluded)
	Pack   string // pack file name, inside packs/
	Offset int64  // offset of the record header in the pack
	Delta  bool   // stored as a delta on another object (see Store.DeltaBase)
}

// PackInfo describes one indexed pack file.
type PackInfo struct {
	Name    string    `json:"name"`     // file name inside packs/
	Size    int64     `json:"size"`     // bytes
	ModTime time.Time `json:"mod_time"` // the file's mtime: when it was committed
	Objects int       `json:"objects"`  // records in its index, duplicates of other packs included
}

// Info returns what the index knows about the copy of id that reads use,
// without reading it: in particular a blob's size, its type and its pack.
func (s *Store) Info(id ID) (ObjectInfo, bool) {
	loc, ok := s.lookup(id)
	if !ok {
		return ObjectInfo{}, false
	}
	return objectInfoOf(loc.pack.name, loc.e), true
}

func objectInfoOf(pack string, e indexEntry) ObjectInfo {
	return ObjectInfo{ID: e.id, Type: e.typ, Size: int64(e.size), Stored: int64(e.stored), Pack: pack, Offset: int64(e.offset), Delta: e.enc == encDelta}
}

// PackInfo lists the packs this Store has indexed (see Reload), sorted by
// name. A pack removed from disk since it was indexed is left out.
func (s *Store) PackInfo() []PackInfo {
	s.mu.RLock()
	packs := make([]*packFile, 0, len(s.packs))
	for _, p := range s.packs {
		packs = append(packs, p)
	}
	s.mu.RUnlock()
	sort.Slice(packs, func(i, j int) bool { return packs[i].name < packs[j].name })
	out := make([]PackInfo, 0, len(packs))
	for _, p := range packs {
		fi, err := s.blobs.Stat(p.name)
		if err != nil {
			continue
		}
		n, err := packCountOf(p)
		if err != nil {
			continue
		}
		out = append(out, PackInfo{Name: p.name, Size: p.size, ModTime: fi.ModTime, Objects: n})
	}
	return out
}

// packCountOf reads the entry count from a pack's footer (which loadPack has
// validated).
func packCountOf(p *packFile) (int, error) {
	f, err := p.file()
	if err != nil {
		return 0, err
	}
	var footer [packFooterSize]byte
	if _, err := f.ReadAt(footer[:], p.size-packFooterSize); err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(footer[8:])), nil
}

// LoadErrors returns the packs under packs/ that could not be indexed, by
// file name, with the reason: damage (ErrCorrupt), or an I/O error (retried
// by the next Reload). Their objects are missing from the store. The map is
// a copy.
func (s *Store) LoadErrors() map[string]error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]error, len(s.loadErrs))
	for k, v := range s.loadErrs {
		out[k] = v
	}
	return out
}

// indexedPack returns the indexed pack called name.
func (s *Store) indexedPack(name string) (*packFile, error) {
	s.mu.RLock()
	p, ok := s.packs[name]
	lerr, bad := s.loadErrs[name]
	s.mu.RUnlock()
	switch {
	case ok:
		return p, nil
	case bad && !errors.Is(lerr, ErrCorrupt):
		return nil, fmt.Errorf("pack %s cannot be read: %w", name, lerr)
	case bad:
		return nil, fmt.Errorf("%w: pack %s could not be indexed", ErrCorrupt, name)
	}
	return nil, fmt.Errorf("pack %s: %w", name, fs.ErrNotExist)
}

// packEntriesOf re-reads and validates the index of an indexed pack and
// returns its entries sorted by offset (the order of the records on disk).
// The in-memory index keeps only one copy of each object; this is how the
// other copies are found.
func packEntriesOf(p *packFile) ([]indexEntry, error) {
	q, err := loadPack(p.blobs, p.name, true, false)
	if err != nil {
		return nil, err
	}
	entries := q.entries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].offset < entries[j].offset })
	return entries, nil
}

// PackObjects lists every record of the indexed pack name, in the order they
// lie in the file, including objects that another pack also holds. It reads
// the pack's index, not its records.
func (s *Store) PackObjects(name string) ([]ObjectInfo, error) {
	p, err := s.indexedPack(name)
	if err != nil {
		return nil, err
	}
	entries, err := packEntriesOf(p)
	if err != nil {
		return nil, err
	}
	out := make([]ObjectInfo, len(entries))
	for i, e := range entries {
		out[i] = objectInfoOf(p.name, e)
	}
	return out, nil
}

// VerifyPack reads every record of the indexed pack name in file order,
// decompresses it and re-hashes it, and calls fn with the record and nil, or
// with the reason it is corrupt (wrapping ErrCorrupt; other errors are I/O).
// Every copy is checked, including those the in-memory index does not use
// because another pack holds the object too. A non-nil error from fn stops
// the scan and is returned.
func (s *Store) VerifyPack(name string, fn func(ObjectInfo, error) error) error {
	p, err := s.indexedPack(name)
	if err != nil {
		return err
	}
	entries, err := packEntriesOf(p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		_, verr := s.readRecord(p, e)
		if err := fn(objectInfoOf(p.name, e), verr); err != nil {
			return err
		}
	}
	return nil
}

// readRawRecordVerified returns the record of e exactly as it lies in the
// pack, after checking that it decodes to content hashing to e.id.
func (s *Store) readRawRecordVerified(p *packFile, e indexEntry) ([]byte, error) {
	raw, _, err := s.readRecordRaw(p, e, MaxDeltaDepth)
	return raw, err
}

// RepackPlan is what Repack would do, computed from the pack indexes alone.
type RepackPlan struct {
	Packs   []string // the packs that would be replaced (all removed)
	OldSize int64    // their total size
	Kept    int      // objects that would be copied into the new pack
	Dropped int      // records not copied: not kept, duplicates, or held by another pack
	NewSize int64    // size of the new pack; 0 when nothing is copied
	Freed   int64    // OldSize - NewSize
}

// repackSource is one copy of a kept object inside the packs being replaced.
type repackSource struct {
	p *packFile
	e indexEntry
}

// repackObject is one object Repack copies, with every copy it may copy from.
type repackObject struct {
	id      ID
	sources []repackSource // shallowest delta chain first
	// elsewhere: the in-memory index reads id from a pack that is not being
	// replaced; it is copied only if that copy turns out corrupt, or if
	// ours is shallower (oursFirst).
	elsewhere *location
	oursFirst bool
}

type repackWork struct {
	packs   []*packFile
	inSet   map[*packFile]bool
	objects []*repackObject // kept objects, in first-seen file order
	plan    RepackPlan
}

// PlanRepack computes what Repack(packs, keep) would do, without writing
// anything or reading any record beyond the first bytes of delta records.
// NewSize assumes every copy verifies; Repack may copy an object held
// elsewhere when that other copy is corrupt.
func (s *Store) PlanRepack(packs []string, keep func(ID) bool) (RepackPlan, error) {
	w, err := s.planRepack(packs, keep)
	if err != nil {
		return RepackPlan{}, err
	}
	return w.plan, nil
}

func (s *Store) planRepack(names []string, keep func(ID) bool) (*repackWork, error) {
	w := &repackWork{inSet: map[*packFile]bool{}}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if name != filepath.Base(name) || !strings.HasSuffix(name, packFileSuffix) {
			return nil, fmt.Errorf("repack: %q is not a pack name", name)
		}
		p, err := s.indexedPack(name)
		if err != nil {
			return nil, fmt.Errorf("repack: %w", err)
		}
		w.packs = append(w.packs, p)
		w.inSet[p] = true
		w.plan.Packs = append(w.plan.Packs, name)
		w.plan.OldSize += p.size
	}
	setEntries := make([][]indexEntry, len(w.packs))
	for i, p := range w.packs {
		entries, err := packEntriesOf(p)
		if err != nil {
			return nil, fmt.Errorf("repack: %w", err)
		}
		setEntries[i] = entries
	}
	bases, err := s.deltaBasesToKeep(w, setEntries, keep)
	if err != nil {
		return nil, fmt.Errorf("repack: %w", err)
	}
	byID := map[ID]*repackObject{}
	for i, p := range w.packs {
		for _, e := range setEntries[i] {
			if !keep(e.id) && !bases[e.id] {
				w.plan.Dropped++
				continue
			}
			if o, ok := byID[e.id]; ok {
				o.sources = append(o.sources, repackSource{p, e})
				continue
			}
			o := &repackObject{id: e.id, sources: []repackSource{{p, e}}}
			if loc, ok := s.lookup(e.id); ok && !w.inSet[loc.pack] {
				o.elsewhere = &loc
			}
			byID[e.id] = o
			w.objects = append(w.objects, o)
		}
	}
	var kept, recs uint64
	for _, o := range w.objects {
		orderCopies(o)
		w.plan.Dropped += len(o.sources) - 1
		if o.elsewhere != nil && !o.oursFirst {
			w.plan.Dropped++
			continue
		}
		kept++
		recs += recordHeader + uint64(o.sources[0].e.stored)
	}
	w.plan.Kept = int(kept)
	if kept > 0 {
		w.plan.NewSize = int64(packHeaderSize + recs + kept*indexEntrySize + packFooterSize)
	}
	w.plan.Freed = w.plan.OldSize - w.plan.NewSize
	return w, nil
}

// orderCopies puts o's copies with the shortest delta chain first, and
// prefers ours to the one held elsewhere when ours is shallower. Every
// delta was written on a copy of its base no deeper than its own depth
// minus one; keeping the shallowest copy keeps that true, so no chain a
// reader follows exceeds MaxDeltaDepth. Whole records all have depth 0:
// then nothing is read and the order stays the file order.
func orderCopies(o *repackObject) {
	delta := o.elsewhere != nil && o.elsewhere.e.enc == encDelta
	for _, c := range o.sources {
		delta = delta || c.e.enc == encDelta
	}
	if !delta || (len(o.sources) == 1 && o.elsewhere == nil) {
		return
	}
	depthOf := func(p *packFile, e indexEntry) int {
		_, d, err := deltaHead(p, e)
		if err != nil {
			return MaxDeltaDepth + 1 // unreadable: last; verification decides
		}
		return d
	}
	depths := make(map[repackSource]int, len(o.sources))
	for _, c := range o.sources {
		depths[c] = depthOf(c.p, c.e)
	}
	sort.SliceStable(o.sources, func(i, j int) bool { return depths[o.sources[i]] < depths[o.sources[j]] })
	if o.elsewhere != nil {
		o.oursFirst = depths[o.sources[0]] < depthOf(o.elsewhere.pack, o.elsewhere.e)
	}
}

// deltaBasesToKeep returns the objects of the set's packs that keep does
// not ask for but that must stay because a delta record that stays has them
// as its base, directly or through other bases, and no pack outside the set
// holds them. A delta record stays when keep wants it or when it lies in a
// pack outside the set (every record of those stays: young packs, packs
// without garbage). Every copy's base counts, whichever copy Repack keeps.
func (s *Store) deltaBasesToKeep(w *repackWork, setEntries [][]indexEntry, keep func(ID) bool) (map[ID]bool, error) {
	inSet := map[ID][]repackSource{}
	var need []ID
	needBase := func(p *packFile, e indexEntry) error {
		if e.enc != encDelta {
			return nil
		}
		base, _, err := deltaHead(p, e)
		if errors.Is(err, ErrCorrupt) {
			return nil // unusable whatever is kept; verification reports a kept one
		}
		if err != nil {
			return fmt.Errorf("pack %s: %w", p.name, err)
		}
		need = append(need, base)
		return nil
	}
	for i, p := range w.packs {
		for _, e := range setEntries[i] {
			inSet[e.id] = append(inSet[e.id], repackSource{p, e})
			if keep(e.id) {
				if err := needBase(p, e); err != nil {
					return nil, err
				}
			}
		}
	}
	s.mu.RLock()
	var others []*packFile
	for _, p := range s.packs {
		if !w.inSet[p] {
			others = append(others, p)
		}
	}
	s.mu.RUnlock()
	for _, p := range others {
		for _, e := range p.entries() {
			if err := needBase(p, e); err != nil {
				return nil, err
			}
		}
	}
	extra := map[ID]bool{}
	for len(need) > 0 {
		b := need[len(need)-1]
		need = need[:len(need)-1]
		if keep(b) || extra[b] || len(inSet[b]) == 0 {
			continue // kept already (its bases are needed), or not in the set
		}
		outside := false
		for _, c := range s.copiesOf(b) {
			outside = outside || !w.inSet[c.pack]
		}
		if outside {
			continue
		}
		extra[b] = true
		for _, c := range inSet[b] {
			if err := needBase(c.p, c.e); err != nil {
				return nil, err
			}
		}
	}
	return extra, nil
}

// Repack replaces the given packs with at most one new pack holding the
// objects for which keep returns true, and returns the new pack's name (""
// when nothing had to be copied) and the bytes freed.
//
// Records are copied as they are stored (no recompression), but each is
// first decoded and re-hashed: corruption is never propagated. When a kept
// object has several copies in the packs being replaced, the first that
// verifies is copied; when none does (and no other pack holds a good copy),
// Repack fails with ErrCorrupt and changes nothing. A kept object that the
// in-memory index reads from a pack outside the set is not copied, once that
// copy has been verified.
//
// Delta records are copied as they are too, so their bases must survive:
// every object of the set that is the base, directly or through other
// bases, of a delta record that stays (one that keep wants, or any record
// of a pack outside the set, such as a young pack) is kept even when keep
// does not want it, unless a pack outside the set holds a copy. Of several
// copies of an object the one with the shortest delta chain is kept (even
// over a deeper copy held elsewhere), so no chain grows past the depth its
// writer saw.
//
// Crash safety: the new pack is committed exactly like Writer.Commit (written
// in tmp/, fsync'd, renamed into packs/, packs/ fsync'd) before any old pack
// is removed, and only then are the old packs removed and packs/ fsync'd
// again. A crash before the rename leaves a temporary file that is never
// read (gc removes it); a crash after it leaves the old packs beside the new
// one, so some objects are stored twice, which readers and fsck accept (the
// copies are identical); a later gc removes the old packs again. At no point
// is a kept object absent from packs/.
//
// Concurrency: Repack must not run concurrently with another Repack or with
// anything else that removes packs (gc serialises them with a lock). Readers
// of this Store are switched to the new pack before the old files go; other
// processes still indexing a removed pack must Reload. Objects that were not
// kept are dropped from this Store's index even if a pack outside the set
// holds another copy, until the store is reopened.
func (s *Store) Repack(packs []string, keep func(ID) bool) (newPack string, freed int64, err error) {
	w, err := s.planRepack(packs, keep)
	if err != nil {
		return "", 0, err
	}
	if len(w.packs) == 0 {
		return "", 0, nil
	}
	var entries []indexEntry
	var f storage.BlobWriter
	var bw *bufio.Writer
	off := uint64(packHeaderSize)
	defer func() {
		if f != nil { // not committed
			f.Abort()
		}
	}()
	for _, o := range w.objects {
		if o.elsewhere != nil && !o.oursFirst {
			if _, err := s.readRecord(o.elsewhere.pack, o.elsewhere.e); err == nil {
				continue
			}
			// That copy is bad: keep ours.
		}
		var rec []byte
		var src indexEntry
		var lastErr error
		for _, c := range o.sources {
			b, err := s.readRawRecordVerified(c.p, c.e)
			if err == nil {
				rec, src = b, c.e
				break
			}
			lastErr = fmt.Errorf("object %s in pack %s: %w", o.id.Short(), c.p.name, err)
			if !errors.Is(err, ErrCorrupt) {
				return "", 0, fmt.Errorf("repack: %w", lastErr)
			}
		}
		if rec == nil && o.elsewhere != nil && o.oursFirst {
			if _, err := s.readRecord(o.elsewhere.pack, o.elsewhere.e); err == nil {
				continue // ours are bad, the deeper copy elsewhere is good
			}
		}
		if rec == nil {
			return "", 0, fmt.Errorf("repack: no intact copy to keep: %w", lastErr)
		}
		if f == nil {
			f, err = s.blobs.Create("repack-")
			if err != nil {
				return "", 0, fmt.Errorf("repack: %w", err)
			}
			bw = bufio.NewWriterSize(f, 1<<20)
			if _, err := bw.Write(packHeader()); err != nil {
				return "", 0, fmt.Errorf("repack: %w", err)
			}
		}
		if _, err := bw.Write(rec); err != nil {
			return "", 0, fmt.Errorf("repack: %w", err)
		}
		e := src
		e.offset = off
		entries = append(entries, e)
		off += uint64(len(rec))
	}

	var newP *packFile
	if f != nil {
		index, footer := encodeIndex(entries, off)
		newPack = hex.EncodeToString(footer[12:44]) + packFileSuffix
		err := func() error {
			if _, err := bw.Write(index); err != nil {
				return err
			}
			if _, err := bw.Write(footer); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			return f.Commit(newPack)
		}()
		if err != nil {
			f.Abort()
			f = nil
			return "", 0, fmt.Errorf("repack: commit pack: %w", err)
		}
		f = nil
		newP = newPackFile(s.blobs, newPack, int64(off)+int64(len(index))+int64(len(footer)), index, off)
		newP.checked = true
	}

	// The new pack is durable: point the index at it, then drop the old packs.
	s.mu.Lock()
	added := false // a new file appeared in packs/ (not one replacing an identical pack)
	if newP != nil {
		if p, ok := s.packs[newPack]; ok {
			newP = p // an identical pack was already indexed (or is being replaced by itself)
		} else {
			added = true
			s.packs[newPack] = newP
			delete(s.loadErrs, newPack) // a damaged file of that name was just replaced by a good one
		}
	}
	var remove []*packFile
	for _, p := range w.packs {
		if p.name == newPack {
			continue // the rewrite reproduced this very pack
		}
		if s.packs[p.name] == p {
			s.dropPackLocked(p)
		}
		remove = append(remove, p)
	}
	s.reorderLocked()
	s.mu.Unlock()

	names := make([]string, len(remove))
	sizes := map[string]int64{}
	for i, p := range remove {
		names[i] = p.name
		sizes[p.name] = p.size
	}
	removed, err := s.blobs.Delete(names...)
	for _, name := range removed {
		freed += sizes[name]
	}
	if added {
		freed -= newP.size
	}
	if err != nil {
		return newPack, freed, fmt.Errorf("repack: new pack %s committed, removing old packs: %w", newPack, err)
	}
	return newPack, freed, nil
}
