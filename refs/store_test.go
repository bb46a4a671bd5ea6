package refs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// newStore opens a store in a fresh directory and, at cleanup, fails the
// test if Check finds anything in it.
func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if probs := s.Check(); len(probs) > 0 {
			t.Errorf("store check at cleanup: %v", errors.Join(probs...))
		}
	})
	return s
}

// testID returns a non-zero id holding n in its first 8 bytes.
func testID(n uint64) objects.ID {
	var id objects.ID
	binary.BigEndian.PutUint64(id[:], n)
	id[31] = 0xee
	return id
}

func idNum(id objects.ID) uint64 { return binary.BigEndian.Uint64(id[:]) }

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Open of a missing directory succeeded")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "refs")); err != nil || !fi.IsDir() {
		t.Fatalf("refs dir not created: %v", err)
	}
	if err := s.Update("labels/x", objects.ID{}, testID(1)); err != nil {
		t.Fatal(err)
	}
	// Reopening keeps refs, and the file has the documented format.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get("labels/x"); err != nil || got != testID(1) {
		t.Fatalf("after reopen: %v %v", got, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "refs", "labels", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if want := testID(1).String() + "\n"; string(b) != want {
		t.Fatalf("ref file = %q, want %q", b, want)
	}
}

func TestRefOps(t *testing.T) {
	a, b, c := testID(1), testID(2), testID(3)
	var zero objects.ID
	type step struct {
		do       string // get, update, delete
		ref      string
		old, new objects.ID
		want     objects.ID // for get
		err      error      // sentinel expected, nil for success
		err2     error      // a second sentinel the error must also match
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"get missing", []step{
			{do: "get", ref: "sessions/s/head", err: ErrNotFound},
		}},
		{"create then get", []step{
			{do: "update", ref: "sessions/s/head", old: zero, new: a},
			{do: "get", ref: "sessions/s/head", want: a},
		}},
		{"move", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "update", ref: "labels/l", old: a, new: b},
			{do: "get", ref: "labels/l", want: b},
		}},
		{"create when present conflicts", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "update", ref: "labels/l", old: zero, new: b, err: ErrConflict},
			{do: "get", ref: "labels/l", want: a},
		}},
		{"stale old conflicts", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "update", ref: "labels/l", old: a, new: b},
			{do: "update", ref: "labels/l", old: a, new: c, err: ErrConflict},
			{do: "get", ref: "labels/l", want: b},
		}},
		{"update of missing ref with old set", []step{
			{do: "update", ref: "labels/l", old: a, new: b, err: ErrConflict, err2: ErrNotFound},
			{do: "get", ref: "labels/l", err: ErrNotFound},
		}},
		{"same value is allowed", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "update", ref: "labels/l", old: a, new: a},
			{do: "get", ref: "labels/l", want: a},
		}},
		{"delete", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "delete", ref: "labels/l", old: a},
			{do: "get", ref: "labels/l", err: ErrNotFound},
			{do: "update", ref: "labels/l", old: zero, new: b},
			{do: "get", ref: "labels/l", want: b},
		}},
		{"delete stale conflicts", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "delete", ref: "labels/l", old: b, err: ErrConflict},
			{do: "get", ref: "labels/l", want: a},
		}},
		{"delete missing", []step{
			{do: "delete", ref: "labels/l", old: a, err: ErrNotFound, err2: ErrConflict},
			{do: "delete", ref: "nodir/deeper/l", old: a, err: ErrNotFound},
		}},
		{"zero new refused", []step{
			{do: "update", ref: "labels/l", old: zero, new: zero, err: errAny},
			{do: "get", ref: "labels/l", err: ErrNotFound},
		}},
		{"zero old delete refused", []step{
			{do: "update", ref: "labels/l", old: zero, new: a},
			{do: "delete", ref: "labels/l", old: zero, err: errAny},
			{do: "get", ref: "labels/l", want: a},
		}},
		{"ref under a ref collides", []step{
			{do: "update", ref: "labels/a", old: zero, new: a},
			{do: "update", ref: "labels/a/b", old: zero, new: b, err: ErrBadName},
			{do: "get", ref: "labels/a/b", err: ErrNotFound},
			{do: "get", ref: "labels/a", want: a},
		}},
		{"ref over a directory collides", []step{
			{do: "update", ref: "x/y", old: zero, new: a},
			{do: "get", ref: "x", err: ErrNotFound},
			{do: "update", ref: "x", old: zero, new: b, err: ErrBadName},
			{do: "get", ref: "x/y", want: a},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			for i, st := range tc.steps {
				var err error
				var got objects.ID
				switch st.do {
				case "get":
					got, err = s.Get(st.ref)
				case "update":
					err = s.Update(st.ref, st.old, st.new)
				case "delete":
					err = s.Delete(st.ref, st.old)
				}
				switch {
				case st.err == nil && err != nil:
					t.Fatalf("step %d %s %s: %v", i, st.do, st.ref, err)
				case st.err == errAny && err == nil,
					st.err != nil && st.err != errAny && !errors.Is(err, st.err),
					st.err2 != nil && !errors.Is(err, st.err2):
					t.Fatalf("step %d %s %s: err %v, want %v %v", i, st.do, st.ref, err, st.err, st.err2)
				}
				if st.do == "get" && st.err == nil && got != st.want {
					t.Fatalf("step %d get %s = %s, want %s", i, st.ref, got, st.want)
				}
			}
		})
	}
}

var errAny = errors.New("any error")

func TestConflictError(t *testing.T) {
	s := newStore(t)
	if err := s.Update("labels/l", objects.ID{}, testID(1)); err != nil {
		t.Fatal(err)
	}
	err := s.Update("labels/l", testID(7), testID(2))
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err %T %v is not a *ConflictError", err, err)
	}
	if ce.Name != "labels/l" || ce.Expected != testID(7) || ce.Actual != testID(1) {
		t.Fatalf("conflict = %+v", ce)
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal("conflict on an existing ref matches ErrNotFound")
	}
	if _, err := os.Stat(s.refPath("labels/l") + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("lock left behind after conflict: %v", err)
	}
}

func TestStaleLockRecovered(t *testing.T) {
	s := newStore(t)
	if err := s.Update("labels/l", objects.ID{}, testID(1)); err != nil {
		t.Fatal(err)
	}
	// A crashed writer left its lock file: Check warns, the next writer
	// replaces it.
	lock := s.refPath("labels/l") + ".lock"
	if err := os.WriteFile(lock, []byte("half-writ"), 0o644); err != nil {
		t.Fatal(err)
	}
	probs := s.Check()
	var w *Warning
	if len(probs) != 1 || !errors.As(probs[0], &w) || w.Path != "refs/labels/l.lock" {
		t.Fatalf("Check = %v, want one lock warning", probs)
	}
	if err := s.Update("labels/l", testID(1), testID(2)); err != nil {
		t.Fatalf("update over a stale lock: %v", err)
	}
	if got, _ := s.Get("labels/l"); got != testID(2) {
		t.Fatalf("ref = %s", got)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("stale lock still there: %v", err)
	}
}

func TestBusy(t *testing.T) {
	s := newStore(t)
	s.lockTimeout = 50 * time.Millisecond
	if err := s.Update("labels/l", objects.ID{}, testID(1)); err != nil {
		t.Fatal(err)
	}
	// A live writer holds refs.lock.
	holder, err := flockExclusive(filepath.Join(s.dir, refsLockName))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { return s.Update("labels/l", testID(1), testID(2)) },
		func() error { return s.Delete("labels/l", testID(1)) },
	} {
		if err := f(); !errors.Is(err, ErrBusy) {
			t.Fatalf("with a held lock: %v, want ErrBusy", err)
		}
	}
	holder.Close()
	if err := s.Update("labels/l", testID(1), testID(2)); err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
}

func TestList(t *testing.T) {
	s := newStore(t)
	names := []string{"sessions/b/head", "sessions/a/head", "labels/rel-2", "labels/rel-1", "labels/other", "top"}
	for i, n := range names {
		if err := s.Update(n, objects.ID{}, testID(uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// A writer's lock file in flight is not a ref.
	if err := os.WriteFile(s.refPath("labels/new")+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(s.refPath("labels/new") + ".lock")

	cases := []struct {
		name, prefix string
		want         []string
	}{
		{"all", "", []string{"labels/other", "labels/rel-1", "labels/rel-2", "sessions/a/head", "sessions/b/head", "top"}},
		{"sessions", "sessions/", []string{"sessions/a/head", "sessions/b/head"}},
		{"partial component", "labels/rel", []string{"labels/rel-1", "labels/rel-2"}},
		{"partial top level", "se", []string{"sessions/a/head", "sessions/b/head"}},
		{"one session", "sessions/a/", []string{"sessions/a/head"}},
		{"exact name", "top", []string{"top"}},
		{"missing namespace", "nope/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			refs, err := s.List(tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.Name)
				if want, _ := s.Get(r.Name); r.ID != want {
					t.Errorf("%s: id %s, Get says %s", r.Name, r.ID, want)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		})
	}
}

func TestCheckRefs(t *testing.T) {
	cases := []struct {
		name    string
		path    string // under refs/
		content string
		symlink bool
		corrupt bool // else warning
	}{
		{"short", "labels/short", "abc\n", false, true},
		{"no newline", "labels/nonl", testID(1).String(), false, true},
		{"uppercase", "labels/upper", "ABCDEF" + testID(1).String()[6:] + "\n", false, true},
		{"trailing junk", "labels/junk", testID(1).String() + "\nx", false, true},
		{"zero id", "labels/zero", objects.ID{}.String() + "\n", false, true},
		{"illegal name", "labels/.hidden", testID(1).String() + "\n", false, true},
		{"illegal dir", "bad dir/x", testID(1).String() + "\n", false, true},
		{"symlink", "labels/link", "", true, true},
		{"stale lock", "labels/l.lock", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update("labels/good", objects.ID{}, testID(9)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(s.refsDir, filepath.FromSlash(tc.path))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if tc.symlink {
				err = os.Symlink("good", p)
			} else {
				err = os.WriteFile(p, []byte(tc.content), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			probs := s.Check()
			if len(probs) != 1 {
				t.Fatalf("Check = %v, want one problem", probs)
			}
			var w *Warning
			if tc.corrupt != errors.Is(probs[0], ErrCorrupt) || !tc.corrupt != errors.As(probs[0], &w) {
				t.Fatalf("Check = %v (%T), want corrupt=%v", probs[0], probs[0], tc.corrupt)
			}
			// List returns the good ref and reports damage, never hides it.
			refs, err := s.List("")
			if len(refs) != 1 || refs[0].Name != "labels/good" {
				t.Fatalf("List = %v", refs)
			}
			if ValidName(tc.path) == nil && tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("List err = %v, want ErrCorrupt", err)
				}
				if _, err := s.Get(tc.path); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Get = %v, want ErrCorrupt", err)
				}
				if err := s.Update(tc.path, objects.ID{}, testID(1)); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Update over corrupt ref = %v, want ErrCorrupt", err)
				}
			} else if err != nil {
				t.Fatalf("List err = %v", err)
			}
		})
	}
}

// TestConcurrentCAS runs read-modify-CAS increments from many goroutines on
// one ref: none may be lost.
func TestConcurrentCAS(t *testing.T) {
	s := newStore(t)
	const workers, incs = 8, 200
	const name = "sessions/shared/head"
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range incs {
				if err := increment(s, name); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if n := idNum(got); n != workers*incs {
		t.Fatalf("counter = %d, want %d: updates lost", n, workers*incs)
	}
}

// increment adds one to the counter held in ref name, retrying on conflicts.
func increment(s *Store, name string) error {
	for {
		cur, err := s.Get(name)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		var n uint64
		if err == nil {
			n = idNum(cur)
		}
		err = s.Update(name, cur, testID(n+1))
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrBusy) {
			return err
		}
	}
}

// F14: an op-log append waits for another appender at most oplogTimeout,
// then fails busy (it waited forever, deaf to Ctrl-C).
func TestAppendWaitIsBounded(t *testing.T) {
	s := newStore(t)
	s.oplogTimeout = 50 * time.Millisecond
	holder, err := flockExclusive(filepath.Join(s.dir, logLockName))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(&Op{Kind: "label", Session: "s"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("append with a held op-log lock: %v, want ErrBusy", err)
	}
	holder.Close()
	if err := s.Append(&Op{Kind: "label", Session: "s"}); err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
}
