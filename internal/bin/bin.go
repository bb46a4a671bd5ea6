// Package bin reads the binary forms snap writes its objects and caches in
// (varints, big-endian integers, length-prefixed bytes) from a byte slice,
// the first failure sticking: a decoder reads every field, then asks once
// whether all of them were there. Nothing it reads is trusted to size an
// allocation without Count.
package bin

import (
	"encoding/binary"
	"hash/crc32"
)

// Castagnoli is the CRC-32C table, which the CPU computes: the checksum of
// snap's caches and of the op log's bytes a cache vouches for.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Reader reads from B, which holds what is left.
type Reader struct {
	B      []byte
	Failed bool // a read ran past the end or found a malformed varint
}

// Fail marks the reader failed; every later read returns zero.
func (r *Reader) Fail() { r.Failed, r.B = true, nil }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.B) < 1 {
		r.Fail()
		return 0
	}
	c := r.B[0]
	r.B = r.B[1:]
	return c
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Fail()
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Varint reads a signed (zig-zag) varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.Fail()
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Uint32 reads 4 bytes, big-endian.
func (r *Reader) Uint32() uint32 {
	if len(r.B) < 4 {
		r.Fail()
		return 0
	}
	v := binary.BigEndian.Uint32(r.B)
	r.B = r.B[4:]
	return v
}

// Bytes reads n bytes: a slice of B (its capacity ends with it, so an
// append to it never writes over what follows).
func (r *Reader) Bytes(n uint64) []byte {
	if n > uint64(len(r.B)) {
		r.Fail()
		return nil
	}
	v := r.B[:n:n]
	r.B = r.B[n:]
	return v
}

// Count reads a count of items that take at least min bytes each, and
// fails on one the bytes left cannot hold: a forged count sizes no
// allocation.
func (r *Reader) Count(min int) int {
	n := r.Uvarint()
	if n > uint64(len(r.B)/max(min, 1)) {
		r.Fail()
		return 0
	}
	return int(n)
}
