package objects

import (
	"testing"
)

// BenchmarkHas: Has of a stored object in a pack of 200,000 (what a
// capture of an unchanged 200,000-file tree asks once per file).
func BenchmarkHas(b *testing.B) {
	s, _ := openStoreForTest(b)
	ids, _ := putBlobsForTest(b, s, 200_000)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if !s.Has(ids[i%len(ids)]) {
			b.Fatal("not found")
		}
		i += 7919
	}
}
