package refs

import (
	"errors"
	"os"
	"slices"
	"testing"
)

func TestMarkReadsOnlyWhatFollows(t *testing.T) {
	s := newStore(t)
	if ops, m, err := s.OpsMarked(); ops != nil || m != (Mark{}) || err != nil {
		t.Fatalf("empty log: %v %v %v", ops, m, err)
	}
	if ops, m, err := s.OpsAfter(Mark{}); ops != nil || m != (Mark{}) || err != nil {
		t.Fatalf("after the start of a missing log: %v %v %v", ops, m, err)
	}
	appendVaried(t, s, 30)
	all, m, err := s.OpsMarked()
	if err != nil || len(all) != 30 || m.Seq != 30 {
		t.Fatalf("OpsMarked: %d ops, %+v, %v", len(all), m, err)
	}
	if fi, _ := os.Stat(logPath(s)); m.Off != fi.Size() {
		t.Fatalf("mark at %d, the log is %d bytes", m.Off, fi.Size())
	}
	if ops, m2, err := s.OpsAfter(m); len(ops) != 0 || m2 != m || err != nil {
		t.Fatalf("nothing after the end: %v %+v %v", seqs(ops), m2, err)
	}
	if ops, m2, err := s.OpsAfter(Mark{}); err != nil || m2 != m || !slices.Equal(seqs(ops), seqs(all)) {
		t.Fatalf("after a zero mark: %v %+v %v", seqs(ops), m2, err)
	}
	appendVaried(t, s, 5)
	// A torn tail (an append in progress) is not read.
	f, err := os.OpenFile(logPath(s), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":36,"kind":"chec`)
	f.Close()
	ops, m2, err := s.OpsAfter(m)
	if err != nil || !slices.Equal(seqs(ops), []int64{31, 32, 33, 34, 35}) || m2.Seq != 35 {
		t.Fatalf("after the mark: %v %+v %v", seqs(ops), m2, err)
	}
	if full, _ := s.Ops(); !slices.EqualFunc(ops, full[30:], func(a, b Op) bool { return string(record(t, a)) == string(record(t, b)) }) {
		t.Fatal("OpsAfter differs from Ops")
	}
	// Another record appended after the torn tail is cut.
	mustAppend(t, s, &Op{Kind: "gc"})
	if ops, m3, err := s.OpsAfter(m2); err != nil || !slices.Equal(seqs(ops), []int64{36}) || m3.Seq != 36 {
		t.Fatalf("after the second mark: %v %+v %v", seqs(ops), m3, err)
	}
}

func TestMarkGoesStale(t *testing.T) {
	s := newStore(t)
	appendVaried(t, s, 10)
	_, m, err := s.OpsMarked()
	if err != nil || m.Seq != 10 {
		t.Fatal(m, err)
	}
	log := mustRead(t, logPath(s))
	stale := func(what string, data []byte, m Mark) {
		t.Helper()
		if err := os.WriteFile(logPath(s), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if ops, _, err := s.OpsAfter(m); !errors.Is(err, ErrStaleMark) {
			t.Errorf("%s: %v ops, %v; want ErrStaleMark", what, seqs(ops), err)
		}
	}
	stale("a shorter log", log[:len(log)-10], m)
	stale("a missing record", log[:m.Off-20], m)
	flipped := slices.Clone(log)
	flipped[m.Off-5] ^= 1
	stale("the marked record damaged", flipped, m)
	flipped = slices.Clone(log)
	flipped[5] ^= 1
	stale("a record before the mark damaged in place", flipped, m)
	other := newStore(t)
	appendVaried(t, other, 12)
	stale("another store's log", mustRead(t, logPath(other)), m)
	// A record after the mark failing verification.
	s2 := newStore(t)
	appendVaried(t, s2, 10)
	_, m2, _ := s2.OpsMarked()
	appendVaried(t, s2, 3)
	log2 := mustRead(t, logPath(s2))
	log2[m2.Off+3] ^= 1
	if err := os.WriteFile(logPath(s2), log2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.OpsAfter(m2); !errors.Is(err, ErrStaleMark) {
		t.Errorf("a damaged record after the mark: %v", err)
	}
	if _, m3, _ := s2.OpsMarked(); m3 != (Mark{}) {
		t.Errorf("a damaged log has a mark: %+v", m3)
	}
	if err := os.Remove(logPath(s2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.OpsAfter(m2); !errors.Is(err, ErrStaleMark) {
		t.Errorf("a removed log: %v", err)
	}
	if err := os.WriteFile(logPath(s), log, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Mark{{Off: 5}, {Off: m.Off, Seq: m.Seq, Prefix: m.Prefix + 1}, {Off: -1}, {Off: m.Off + 1, Prefix: m.Prefix}} {
		if _, _, err := s.OpsAfter(bad); !errors.Is(err, ErrStaleMark) {
			t.Errorf("mark %+v: %v", bad, err)
		}
	}
}
