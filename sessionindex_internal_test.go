package snap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// referenceList is how sessionCheckpoints listed a session's checkpoints
// before the session index: from every op of the log, in one pass, then
// sorted by time, stably. The index must give the same list whatever
// marks it was read and saved at.
func referenceList(ops []refs.Op, session string) []indexEntry {
	seen := map[objects.ID]bool{}
	var list []indexEntry
	for _, op := range ops {
		if op.Kind == string(OpImport) {
			var d importDetail
			if op.Session == session && json.Unmarshal(op.Detail, &d) == nil && len(d.Times) == len(op.Checkpoints) {
				for i, id := range op.Checkpoints {
					if !seen[id] {
						seen[id] = true
						list = append(list, indexEntry{id, d.Times[i]})
					}
				}
			}
			if op.Session != session || seen[op.Checkpoint] {
				continue
			}
		}
		ids := []objects.ID{op.Checkpoint, op.Safety}
		if builds(op.Kind) {
			ids = append(ids, op.Target)
		}
		if op.Kind != string(OpImport) {
			ids = append(ids, op.Checkpoints...)
		}
		for _, id := range ids {
			if op.Session == session && !id.IsZero() && !seen[id] {
				seen[id] = true
				list = append(list, indexEntry{id, op.Time.UnixNano()})
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time < list[j].Time })
	return list
}

// randomOp is an op of a random kind in one of three sessions, naming
// checkpoints new and old, at times that mostly grow (an import's go
// back).
func randomOp(rng *rand.Rand, next *uint64, base time.Time, i int) refs.Op {
	id := func() objects.ID {
		var x objects.ID
		n := *next
		if rng.IntN(4) == 0 && n > 1 {
			n = 1 + rng.Uint64N(n-1) // one named before
		} else {
			*next++
		}
		x[0], x[1], x[2] = byte(n), byte(n>>8), 0xa5
		return x
	}
	// Times advance by 0 or 1 ms: ties are frequent, so log order counts.
	op := refs.Op{Session: fmt.Sprintf("s%d", rng.IntN(3)), Time: base.Add(time.Duration(i/2) * time.Millisecond)}
	switch rng.IntN(7) {
	case 0, 1:
		op.Kind, op.Checkpoint = string(OpCheckpoint), id()
	case 2:
		op.Kind, op.Target, op.Safety = string(OpRewind), id(), id()
	case 3:
		op.Kind, op.Target, op.Safety, op.Checkpoints = string(OpRevert), id(), id(), []objects.ID{id()}
	case 4:
		op.Kind, op.Checkpoint = string(OpMessage), id()
		op.Detail = json.RawMessage(fmt.Sprintf(`{"message_id":"m%d"}`, rng.IntN(5)))
	case 5:
		op.Kind, op.Checkpoint = string(OpImport), id()
		var times []int64
		for range rng.IntN(4) {
			op.Checkpoints = append(op.Checkpoints, id())
			times = append(times, base.Add(time.Duration(rng.IntN(i+1)/2)*time.Millisecond).UnixNano())
		}
		op.Detail, _ = json.Marshal(importDetail{Times: times})
	default:
		op.Kind, op.Undoes = string(OpUndo), int64(1+rng.IntN(i+1))
	}
	if rng.IntN(3) > 0 { // a head moved, mostly the op's own session's
		s := op.Session
		if rng.IntN(5) == 0 {
			s = fmt.Sprintf("s%d", rng.IntN(3))
		}
		op.Refs = append(op.Refs, refs.RefChange{Name: refs.SessionHead(s), Old: id(), New: id()})
	}
	return op
}

// The index, read and saved at random points of a growing log, lists what
// the whole log lists; so does the index derived again after its file is
// damaged, or the log replaced.
func TestSessionIndexListsWhatTheLogDoes(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			r, _, err := Init(Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var next uint64 = 1
			base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			n := 0
			for round := range 40 {
				for range rng.IntN(1 << rng.IntN(8)) {
					op := randomOp(rng, &next, base, n)
					n++
					if err := r.refs.Append(&op); err != nil {
						t.Fatal(err)
					}
				}
				switch rng.IntN(10) {
				case 0: // damaged
					for _, s := range []string{"s0", "s1", "s2"} {
						if data, err := os.ReadFile(r.sessionIndexPath(s)); err == nil && len(data) > 20 {
							data[rng.IntN(len(data))] ^= 1 << rng.IntN(8)
							os.WriteFile(r.sessionIndexPath(s), data, 0o644)
						}
					}
				case 1: // another session's index in its place
					if data, err := os.ReadFile(r.sessionIndexPath("s0")); err == nil {
						os.WriteFile(r.sessionIndexPath("s1"), data, 0o644)
					}
				}
				all, err := r.refs.LogOps()
				if err != nil {
					t.Fatal(err)
				}
				// Read by a command of its own (a Repo opened for it,
				// reading the index file), or by the Repo that lived
				// through every round (its kept indexes, extended).
				reader := r
				if rng.IntN(2) == 0 {
					if reader, err = Open(Options{Dir: r.Root}); err != nil {
						t.Fatal(err)
					}
					defer reader.Close()
				}
				h := reader.history()
				for _, s := range []string{"s0", "s1", "s2"} {
					x, err := h.sessionIndex(s)
					if err != nil {
						t.Fatal(err)
					}
					want := referenceList(all, s)
					if !slices.Equal(x.all(), want) {
						t.Fatalf("round %d, session %s: the index lists\n%v\nthe log\n%v", round, s, x.all(), want)
					}
					for i, e := range want {
						if p := x.position(e.ID); p != i {
							t.Fatalf("round %d, session %s: #%d (%s) is found at #%d", round, s, i+1, e.ID.Short(), p+1)
						}
					}
					if p := x.position(objects.ID{1}); p != -1 {
						t.Fatalf("round %d, session %s: an id never listed is found at #%d", round, s, p+1)
					}
					heads := map[objects.ID]bool{}
					for _, op := range all {
						for _, c := range op.Refs {
							if c.Name == refs.SessionHead(s) && !c.New.IsZero() {
								heads[c.New] = true
							}
						}
					}
					for n := range next + 1 {
						var id objects.ID
						id[0], id[1], id[2] = byte(n), byte(n>>8), 0xa5
						if x.movedHeadTo(id) != heads[id] {
							t.Fatalf("round %d, session %s: the index says a record moved the head to %s: %v; the log: %v", round, s, id.Short(), x.movedHeadTo(id), heads[id])
						}
					}
					for m := range 5 {
						msg := fmt.Sprintf("m%d", m)
						id, when := x.message(msg)
						var wid objects.ID
						var wwhen int64
						for _, op := range all {
							var d messageDetail
							if op.Kind == string(OpMessage) && op.Session == s && json.Unmarshal(op.Detail, &d) == nil && d.MessageID == msg {
								wid, wwhen = op.Checkpoint, op.Time.UnixNano()
							}
						}
						if id != wid || when != wwhen {
							t.Fatalf("round %d, session %s, %s: the index gives %v at %d, the log %v at %d", round, s, msg, id, when, wid, wwhen)
						}
					}
				}
			}
		})
	}
}

// An index whose mark the log no longer holds (the log replaced by a
// shorter one, as a restore from a backup would) is not used.
func TestSessionIndexOfAnotherLogIsNotUsed(t *testing.T) {
	r, _, err := Init(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	logPath := r.StoreDir + "/oplog"
	for i := range 200 {
		op := refs.Op{Kind: string(OpCheckpoint), Session: "s", Checkpoint: objects.ID{1, byte(i)}}
		if err := r.refs.Append(&op); err != nil {
			t.Fatal(err)
		}
		if i == 49 {
			old, _ := os.ReadFile(logPath)
			defer func() {
				// The log as it was after 50 records: the index (saved
				// later) names a record past its end.
				if err := os.WriteFile(logPath, old, 0o644); err != nil {
					t.Fatal(err)
				}
				x, err := r.history().sessionIndex("s")
				if err != nil {
					t.Fatal(err)
				}
				ops, _ := r.refs.LogOps()
				if want := referenceList(ops, "s"); len(want) != 50 || !slices.Equal(x.all(), want) {
					t.Fatalf("after the log was replaced: %d entries, want %d", x.len(), len(want))
				}
			}()
		}
	}
	x, err := r.history().sessionIndex("s")
	if err != nil || x.len() == 0 {
		t.Fatal(x, err)
	}
	if _, err := os.Stat(r.sessionIndexPath("s")); err != nil {
		t.Fatalf("no index saved: %v", err)
	}
}

// A record damaged in place before an index's mark: the index is not used,
// so what a reader gets is what the whole log says, index file or not
// (torture/index-findings/01). An index file made huge (sparse) is not
// read, and is replaced (torture/index-findings/02). Each read is a
// command of its own (a Repo opened for it), but for the last: a Repo that
// runs long checks the log again at every read.
func TestSessionIndexOfADamagedLogOrAHugeFile(t *testing.T) {
	dir := t.TempDir()
	r, _, err := Init(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	command := func(o Options) *Repo {
		t.Helper()
		o.Dir = dir
		c, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for i := range 5 {
		op := refs.Op{Kind: string(OpCheckpoint), Session: "s", Checkpoint: objects.ID{1, byte(i)}}
		if err := r.refs.Append(&op); err != nil {
			t.Fatal(err)
		}
	}
	if x, err := command(Options{}).history().sessionIndex("s"); err != nil || x.len() != 5 {
		t.Fatal(x, err)
	}
	if err := os.Truncate(r.sessionIndexPath("s"), 4<<30); err != nil {
		t.Fatal(err)
	}
	if x, err := command(Options{}).history().sessionIndex("s"); err != nil || x.len() != 5 {
		t.Fatalf("with a 4 GiB index file: %v, %v", x, err)
	}
	if fi, err := os.Stat(r.sessionIndexPath("s")); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("the huge index file was not replaced: %v, %v", fi.Size(), err)
	}
	server := command(Options{LongRunning: true})
	if x, err := server.history().sessionIndex("s"); err != nil || x.len() != 5 {
		t.Fatal(x, err)
	}
	logPath := r.StoreDir + "/oplog"
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	data[bytes.IndexByte(data, '\n')+10] ^= 1 // inside the second record
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ops, _ := r.refs.LogOps()
	for what, c := range map[string]*Repo{"a command": command(Options{}), "a long-running process": server} {
		x, err := c.history().sessionIndex("s")
		if want := referenceList(ops, "s"); err != nil || len(want) != 4 || !slices.Equal(x.all(), want) {
			t.Fatalf("%s, after damage before the mark: %d entries (%v), the log's %d", what, x.len(), err, len(want))
		}
	}
}

// A command reads a session's index once: a second reader in it (show
// msg:ID resolves, then shows) reads neither the index file nor the log's
// bytes before its mark again, yet sees records appended since.
func TestSessionIndexIsReadOncePerCommand(t *testing.T) {
	r, _, err := Init(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 3 {
		op := refs.Op{Kind: string(OpCheckpoint), Session: "s", Checkpoint: objects.ID{1, byte(i)}}
		if err := r.refs.Append(&op); err != nil {
			t.Fatal(err)
		}
	}
	if x, err := r.history().sessionIndex("s"); err != nil || x.len() != 3 {
		t.Fatal(x, err)
	}
	// Were the file read again, this would be found, not the kept index.
	if err := os.WriteFile(r.sessionIndexPath("s"), []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	op := refs.Op{Kind: string(OpCheckpoint), Session: "s", Checkpoint: objects.ID{1, 9}}
	if err := r.refs.Append(&op); err != nil {
		t.Fatal(err)
	}
	x, err := r.history().sessionIndex("s")
	if err != nil || x.len() != 4 || x.at(3).ID != (objects.ID{1, 9}) {
		t.Fatalf("the second read: %v, %v", x, err)
	}
	if data, _ := os.ReadFile(r.sessionIndexPath("s")); string(data) != "not an index" {
		t.Fatal("the second read derived the index again")
	}
}

// A head no record lists (its record lost: a crash after the head moved)
// is listed after the recorded checkpoints, by time; the list's Len, At
// and Index agree (the model harness found At failing on that path).
func TestSessionListWithAHeadNoRecordLists(t *testing.T) {
	dir := t.TempDir()
	r, _, err := Init(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := t.Context()
	var ids []objects.ID
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := r.Checkpoint(ctx, CheckpointOptions{Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	// The last record lost: the log cut before it.
	logPath := filepath.Join(r.StoreDir, "oplog")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	if err := os.WriteFile(logPath, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(r.StoreDir, "cache", "sessions"))
	c, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.sessionCheckpoints(c.history(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("%d checkpoints listed, want 3", l.Len())
	}
	for i, id := range ids {
		if l.At(i).ID != id || l.Index(id) != i {
			t.Fatalf("#%d is %s (Index %d), want %s", i+1, l.At(i).ID.Short(), l.Index(id), id.Short())
		}
	}
	if entries, err := c.Log(ctx, LogOptions{Session: "s"}); err != nil || len(entries) != 3 || entries[0].ID != ids[2] || entries[0].Seq != 3 {
		t.Fatalf("log: %v, %v", entries, err)
	}
}
