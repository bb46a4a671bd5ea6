package objects

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks of an append to a stored document (Writer.PutBytesAppend and
// Writer.PutFileAppend): the prefix verification (hashing every chunk of the
// base against the new content) dominates.

// appendBenchDocForTest returns size bytes of random text and, in s, the
// document stored whole; it returns the stored id.
func appendBenchDocForTest(b *testing.B, s *Store, size int) ([]byte, ID) {
	b.Helper()
	r := rand.New(rand.NewPCG(uint64(size), 7))
	doc := randomTextForTest(r, size)
	w := s.NewWriter()
	id, err := w.PutBytes(doc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	return append(doc, randomTextForTest(r, 8<<10)...), id
}

func BenchmarkPutBytesAppend(b *testing.B) {
	for _, size := range []int{1 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			s, _ := openStoreForTest(b)
			doc, base := appendBenchDocForTest(b, s, size)
			b.SetBytes(int64(len(doc)))
			b.ResetTimer()
			for b.Loop() {
				w := s.NewWriter()
				if _, err := w.PutBytesAppend(doc, base); err != nil {
					b.Fatal(err)
				}
				w.Abort()
			}
		})
	}
}

// The same append read from a file.
func BenchmarkPutFileAppend(b *testing.B) {
	for _, size := range []int{1 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			s, dir := openStoreForTest(b)
			doc, base := appendBenchDocForTest(b, s, size)
			name := filepath.Join(dir, "doc")
			if err := os.WriteFile(name, doc, 0o644); err != nil {
				b.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(len(doc)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					b.Fatal(err)
				}
				w := s.NewWriter()
				if _, _, err := w.PutFileAppend(f, base); err != nil {
					b.Fatal(err)
				}
				w.Abort()
			}
		})
	}
}

// An edit that is not an append: the verification fails at the first chunk
// and the document is stored whole.
func BenchmarkPutBytesAppendEdited(b *testing.B) {
	s, _ := openStoreForTest(b)
	doc, base := appendBenchDocForTest(b, s, 8<<20)
	doc = bytes.Clone(doc)
	doc[100] ^= 1
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for b.Loop() {
		w := s.NewWriter()
		if _, err := w.PutBytesAppend(doc, base); err != nil {
			b.Fatal(err)
		}
		w.Abort()
	}
}
