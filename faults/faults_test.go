package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// maxDense is how many injection points are tried one by one; beyond it,
// a deterministic sample of about maxSample more.
const maxDense, maxSample = 200, 100

// class is one operation class under test.
type class struct {
	name string
	// parallel: the call captures with several goroutines, so the order of
	// its reads varies from run to run (their number does not); the N-th
	// read is then a different one in different runs.
	parallel bool
	// call is the operation: run once with faults, then retried.
	call func(ctx context.Context, l *live, fx *fixture) error
	// tolerated reports the faults the call absorbs by design (it then
	// succeeds) besides closeHarmless; see doc.go.
	tolerated func(l *live, o fsys.Op) bool
	// afterFault checks the state a failed (or tolerated) call leaves, with
	// the real file system; afterRetry the state once the retry succeeded.
	// They return one message per broken invariant.
	afterFault func(t testing.TB, r *run) []string
	afterRetry func(t testing.TB, r *run) []string
}

// run is one injection: a fresh copy of the fixture, a fault, a call.
type run struct {
	fx         *fixture
	l          *live
	f          *fsys.Faulty
	at         int
	errno      syscall.Errno
	persistent bool
	err        error
	injected   []fsys.Op
	skipped    []worktree.Skipped // what the failed call's captures skipped
}

func (r *run) String() string {
	mode := "transient"
	if r.persistent {
		mode = "persistent"
	}
	s := fmt.Sprintf("N=%d %s %s", r.at, r.errno, mode)
	if len(r.injected) > 0 {
		s += " at " + r.injected[0].String()
	}
	return s
}

func cachePath(l *live, o fsys.Op) bool {
	dir := filepath.Join(l.store, "cache")
	return o.Path == dir || strings.HasPrefix(o.Path, dir+string(filepath.Separator))
}

// classes are the operations under test: the engine's Checkpoint and
// Rewind (engine_root_test.go adds them), gc's sweep and ref updates.
var classes = []class{
	{
		name:       "gc",
		call:       func(ctx context.Context, l *live, fx *fixture) error { return l.collect(ctx) },
		tolerated:  func(*live, fsys.Op) bool { return false },
		afterFault: gcAfterFault,
		afterRetry: gcAfterRetry,
	},
	{
		name:       "ref-update",
		call:       func(ctx context.Context, l *live, fx *fixture) error { return l.moveRefs(refMoves(fx), "harness-move") },
		tolerated:  func(*live, fsys.Op) bool { return false },
		afterFault: refsAfterFault,
		afterRetry: refsAfterRetry,
	},
}

// refMoves: a new label in a new directory, the head moved back, a label
// deleted.
func refMoves(fx *fixture) []refMove {
	return []refMove{
		{name: "labels/team/release", new: fx.ck[1]},
		{name: headRef, old: fx.ck[2], new: fx.ck[1]},
		{name: "labels/keep", old: fx.ck[0]},
	}
}

// points returns the injection points for a call of k operations.
func points(k int) []int {
	var out []int
	for n := 1; n <= min(k, maxDense); n++ {
		out = append(out, n)
	}
	if k > maxDense {
		step := max(1, (k-maxDense)/maxSample)
		for n := maxDense + step; n <= k; n += step {
			out = append(out, n)
		}
	}
	return out
}

// knownIssue is a failure found by the harness in a package this harness
// does not own, reported and awaiting its fix there: counted and shown,
// not failed. When it is no longer seen the test fails, so that the entry
// is removed.
type knownIssue struct {
	sweep, class, kind string
	match              string // substring of the failure's example
	why                string
}

var knownIssues = []knownIssue{}

func known(sweep, class, kind, example string) *knownIssue {
	for i, k := range knownIssues {
		if k.sweep == sweep && k.class == class && k.kind == kind && strings.Contains(example, k.match) {
			return &knownIssues[i]
		}
	}
	return nil
}

// stats counts what the harness did for one class. Runs add to it
// concurrently.
type stats struct {
	mu                                   sync.Mutex
	k, points, runs, injected, tolerated int
	failures                             map[string]int
	examples                             map[string]string
	known                                map[*knownIssue]int
	sweep, class                         string
}

func (s *stats) add(runs, injected, tolerated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs += runs
	s.injected += injected
	s.tolerated += tolerated
}

func (s *stats) fail(kind, example string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := known(s.sweep, s.class, kind, example); k != nil {
		s.known[k]++
		return
	}
	s.failures[kind]++
	if ex, ok := s.examples[kind]; !ok || example < ex {
		s.examples[kind] = example // the same example whatever the order of the runs
	}
}

// sweep is one family of faults: which operations are counted (and so can
// fail), with which errnos.
type sweep struct {
	name   string
	count  fsys.Class
	errnos []syscall.Errno
}

var sweeps = []sweep{
	// Every operation that changes the file system or makes a change
	// durable: the requirement.
	{"write", fsys.Write, []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EACCES}},
	// Every read (opening, reading, listing, stat), store and working tree:
	// a read fault must never be taken for absence (gc deleting what it
	// could not read, a rewind deleting what it could not capture).
	{"read", fsys.Read, []syscall.Errno{syscall.EIO, syscall.EACCES}},
}

// TestFaults injects ENOSPC, EIO and EACCES, transient and persistent, at
// every write-class operation of checkpoint, rewind, gc and ref update (and
// EIO and EACCES at every read), and checks after each: a documented error
// naming the failed operation and wrapping the errno, fsck clean, the
// previous state intact, and a retry succeeding once the fault clears.
// Run with -v for the summary.
func TestFaults(t *testing.T) {
	fx := newFixture(t)
	base := scratchDir(t)
	seq := 0
	var report []string
	total := map[string]int{}
	for _, sw := range sweeps {
		for _, c := range classes {
			t.Run(sw.name+"/"+c.name, func(t *testing.T) {
				s := &stats{failures: map[string]int{}, examples: map[string]string{}, known: map[*knownIssue]int{},
					sweep: sw.name, class: c.name}
				// Counting runs: twice, to check the count is deterministic.
				var k int
				var names []string
				for i := 0; i < 2; i++ {
					seq++
					r, err := start(fx, filepath.Join(base, fmt.Sprintf("count-%d", seq)), fsys.Fault{Count: sw.count})
					if err != nil {
						t.Fatal(err)
					}
					if err := c.call(context.Background(), r.l, fx); err != nil {
						t.Fatalf("%s without faults: %v", c.name, err)
					}
					var ns []string
					for _, o := range r.f.Ops() {
						if o.Seq > 0 {
							ns = append(ns, o.Name)
						}
					}
					if i == 0 {
						k, names = r.f.Count(), ns
						t.Logf("%s: %d %s-class operations: %s", c.name, k, sw.count, strings.Join(ns, " "))
					} else if c.parallel && sw.count == fsys.Read {
						if len(ns) != len(names) {
							t.Errorf("%s: operation count not deterministic: %d, then %d", c.name, len(names), len(ns))
						}
					} else if strings.Join(ns, " ") != strings.Join(names, " ") {
						t.Errorf("%s: operation count not deterministic:\n%s\n%s", c.name, strings.Join(names, " "), strings.Join(ns, " "))
					}
					r.l.close()
					os.RemoveAll(filepath.Dir(r.l.root))
				}
				s.k = k
				pts := points(k)
				s.points = len(pts)
				// Runs are independent (own copy, own Faulty, own stores),
				// so they run in parallel.
				type job struct {
					dir   string
					fault fsys.Fault
				}
				jobs := make(chan job)
				var wg sync.WaitGroup
				for range 2 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						for j := range jobs {
							if err := inject(c, fx, j.dir, j.fault, s); err != nil {
								t.Error(err)
							}
							os.RemoveAll(j.dir)
						}
					})
				}
				for _, at := range pts {
					for _, errno := range sw.errnos {
						for _, persistent := range []bool{false, true} {
							seq++
							// A full disk writes what fits before it
							// fails: ENOSPC writes are short.
							jobs <- job{filepath.Join(base, fmt.Sprintf("run-%d", seq)), fsys.Fault{At: at, Err: errno,
								Persistent: persistent, Count: sw.count, ShortWrite: errno == syscall.ENOSPC}}
						}
					}
				}
				close(jobs)
				wg.Wait()
				var kinds []string
				for kind := range s.failures {
					kinds = append(kinds, kind)
				}
				sort.Strings(kinds)
				line := fmt.Sprintf("%-5s %-10s K=%-3d N values=%-3d runs=%-4d faults injected=%-5d absorbed=%-3d failures=%d",
					sw.name, c.name, s.k, s.points, s.runs, s.injected, s.tolerated, len(kinds))
				for _, kind := range kinds {
					line += fmt.Sprintf("\n    %s: %d (e.g. %s)", kind, s.failures[kind], s.examples[kind])
					t.Errorf("%s: %s: %d runs, e.g. %s", c.name, kind, s.failures[kind], s.examples[kind])
				}
				for i := range knownIssues {
					k := &knownIssues[i]
					if k.sweep != sw.name || k.class != c.name {
						continue
					}
					if n := s.known[k]; n > 0 {
						line += fmt.Sprintf("\n    known issue, not failed: %s: %d runs: %s", k.kind, n, k.why)
						total["known"] += n
					} else {
						t.Errorf("known issue no longer seen, remove it from knownIssues: %s %s %s", k.sweep, k.class, k.kind)
					}
				}
				report = append(report, line)
				total["classes"]++
				total["N values"] += s.points
				total["runs"] += s.runs
				total["faults injected"] += s.injected
				for _, n := range s.failures {
					total["failures"] += n
				}
			})
		}
	}
	t.Logf("fault-injection summary (transient and persistent; write sweep ENOSPC (short writes), EIO, EACCES; read sweep EIO, EACCES):\n%s\n"+
		"total: %d sweeps × operation classes, %d N values, %d runs, %d faults injected, %d assertion failures (and %d known, in packages not owned here)",
		strings.Join(report, "\n"), total["classes"], total["N values"], total["runs"], total["faults injected"], total["failures"], total["known"])
}

// start copies the fixture to dir and opens it through a Faulty set to
// fault.
func start(fx *fixture, dir string, fault fsys.Fault) (*run, error) {
	if err := copyTree(fx.dir, dir); err != nil {
		return nil, err
	}
	f := fsys.NewFaulty(nil, nil)
	l, err := openLive(filepath.Join(dir, "proj"), f)
	if err != nil {
		return nil, err
	}
	f.Set(fault) // opening the stores is not part of the call
	return &run{fx: fx, l: l, f: f, at: fault.At, errno: fault.Err, persistent: fault.Persistent}, nil
}

// inject does one run and records every broken assertion in s. An error
// means the run could not be set up.
func inject(c class, fx *fixture, dir string, fault fsys.Fault, s *stats) error {
	errno := fault.Err
	r, err := start(fx, dir, fault)
	if err != nil {
		return err
	}
	defer r.l.close()
	t := &checker{}
	defer func() {
		if p := recover(); p != nil {
			msg, ok := p.(checkFatal)
			if !ok {
				panic(p)
			}
			s.fail("check could not run", r.String()+": "+string(msg))
		}
	}()
	ctx := context.Background()
	r.err = c.call(ctx, r.l, fx)
	r.injected = r.f.Injected()
	log := r.f.Ops()
	r.f.Clear()
	if len(r.injected) == 0 {
		s.add(1, 0, 0)
		s.fail("no fault injected (operation count changed)", r.String())
		return nil
	}
	tolerated := 0
	defer func() { s.add(1, len(r.injected), tolerated) }()
	r.skipped = r.l.skipped
	// A write fault must be reported unless the class absorbs it by design
	// (tolerated: the call must then succeed) or it is a harmless close.
	// A read fault may be absorbed (a fallback, a retry, or a capture
	// skipping the path and saying why), provided the state checks below
	// hold: reading is never allowed to change the outcome. An error
	// reported must be one of the faults up to the first that must be
	// reported (not a later consequence), wrap its errno and name it; or,
	// when a capture skipped paths, be a consequence of that (a rewind
	// refuses to overwrite a file it could not capture) whose skip reasons
	// give the errno.
	reads := fault.Count&fsys.Read != 0
	var candidates []fsys.Op
	mustReport, mayAbsorb := false, false
	for i, o := range log {
		if !o.Failed || mustReport {
			continue
		}
		switch {
		case c.tolerated(r.l, o):
		case reads || closeHarmless(log, i):
			mayAbsorb = true
			candidates = append(candidates, o)
		default:
			mustReport = true
			candidates = append(candidates, o)
		}
	}
	switch {
	case r.err == nil && !mustReport:
		tolerated++
	case r.err == nil:
		s.fail("fault swallowed: call succeeded", r.String())
	case !mustReport && !mayAbsorb:
		s.fail("tolerated fault made the call fail", r.String()+": "+r.err.Error())
	case !mustReport && len(r.skipped) > 0 && !errors.As(r.err, new(*fsys.InjectedError)):
		// Absorbed as a skip; the error is a consequence of it.
		if !skipSays(r.skipped, errno) {
			s.fail("skip does not give the errno", r.String()+": "+fmt.Sprint(r.skipped))
		}
	default:
		var inj *fsys.InjectedError
		if !errors.Is(r.err, errno) {
			s.fail("error does not wrap the errno", r.String()+": "+r.err.Error())
		}
		if !errors.As(r.err, &inj) || inj.Op.Seq > candidates[len(candidates)-1].Seq {
			s.fail("error is not the (first) injected one", r.String()+": "+r.err.Error())
		}
		named := false
		for _, o := range candidates {
			named = named || strings.Contains(r.err.Error(), o.Name+" ")
		}
		if !named {
			s.fail("error does not name the failed operation", r.String()+": "+r.err.Error())
		}
	}
	if msg := fsckClean(r.l.store); msg != "" {
		s.fail("fsck after the fault", r.String()+": "+msg)
	}
	for _, msg := range c.afterFault(t, r) {
		s.fail("state after the fault", r.String()+": "+msg)
	}
	// The fault clears: the same process retries with the same stores.
	r.l.skipped = nil
	if err := c.call(ctx, r.l, fx); err != nil {
		s.fail("retry failed", r.String()+": "+err.Error())
		return nil
	}
	if len(r.l.skipped) > 0 {
		s.fail("retry skipped paths", r.String()+": "+fmt.Sprint(r.l.skipped))
	}
	if msg := fsckClean(r.l.store); msg != "" {
		s.fail("fsck after the retry", r.String()+": "+msg)
	}
	for _, msg := range c.afterRetry(t, r) {
		s.fail("state after the retry", r.String()+": "+msg)
	}
	return nil
}

// checker is the testing.TB the checks of a run get: they run in a worker
// goroutine, where t.Fatal may not be called, so a failure to read a tree
// ends the run as a failed assertion instead.
type checker struct {
	testing.TB // nil: only the methods below may be called
}

func (c *checker) Helper() {}

// checkFatal is what checker.Fatal panics with; inject recovers it.
type checkFatal string

func (c *checker) Fatal(args ...any) { panic(checkFatal(fmt.Sprint(args...))) }

// skipSays reports whether a skip reason gives the errno.
func skipSays(skipped []worktree.Skipped, errno syscall.Errno) bool {
	for _, sk := range skipped {
		if strings.Contains(sk.Reason, errno.Error()) {
			return true
		}
	}
	return false
}

// minus returns st without the paths skipped (a skipped directory takes
// everything beneath it).
// A path the capture could not read (Kept) keeps what it held in
// prev, the parent checkpoint's state: it is carried forward, never
// recorded as deleted.
func minus(st, prev treeState, skipped []worktree.Skipped) treeState {
	under := func(p string, sk worktree.Skipped) bool {
		dir := strings.TrimSuffix(sk.Path, "/")
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	out := treeState{}
	for p, e := range st {
		if !slices.ContainsFunc(skipped, func(sk worktree.Skipped) bool { return under(p, sk) }) {
			out[p] = e
		}
	}
	for p, e := range prev {
		if slices.ContainsFunc(skipped, func(sk worktree.Skipped) bool { return sk.Kept && under(p, sk) }) {
			out[p] = e
		}
	}
	return out
}

// closeHarmless reports whether the failed operation log[i] is a close(2)
// of a file with nothing left to lose: its writes were fsync'd by the
// operation just before on that file, or it was never written (a lock
// file). The code may ignore such an error; it does.
func closeHarmless(log []fsys.Op, i int) bool {
	if log[i].Name != "close" {
		return false
	}
	for j := i - 1; j >= 0; j-- {
		o := log[j]
		if o.Path != log[i].Path {
			continue
		}
		switch o.Name {
		case "sync":
			return !o.Failed
		case "write", "truncate":
			return false
		case "open", "createtemp", "openat":
			return true
		}
	}
	return false
}

// Shared checks.

// previousRestore checks that the fixture's checkpoints restore byte-exact
// (skip lists those a gc may have expired).
func previousRestore(t testing.TB, r *run, skip map[objects.ID]bool) []string {
	var out []string
	for i, id := range r.fx.ck {
		if skip[id] {
			continue
		}
		if msg := restoresTo(t, r.l.store, id, r.fx.states[i]); msg != "" {
			out = append(out, fmt.Sprintf("c%d: %s", i, msg))
		}
	}
	return out
}

// worktreeIs checks the working tree against want, the ignored directory
// against the fixture's, and that no temporary file is left.
func worktreeIs(t testing.TB, r *run, want treeState, debrisAllowed bool) []string {
	var out []string
	got, debris := readState(t, r.l.root)
	if d := diffStates(got, want); d != "" {
		out = append(out, "working tree: "+d)
	}
	if len(debris) > 0 && !debrisAllowed {
		out = append(out, fmt.Sprintf("temporary files left: %v", debris))
	}
	if d := diffStates(readDirFiles(t, filepath.Join(r.l.root, ignoredDir)), r.fx.ignored); d != "" {
		out = append(out, "ignored files touched: "+d)
	}
	return out
}

func getRef(rs *refs.Store, name string) (objects.ID, error) {
	id, err := rs.Get(name)
	if errors.Is(err, refs.ErrNotFound) {
		return objects.ID{}, nil
	}
	return id, err
}

// refsState reads the refs and op log with the real file system.
func refsState(r *run) (*refs.Store, []refs.Op, error) {
	st, rs, err := openReal(r.l.store)
	if err != nil {
		return nil, nil, err
	}
	st.Close()
	ops, err := rs.Ops()
	return rs, ops, err
}

// opsKept checks the fixture's op-log records are still there, unchanged.
func opsKept(r *run, ops []refs.Op) []string {
	if len(ops) < r.fx.ops {
		return []string{fmt.Sprintf("op log has %d records, the fixture had %d", len(ops), r.fx.ops)}
	}
	for i := 0; i < r.fx.ops; i++ {
		if ops[i].Seq != int64(i+1) {
			return []string{fmt.Sprintf("op log record %d has seq %d", i+1, ops[i].Seq)}
		}
	}
	return nil
}

// Checkpoint.

func checkpointAfterFault(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	out = append(out, worktreeIs(t, r, r.fx.states[3], false)...)
	rs, ops, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	out = append(out, opsKept(r, ops)...)
	head, err := getRef(rs, headRef)
	if err != nil {
		return append(out, err.Error())
	}
	if head != r.fx.ck[2] {
		// The head moved: the new checkpoint must be whole, less what the
		// capture skipped (and said so).
		if msg := restoresTo(t, r.l.store, head, minus(r.fx.states[3], r.fx.states[2], r.skipped)); msg != "" {
			out = append(out, "moved head: "+msg)
		}
	}
	return out
}

func checkpointAfterRetry(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	rs, ops, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	head, err := getRef(rs, headRef)
	if err != nil {
		return append(out, err.Error())
	}
	if head == r.fx.ck[2] {
		return append(out, "head did not move")
	}
	if msg := restoresTo(t, r.l.store, head, r.fx.states[3]); msg != "" {
		out = append(out, "new head: "+msg)
	}
	if last := ops[len(ops)-1]; last.Kind != "checkpoint" || last.Checkpoint != head {
		out = append(out, fmt.Sprintf("last op %s %s does not record the head %s", last.Kind, last.Checkpoint.Short(), head.Short()))
	}
	return out
}

// Rewind (from the dirty v3 to c0).

func rewindAfterFault(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	got, debris := readState(t, r.l.root)
	if len(debris) > 0 && !r.persistent {
		out = append(out, fmt.Sprintf("temporary files left after a transient fault: %v", debris))
	}
	old, target := r.fx.states[3], r.fx.states[0]
	paths := map[string]bool{}
	for _, st := range []treeState{got, old, target} {
		for p := range st {
			paths[p] = true
		}
	}
	for p := range paths {
		g, gok := got[p]
		o, ook := old[p]
		n, nok := target[p]
		if !(gok == ook && g == o) && !(gok == nok && g == n) {
			out = append(out, fmt.Sprintf("%s is neither as before nor as in the target (torn or stray)", p))
		}
	}
	if d := diffStates(readDirFiles(t, filepath.Join(r.l.root, ignoredDir)), r.fx.ignored); d != "" {
		out = append(out, "ignored files touched: "+d)
	}
	out = append(out, workPreserved(t, r, got)...)
	rs, ops, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	out = append(out, opsKept(r, ops)...)
	if head, err := getRef(rs, headRef); err != nil {
		out = append(out, err.Error())
	} else if head != r.fx.ck[2] && head != r.fx.ck[0] && !holdsV3(r, head) {
		out = append(out, "head is "+head.Short()+": not c2, the target or a safety checkpoint")
	}
	return out
}

func rewindAfterRetry(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	got, _ := readState(t, r.l.root)
	out = append(out, worktreeIs(t, r, r.fx.states[0], false)...)
	out = append(out, workPreserved(t, r, got)...)
	rs, _, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	if head, err := getRef(rs, headRef); err != nil || head != r.fx.ck[0] {
		out = append(out, fmt.Sprintf("head %s (%v), want the target c0", head.Short(), err))
	}
	return out
}

// workPreserved checks that every file of the work from before the rewind
// that is no longer on disk as it was (got) is held, as it was, by a
// checkpoint reachable from the refs, the op log or the move journal (the
// roots gc keeps): no rewind loses work.
func workPreserved(t testing.TB, r *run, got treeState) []string {
	var lost []string
	for p, e := range r.fx.states[3] {
		if g, ok := got[p]; !ok || g != e {
			lost = append(lost, p)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	held, err := reachableEntries(r)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range lost {
		if !held[p][r.fx.v3Entries[p]] {
			out = append(out, fmt.Sprintf("%s: the work from before the rewind is in no reachable checkpoint", p))
		}
	}
	return out
}

// reachableEntries lists, by path, the entries of every checkpoint
// reachable from the refs, the op log and the move journal, with the real
// file system.
func reachableEntries(r *run) (map[string]map[objects.TreeEntry]bool, error) {
	st, rs, err := openReal(r.l.store)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	roots, err := gc.Roots(rs) // refs, op log and move journal
	if err != nil {
		return nil, err
	}
	held := map[string]map[objects.TreeEntry]bool{}
	seen := map[objects.ID]bool{}
	for len(roots) > 0 {
		id := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if id.IsZero() || seen[id] {
			continue
		}
		seen[id] = true
		ck, err := st.ReadCheckpoint(id)
		if err != nil {
			return nil, fmt.Errorf("reachable checkpoint %s: %w", id.Short(), err)
		}
		roots = append(roots, ck.Parents...)
		if err := objects.WalkTree(st, ck.Tree, func(p string, e objects.TreeEntry) error {
			if held[p] == nil {
				held[p] = map[objects.TreeEntry]bool{}
			}
			held[p][e] = true
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return held, nil
}

func holdsV3(r *run, id objects.ID) bool {
	st, _, err := openReal(r.l.store)
	if err != nil {
		return false
	}
	defer st.Close()
	ck, err := st.ReadCheckpoint(id)
	return err == nil && ck.Tree == r.fx.v3Tree
}

// gc (expires c1, drops the orphan pack).

func gcAfterFault(t testing.TB, r *run) []string {
	rs, ops, err := refsState(r)
	if err != nil {
		return []string{err.Error()}
	}
	expired, err := rs.Expired()
	if err != nil {
		return []string{"expired list: " + err.Error()}
	}
	out := previousRestore(t, r, expired)
	if expired[r.fx.ck[0]] || expired[r.fx.ck[2]] {
		out = append(out, "a labelled checkpoint or the head was expired")
	}
	out = append(out, worktreeIs(t, r, r.fx.states[3], false)...)
	out = append(out, opsKept(r, ops)...)
	for _, ref := range []struct {
		name string
		want objects.ID
	}{{headRef, r.fx.ck[2]}, {"labels/keep", r.fx.ck[0]}} {
		if id, err := getRef(rs, ref.name); err != nil || id != ref.want {
			out = append(out, fmt.Sprintf("%s moved to %s (%v)", ref.name, id.Short(), err))
		}
	}
	return out
}

func gcAfterRetry(t testing.TB, r *run) []string {
	out := gcAfterFault(t, r)
	rs, _, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	expired, _ := rs.Expired()
	if !expired[r.fx.ck[1]] {
		out = append(out, "c1 not expired after the retry")
	}
	st, _, err := openReal(r.l.store)
	if err != nil {
		return append(out, err.Error())
	}
	defer st.Close()
	if st.Has(r.fx.ck[1]) {
		out = append(out, "c1 still stored after the retry")
	}
	return out
}

// Ref update.

func refsAfterFault(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	rs, ops, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	out = append(out, opsKept(r, ops)...)
	for _, m := range refMoves(r.fx) {
		id, err := getRef(rs, m.name)
		if err != nil || id != m.old && id != m.new {
			out = append(out, fmt.Sprintf("%s is %s (%v): neither old nor new", m.name, id.Short(), err))
		}
	}
	if n := countMarker(ops); n > 1 {
		out = append(out, fmt.Sprintf("op recorded %d times", n))
	} else if n == 1 && r.err != nil && !r.persistent {
		// Append is the last step: it failed, so it must not have
		// recorded (only a failing cleanup may leave the record).
		out = append(out, "a failed Append left its record")
	}
	return out
}

func refsAfterRetry(t testing.TB, r *run) []string {
	out := previousRestore(t, r, nil)
	rs, ops, err := refsState(r)
	if err != nil {
		return append(out, err.Error())
	}
	for _, m := range refMoves(r.fx) {
		if id, err := getRef(rs, m.name); err != nil || id != m.new {
			out = append(out, fmt.Sprintf("%s is %s (%v), want %s", m.name, id.Short(), err, m.new.Short()))
		}
	}
	if n := countMarker(ops); n != 1 {
		out = append(out, fmt.Sprintf("op recorded %d times, want once", n))
	}
	return out
}

func countMarker(ops []refs.Op) int {
	n := 0
	for _, op := range ops {
		if string(op.Detail) == `"harness-move"` {
			n++
		}
	}
	return n
}
