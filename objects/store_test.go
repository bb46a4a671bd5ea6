package objects

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

func packBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	des, _ := os.ReadDir(filepath.Join(dir, PacksDir))
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func TestPutReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	sizes := []int{0, 1, 63, 64, 1000, SmallBlobMax, SmallBlobMax + 1, 300 << 10, 3 << 20}
	ids := map[int]ID{}
	contents := map[int][]byte{}
	w := s.NewWriter()
	for _, n := range sizes {
		b := make([]byte, n)
		rng.Read(b[:n/2]) // half random, half zeros: both encodings
		id, size, err := w.PutBlob(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if size != int64(n) {
			t.Fatalf("size %d, want %d", size, n)
		}
		ids[n], contents[n] = id, b
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	// A fresh store instance sees the pack.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		var out bytes.Buffer
		if _, err := s2.WriteBlob(ids[n], &out); err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if !bytes.Equal(out.Bytes(), contents[n]) {
			t.Fatalf("size %d: content differs", n)
		}
		wantType := TypeBlob
		if n > SmallBlobMax {
			wantType = TypeChunkList
		}
		if typ, _ := s2.TypeOf(ids[n]); typ != wantType {
			t.Fatalf("size %d: type %v want %v", n, typ, wantType)
		}
	}
	// Same content again: dedup, nothing written.
	w = s2.NewWriter()
	if _, _, err := w.PutBlob(bytes.NewReader(contents[3<<20])); err != nil {
		t.Fatal(err)
	}
	if w.NewBytes() != 0 {
		t.Fatalf("dedup wrote %d bytes", w.NewBytes())
	}
	if name, err := w.Commit(); err != nil || name != "" {
		t.Fatalf("empty commit: %q %v", name, err)
	}
}

// A growing JSONL transcript stores little more than its new tail per
// version (issue acceptance: < 3× zlib(final) + 2 KiB per checkpoint).
func TestTranscriptGrowthIsIncremental(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	var doc []byte
	const steps = 200
	for i := 0; i < steps; i++ {
		for len(doc) < (i+1)*5000 {
			doc = append(doc, fmt.Sprintf(`{"type":"assistant","uuid":"%08x","message":{"role":"assistant","content":[{"type":"text","text":"step %d: %s"}]}}`+"\n",
				rng.Uint32(), i, randomWords(rng, 40))...)
		}
		w := s.NewWriter()
		if _, err := w.PutBytes(doc); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(doc)
	zw.Close()
	got := packBytes(t, dir)
	budget := int64(3*z.Len() + steps*2048)
	t.Logf("final transcript %d bytes, zlib %d, store %d, budget %d", len(doc), z.Len(), got, budget)
	if got >= budget {
		t.Fatalf("store grew %d bytes, budget %d", got, budget)
	}
}

var words = []string{"the", "file", "edit", "function", "returns", "error", "test", "passes", "snap", "checkpoint", "rewind", "tree", "go", "build", "main", "package", "import", "value", "string", "struct"}

func randomWords(rng *rand.Rand, n int) string {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, words[rng.Intn(len(words))]...)
		b = append(b, ' ')
	}
	return string(b)
}

// A 1 KiB edit in the middle of a big file stores about one chunk plus a few
// list objects.
func TestBigFileEditIsSmall(t *testing.T) {
	size := 64 << 20
	if !testing.Short() && os.Getenv("SNAP_BIG") != "" {
		size = 256 << 20
	}
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	rand.New(rand.NewSource(3)).Read(data)
	w := s.NewWriter()
	id1, _, err := w.PutBlob(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	w.Commit()
	before := packBytes(t, dir)
	rand.New(rand.NewSource(4)).Read(data[size/2 : size/2+1024])
	w = s.NewWriter()
	id2, _, err := w.PutBlob(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	w.Commit()
	growth := packBytes(t, dir) - before
	t.Logf("%d MiB file, 1 KiB edit: store grew %d bytes", size>>20, growth)
	if id1 == id2 || growth > 2<<20 || growth > 256<<10 {
		t.Fatalf("growth %d bytes", growth)
	}
	var out bytes.Buffer
	if _, err := s.WriteBlob(id2, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("read back: %v", err)
	}
}
