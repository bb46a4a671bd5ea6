package index

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/internal/bin"
	"github.com/snapcore-dev/snap/objects"
)

// The journal: what changed since the cache file was written, appended to
// JournalPath(path) in batches, so that a save costs what changed and not
// the whole file (a checkpoint of 10 files in a tree of 200,000 rewrote
// some 23 MB). It extends one cache file, named by that file's checksum;
// a journal of another one (the cache file was rewritten since) is not
// read. A batch that does not check (torn by a crash, two writers) ends
// the journal: what it and the batches after it held is re-hashed.
//
//	"SNAPSTJ1" | the cache file's checksum (the blake3-256 of its table) [32]
//	batches × { len u32 | records (len bytes) | crc32c(records) u32 }
//
//	record = 'P' path stat id [32]         an entry
//	       | 'D' path                      an entry dropped
//	       | 'L' dir stat n × name         a listing (names sorted)
//	       | 'X' dir                       a listing dropped
//
// with strings as in the cache file (uvarint length, bytes) and n a
// uvarint. Every record is as truthful as the cache file's entries are: it
// was made with what was read at that stat, so batches of two processes
// may interleave in any order. Save rewrites the cache file whole (and
// removes the journal) once the journal would pass a sixteenth of the
// file's size, at least journalMin: replaying a record costs more than
// decoding one from the file, and a big change is cheaper written whole.
const (
	journalMagic = "SNAPSTJ1"
	journalMin   = 64 << 10
	// journalCap: the changes a cache keeps count of; more are saved whole.
	journalCap = 1 << 16
)

// JournalPath is the journal of the cache file at path.
func JournalPath(path string) string { return path + ".log" }

// replayJournal applies the journal in data to c, loaded from a cache file
// whose checksum is sum, and returns the length of the part applied.
func (c *Cache) replayJournal(data []byte, sum []byte) int {
	if len(data) < len(journalMagic)+32 || string(data[:len(journalMagic)]) != journalMagic ||
		string(data[len(journalMagic):len(journalMagic)+32]) != string(sum) {
		return 0
	}
	pos := len(journalMagic) + 32
	for len(data)-pos >= 8 {
		n := int(binary.LittleEndian.Uint32(data[pos:]))
		if n > len(data)-pos-8 {
			break
		}
		recs := data[pos+4 : pos+4+n]
		if crc32.Checksum(recs, bin.Castagnoli) != binary.LittleEndian.Uint32(data[pos+4+n:]) || !c.applyBatch(recs) {
			break
		}
		pos += 8 + n
	}
	return pos
}

// applyBatch applies one batch's records, all or none (false when one
// does not decode).
func (c *Cache) applyBatch(recs []byte) bool {
	type put struct {
		path string
		e    Entry
		l    *listing
		drop bool
	}
	var puts []put
	d := &decoder{all: unsafe.String(unsafe.SliceData(recs), len(recs))}
	for d.pos < len(d.all) && d.err == nil {
		kind := d.bytes("record", 1)
		switch kind {
		case "P":
			p := put{path: d.string("path", entryTail)}
			p.e.Stat, p.e.Recorded = d.stat("entry")
			copy(p.e.ID[:], d.bytes("entry", objects.IDSize))
			puts = append(puts, p)
		case "D":
			puts = append(puts, put{path: d.string("path", 0), drop: true})
		case "L":
			p := put{path: d.string("directory", statSize), l: &listing{}}
			p.l.Stat, p.l.Recorded = d.stat("directory")
			n := d.uvarint("name count", uint64(len(d.all)-d.pos)/2)
			for j := uint64(0); j < n && d.err == nil; j++ {
				name := d.string("name", 0)
				if name == "" || j > 0 && name <= p.l.Names[j-1] {
					return false
				}
				p.l.Names = append(p.l.Names, name)
			}
			puts = append(puts, p)
		case "X":
			puts = append(puts, put{path: d.string("directory", 0), l: &listing{}, drop: true})
		default:
			return false
		}
	}
	if d.err != nil {
		return false
	}
	for _, p := range puts {
		switch {
		case p.l == nil && p.drop:
			c.dropLocked(p.path)
		case p.l == nil:
			if _, name := splitPath(p.path); name == "" {
				return false
			}
			c.putLocked(p.path, p.e)
		case p.drop:
			if d := c.stateLocked(p.path, false); d != nil {
				d.list = nil
			}
		default:
			c.stateLocked(p.path, true).list = p.l
		}
	}
	return true
}

// noteChanged adds key to set (c.changed or c.changedDirs), for the next
// journal batch: only while the cache has a file to extend (the first save
// writes it whole, and a first capture puts every path), and up to
// journalCap, past which a batch would never fit anyway.
func (c *Cache) noteChanged(set map[string]bool, key string) {
	if c.sum != nil && len(c.changed)+len(c.changedDirs) < journalCap {
		set[key] = true
	} else {
		c.sum = nil // not all of it known: the next save writes the file whole
	}
}

// encodeBatchLocked is one journal batch of what changed since the cache
// was loaded or saved, or nil when that would pass limit bytes (or nothing
// can be told: the next save writes the file whole).
func (c *Cache) encodeBatchLocked(limit int) []byte {
	if c.sum == nil || limit <= 0 {
		return nil
	}
	b := make([]byte, 4, 4+min(limit, len(c.changed)*(64+entryTail)))
	for _, p := range sortedKeys(c.changed) {
		if len(b) > limit {
			return nil
		}
		if e, ok := c.entryLocked(p); ok {
			b = appendString(append(b, 'P'), p)
			b = appendStat(b, e.Stat, e.Recorded)
			b = append(b, e.ID[:]...)
		} else {
			b = appendString(append(b, 'D'), p)
		}
	}
	for _, dir := range sortedKeys(c.changedDirs) {
		if len(b) > limit {
			return nil
		}
		var l *listing
		if d := c.stateLocked(dir, false); d != nil {
			l = d.list
		}
		if l == nil {
			b = appendString(append(b, 'X'), dir)
			continue
		}
		b = appendString(append(b, 'L'), dir)
		b = appendStat(b, l.Stat, l.Recorded)
		b = binary.AppendUvarint(b, uint64(len(l.Names)))
		for _, n := range l.Names {
			b = appendString(b, n)
		}
	}
	if len(b)+4 > limit {
		return nil
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[4:], bin.Castagnoli))
}

// entryLocked returns path's entry; c.mu is held for writing.
func (c *Cache) entryLocked(path string) (Entry, bool) {
	dir, name := splitPath(path)
	if d := c.stateLocked(dir, false); d != nil {
		if i, ok := d.find(name); ok {
			return d.ents[i], true
		}
	}
	return Entry{}, false
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendJournal appends batch to the journal of the cache file at path,
// whose checksum is sum, starting the journal when it has none for that
// file: false when it cannot (the caller writes the cache file whole).
func appendJournal(vfs fsys.FS, path string, sum []byte, batch []byte, fresh bool) bool {
	jp := JournalPath(path)
	if fresh {
		// A journal of another cache file, or none: replaced.
		data := append(append([]byte(journalMagic), sum...), batch...)
		f, err := vfs.CreateTemp(filepath.Dir(jp), filepath.Base(jp)+".tmp-*")
		if err != nil {
			return false
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = vfs.Rename(f.Name(), jp)
		}
		if err != nil {
			vfs.Remove(f.Name())
			return false
		}
		return true
	}
	f, err := vfs.OpenFile(jp, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return false // rewritten by another process since: write the cache whole
	}
	defer f.Close()
	// The journal must still be the one this cache read: a process that
	// rewrote the cache file since removed or replaced it.
	head := make([]byte, len(journalMagic)+32)
	if _, err := f.ReadAt(head, 0); err != nil || string(head[len(journalMagic):]) != string(sum) {
		return false
	}
	_, err = f.Write(batch) // one write: O_APPEND puts it after any other writer's
	return err == nil
}
