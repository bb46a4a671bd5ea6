package gitbridge

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// deltaOf's deltas rebuild their target with go-git's patcher (the real
// git reads them in pack_test.go): extensions across the 64 KiB copy
// limit, offsets with zero bytes, edits in the middle, and what does not
// pay.
func TestDeltaOfRebuildsTheTarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	text := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh \n"[rng.IntN(10)]
		}
		return b
	}
	for _, n := range []int{1, 127, 128, 0xffff, 0x10000, 0x10001, 0x20000, 3<<16 + 5, 1 << 20} {
		base := text(n)
		for _, add := range []int{1, 126, 127, 128, 1000} {
			target := append(bytes.Clone(base), text(add)...)
			d := deltaOf(base, target)
			if len(target)/2 <= add+add/127+64 {
				continue // need not pay
			}
			if d == nil {
				t.Fatalf("base %d + %d bytes: no delta", n, add)
			}
			got, err := packfile.PatchDelta(base, d)
			if err != nil || !bytes.Equal(got, target) {
				t.Fatalf("base %d + %d bytes: the delta rebuilds %d bytes (%v)", n, add, len(got), err)
			}
		}
	}
	base := text(50000)
	mid := append(append(bytes.Clone(base[:20000]), "an inserted line\n"...), base[20000:]...)
	if d := deltaOf(base, mid); d == nil {
		t.Fatal("an edit in the middle: no delta")
	} else if got, err := packfile.PatchDelta(base, d); err != nil || !bytes.Equal(got, mid) {
		t.Fatalf("an edit in the middle: the delta does not rebuild it (%v)", err)
	}
	if d := deltaOf(text(1000), text(1000)); d != nil {
		t.Fatalf("unrelated contents: a delta of %d bytes", len(d))
	}
	if d := deltaOf(base[:10], base); d != nil {
		t.Fatalf("a target mostly new: a delta of %d bytes", len(d))
	}
}

// The encodings of a pack record's header and of an OFS_DELTA's distance
// (git's pack-format.txt examples and boundaries).
func TestPackEncodings(t *testing.T) {
	for _, c := range []struct {
		kind int
		size int64
		want []byte
	}{
		{3, 0, []byte{0x30}},
		{3, 15, []byte{0x3f}},
		{3, 16, []byte{0xb0, 0x01}},
		{1, 2047, []byte{0x9f, 0x7f}},
		{6, 2048, []byte{0xe0, 0x80, 0x01}},
	} {
		if got := packObjectHeader(c.kind, c.size); !bytes.Equal(got, c.want) {
			t.Errorf("header(%d, %d) = %x, want %x", c.kind, c.size, got, c.want)
		}
	}
	// Decoded as git does (packfile.c get_delta_base).
	for _, ofs := range []int64{1, 127, 128, 16383, 16384, 16511, 16512, 1 << 30, 1<<40 + 3} {
		b := packOffset(ofs)
		c := b[0]
		v := int64(c & 0x7f)
		for i := 1; c&0x80 != 0; i++ {
			v++
			c = b[i]
			v = v<<7 + int64(c&0x7f)
		}
		if v != ofs {
			t.Errorf("offset %d encodes as %x, which decodes to %d", ofs, b, v)
		}
	}
}
