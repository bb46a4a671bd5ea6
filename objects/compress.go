package objects

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// MaxObjectSize bounds the decoded size of any one object, so a corrupt or
// hostile record cannot make a reader allocate without limit.
const MaxObjectSize = 64 << 20

// Record encodings inside a pack.
const (
	encRaw   = 0
	encZstd  = 1
	encDelta = 2 // a delta on another object (see delta.go)
)

// The encoders and the decoder of the process: EncodeAll and DecodeAll are
// safe for concurrent use and reuse their internal state, which each of
// their pooled encoders sets up on first use. Each is made on first use, not
// at process start: a command that reads or writes no object (snap
// --version, a hook event that records nothing) does not pay for them (the
// first NewReader builds zstd's predefined tables: ~0.5 ms of a process).
var (
	// encoder compresses at the default level (zstd level 3): ~1–3 ms to
	// set up per pooled encoder, so one only: what it compresses is the
	// small objects of a checkpoint of a few changes (big writes move to
	// bulkEncoder after bulkAfter objects). A second encoder, set up by a
	// second walker, was a tenth of a monitored checkpoint of 10 changed
	// files (56.2 -> 50.1 ms at 20,000 files, bench/abtime, 30 rounds).
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), // ids already verify every object
			zstd.WithZeroFrames(true))
		return e
	})
	// bulkEncoder compresses the large objects of a big write (past the
	// first bulkAfter objects of a Writer) one level higher (the third of
	// four): on source text 2% smaller for twice
	// the CPU (0.68 s for 55 MB of Go sources on one core, where reading
	// and hashing cost more), 1.6x the time on random data, and ~5 ms to
	// set up per pooled encoder (its 4 MiB match table), which a
	// checkpoint of a few changed files should not pay.
	bulkEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(true))
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, _ := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxObjectSize),
			zstd.WithDecodeAllCapLimit(true), // never decode past the size the index declares
			zstd.IgnoreChecksum(true))
		return d
	})
)

// compress returns the stored form of data and its encoding: zstd when that
// is smaller, the raw bytes otherwise. bulk picks bulkEncoder for objects of
// 1 KiB and more.
func compress(data []byte, bulk bool) ([]byte, byte) {
	if len(data) < 64 {
		return data, encRaw
	}
	enc := encoder()
	if bulk && len(data) >= 1<<10 {
		enc = bulkEncoder()
	}
	c := enc.EncodeAll(data, make([]byte, 0, len(data)/2))
	if len(c) >= len(data) {
		return data, encRaw
	}
	return c, encZstd
}

// decompress reverses compress; the result must be exactly size bytes.
func decompress(stored []byte, enc byte, size uint32) ([]byte, error) {
	if size > MaxObjectSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}
	switch enc {
	case encRaw:
		if len(stored) != int(size) {
			return nil, fmt.Errorf("%w: raw record has %d bytes, index says %d", ErrCorrupt, len(stored), size)
		}
		return stored, nil
	case encZstd:
		var h zstd.Header
		if err := h.Decode(stored); err != nil || (h.HasFCS && h.FrameContentSize != uint64(size)) {
			return nil, fmt.Errorf("%w: zstd frame header does not declare %d bytes", ErrCorrupt, size)
		}
		// With the cap limit, a frame that decodes to more than size fails
		// instead of allocating: a decompression bomb costs size bytes.
		out, err := decoder().DecodeAll(stored, make([]byte, 0, size))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		if len(out) != int(size) {
			return nil, fmt.Errorf("%w: decompressed to %d bytes, index says %d", ErrCorrupt, len(out), size)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown record encoding %d", ErrCorrupt, enc)
}
