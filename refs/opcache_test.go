package refs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/internal/bin"
	"github.com/snapcore-dev/snap/objects"
)

// appendVaried appends n ops using every field of Op.
func appendVaried(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		op := &Op{Kind: []string{"checkpoint", "rewind", "undo", "import"}[i%4], Session: fmt.Sprintf("s%d", i%3),
			Checkpoint: testID(uint64(i + 1))}
		switch i % 4 {
		case 1:
			op.Target, op.Safety = testID(uint64(i)), testID(uint64(i+7))
			op.Refs = []RefChange{{Name: "sessions/s1/head", Old: testID(2), New: testID(uint64(i))}}
			op.Detail = json.RawMessage(fmt.Sprintf(`{"paths":["a<b>&c","é"],"n":%d}`, i))
		case 2:
			op.Undoes, op.Checkpoint = int64(i-1), testID(0)
			op.Refs = []RefChange{{Name: "labels/x", Old: testID(3)}, {Name: "sessions/s2/head", New: testID(4)}}
		case 3:
			op.Checkpoints = []objects.ID{testID(uint64(i)), testID(uint64(i + 1))}
			op.Time = time.Date(2025, 3, 1, 12, 0, 0, i, time.FixedZone("x", 3600)).UTC()
			switch i % 16 {
			case 7: // years beyond what Unix nanoseconds hold, and a time not in UTC
				op.Time = time.Date(2500, 3, 1, 12, 0, 0, i, time.FixedZone("x", 3600))
			case 11:
				op.Time = time.Date(1500, 3, 1, 12, 0, 0, i, time.UTC)
			}
		}
		mustAppend(t, s, op)
	}
}

// parsed is what the log holds, parsed whole, without the cache.
func parsed(t *testing.T, s *Store) []Op {
	t.Helper()
	data, err := os.ReadFile(logPath(s))
	if err != nil {
		t.Fatal(err)
	}
	sc := parseLog(data)
	if len(sc.corrupt) > 0 {
		t.Fatal(sc.corrupt)
	}
	return sc.ops
}

func cachePath(s *Store) string { return filepath.Join(s.dir, opCacheName) }

func TestOpCacheGivesWhatTheLogHolds(t *testing.T) {
	s := newStore(t)
	appendVaried(t, s, 40) // under opCacheSlack: no cache
	if _, err := s.Ops(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cachePath(s)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cache after a short log: %v", err)
	}
	appendVaried(t, s, 600)
	want := parsed(t, s)
	for round := range 3 { // written, then read; then more appended past it
		got, err := s.Ops()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("round %d: op %d from the cache\n%#v\nparsed\n%#v", round, i, got[i], want[i])
				}
			}
			t.Fatalf("round %d: %d ops from the cache, %d parsed", round, len(got), len(want))
		}
		if _, err := os.Stat(cachePath(s)); err != nil {
			t.Fatalf("round %d: no cache after %d ops: %v", round, len(want), err)
		}
		if c := s.readOpCache(mustRead(t, logPath(s))); c == nil || len(c.ops) == 0 {
			t.Fatalf("round %d: the cache written is not used", round)
		}
		if round == 1 {
			appendVaried(t, s, 7)
			want = parsed(t, s)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A cache that does not describe the log is never used: damage in the
// log's cached part is reported as if there were no cache, a damaged
// cache or one made from other bytes is ignored.
func TestOpCacheNeverHidesTheLog(t *testing.T) {
	setup := func(t *testing.T) (*Store, []Op) {
		s := newStore(t)
		appendVaried(t, s, 600)
		if _, err := s.Ops(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(cachePath(s)); err != nil {
			t.Fatal(err)
		}
		return s, parsed(t, s)
	}
	t.Run("log damaged in the cached part", func(t *testing.T) {
		s, _ := setup(t)
		data := mustRead(t, logPath(s))
		data[100] ^= 1
		os.WriteFile(logPath(s), data, 0o644)
		if _, err := s.Ops(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Ops over a damaged record the cache holds: %v, want ErrCorrupt", err)
		}
		data[100] ^= 1 // (the store's check at cleanup)
		os.WriteFile(logPath(s), data, 0o644)
	})
	t.Run("log cut short", func(t *testing.T) {
		s, want := setup(t)
		data := mustRead(t, logPath(s))
		lines := 0
		cut := 0
		for i, c := range data {
			if c == '\n' {
				if lines++; lines == 10 {
					cut = i + 1
					break
				}
			}
		}
		os.WriteFile(logPath(s), data[:cut], 0o644)
		got, err := s.Ops()
		if err != nil || !reflect.DeepEqual(got, want[:10]) {
			t.Fatalf("Ops of a log cut to 10 records: %d ops, %v", len(got), err)
		}
	})
	t.Run("cache damaged", func(t *testing.T) {
		s, want := setup(t)
		c := mustRead(t, cachePath(s))
		c[len(c)/2] ^= 0x40
		os.WriteFile(cachePath(s), c, 0o644)
		if s.readOpCache(mustRead(t, logPath(s))) != nil {
			t.Fatal("a damaged cache was used")
		}
		got, err := s.Ops()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Ops with a damaged cache: %d ops, %v", len(got), err)
		}
	})
	t.Run("cache of another log", func(t *testing.T) {
		s, want := setup(t)
		other := newStore(t)
		appendN(t, other, 2000)
		if _, err := other.Ops(); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(cachePath(s), mustRead(t, cachePath(other)), 0o644)
		got, err := s.Ops()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Ops with another log's cache: %d ops, %v", len(got), err)
		}
	})
	t.Run("truncated cache files", func(t *testing.T) {
		s, want := setup(t)
		c := mustRead(t, cachePath(s))
		for _, n := range []int{0, 3, 8, 16, len(c) / 3, len(c) - 1} {
			os.WriteFile(cachePath(s), c[:n], 0o644)
			got, err := s.Ops()
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Ops with a cache cut to %d bytes: %d ops, %v", n, len(got), err)
			}
		}
	})
}

// A forged cache (its checksums are CRC-64, which anyone can compute)
// claiming more records than its bytes can hold is not used, and sizes no
// allocation by the claim.
func TestOpCacheForgedCountIsRefused(t *testing.T) {
	s := newStore(t)
	appendVaried(t, s, 600)
	if _, err := s.Ops(); err != nil {
		t.Fatal(err)
	}
	log := mustRead(t, logPath(s))
	c := s.readOpCache(log)
	if c == nil {
		t.Fatal("no cache to forge from")
	}
	b := append([]byte(nil), opCacheMagic...)
	b = binary.AppendUvarint(b, uint64(c.off))
	b = binary.AppendUvarint(b, 1<<60)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(log[:c.off], bin.Castagnoli))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, bin.Castagnoli))
	if err := os.WriteFile(cachePath(s), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.readOpCache(log) != nil {
		t.Fatal("a cache claiming 2^60 records in no bytes was used")
	}
	if got, err := s.Ops(); err != nil || !reflect.DeepEqual(got, parsed(t, s)) {
		t.Fatalf("Ops with a forged cache: %d ops, %v", len(got), err)
	}
}

// LogOps, which gc and fsck read, never uses the cache: a cache forged
// with valid checksums (they are CRC-32C, not a secret) changes what Ops
// says, never what gc keeps.
func TestLogOpsIgnoresTheCache(t *testing.T) {
	s := newStore(t)
	appendVaried(t, s, 600)
	want := parsed(t, s)
	log := mustRead(t, logPath(s))
	if _, err := s.Ops(); err != nil {
		t.Fatal(err)
	}
	c := s.readOpCache(log)
	if c == nil {
		t.Fatal("no cache to forge from")
	}
	c.ops[0].Checkpoint = testID(999999)
	s.writeOpCache(log, c.off, c.lines, c.ops)
	if got, _ := s.Ops(); reflect.DeepEqual(got, want) {
		t.Fatal("the forged cache was not used by Ops: the test proves nothing")
	}
	if got, err := s.LogOps(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LogOps with a forged cache: %d ops, %v", len(got), err)
	}
	os.Remove(cachePath(s)) // (the store's check at cleanup)
}

func FuzzOpCacheDecode(f *testing.F) {
	var b []byte
	ops := []Op{{Seq: 1, Kind: "k", Session: "s", Refs: []RefChange{{Name: "n", New: testID(1)}}, Detail: json.RawMessage(`{}`)}}
	b = encodeOp(b, &ops[0])
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		d := opDecoder{Reader: bin.Reader{B: data}}
		for !d.Failed && len(d.B) > 0 {
			d.op()
		}
	})
}

// An op-log cache made huge (a sparse file: damage, or a person) is not
// read: its records are never much larger than the log's.
func TestOpCacheTooLargeIsNotRead(t *testing.T) {
	s := newStore(t)
	appendVaried(t, s, 600)
	if _, err := s.Ops(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cachePath(s), 4<<30); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := s.Ops()
	runtime.ReadMemStats(&after)
	if err != nil || !reflect.DeepEqual(got, parsed(t, s)) {
		t.Fatalf("Ops with a 4 GiB cache: %d ops, %v", len(got), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<30 {
		t.Errorf("Ops with a 4 GiB cache allocated %d bytes: the cache was read", n)
	}
}
