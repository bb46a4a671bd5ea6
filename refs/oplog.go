package refs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/storage"
)

const (
	logName     = "oplog"
	logLockName = storage.OplogLock
	sumLen      = 16 // hex digits of the CRC-64 after the TAB
	// defaultOplogTimeout bounds how long Append waits for another
	// appender (an append takes milliseconds): then ErrBusy.
	defaultOplogTimeout = 30 * time.Second
)

// crcTable is made on first use: MakeTable builds 32 KiB of tables, which a
// process that reads no op log (snap --version) should not pay for at start.
var crcTable = sync.OnceValue(func() *crc64.Table { return crc64.MakeTable(crc64.ECMA) })

// RefChange records one ref move made by an operation. A zero Old means the
// ref was created; a zero New means it was deleted. Zero ids are omitted from
// the JSON encoding.
type RefChange struct {
	Name string     `json:"name"`
	Old  objects.ID `json:"old,omitzero"`
	New  objects.ID `json:"new,omitzero"`
}

// Op is one record of the operation log. Zero ids and empty fields are
// omitted from the JSON encoding.
type Op struct {
	Seq        int64       `json:"seq"`                 // assigned by Append: 1, 2, 3, ... with no gaps
	Time       time.Time   `json:"time"`                // set by Append (UTC) when zero
	Kind       string      `json:"kind"`                // "checkpoint", "rewind", "label", "undo", "redo", "session-archive", "session-rm", "gc", ...
	Session    string      `json:"session,omitempty"`   // session the op acted in, if any
	Refs       []RefChange `json:"refs,omitempty"`      // ref moves this op made, in order
	Checkpoint objects.ID  `json:"checkpoint,omitzero"` // checkpoint created by this op, if any
	Target     objects.ID  `json:"target,omitzero"`     // rewind target
	Safety     objects.ID  `json:"safety,omitzero"`     // rewind: checkpoint of the tree+state from before the rewind
	Undoes     int64       `json:"undoes,omitempty"`    // undo/redo: Seq of the op reversed / re-applied
	// Checkpoints are more checkpoints the op brought into the store (an
	// import's) or recorded (the end of an actor-scoped move); like the
	// ids above, gc keeps them (unless expired).
	Checkpoints []objects.ID    `json:"checkpoints,omitempty"`
	Detail      json.RawMessage `json:"detail,omitempty"` // engine-specific payload, valid JSON, stored with insignificant whitespace removed
}

// Append assigns op.Seq (one more than the last record's) and, when zero,
// op.Time, then appends op to the log as one record.
//
// Appenders in all processes are serialised by an exclusive flock(2) on
// dir/oplog.lock, so seqs are unique and gapless; Append waits while another
// appender holds it (a crashed holder releases it), at most
// defaultOplogTimeout, then fails with ErrBusy. Before writing, Append
// truncates a torn tail left by a crashed append. When Append returns nil the
// record is durable (fsync'd). On error op is left unchanged, and no record,
// or at most a torn tail that the next Append removes, has been written: a
// record written but not fsync'd is truncated away again. Only when that
// truncation fails too (a persistent I/O fault) can the record remain,
// complete; retrying the Append then records the op a second time.
//
// op.Kind and op.Session (when set) must be legal name components and every
// op.Refs name a legal ref name, else the error wraps ErrBadName.
//
// Append is Commit with no ref change (see Update).
func (s *Store) Append(op *Op) error {
	return s.Commit(context.Background(), nil, op)
}

// Commit moves refs and records the operation that moved them, as one
// step: the one way an operation's refs move and the log grows. It takes
// the op-log lock (waiting as Append does, or until ctx is done: then
// nothing has changed and the error wraps ctx.Err()), then sets each of
// changes in order by compare-and-swap (Update, or Delete for a zero New),
// then appends op as Append does, and lets go of the lock. With a nil op
// the refs are set without the op-log lock (the ref lock's wait still ends
// with ctx).
// When a change fails, those already made are put back (by
// compare-and-swap too), nothing is appended, and the error is that
// change's (errors.Is(err, ErrConflict) when the ref had moved). op.Refs is
// the caller's: Commit records op as given.
func (s *Store) Commit(ctx context.Context, changes []RefChange, op *Op) error {
	if op != nil {
		if err := op.valid(); err != nil {
			return err
		}
	}
	for _, c := range changes {
		if err := ValidName(c.Name); err != nil {
			return err
		}
	}
	if op == nil {
		// Refs only: no record, so no op-log lock (a rewind's safety
		// checkpoint moves the head before its own record: it must not
		// wait on, or fail with, the op log, or the checkpoint it made
		// would be referenced by nothing).
		return s.setAll(ctx, changes)
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	lock, err := s.be.Locks().Lock(ctx, logLockName, storage.Exclusive, s.oplogTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for another snap process to finish recording an operation; nothing was recorded: %w", err)
		}
		return fmt.Errorf("refs: waiting for the op log: %w", err)
	}
	defer lock.Close() // releases the flock
	if err := s.setAll(ctx, changes); err != nil {
		return err
	}
	if err := s.appendLocked(op); err != nil {
		s.putBack(changes) // all or none
		return err
	}
	return nil
}

// setAll sets changes in order; when one fails, those already set are put
// back and its error is returned.
func (s *Store) setAll(ctx context.Context, changes []RefChange) error {
	for i, c := range changes {
		if err := s.set(ctx, c.Name, c.Old, c.New); err != nil {
			s.putBack(changes[:i])
			return err
		}
	}
	return nil
}

// putBack undoes changes, last first, by compare-and-swap (best effort).
func (s *Store) putBack(changes []RefChange) {
	for j := len(changes) - 1; j >= 0; j-- {
		s.set(context.Background(), changes[j].Name, changes[j].New, changes[j].Old)
	}
}

// set moves ref name from old to new (a zero new deletes it), by
// compare-and-swap.
func (s *Store) set(ctx context.Context, name string, old, new objects.ID) error {
	if new.IsZero() {
		if old.IsZero() {
			return nil
		}
		return s.cas(ctx, "delete", name, old, new)
	}
	return s.cas(ctx, "update", name, old, new)
}

// valid checks what Append requires of an op.
func (op *Op) valid() error {
	if err := ValidComponent(op.Kind); err != nil {
		return fmt.Errorf("refs: append: kind: %w", err)
	}
	if op.Session != "" {
		if err := ValidComponent(op.Session); err != nil {
			return fmt.Errorf("refs: append: session: %w", err)
		}
	}
	for _, rc := range op.Refs {
		if err := ValidName(rc.Name); err != nil {
			return fmt.Errorf("refs: append: %w", err)
		}
	}
	return nil
}

// appendLocked appends op; the caller holds the op-log lock.
func (s *Store) appendLocked(op *Op) error {
	rec := *op
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	// The store truncates the torn tail, writes the record, makes it
	// durable, and takes it back on failure (see storage.Refs.AppendLog).
	err := s.be.AppendLog(logName, func(r io.ReaderAt, size int64) (int64, []byte, error) {
		lastSeq, tailOff, err := scanTail(r, size)
		if err != nil {
			return 0, nil, err
		}
		rec.Seq = lastSeq + 1
		line, err := encodeRecord(&rec)
		return tailOff, line, err
	})
	if err != nil {
		return fmt.Errorf("refs: append: %w", err)
	}
	*op = rec
	return nil
}

// Ops returns every verified record of the log, in file (and seq) order. A
// missing log is an empty one. A torn tail is ignored silently: it is what a
// crash during Append leaves, and also what an append in progress looks like.
//
// Damage anywhere else does not hide the other records: Ops returns all
// verified ops together with a non-nil error joining one *CorruptError per
// record that fails verification and per seq out of order (errors.Is(err,
// ErrCorrupt)); these are exactly the op-log errors Check reports. Any other
// error (I/O) comes with nil ops.
func (s *Store) Ops() ([]Op, error) {
	ops, _, err := s.ops(true)
	return ops, err
}

// LogOps is Ops without the op-log cache: every record parsed from the log
// itself. gc and fsck, which delete or vouch for what the log names, read
// it so: nothing they do rests on a file anyone may rewrite.
func (s *Store) LogOps() ([]Op, error) {
	ops, _, err := s.ops(false)
	return ops, err
}

// ops reads the log (and, when cached, the op-log cache); the mark is that
// of the last record when every record verified (see OpsMarked).
func (s *Store) ops(cached bool) ([]Op, Mark, error) {
	data, err := s.readLog()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Mark{}, nil
	}
	if err != nil {
		return nil, Mark{}, fmt.Errorf("refs: ops: %w", err)
	}
	// The records the cache holds are decoded from it; the rest parsed
	// (and, when they are many, cached for the next reader).
	c := &opCache{}
	if cached {
		if read := s.readOpCache(data); read != nil {
			c = read
		}
	}
	var prevSeq int64
	if n := len(c.ops); n > 0 {
		prevSeq = c.ops[n-1].Seq
	}
	scan := parseLogFrom(data, c.off, c.lines, prevSeq)
	ops := append(c.ops, scan.ops...)
	if cached && len(scan.corrupt) == 0 && scan.tailOff-int64(c.off) >= opCacheSlack {
		s.writeOpCache(data, int(scan.tailOff), c.lines+len(scan.ops), ops)
	}
	var m Mark
	if len(scan.corrupt) == 0 && len(ops) > 0 {
		m = markAt(data, scan.tailOff, ops[len(ops)-1].Seq)
	}
	return ops, m, errors.Join(scan.corrupt...)
}

// encodeRecord returns the record line for op: JSON, TAB, checksum, LF.
func encodeRecord(op *Op) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(op); err != nil {
		return nil, err
	}
	js := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if bytes.IndexByte(js, '\n') >= 0 || bytes.IndexByte(js, '\t') >= 0 {
		return nil, errors.New("encoded op contains a raw TAB or LF") // cannot happen with encoding/json
	}
	line := append(js, '\t')
	line = fmt.Appendf(line, "%016x", crc64.Checksum(js, crcTable()))
	return append(line, '\n'), nil
}

// decodeRecord verifies and decodes one record line without its LF.
func decodeRecord(line []byte) (Op, error) {
	var op Op
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 {
		return op, errors.New("no checksum")
	}
	js, sum := line[:i], line[i+1:]
	if len(sum) != sumLen || !isLowerHex(sum) {
		return op, fmt.Errorf("malformed checksum %.20q", sum)
	}
	want, _ := strconv.ParseUint(string(sum), 16, 64)
	if got := crc64.Checksum(js, crcTable()); got != want {
		return op, fmt.Errorf("checksum mismatch: record %016x, computed %016x", want, got)
	}
	if err := json.Unmarshal(js, &op); err != nil {
		return Op{}, fmt.Errorf("bad JSON: %v", err)
	}
	if op.Seq < 1 {
		return Op{}, fmt.Errorf("seq %d is not positive", op.Seq)
	}
	if op.Kind == "" {
		return Op{}, errors.New("empty kind")
	}
	return op, nil
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// logScan is the result of parsing a whole op log.
type logScan struct {
	ops     []Op
	opLines []int   // 1-based line number of each op
	corrupt []error // *CorruptError: bad records before the tail, seqs out of order
	tailOff int64   // where the torn tail starts; len(data) when there is none
	torn    string  // why the tail is torn; "" when there is none
}

// parseLog splits data into records and verifies them (see doc.go for the
// torn-tail rule). It never panics, whatever data holds.
func parseLog(data []byte) logScan { return parseLogFrom(data, 0, 0, 0) }

// parseLogFrom is parseLog of the records from offset from on (a record
// boundary), after lines records of which the last verified one had seq
// prevSeq (the op-log cache holds those before).
func parseLogFrom(data []byte, from int, lines int, prevSeq int64) logScan {
	var sc logScan
	body := data
	if n := len(data); n > 0 && data[n-1] != '\n' {
		body = data[:bytes.LastIndexByte(data, '\n')+1]
		sc.torn = "unterminated final line"
	}
	type rec struct {
		off  int64
		line []byte
	}
	var recs []rec
	for off := from; off < len(body); {
		end := off + bytes.IndexByte(body[off:], '\n')
		recs = append(recs, rec{int64(off), body[off:end]})
		off = end + 1
	}
	sc.tailOff = max(int64(len(body)), int64(from))
	var lastOp *Op // the final record, decoded once
	if sc.torn == "" && len(recs) > 0 {
		last := recs[len(recs)-1]
		op, err := decodeRecord(last.line)
		if err != nil {
			sc.torn = "final record: " + err.Error()
			sc.tailOff = last.off
			recs = recs[:len(recs)-1]
		} else {
			lastOp = &op
		}
	}

	bad := 0 // records failing verification since the previous verified one (prevSeq)
	for i, r := range recs {
		var op Op
		var err error
		if i == len(recs)-1 && lastOp != nil {
			op = *lastOp
		} else {
			op, err = decodeRecord(r.line)
		}
		if err != nil {
			sc.corrupt = append(sc.corrupt, &CorruptError{Path: logName, Line: lines + i + 1, Offset: r.off, Reason: err.Error()})
			bad++
			continue
		}
		if want := prevSeq + int64(bad) + 1; op.Seq != want {
			sc.corrupt = append(sc.corrupt, &CorruptError{Path: logName, Line: lines + i + 1, Offset: r.off,
				Reason: fmt.Sprintf("seq %d where %d was expected (gap, duplicate or reordering)", op.Seq, want)})
		}
		prevSeq, bad = op.Seq, 0
		sc.ops = append(sc.ops, op)
		sc.opLines = append(sc.opLines, lines+i+1)
	}
	return sc
}

// scanTail reads the end of the log file f (size bytes) and returns the seq
// the last record holds (for a record failing verification, one more than
// the record before it) and the offset of the torn tail (size when there is
// none), by the same rules as parseLog. It reads only as much of the file as
// it needs.
func scanTail(f io.ReaderAt, size int64) (lastSeq, tailOff int64, err error) {
	// What follows the last line end is torn whatever it holds: it is
	// looked through, never read into memory (lineEnd), but for its
	// first byte (scanTailBuf then sees an unterminated line, as in the
	// whole file).
	end, err := lineEnd(f, size)
	if err != nil {
		return 0, 0, err
	}
	end = min(end+1, size)
	for window := int64(64 << 10); ; window *= 2 {
		start := max(0, end-window)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return 0, 0, err
		}
		lastSeq, tailRel, ok := scanTailBuf(buf, start == 0)
		if ok {
			return lastSeq, start + tailRel, nil
		}
	}
}

// lineEnd returns the offset just past the last line end among f's size
// bytes (0 when there is none), looking backwards in pieces of 4 KiB, then
// twice as large up to 1 MiB: a log that ends in a line end (every command
// reads its end) costs one small read, and a tail of gigabytes without one
// (zeros, which a failed preallocation or damage leaves) costs time to
// look through, never the memory to hold it.
func lineEnd(f io.ReaderAt, size int64) (int64, error) {
	var buf []byte
	for end := size; end > 0; {
		if len(buf) < 1<<20 {
			buf = make([]byte, min(max(2*len(buf), 4<<10), 1<<20))
		}
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// readLog reads the log up to the end of its last line; of what follows,
// a torn tail that every reader ignores whatever it holds (lineEnd), it
// keeps one byte, so that the parser sees an unterminated final line as
// it would in the whole file.
func (s *Store) readLog() (data []byte, err error) {
	err = s.be.ReadFileAt(logName, func(r io.ReaderAt, size int64) error {
		end, err := lineEnd(r, size)
		if err != nil {
			return err
		}
		data = make([]byte, min(end+1, size))
		if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	})
	return data, err
}

// scanTailBuf does scanTail's work on buf, the last bytes of the log;
// atStart says whether buf begins at offset 0. ok is false when buf does not
// reach back far enough to decide.
func scanTailBuf(buf []byte, atStart bool) (lastSeq, tailRel int64, ok bool) {
	n := len(buf)
	if n == 0 {
		return 0, 0, true
	}
	end := n // records are in buf[:end], each ending in LF
	lastMayBeTail := true
	if buf[n-1] != '\n' {
		j := bytes.LastIndexByte(buf, '\n')
		if j < 0 && !atStart {
			return 0, 0, false
		}
		end = j + 1
		lastMayBeTail = false
	}
	tailRel = int64(end)
	var bad int64
	for pos := end; pos > 0; {
		j := bytes.LastIndexByte(buf[:pos-1], '\n')
		if j < 0 && !atStart {
			return 0, 0, false // this record's start is before buf
		}
		start := j + 1
		op, err := decodeRecord(buf[start : pos-1])
		if err == nil {
			return op.Seq + bad, tailRel, true
		}
		if lastMayBeTail {
			tailRel = int64(start)
		} else {
			bad++
		}
		lastMayBeTail = false
		pos = start
	}
	return bad, tailRel, true
}
