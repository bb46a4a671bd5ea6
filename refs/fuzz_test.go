package refs

import (
	"hash/crc64"
	"testing"
)

func crc64Sum(b []byte) uint64 { return crc64.Checksum(b, crcTable()) }

// FuzzParseOpLog feeds arbitrary bytes to the op-log decoder. It must not
// panic, every op it returns must survive a re-encode round trip, and the
// tail scan Append uses must agree with the full parse whatever window it
// starts from.
func FuzzParseOpLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := parseLog(data)
		if sc.tailOff < 0 || sc.tailOff > int64(len(data)) {
			t.Fatalf("tail offset %d outside [0,%d]", sc.tailOff, len(data))
		}
		if (sc.torn == "") != (sc.tailOff == int64(len(data))) {
			t.Fatalf("torn %q but tail offset %d of %d", sc.torn, sc.tailOff, len(data))
		}
		for _, op := range sc.ops {
			if op.Seq < 1 || op.Kind == "" {
				t.Fatalf("invalid op returned: %+v", op)
			}
			line, err := encodeRecord(&op)
			if err != nil {
				continue // e.g. a time encoding/json can parse but not print
			}
			back, err := decodeRecord(line[:len(line)-1])
			if err != nil {
				t.Fatalf("re-encoded op does not decode: %v\n%s", err, line)
			}
			if back.Seq != op.Seq || back.Kind != op.Kind || back.Checkpoint != op.Checkpoint || len(back.Refs) != len(op.Refs) {
				t.Fatalf("round trip changed op: %+v -> %+v", op, back)
			}
		}

		// Append's view: the next seq and where to truncate.
		var wantLast int64
		var records int64 // verified or not, before the tail
		for i := range data[:sc.tailOff] {
			if data[i] == '\n' {
				records++
			}
		}
		wantLast = records
		if n := len(sc.ops); n > 0 {
			// records after the last verified one count one seq each
			after := records - int64(sc.opLines[n-1])
			wantLast = sc.ops[n-1].Seq + after
		}
		for _, start := range []int{0, len(data) / 3, len(data) / 2, len(data) - 1} {
			if start < 0 || start > len(data) {
				continue
			}
			last, tailRel, ok := scanTailBuf(data[start:], start == 0)
			if !ok {
				if start == 0 {
					t.Fatal("scan from offset 0 undecided")
				}
				continue
			}
			if last != wantLast || int64(start)+tailRel != sc.tailOff {
				t.Fatalf("scan from %d: last seq %d tail %d; full parse: last seq %d tail %d",
					start, last, int64(start)+tailRel, wantLast, sc.tailOff)
			}
		}
	})
}
