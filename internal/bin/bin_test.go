package bin

import (
	"encoding/binary"
	"testing"
)

func TestReader(t *testing.T) {
	b := binary.AppendUvarint(nil, 300)
	b = binary.AppendVarint(b, -5)
	b = binary.BigEndian.AppendUint32(b, 0xdeadbeef)
	b = append(b, 7, 'a', 'b', 'c')
	b = binary.AppendUvarint(b, 2) // a count of 2 items of 1 byte: 2 bytes follow
	b = append(b, 1, 2)
	r := Reader{B: b}
	if v := r.Uvarint(); v != 300 {
		t.Fatal(v)
	}
	if v := r.Varint(); v != -5 {
		t.Fatal(v)
	}
	if v := r.Uint32(); v != 0xdeadbeef {
		t.Fatal(v)
	}
	if v := r.Byte(); v != 7 {
		t.Fatal(v)
	}
	got := r.Bytes(3)
	if string(got) != "abc" || cap(got) != 3 {
		t.Fatalf("%q, cap %d", got, cap(got))
	}
	if n := r.Count(1); n != 2 || r.Failed {
		t.Fatal(n, r.Failed)
	}
	r.Bytes(2)
	if r.Failed || len(r.B) != 0 {
		t.Fatal("not at the end")
	}
	// Past the end: failed, and it sticks.
	if r.Byte() != 0 || !r.Failed {
		t.Fatal("a read past the end")
	}
	if r.Uvarint() != 0 || r.Bytes(0) != nil || !r.Failed {
		t.Fatal("a failed reader read again")
	}
	// A count the bytes cannot hold fails without sizing anything.
	c := Reader{B: binary.AppendUvarint(nil, 1<<40)}
	if n := c.Count(32); n != 0 || !c.Failed {
		t.Fatal(n, c.Failed)
	}
	// A malformed varint fails.
	m := Reader{B: []byte{0xff, 0xff}}
	if m.Uvarint(); !m.Failed {
		t.Fatal("a truncated varint read")
	}
}
