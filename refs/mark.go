package refs

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"strconv"
)

// A Mark is a place in the op log: just past one verified record, named
// by its length, seq and checksum, so that a reader that derived
// something from the log up to the mark (an index, a cache) can later read
// only the records after it, and tell whether the log still holds that
// record there. The log only grows (Append cuts nothing but a torn tail,
// which no Mark is ever past): a log that is shorter, or holds another
// record at the mark, has been replaced or damaged, and the mark is stale.
//
// A Mark vouches for its own record, not for the bytes before it: a
// record damaged in place after the mark was taken is still counted by
// what was derived (fsck, which reads the log itself, reports it).
type Mark struct {
	Off int64  // where the record ends, just past its LF
	Len int64  // its length, LF included
	Seq int64  // its seq
	Sum uint64 // its checksum
}

// OpsMarked is Ops, with the mark just past the last record it returns
// (zero when there is none, or when a record failed verification: a
// damaged log is read whole, every time).
func (s *Store) OpsMarked() ([]Op, Mark, error) {
	ops, m, err := s.ops(true)
	return ops, m, err
}

// OpsAfter returns the verified records after m (every record for a zero
// Mark), in order, and the mark past the last of them (m itself when there
// are none). A torn tail is ignored, as Ops ignores it. The error wraps
// ErrStaleMark when m no longer holds or a record after it fails
// verification; it reads only the log from m's record on.
func (s *Store) OpsAfter(m Mark) ([]Op, Mark, error) {
	from := m.Off - m.Len
	if m.Len < 0 || from < 0 || m.Off > 0 && m.Len == 0 {
		return nil, Mark{}, ErrStaleMark
	}
	data, _, err := s.be.ReadFileFrom(logName, from)
	if errors.Is(err, fs.ErrNotExist) && m.Off == 0 {
		return nil, m, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Mark{}, fmt.Errorf("%w: the log is gone", ErrStaleMark)
	}
	if err != nil {
		return nil, Mark{}, fmt.Errorf("refs: ops: %w", err)
	}
	if m.Off > 0 && markAt(data, m.Len, m.Seq) != (Mark{Off: m.Len, Len: m.Len, Seq: m.Seq, Sum: m.Sum}) {
		return nil, Mark{}, fmt.Errorf("%w: no record %d at offset %d", ErrStaleMark, m.Seq, m.Off)
	}
	scan := parseLogFrom(data, int(m.Len), 0, m.Seq)
	if len(scan.corrupt) > 0 {
		return nil, Mark{}, fmt.Errorf("%w: %w", ErrStaleMark, scan.corrupt[0])
	}
	if len(scan.ops) == 0 {
		return nil, m, nil
	}
	next := markAt(data, scan.tailOff, scan.ops[len(scan.ops)-1].Seq)
	next.Off += from
	return scan.ops, next, nil
}

// markAt is the mark of the record of seq that ends at offset end of data
// (zero when no intact record ends there).
func markAt(data []byte, end int64, seq int64) Mark {
	if end <= 0 || end > int64(len(data)) || data[end-1] != '\n' {
		return Mark{}
	}
	line := data[bytes.LastIndexByte(data[:end-1], '\n')+1 : end-1]
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 || len(line)-i-1 != sumLen || !isLowerHex(line[i+1:]) {
		return Mark{}
	}
	sum, _ := strconv.ParseUint(string(line[i+1:]), 16, 64)
	if crc64.Checksum(line[:i], crcTable()) != sum {
		return Mark{}
	}
	return Mark{Off: end, Len: int64(len(line)) + 1, Seq: seq, Sum: sum}
}
