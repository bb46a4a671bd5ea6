package objects

import (
	"encoding/binary"
	"testing"
)

// BenchmarkHas: Has of a stored object in a pack of 200,000 (what a
// capture of an unchanged 200,000-file tree asks once per file).
func BenchmarkHas(b *testing.B) {
	s, _ := openStoreForTest(b)
	w := s.NewWriter()
	ids := make([]ID, 200_000)
	for i := range ids {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		id, err := w.Put(TypeBlob, buf[:])
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	if _, err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if !s.Has(ids[i%len(ids)]) {
			b.Fatal("not found")
		}
		i += 7919
	}
}
