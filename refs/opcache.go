package refs

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"time"

	"github.com/snapcore-dev/snap/internal/bin"
	"github.com/snapcore-dev/snap/objects"
)

// The op-log cache (file oplog.cache): the log's records up to some
// offset, verified and decoded, in a compact binary form, so that a
// command reading the history (snap log, status, undo, a no-change
// checkpoint asking whether its head is recorded) decodes as JSON only the
// records appended since the cache was written. It is disposable: a
// missing, damaged or stale one (the log's bytes up to its offset are not
// those it was made from) is ignored, and the log is parsed whole, as it
// always can be. Ops rewrites it when the records it had to parse past it
// pass opCacheSlack bytes, so the JSON a read decodes stays bounded
// whatever the length of the history.
//
// Format: "SNAPOPC3", then uvarints: the offset it covers (a record
// boundary), the number of records (lines) before it, then the CRC-32C of
// the log's bytes before the offset (4 bytes, big-endian), then each
// record (opcache encodeOp), then the CRC-32C of everything before it.
// (CRC-32C, which the CPU computes, not the log's CRC-64: checking the
// log's bytes is what a read of the history costs most, and the checksums
// guard against damage, not forgery.)
// Only a prefix whose every record verified, in seq order, is cached.
const (
	opCacheName  = "oplog.cache"
	opCacheMagic = "SNAPOPC3" // SNAPOPC1 kept times as Unix ns, SNAPOPC2 used CRC-64: ignored, rewritten
	opCacheSlack = 64 << 10
	// opMinSize: the fewest bytes encodeOp writes (seq, the three time
	// fields, kind, session, refs, ids, undoes, checkpoints, detail).
	opMinSize = 11
)

// opCache is a decoded cache file.
type opCache struct {
	off   int // the log's bytes it covers
	lines int // records in them
	ops   []Op
}

// readOpCache returns the cache when it is intact and describes log's
// first bytes; nil otherwise.
func (s *Store) readOpCache(log []byte) *opCache {
	// (Its records are never much larger than the log's JSON: a larger
	// file, which damage or a person made, is not read at all.)
	var data []byte
	err := s.be.ReadFileAt(opCacheName, func(r io.ReaderAt, size int64) error {
		if size > 2*int64(len(log))+opCacheSlack {
			return errOpCache
		}
		data = make([]byte, size)
		_, err := r.ReadAt(data, 0)
		return err
	})
	if err != nil || len(data) < len(opCacheMagic)+4 || string(data[:len(opCacheMagic)]) != opCacheMagic {
		return nil
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, bin.Castagnoli) != sum {
		return nil
	}
	d := opDecoder{Reader: bin.Reader{B: body[len(opCacheMagic):]}}
	off, lines := d.Uvarint(), d.Uvarint()
	prefix := d.Uint32()
	// (lines is checked against the bytes there: a record takes at least
	// opMinSize, so a forged count cannot size an allocation.)
	if d.Failed || off == 0 || off > uint64(len(log)) || lines > uint64(len(d.B))/opMinSize || log[off-1] != '\n' ||
		crc32.Checksum(log[:off], bin.Castagnoli) != prefix {
		return nil
	}
	c := &opCache{off: int(off), lines: int(lines), ops: make([]Op, 0, lines)}
	for range lines {
		op := d.op()
		if d.Failed {
			return nil
		}
		c.ops = append(c.ops, op)
	}
	if len(d.B) != 0 {
		return nil
	}
	return c
}

// writeOpCache caches ops, the records of log[:off] (lines of them, every
// one verified, in seq order). Best effort: a cache that cannot be
// written costs the next reader a longer parse, nothing else.
func (s *Store) writeOpCache(log []byte, off, lines int, ops []Op) {
	b := append([]byte(nil), opCacheMagic...)
	b = binary.AppendUvarint(b, uint64(off))
	b = binary.AppendUvarint(b, uint64(lines))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(log[:off], bin.Castagnoli))
	for i := range ops {
		b = encodeOp(b, &ops[i])
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, bin.Castagnoli))
	_ = s.be.WriteFile(opCacheName, b)
}

// encodeOp appends op's binary form: its fields in declaration order,
// integers as varints, strings and Detail length-prefixed (Detail's length
// plus one: 0 is none), ids as a presence bit mask then 32 bytes each.
func encodeOp(b []byte, op *Op) []byte {
	b = binary.AppendVarint(b, op.Seq)
	// The time as seconds, nanoseconds and its zone's offset: any year,
	// and the offset the record was written with (a record's time is
	// UTC unless its writer gave another).
	_, zone := op.Time.Zone()
	b = binary.AppendVarint(b, op.Time.Unix())
	b = binary.AppendUvarint(b, uint64(op.Time.Nanosecond()))
	b = binary.AppendVarint(b, int64(zone))
	b = appendString(b, op.Kind)
	b = appendString(b, op.Session)
	b = binary.AppendUvarint(b, uint64(len(op.Refs)))
	for _, c := range op.Refs {
		b = appendString(b, c.Name)
		b = appendIDs(b, c.Old, c.New)
	}
	b = appendIDs(b, op.Checkpoint, op.Target, op.Safety)
	b = binary.AppendVarint(b, op.Undoes)
	b = binary.AppendUvarint(b, uint64(len(op.Checkpoints)))
	for _, id := range op.Checkpoints {
		b = append(b, id[:]...)
	}
	if op.Detail == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(op.Detail))+1)
	return append(b, op.Detail...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendIDs appends a bit mask of the non-zero ids, then those.
func appendIDs(b []byte, ids ...objects.ID) []byte {
	var mask byte
	for i, id := range ids {
		if !id.IsZero() {
			mask |= 1 << i
		}
	}
	b = append(b, mask)
	for _, id := range ids {
		if !id.IsZero() {
			b = append(b, id[:]...)
		}
	}
	return b
}

var errOpCache = errors.New("refs: op-log cache: malformed")

// opDecoder reads encodeOp's forms.
type opDecoder struct {
	bin.Reader
	// strs interns the kinds, sessions and ref names, which repeat.
	strs map[string]string
}

func (d *opDecoder) string() string {
	v := d.Bytes(d.Uvarint())
	if s, ok := d.strs[string(v)]; ok {
		return s
	}
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	s := string(v)
	d.strs[s] = s
	return s
}

func (d *opDecoder) id() objects.ID {
	var id objects.ID
	copy(id[:], d.Bytes(uint64(len(id))))
	return id
}

func (d *opDecoder) ids(out ...*objects.ID) {
	mask := d.Byte()
	if mask>>len(out) != 0 {
		d.Fail()
		return
	}
	for i, p := range out {
		if mask&(1<<i) != 0 {
			*p = d.id()
		}
	}
}

func (d *opDecoder) op() Op {
	var op Op
	op.Seq = d.Varint()
	sec, nsec, zone := d.Varint(), d.Uvarint(), d.Varint()
	if nsec >= 1e9 || zone < -86400 || zone > 86400 {
		d.Fail()
	}
	op.Time = time.Unix(sec, int64(nsec)).UTC()
	if zone != 0 {
		op.Time = op.Time.In(time.FixedZone("", int(zone)))
	}
	op.Kind = d.string()
	op.Session = d.string()
	if n := d.Uvarint(); n > 0 && n <= uint64(len(d.B)) {
		op.Refs = make([]RefChange, n)
		for i := range op.Refs {
			op.Refs[i].Name = d.string()
			d.ids(&op.Refs[i].Old, &op.Refs[i].New)
		}
	} else if n > 0 {
		d.Fail()
	}
	d.ids(&op.Checkpoint, &op.Target, &op.Safety)
	op.Undoes = d.Varint()
	if n := d.Uvarint(); n > 0 && n <= uint64(len(d.B))/32 {
		op.Checkpoints = make([]objects.ID, n)
		for i := range op.Checkpoints {
			op.Checkpoints[i] = d.id()
		}
	} else if n > 0 {
		d.Fail()
	}
	if n := d.Uvarint(); n > 0 {
		op.Detail = d.Bytes(n - 1) // (a slice of the cache file's bytes, read for this call)
	}
	return op
}
