package objects

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// ContentReader reads chunked content at any offset, front to back or
// jumping about, as the bytes put.
func TestContentReader(t *testing.T) {
	s, _ := openStoreForTest(t)
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	w := s.NewWriter()
	id, _, err := w.PutBlob(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	c, err := s.OpenContent(id)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Size() != int64(len(data)) || len(c.Leaves()) < 2 {
		t.Fatalf("size %d, %d leaves", c.Size(), len(c.Leaves()))
	}
	got, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read front to back: %d bytes, %v", len(got), err)
	}
	for range 200 {
		off, n := rng.Int64N(int64(len(data))), 1+rng.IntN(200<<10)
		b := make([]byte, n)
		k, err := c.ReadAt(b, off)
		want := data[off:min(off+int64(n), int64(len(data)))]
		if !bytes.Equal(b[:k], want) || (k < n) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d, %d): %d bytes, %v", n, off, k, err)
		}
	}
}
