package refs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

func logPath(s *Store) string { return filepath.Join(s.dir, logName) }

func mustAppend(t *testing.T, s *Store, op *Op) {
	t.Helper()
	if err := s.Append(op); err != nil {
		t.Fatal(err)
	}
}

func appendN(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		mustAppend(t, s, &Op{Kind: "checkpoint", Session: "s", Checkpoint: testID(uint64(i + 1))})
	}
}

func seqs(ops []Op) []int64 {
	var out []int64
	for _, op := range ops {
		out = append(out, op.Seq)
	}
	return out
}

func TestAppendOps(t *testing.T) {
	s := newStore(t)
	if ops, err := s.Ops(); ops != nil || err != nil {
		t.Fatalf("empty log: %v %v", ops, err)
	}
	when := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	in := []Op{
		{Kind: "checkpoint", Session: "s1", Time: when, Checkpoint: testID(1),
			Refs: []RefChange{{Name: "sessions/s1/head", New: testID(1)}}},
		{Kind: "rewind", Session: "s1", Target: testID(1), Safety: testID(2),
			Refs:   []RefChange{{Name: "sessions/s1/head", Old: testID(2), New: testID(1)}},
			Detail: json.RawMessage(`{ "paths": ["a<b>&c", "é"],  "n": 2 }`)},
		{Kind: "undo", Undoes: 2, Refs: []RefChange{{Name: "labels/x", Old: testID(3)}}},
		{Kind: "gc"},
	}
	for i := range in {
		op := in[i]
		mustAppend(t, s, &op)
		if op.Seq != int64(i+1) {
			t.Fatalf("op %d got seq %d", i, op.Seq)
		}
		if op.Time.IsZero() {
			t.Fatalf("op %d: time not set", i)
		}
		in[i] = op
	}
	if !in[0].Time.Equal(when) {
		t.Fatalf("explicit time replaced: %v", in[0].Time)
	}
	ops, err := s.Ops()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != len(in) {
		t.Fatalf("got %d ops, want %d", len(ops), len(in))
	}
	for i := range in {
		want, got := in[i], ops[i]
		if !want.Time.Equal(got.Time) {
			t.Errorf("op %d time %v, want %v", i, got.Time, want.Time)
		}
		want.Time, got.Time = time.Time{}, time.Time{}
		if i == 1 {
			if string(got.Detail) != `{"paths":["a<b>&c","é"],"n":2}` {
				t.Errorf("detail = %s", got.Detail)
			}
			want.Detail, got.Detail = nil, nil
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Errorf("op %d:\n got %s\nwant %s", i, gj, wj)
		}
	}

	// Wire format: compact, zero ids and empty fields omitted, checksummed.
	data, err := os.ReadFile(logPath(s))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(in) {
		t.Fatalf("%d lines", len(lines))
	}
	wantGC := fmt.Sprintf(`{"seq":4,"time":%q,"kind":"gc"}`, in[3].Time.Format(time.RFC3339Nano))
	js, sum, _ := strings.Cut(lines[3], "\t")
	if js != wantGC || len(sum) != 16 {
		t.Fatalf("gc line = %q, want %q + TAB + 16 hex", lines[3], wantGC)
	}
	if !strings.Contains(lines[2], `"refs":[{"name":"labels/x","old":"`+testID(3).String()+`"}]`) {
		t.Fatalf("ref change with zero new not compact: %s", lines[2])
	}
	for _, field := range []string{`"target"`, `"safety"`, `"undoes"`, `"detail"`, `"old"`, `" `} {
		if strings.Contains(lines[0], field) {
			t.Errorf("line 1 contains %s: %s", field, lines[0])
		}
	}
}

func TestAppendRefusesInvalidDetail(t *testing.T) {
	s := newStore(t)
	op := Op{Kind: "label", Detail: json.RawMessage(`{"unterminated"`)}
	if err := s.Append(&op); err == nil {
		t.Fatal("invalid detail accepted")
	}
	if op.Seq != 0 {
		t.Fatal("failed Append changed op")
	}
	appendN(t, s, 1)
	if ops, _ := s.Ops(); len(ops) != 1 || ops[0].Seq != 1 {
		t.Fatalf("ops = %v", ops)
	}
}

func TestConcurrentAppend(t *testing.T) {
	s := newStore(t)
	s2, err := Open(s.dir) // a second Store on the same directory: separate flock holders
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int64]bool{}
	for w := range workers {
		st := s
		if w%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			for i := range each {
				op := Op{Kind: "checkpoint", Session: fmt.Sprintf("w%d", w), Detail: json.RawMessage(strconv.Itoa(i))}
				if err := st.Append(&op); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if got[op.Seq] {
					t.Errorf("seq %d returned twice", op.Seq)
				}
				got[op.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	checkGapless(t, s, workers*each)
}

// checkGapless checks the log holds exactly seqs 1..n, in order, without error.
func checkGapless(t *testing.T, s *Store, n int) []Op {
	t.Helper()
	ops, err := s.Ops()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != n {
		t.Fatalf("%d ops, want %d", len(ops), n)
	}
	for i, op := range ops {
		if op.Seq != int64(i+1) {
			t.Fatalf("op %d has seq %d", i, op.Seq)
		}
	}
	return ops
}

const helperEnv = "SNAP_REFS_HELPER_DIR"

// TestHelperProcess is not a test: TestMultiProcess runs the test binary with
// it as a writer process.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("SNAP_REFS_HELPER_ID")
	for i := range multiAppends {
		if err := s.Append(&Op{Kind: "checkpoint", Session: "p" + id, Detail: json.RawMessage(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
		if i < multiIncs {
			if err := increment(s, "sessions/shared/head"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

const multiProcs, multiAppends, multiIncs = 4, 50, 25

// TestMultiProcess runs several processes appending to one log and
// incrementing one ref at the same time.
func TestMultiProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in helper")
	}
	s := newStore(t)
	var wg sync.WaitGroup
	for p := range multiProcs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+s.dir, "SNAP_REFS_HELPER_ID="+strconv.Itoa(p))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("helper %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ops := checkGapless(t, s, multiProcs*multiAppends)
	seen := map[string]bool{}
	for _, op := range ops {
		key := op.Session + "/" + string(op.Detail)
		if seen[key] {
			t.Fatalf("op %s twice", key)
		}
		seen[key] = true
	}
	for p := range multiProcs {
		for i := range multiAppends {
			if !seen[fmt.Sprintf("p%d/%d", p, i)] {
				t.Fatalf("op p%d/%d missing", p, i)
			}
		}
	}
	if got, err := s.Get("sessions/shared/head"); err != nil || idNum(got) != multiProcs*multiIncs {
		t.Fatalf("counter = %d (%v), want %d", idNum(got), err, multiProcs*multiIncs)
	}
}

// record returns a valid encoded record.
func record(t testing.TB, op Op) []byte {
	t.Helper()
	if op.Kind == "" {
		op.Kind = "checkpoint"
	}
	if op.Time.IsZero() {
		op.Time = time.Unix(1700000000, 0).UTC()
	}
	b, err := encodeRecord(&op)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTornTail(t *testing.T) {
	full := func(t *testing.T) []byte { return record(t, Op{Seq: 4, Checkpoint: testID(4)}) }
	cases := []struct {
		name string
		n    int // valid records before the tail
		tail func(t *testing.T) []byte
	}{
		{"partial record", 3, func(t *testing.T) []byte { b := full(t); return b[:len(b)/2] }},
		{"record missing only its newline", 3, func(t *testing.T) []byte { b := full(t); return b[:len(b)-1] }},
		{"zeros", 3, func(t *testing.T) []byte { return make([]byte, 300) }},
		{"terminated, bad checksum", 3, func(t *testing.T) []byte {
			b := full(t)
			b[10] ^= 1
			return b
		}},
		{"terminated, zeroed start", 3, func(t *testing.T) []byte {
			b := full(t)
			clear(b[:len(b)/2])
			return b
		}},
		{"lone newline", 3, func(t *testing.T) []byte { return []byte("\n") }},
		{"whole log torn", 0, func(t *testing.T) []byte { b := full(t); return b[:20] }},
		{"long torn record beyond scan window", 2, func(t *testing.T) []byte {
			return record(t, Op{Seq: 3, Detail: json.RawMessage(`"` + strings.Repeat("x", 200<<10) + `"`)})[:150<<10]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, s, tc.n)
			f, err := os.OpenFile(logPath(s), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tc.tail(t))
			f.Close()

			checkGapless(t, s, tc.n) // the tail is ignored, with no error
			probs := s.Check()
			var w *Warning
			if len(probs) != 1 || !errors.As(probs[0], &w) || w.Path != "oplog" {
				t.Fatalf("Check = %v, want one oplog warning", probs)
			}

			op := Op{Kind: "label"}
			mustAppend(t, s, &op)
			if op.Seq != int64(tc.n+1) {
				t.Fatalf("append after torn tail got seq %d, want %d", op.Seq, tc.n+1)
			}
			ops := checkGapless(t, s, tc.n+1)
			if ops[tc.n].Kind != "label" {
				t.Fatalf("last op = %+v", ops[tc.n])
			}
			if probs := s.Check(); len(probs) != 0 {
				t.Fatalf("Check after repair = %v", probs)
			}
		})
	}
}

func TestCorruptRecords(t *testing.T) {
	cases := []struct {
		name      string
		lines     func(t *testing.T) [][]byte // the log, line by line (with LF)
		wantSeqs  []int64                     // seqs Ops returns
		wantLines []int                       // lines reported corrupt
		nextSeq   int64
	}{
		{"flipped byte in the middle",
			func(t *testing.T) [][]byte {
				l := logLines(t, 5)
				l[2][12] ^= 0x20
				return l
			}, []int64{1, 2, 4, 5}, []int{3}, 6},
		{"garbage line in the middle",
			func(t *testing.T) [][]byte {
				l := logLines(t, 4)
				return [][]byte{l[0], []byte("garbage\n"), l[2], l[3]}
			}, []int64{1, 3, 4}, []int{2}, 5},
		{"first line bad",
			func(t *testing.T) [][]byte {
				l := logLines(t, 3)
				l[0] = []byte("{}\t0000000000000000\n")
				return l
			}, []int64{2, 3}, []int{1}, 4},
		{"two bad before a torn tail",
			func(t *testing.T) [][]byte {
				l := logLines(t, 4)
				return [][]byte{l[0], l[1], []byte("x\n"), []byte("y\n"), l[3][:9]}
			}, []int64{1, 2}, []int{3, 4}, 5},
		{"seq gap",
			func(t *testing.T) [][]byte {
				l := logLines(t, 2)
				return append(l, record(t, Op{Seq: 5}))
			}, []int64{1, 2, 5}, []int{3}, 6},
		{"seq duplicate",
			func(t *testing.T) [][]byte {
				l := logLines(t, 3)
				return append(l, record(t, Op{Seq: 3}))
			}, []int64{1, 2, 3, 3}, []int{4}, 4},
		{"valid checksum, non-op JSON",
			func(t *testing.T) [][]byte {
				l := logLines(t, 3)
				js := []byte(`{"seq":"two","kind":"x"}`)
				bad := fmt.Appendf(js, "\t%016x\n", crc64Sum(js))
				return [][]byte{l[0], bad, l[2]}
			}, []int64{1, 3}, []int{2}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath(s), bytes.Join(tc.lines(t), nil), 0o644); err != nil {
				t.Fatal(err)
			}
			ops, err := s.Ops()
			if fmt.Sprint(seqs(ops)) != fmt.Sprint(tc.wantSeqs) {
				t.Fatalf("Ops seqs = %v, want %v", seqs(ops), tc.wantSeqs)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Ops err = %v, want ErrCorrupt", err)
			}
			var corruptLines []int
			for _, p := range s.Check() {
				var ce *CorruptError
				if errors.As(p, &ce) {
					corruptLines = append(corruptLines, ce.Line)
				}
			}
			if fmt.Sprint(corruptLines) != fmt.Sprint(tc.wantLines) {
				t.Fatalf("Check corrupt lines = %v, want %v", corruptLines, tc.wantLines)
			}
			op := Op{Kind: "label"}
			mustAppend(t, s, &op)
			if op.Seq != tc.nextSeq {
				t.Fatalf("next seq = %d, want %d", op.Seq, tc.nextSeq)
			}
			// Corruption is never repaired away: the same lines are still reported.
			ops2, err := s.Ops()
			if !errors.Is(err, ErrCorrupt) || len(ops2) != len(ops)+1 {
				t.Fatalf("after append: %d ops, err %v", len(ops2), err)
			}
		})
	}
}

// logLines returns n valid records with seqs 1..n.
func logLines(t *testing.T, n int) [][]byte {
	var out [][]byte
	for i := 1; i <= n; i++ {
		out = append(out, record(t, Op{Seq: int64(i), Session: "s", Checkpoint: testID(uint64(i))}))
	}
	return out
}

// TestEmptyLogFile covers a log file that exists but
// is empty, as after a crash right after creating it.
func TestEmptyLogFile(t *testing.T) {
	s := newStore(t)
	if err := os.WriteFile(logPath(s), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ops, err := s.Ops(); len(ops) != 0 || err != nil {
		t.Fatalf("Ops = %v, %v", ops, err)
	}
	appendN(t, s, 2)
	checkGapless(t, s, 2)
}

// Commit moves its refs all or none, records nothing when one fails, and
// gives up a wait for the op-log lock when its context ends.
func TestCommitAllOrNone(t *testing.T) {
	s := newStore(t)
	a, b, c := testID(1), testID(2), testID(3)
	if err := s.Update("labels/x", objects.ID{}, a); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(context.Background(), []RefChange{{Name: "labels/y", New: b}, {Name: "labels/x", Old: c, New: b}},
		&Op{Kind: "label"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a conflicting second change: %v", err)
	}
	if _, err := s.Get("labels/y"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the first change stayed: %v", err)
	}
	if ops, _ := s.Ops(); len(ops) != 0 {
		t.Fatalf("recorded %d ops", len(ops))
	}
	// The op-log lock held elsewhere: a cancelled context ends the wait.
	f, err := os.OpenFile(filepath.Join(s.dir, logLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = s.Commit(ctx, []RefChange{{Name: "labels/x", Old: a, New: b}}, &Op{Kind: "label"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a commit whose context ended while waiting: %v", err)
	}
	if got, _ := s.Get("labels/x"); got != a {
		t.Fatalf("labels/x moved to %v", got)
	}
	// Refs only (no record) need no op-log lock.
	if err := s.Commit(context.Background(), []RefChange{{Name: "labels/x", Old: a, New: c}}, nil); err != nil {
		t.Fatal(err)
	}
}

// A log whose tail damage or a failed preallocation made hundreds of megabytes of
// zeros (sparse: it takes no disk) is read without holding the tail in
// memory: its records read, a mark's records after it, fsck's check, and
// an append, which removes the tail. Each used to read the whole file
// (an append doubled its window up to it: 3 GB for a 2 GB tail).
func TestZeroTailIsNotReadIntoMemory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Append(&Op{Kind: "checkpoint", Session: "s", Checkpoint: objects.ID{byte(i + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	_, mark, err := s.OpsMarked()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "oplog")
	fi, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, fi.Size()+256<<20); err != nil {
		t.Fatal(err)
	}
	allocated := func(what string, fn func() error) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Fatalf("%s allocated %d MiB over a log of 3 records and a 256 MiB torn tail", what, n>>20)
		}
	}
	allocated("Ops", func() error {
		ops, err := s.Ops()
		if len(ops) != 3 {
			return fmt.Errorf("%d ops, want 3 (%v)", len(ops), err)
		}
		return nil
	})
	allocated("OpsAfter", func() error {
		ops, next, err := s.OpsAfter(mark)
		if err != nil || len(ops) != 0 || next != mark {
			return fmt.Errorf("%d ops, %v, %v", len(ops), next, err)
		}
		return nil
	})
	allocated("Check", func() error {
		for _, p := range s.Check() {
			if !strings.Contains(p.Error(), "torn tail") {
				return p
			}
		}
		return nil
	})
	allocated("Append", func() error {
		return s.Append(&Op{Kind: "checkpoint", Session: "s", Checkpoint: objects.ID{9}})
	})
	if fi, err := os.Stat(logPath); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("the torn tail was not removed by the append: %v bytes, %v", fi.Size(), err)
	}
	if ops, err := s.Ops(); err != nil || len(ops) != 4 || ops[3].Seq != 4 {
		t.Fatalf("after the append: %d ops, %v", len(ops), err)
	}
}

// lineEnd finds what bytes.LastIndexByte finds, wherever the last line end
// lies against its growing pieces.
func TestLineEnd(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 12288, 12289, 3 << 20} {
		for _, at := range []int{-1, 0, 1, 4095, 4096, size - 4097, size - 4096, size - 1} {
			data := make([]byte, size)
			if at >= 0 && at < size {
				data[at] = '\n'
			}
			want := int64(bytes.LastIndexByte(data, '\n') + 1)
			got, err := lineEnd(bytes.NewReader(data), int64(size))
			if err != nil || got != want {
				t.Fatalf("size %d, line end at %d: %d, %v; want %d", size, at, got, err, want)
			}
		}
	}
}
