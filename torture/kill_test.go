package torture

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// digest identifies content without keeping it (transcripts grow).
type digest [32]byte

func dig(s string) digest { return sha256.Sum256([]byte(s)) }

// checkpointRec is a checkpoint the harness knows the exact content of.
type checkpointRec struct {
	id    objects.ID
	iter  int
	tree  treeState
	conv  digest
	acked bool // its command exited 0 and printed the id
	// verified: its content was compared with the store's once (see
	// checkStore).
	verified bool
	how      string // "checkpoint", "safety checkpoint of a rewind", "completed before the kill"
}

type opCount struct{ runs, killed int }

// killStats are the numbers TestKill9 prints.
type killStats struct {
	iterations      int
	killed          int // SIGKILL landed while the command ran
	byOp            map[string]*opCount
	acked           int // checkpoints acknowledged (exit 0 + id)
	ackedSafety     int // safety checkpoints acknowledged by a rewind that exited 0
	durableUnacked  int // checkpoints found complete after their command was killed
	unackedLost     int // ... of which later gone (see unrecoverable)
	lost            int // acknowledged checkpoints that did not verify, ever
	fsckFailures    int
	fsckWarnings    map[string]int
	fullRewinds     int
	catChecks       int
	interrupted     int // rewinds and undos killed mid-way
	torn            int // files found neither old nor new after an interrupted rewind/undo
	tmpLeft         int // .snap-tmp-* files seen after interrupted rewinds/undos
	lockLeft        int // kills after which a ref lock file was left behind
	busy            int // commands that failed with exit 11 after a kill (stale lock)
	unrecoverable   int // interrupted rewinds whose pre-rewind state no checkpoint holds
	treeTouched     int // checkpoint/gc runs that changed the working tree
	recovery        map[string]int
	undoFailures    map[string]int
	unexpectedExits int
	// The watch daemon (issue 24): started, killed with SIGKILL between
	// commands and while a checkpoint runs, started again; checkpoints
	// that read only what it said may have changed, each verified as any
	// other.
	daemonStarts, daemonKills, daemonKillsDuring, monitored int
}

type killHarness struct {
	t         *testing.T
	rng       *rand.Rand
	proj      string
	store     string
	agentDir  string
	convPath  string
	mut       *mutator
	typical   map[string]time.Duration
	recs      []*checkpointRec
	byID      map[objects.ID]*checkpointRec
	known     map[string]map[digest]bool // path → digests of every version it had before a command
	knownConv map[digest]bool
	lostIDs   map[objects.ID]bool
	lastKill  string // the last kill, for bug reports
	st        killStats
}

// TestKill9 kills the real snap binary with SIGKILL at random moments of
// checkpoints, rewinds, undos and gc while mutating a small tree and a JSONL
// transcript, and checks after every iteration that the store needs no
// repair and that nothing acknowledged was lost (see doc.go).
func TestKill9(t *testing.T) {
	iterations := 100
	if long() {
		iterations = 1000
	}
	if s := os.Getenv("SNAP_TORTURE_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SNAP_TORTURE_ITERATIONS: %v", err)
		}
		iterations = n
	}
	base := t.TempDir()
	h := &killHarness{
		t:         t,
		rng:       rngFor(1),
		proj:      filepath.Join(base, "project"),
		agentDir:  filepath.Join(base, "agent"),
		typical:   map[string]time.Duration{},
		byID:      map[objects.ID]*checkpointRec{},
		known:     map[string]map[digest]bool{},
		knownConv: map[digest]bool{},
		lostIDs:   map[objects.ID]bool{},
		st: killStats{byOp: map[string]*opCount{}, fsckWarnings: map[string]int{},
			recovery: map[string]int{}, undoFailures: map[string]int{}},
	}
	h.store = filepath.Join(h.proj, ".snap")
	h.convPath = filepath.Join(h.agentDir, "session.jsonl")
	for _, d := range []string{h.proj, h.agentDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.mut = newMutator(h.rng, h.proj, h.convPath)
	if err := h.mut.appendConv(1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.mut.step(12); err != nil {
		t.Fatal(err)
	}
	if r := runSnap(h.proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	h.startDaemon()
	defer runSnap(h.proj, "watch", "--stop")
	start := time.Now()
	for i := 1; i <= iterations; i++ {
		h.iteration(i)
		if t.Failed() && h.st.fsckFailures+h.st.lost+h.st.torn > 20 {
			t.Errorf("stopping after %d iterations: too many failures", i)
			break
		}
	}
	h.report(time.Since(start))
	if iterations >= 50 && h.st.monitored == 0 {
		t.Errorf("no checkpoint was built on the watch daemon: the harness did not test it")
	}
	drainGC(h.proj)
}

func (h *killHarness) report(d time.Duration) {
	s := &h.st
	var ops []string
	for _, op := range []string{"checkpoint", "rewind", "undo", "gc"} {
		if c := s.byOp[op]; c != nil {
			ops = append(ops, fmt.Sprintf("%s %d/%d", op, c.killed, c.runs))
		}
	}
	lines := []string{
		fmt.Sprintf("kill -9 harness: seed %d, %d iterations in %v", baseSeed, s.iterations, d.Round(time.Millisecond)),
		fmt.Sprintf("  kills that landed mid-command: %d (killed/run: %s); finished before the kill: %d",
			s.killed, strings.Join(ops, ", "), s.iterations-s.killed),
		fmt.Sprintf("  acknowledged checkpoints: %d (+ %d safety checkpoints of rewinds); acknowledged checkpoints lost: %d",
			s.acked, s.ackedSafety, s.lost),
		fmt.Sprintf("  checkpoints complete although killed: %d (verified too; later gone: %d)", s.durableUnacked, s.unackedLost),
		fmt.Sprintf("  fsck failures: %d; fsck warnings seen: %s", s.fsckFailures, fmtCounts(s.fsckWarnings)),
		fmt.Sprintf("  full rewind comparisons: %d; snap cat checks: %d", s.fullRewinds, s.catChecks),
		fmt.Sprintf("  interrupted rewinds/undos: %d; torn files: %d; pre-rewind states not recoverable: %d; .snap-tmp-* files left: %d",
			s.interrupted, s.torn, s.unrecoverable, s.tmpLeft),
		fmt.Sprintf("  next step after an interrupted rewind or undo: %s", fmtCounts(s.recovery)),
		fmt.Sprintf("  undo refusals: %s", fmtCounts(s.undoFailures)),
		fmt.Sprintf("  kills that left a ref lock file: %d; commands then refused with exit 11 (store busy): %d", s.lockLeft, s.busy),
		fmt.Sprintf("  checkpoint/gc runs that changed the working tree: %d; other unexpected exits: %d", s.treeTouched, s.unexpectedExits),
		fmt.Sprintf("  watch daemon: started %d times, killed %d (%d while a checkpoint ran); checkpoints built on it: %d (each verified)",
			s.daemonStarts, s.daemonKills, s.daemonKillsDuring, s.monitored),
	}
	h.t.Log("\n" + strings.Join(lines, "\n"))
	fmt.Println(strings.Join(lines, "\n"))
}

func fmtCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// state scans the tree and the transcript and remembers every version.
func (h *killHarness) state() (treeState, digest) {
	h.t.Helper()
	tree, err := scanTree(h.proj)
	if err != nil {
		h.t.Fatalf("scan: %v", err)
	}
	data, err := os.ReadFile(h.convPath)
	if err != nil {
		h.t.Fatalf("transcript: %v", err)
	}
	return tree, dig(string(data))
}

func (h *killHarness) remember(tree treeState, conv digest) {
	for p, f := range tree {
		if h.known[p] == nil {
			h.known[p] = map[digest]bool{}
		}
		h.known[p][dig(string(f.Mode)+f.Data)] = true
	}
	h.knownConv[conv] = true
}

func (h *killHarness) head() objects.ID {
	h.t.Helper()
	v, err := openView(h.store)
	if err != nil {
		h.t.Fatalf("open store: %v", err)
	}
	defer v.close()
	id, err := v.head("default")
	if err != nil {
		h.t.Errorf("read head: %v", err)
	}
	return id
}

// run runs one command, killing it after killAfter when >= 0. A command
// refused with exit 11 because a kill left a ref lock behind is a bug
// ("a store never needs manual repair after a crash"): it is reported, the
// lock files are removed (the only manual repair the harness ever does, so
// that it can go on) and the command is run again.
func (h *killHarness) run(iter int, killAfter time.Duration, args ...string) result {
	res := runSnapKill(h.proj, killAfter, args...)
	// A gc refused because another gc runs is not a lock a kill left:
	// gc.run.lock is a flock, released when its holder dies, so the other
	// gc is alive (the detached 'gc --auto' an earlier rewind started).
	// Wait for it and run the command again.
	for try := 0; !res.killed && res.code == 11 && strings.Contains(string(res.stderr), "another gc is running") && try < 100; try++ {
		time.Sleep(100 * time.Millisecond)
		res = runSnapKill(h.proj, killAfter, args...)
	}
	if os.Getenv("SNAP_TORTURE_TRACE") != "" {
		h.t.Logf("iteration %d: %s (after %v, kill at %v); ref locks now: %v", iter, res, res.dur, killAfter, storeLocks(h.store))
	}
	if !res.killed && res.code == 11 {
		h.st.busy++
		locks := storeLocks(h.store)
		h.t.Errorf("BUG iteration %d: a kill left the store busy: %s\n  ref lock files: %v\n  left by: %s",
			iter, res, locks, h.lastKill)
		for _, l := range locks {
			os.Remove(filepath.Join(h.store, filepath.FromSlash(l)))
		}
		res = runSnapKill(h.proj, killAfter, args...)
	}
	if !res.killed {
		op := args[0]
		if h.typical[op] == 0 {
			h.typical[op] = res.dur
		}
		h.typical[op] = (7*h.typical[op] + res.dur) / 8
	}
	return res
}

func (h *killHarness) acked() []*checkpointRec {
	var out []*checkpointRec
	for _, r := range h.recs {
		if r.acked {
			out = append(out, r)
		}
	}
	return out
}

func (h *killHarness) addRec(r *checkpointRec) {
	if old, ok := h.byID[r.id]; ok {
		// The same checkpoint again: identical content is expected.
		if d := diffTrees(old.tree, r.tree, 5); len(d) > 0 || old.conv != r.conv {
			h.t.Errorf("checkpoint %s recorded twice with different content: %v", r.id.Short(), d)
		}
		old.acked = old.acked || r.acked
		return
	}
	h.byID[r.id] = r
	h.recs = append(h.recs, r)
}

func (h *killHarness) iteration(i int) {
	t := h.t
	h.st.iterations++
	if _, err := h.mut.step(1 + h.rng.IntN(4)); err != nil {
		t.Fatalf("iteration %d: mutate: %v", i, err)
	}
	pre, preConv := h.state()
	h.remember(pre, preConv)

	acks := h.acked()
	op := "checkpoint"
	if len(acks) > 0 {
		switch r := h.rng.IntN(100); {
		case r < 50:
			op = "checkpoint"
		case r < 72:
			op = "rewind"
		case r < 82:
			op = "undo"
		default:
			op = "gc"
		}
	}
	var target *checkpointRec
	var args []string
	switch op {
	case "checkpoint":
		args = []string{"checkpoint", "--json", "-m", fmt.Sprintf("msg_%d", i), "--summary", fmt.Sprintf("iteration %d", i), "--conversation", h.convPath}
	case "rewind":
		target = acks[h.rng.IntN(len(acks))]
		args = []string{"rewind", target.id.String(), "--json"}
	case "undo":
		args = []string{"undo", "--json"}
	case "gc":
		args = []string{"gc", "--grace", "0s", "--json"}
	}
	typical := h.typical[op]
	if typical == 0 {
		typical = 25 * time.Millisecond
	}
	delay := time.Duration(h.rng.Float64() * float64(typical))
	oldHead := h.head()

	switch r := h.rng.IntN(20); {
	case r == 0:
		h.killDaemon()
	case r < 8:
		h.startDaemon()
	}
	var killedDaemon chan bool
	if pid := h.daemonPid(); op == "checkpoint" && pid != 0 && h.rng.IntN(4) == 0 {
		// The daemon dies while the checkpoint asks it or reads what it
		// said: the checkpoint is right all the same.
		killedDaemon = make(chan bool, 1)
		after := time.Duration(h.rng.Float64() * float64(typical))
		go func() {
			time.Sleep(after)
			killedDaemon <- syscall.Kill(pid, syscall.SIGKILL) == nil
		}()
	}
	res := h.run(i, delay, args...)
	if killedDaemon != nil && <-killedDaemon {
		h.st.daemonKills++
		h.st.daemonKillsDuring++
	}
	if op == "checkpoint" {
		h.noteMonitored(res)
	}
	c := h.st.byOp[op]
	if c == nil {
		c = &opCount{}
		h.st.byOp[op] = c
	}
	c.runs++
	if res.killed {
		h.st.killed++
		c.killed++
		h.lastKill = fmt.Sprintf("iteration %d: snap %s killed after %v", i, strings.Join(args, " "), delay)
		if locks := storeLocks(h.store); len(locks) > 0 {
			h.st.lockLeft++
			t.Logf("iteration %d: the kill of %q left ref lock files %v", i, op, locks)
		}
	}

	switch op {
	case "checkpoint", "gc":
		after, afterConv := h.state()
		if d := diffTrees(pre, after, 5); len(d) > 0 || afterConv != preConv {
			h.st.treeTouched++
			t.Errorf("iteration %d: %s changed the working tree or transcript: %v", i, res, d)
		}
	}

	switch {
	case op == "checkpoint" && !res.killed:
		if res.code != 0 {
			h.st.unexpectedExits++
			t.Errorf("iteration %d: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
			break
		}
		var out struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(res.stdout, &out); err != nil {
			t.Errorf("iteration %d: checkpoint output: %v: %s", i, err, res.stdout)
			break
		}
		id, err := objects.ParseID(out.ID)
		if err != nil {
			t.Errorf("iteration %d: checkpoint id %q: %v", i, out.ID, err)
			break
		}
		h.st.acked++
		h.addRec(&checkpointRec{id: id, iter: i, tree: pre, conv: preConv, acked: true, how: "checkpoint"})
	case op == "checkpoint" && res.killed:
		if nh := h.head(); nh != oldHead {
			// The killed checkpoint completed its ref update: it must be
			// whole, on top of the old head, and hold the tree we held still.
			v, err := openView(h.store)
			if err != nil {
				t.Fatal(err)
			}
			ck, err := v.checkpoint(nh)
			v.close()
			if err != nil {
				t.Errorf("iteration %d: head %s after the kill does not read: %v", i, nh.Short(), err)
				break
			}
			if wantParents := !oldHead.IsZero(); wantParents && (len(ck.Parents) != 1 || ck.Parents[0] != oldHead) || !wantParents && len(ck.Parents) != 0 {
				t.Errorf("iteration %d: head %s after the kill has parents %v, want [%s]", i, nh.Short(), ck.Parents, oldHead.Short())
			}
			h.st.durableUnacked++
			h.addRec(&checkpointRec{id: nh, iter: i, tree: pre, conv: preConv, how: "completed before the kill"})
		}
	case op == "rewind" && !res.killed:
		if res.code != 0 {
			h.st.unexpectedExits++
			t.Errorf("iteration %d: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
			break
		}
		h.checkRewound(i, res, target, pre, preConv, "rewind")
	case op == "rewind" && res.killed:
		h.interruptedMove(i, op, target, pre, preConv)
	case op == "undo" && !res.killed:
		h.checkUndo(i, res, pre, preConv, false)
	case op == "undo" && res.killed:
		h.interruptedMove(i, op, nil, pre, preConv)
	case op == "gc" && !res.killed:
		if res.code != 0 {
			h.st.unexpectedExits++
			t.Errorf("iteration %d: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
		}
	}

	h.checkStore(i)
	if i%10 == 0 {
		h.fullRewind(i)
	}
	if h.rng.IntN(3) == 0 {
		h.plainCheckpoint(i)
	}
}

// plainCheckpoint edits the tree and takes a checkpoint that is not killed,
// so that the history has acknowledged checkpoints to verify and rewind to.
func (h *killHarness) plainCheckpoint(i int) {
	t := h.t
	if _, err := h.mut.step(1 + h.rng.IntN(3)); err != nil {
		t.Fatalf("iteration %d: mutate: %v", i, err)
	}
	pre, preConv := h.state()
	h.remember(pre, preConv)
	res := h.run(i, -1, "checkpoint", "--json", "-m", fmt.Sprintf("msg_%d_plain", i), "--conversation", h.convPath)
	h.noteMonitored(res)
	if res.code != 0 {
		h.st.unexpectedExits++
		t.Errorf("iteration %d: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
		return
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.stdout, &out); err != nil {
		t.Errorf("iteration %d: checkpoint output: %v", i, err)
		return
	}
	id, err := objects.ParseID(out.ID)
	if err != nil {
		t.Errorf("iteration %d: checkpoint id %q: %v", i, out.ID, err)
		return
	}
	h.st.acked++
	h.addRec(&checkpointRec{id: id, iter: i, tree: pre, conv: preConv, acked: true, how: "checkpoint"})
}

// checkRewound checks a rewind that exited 0: the tree and transcript are
// exactly the target's; the safety checkpoint (when one was made) holds
// the state from before.
func (h *killHarness) checkRewound(i int, res result, target *checkpointRec, pre treeState, preConv digest, what string) {
	t := h.t
	now, nowConv := h.state()
	if d := diffTrees(target.tree, now, 10); len(d) > 0 || nowConv != target.conv {
		h.st.lost++
		t.Errorf("iteration %d: after %s to %s (exit 0) the tree is not the checkpoint's (transcript equal: %v):\n  %s",
			i, what, target.id.Short(), nowConv == target.conv, strings.Join(d, "\n  "))
	}
	var out struct {
		Safety        *string `json:"safety_checkpoint"`
		SafetyCreated bool    `json:"safety_created"`
	}
	if err := json.Unmarshal(res.stdout, &out); err != nil {
		t.Errorf("iteration %d: rewind output: %v", i, err)
		return
	}
	if out.Safety != nil && out.SafetyCreated {
		id, err := objects.ParseID(*out.Safety)
		if err != nil {
			t.Errorf("iteration %d: safety id: %v", i, err)
			return
		}
		h.st.ackedSafety++
		h.addRec(&checkpointRec{id: id, iter: i, tree: pre, conv: preConv, acked: true, how: "safety checkpoint of a rewind"})
	}
}

// interruptedMove checks the tree after a rewind or undo was killed: no
// file is torn (each is as before, as in the target, or for an undo as in
// some earlier state), the state from before is recoverable from a
// checkpoint, and the next command brings the tree to a consistent state.
func (h *killHarness) interruptedMove(i int, op string, target *checkpointRec, pre treeState, preConv digest) {
	t := h.t
	h.st.interrupted++
	now, nowConv := h.state()
	isTmp := func(p string) bool { return strings.HasPrefix(path.Base(p), ".snap-tmp-") }
	tmps := append(tmpFiles(h.proj), tmpFiles(h.agentDir)...)
	h.st.tmpLeft += len(tmps)
	if len(tmps) > 0 {
		t.Logf("iteration %d: interrupted %s left %v", i, op, tmps)
	}
	var torn []string
	for p, f := range now {
		if isTmp(p) {
			continue
		}
		if pf, ok := pre[p]; ok && pf == f {
			continue
		}
		if target != nil {
			if tf, ok := target.tree[p]; ok && tf == f {
				continue
			}
		} else if h.known[p][dig(string(f.Mode)+f.Data)] {
			continue
		}
		torn = append(torn, fmt.Sprintf("%s (%s)", p, f))
	}
	for p := range pre {
		if _, ok := now[p]; ok {
			continue
		}
		if target != nil {
			if _, inTarget := target.tree[p]; inTarget {
				torn = append(torn, p+" deleted, but the target has it")
			}
		}
	}
	okConv := nowConv == preConv || (target != nil && nowConv == target.conv) || (target == nil && h.knownConv[nowConv])
	if !okConv {
		torn = append(torn, "the transcript")
	}
	if len(torn) > 0 {
		h.st.torn += len(torn)
		t.Errorf("iteration %d: TORN after an interrupted %s: %v", i, op, torn)
	}

	changed := len(diffTrees(pre, now, 1)) > 0 || nowConv != preConv
	// Files moved: the state from before must be in a checkpoint that gc
	// keeps, or at least one the move journal names (the next command that
	// writes completes the move and records it).
	reported := false
	lost := func(when string, journalOK bool) {
		if !changed || reported {
			return
		}
		if ok, closest := h.recoverable(pre, preConv, journalOK); !ok {
			reported = true
			h.st.unrecoverable++
			where := "reachable from refs or the op log"
			if journalOK {
				where += " or named by the move journal"
			}
			t.Errorf("iteration %d: WORK LOST %s: an interrupted %s (%s) changed the tree, and no checkpoint %s holds the state from before it; closest: %s",
				i, when, op, h.lastKill, where, closest)
			h.keep(i)
		}
	}
	lost("right after the kill", true)

	// The next command, one of: the same command again (a rewind must then
	// exit 0 and give exactly its target), undo (what it does is tallied),
	// or gc --grace 0s first (it must not lose what the journal names),
	// then the same command again.
	next := h.rng.IntN(3)
	if next == 2 {
		res := h.run(i, -1, "gc", "--grace", "0s", "--json")
		h.st.recovery[fmt.Sprintf("gc --grace 0s: exit %d", res.code)]++
		if res.code != 0 {
			h.st.unexpectedExits++
			t.Errorf("iteration %d: gc after an interrupted %s: %s", i, op, res)
		}
		lost("after gc --grace 0s", true)
		if _, err := os.Stat(filepath.Join(h.store, "move-journal")); err == nil {
			h.st.recovery["gc --grace 0s: left the move journal for the next writer"]++
		}
		next = 0
	}
	switch {
	case next == 0 && op == "rewind":
		res := h.run(i, -1, "rewind", target.id.String(), "--json")
		if res.code != 0 {
			h.st.recovery["rewind again: exit "+strconv.Itoa(res.code)]++
			h.st.unexpectedExits++
			t.Errorf("iteration %d: rewind again after an interrupted rewind: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
			return
		}
		after, afterConv := h.state()
		if len(diffTrees(target.tree, after, 1)) == 0 && afterConv == target.conv {
			h.st.recovery["rewind again: exit 0, tree = target"]++
		} else {
			h.st.recovery["rewind again: exit 0, tree != target"]++
		}
		h.checkRewound(i, res, target, now, nowConv, "rewind again")
	default: // undo, or undo again after an interrupted undo
		res := h.run(i, -1, "undo", "--json")
		outcome := h.checkUndo(i, res, now, nowConv, changed)
		after, afterConv := h.state()
		if res.code == 0 {
			switch {
			case len(diffTrees(pre, after, 1)) == 0 && afterConv == preConv:
				outcome += ", tree = state before the interrupted " + op
			case len(diffTrees(now, after, 1)) == 0 && afterConv == nowConv:
				outcome += ", tree unchanged"
			default:
				outcome += ", tree = an earlier state"
			}
		}
		if changed {
			outcome += " [the kill had changed files]"
		} else {
			outcome += " [the kill had changed nothing]"
		}
		outcome = "after an interrupted " + op + ": " + outcome
		h.st.recovery[outcome]++
		t.Logf("iteration %d: %s", i, outcome)
	}
	// A command that writes has run: any interrupted move is completed and
	// recorded, so the state from before must now be reachable from the
	// roots alone.
	lost("after the next command", false)
}

// checkUndo checks an undo that ran to completion and describes what it
// did. Exit 0: an undone rewind leaves exactly the checkpoint it reports as
// its target; an undone checkpoint or label leaves the tree alone. Exit 1
// "nothing to undo" or "conflict" (the head moved since the op: what an
// interrupted command leaves behind) must leave the tree alone. Anything
// else is a failure. recovering: a move killed after it had changed files
// is pending, and the undo completes it first — the tree then becomes the
// move's target (a recorded checkpoint) whatever the undo itself does.
func (h *killHarness) checkUndo(i int, res result, before treeState, beforeConv digest, recovering bool) string {
	t := h.t
	after, afterConv := h.state()
	unchanged := len(diffTrees(before, after, 1)) == 0 && afterConv == beforeConv
	if res.code != 0 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(res.stderr, &e)
		h.st.undoFailures[fmt.Sprintf("exit %d %s", res.code, e.Error.Code)]++
		switch e.Error.Code {
		case "nothing_to_undo", "conflict":
			t.Logf("iteration %d: undo refused: %s", i, strings.TrimSpace(e.Error.Message))
			if !unchanged {
				t.Errorf("iteration %d: undo refused (%s) but changed the tree", i, e.Error.Code)
			}
		default:
			h.st.unexpectedExits++
			t.Errorf("iteration %d: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
		}
		return fmt.Sprintf("undo: exit %d (%s)", res.code, e.Error.Code)
	}
	var out struct {
		Op struct {
			Seq  int64  `json:"seq"`
			Kind string `json:"kind"`
		} `json:"op"`
		Rewind *struct {
			Target string `json:"target"`
		} `json:"rewind"`
	}
	if err := json.Unmarshal(res.stdout, &out); err != nil {
		t.Errorf("iteration %d: undo output: %v", i, err)
		return "undo: exit 0, output unreadable"
	}
	desc := fmt.Sprintf("undo: exit 0 (undid a %s)", out.Op.Kind)
	if out.Rewind == nil {
		switch {
		case unchanged:
		case recovering && h.isCheckpointTree(after, afterConv):
			desc += " after completing the interrupted move"
		default:
			t.Errorf("iteration %d: undo of %s op %d changed the tree", i, out.Op.Kind, out.Op.Seq)
		}
		return desc
	}
	id, err := objects.ParseID(out.Rewind.Target)
	if err != nil {
		t.Errorf("iteration %d: undo target %q: %v", i, out.Rewind.Target, err)
		return desc
	}
	v, err := openView(h.store)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	want, wconv, _, err := v.content(id)
	if err != nil {
		t.Errorf("iteration %d: undo went back to %s, which does not read: %v", i, id.Short(), err)
		return desc
	}
	if d := diffTrees(want, after, 10); len(d) > 0 || dig(wconv) != afterConv {
		t.Errorf("iteration %d: undo (exit 0) of op %d says it restored %s, but the tree is not that checkpoint (transcript equal: %v):\n  %s",
			i, out.Op.Seq, id.Short(), dig(wconv) == afterConv, strings.Join(d, "\n  "))
	}
	return desc
}

// recoverable reports whether a checkpoint reachable from the roots holds
// exactly tree and conv; when none does, it describes the closest one.
func (h *killHarness) recoverable(tree treeState, conv digest, journal bool) (bool, string) {
	v, err := openView(h.store)
	if err != nil {
		h.t.Fatal(err)
	}
	defer v.close()
	ids, err := v.rootedCheckpoints()
	if err != nil {
		h.t.Errorf("roots: %v", err)
	}
	if journal {
		ids = append(ids, journalIDs(h.store)...)
	}
	best, bestN := "none", 1<<30
	for _, id := range ids {
		ct, cconv, has, err := v.content(id)
		if err != nil {
			continue
		}
		d := diffTrees(tree, ct, 1000)
		if has && dig(cconv) == conv && len(d) == 0 {
			return true, ""
		}
		n := len(d)
		if dig(cconv) != conv {
			n++
		}
		if n < bestN {
			bestN = n
			best = fmt.Sprintf("%s (transcript equal: %v): %v", id.Short(), dig(cconv) == conv, d[:min(len(d), 5)])
		}
	}
	return false, best
}

// journalIDs returns the checkpoints named by the engine's move journal
// (.snap/move-journal: a rewind, undo or redo in progress, or interrupted),
// if there is one.
func journalIDs(store string) []objects.ID {
	data, err := os.ReadFile(filepath.Join(store, "move-journal"))
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var ids []objects.ID
	for _, k := range []string{"safety", "current", "old_head", "target", "new_head"} {
		if s, ok := m[k].(string); ok {
			if id, err := objects.ParseID(s); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// keep copies the project, transcript and store aside for a post-mortem
// when SNAP_TORTURE_KEEP names a directory.
func (h *killHarness) keep(i int) {
	if d := os.Getenv("SNAP_TORTURE_KEEP"); d != "" {
		dst := filepath.Join(d, fmt.Sprintf("iteration-%d", i))
		if err := copyDir(filepath.Dir(h.proj), dst); err != nil {
			h.t.Logf("keep: %v", err)
		} else {
			h.t.Logf("kept the project, transcript and store in %s", dst)
		}
	}
}

// checkStore runs fsck --full and verifies every checkpoint the harness
// knows, in-process, plus a sample through `snap cat`.
func (h *killHarness) checkStore(i int) {
	t := h.t
	res, rep, err := fsck(h.proj)
	switch {
	case err != nil:
		h.st.fsckFailures++
		t.Errorf("iteration %d: %v", i, err)
	case res.code != 0 || len(rep.errors()) > 0:
		h.st.fsckFailures++
		var ps []string
		for _, p := range rep.Problems {
			ps = append(ps, p.String())
		}
		t.Errorf("iteration %d: fsck --full after %s: exit %d:\n  %s", i, h.lastKill, res.code, strings.Join(ps, "\n  "))
	default:
		for _, p := range rep.Problems {
			h.st.fsckWarnings[warningKind(p)]++
		}
	}

	v, err := openView(h.store)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	// Every checkpoint's content is compared once, and all of them every
	// 10th iteration. In between it is enough that each is still reachable
	// from a ref or the op log: fsck --full (clean above) has then verified
	// every object it reaches, and ids fix content.
	rooted := map[objects.ID]bool{}
	if ids, err := v.rootedCheckpoints(); err == nil {
		for _, id := range ids {
			rooted[id] = true
		}
	}
	full := i%10 == 0
	for _, r := range h.recs {
		if h.lostIDs[r.id] {
			continue
		}
		if r.verified && !full && rooted[r.id] {
			continue
		}
		tree, conv, has, err := v.content(r.id)
		var why string
		switch {
		case !rooted[r.id]:
			why = "no longer reachable from any ref or op-log record (gc may delete it)"
			if err != nil {
				why += "; " + err.Error()
			}
		case err != nil:
			why = err.Error()
		case !has:
			why = "no conversation document"
		case dig(conv) != r.conv:
			why = "conversation differs"
		default:
			if d := diffTrees(r.tree, tree, 5); len(d) > 0 {
				why = strings.Join(d, "; ")
			}
		}
		if why == "" {
			r.verified = true
			continue
		}
		h.lostIDs[r.id] = true
		if !r.acked {
			// Never acknowledged, so no promise was broken; but it was the
			// session head for a while. Reported, not failed.
			h.st.unackedLost++
			t.Logf("iteration %d: checkpoint %s (%s at iteration %d, never acknowledged) is gone: %s; last kill: %s",
				i, r.id.Short(), r.how, r.iter, why, h.lastKill)
			continue
		}
		h.st.lost++
		t.Errorf("iteration %d: LOST acknowledged checkpoint %s (%s at iteration %d): %s; last kill: %s",
			i, r.id.Short(), r.how, r.iter, why, h.lastKill)
	}

	// A sample through the binary: snap cat of files and the transcript.
	acks := h.acked()
	if len(acks) == 0 {
		return
	}
	r := acks[h.rng.IntN(len(acks))]
	var paths []string
	for p := range r.tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for k := 0; k < 2 && len(paths) > 0; k++ {
		p := paths[h.rng.IntN(len(paths))]
		res := runSnap(h.proj, "cat", r.id.String()+":"+p)
		h.st.catChecks++
		if res.code != 0 || string(res.stdout) != r.tree[p].Data {
			if !h.lostIDs[r.id] {
				h.lostIDs[r.id] = true
				h.st.lost++
			}
			t.Errorf("iteration %d: snap cat %s:%s: %s (%d bytes, want %d)", i, r.id.Short(), p, res, len(res.stdout), len(r.tree[p].Data))
		}
	}
	res = runSnap(h.proj, "cat", r.id.String(), "--state", "conversation")
	h.st.catChecks++
	if res.code != 0 || dig(string(res.stdout)) != r.conv {
		t.Errorf("iteration %d: snap cat %s --state conversation: %s", i, r.id.Short(), res)
	}
}

// warningKind shortens an fsck warning to its kind, for the summary.
func warningKind(p fsckProblem) string {
	where := p.Path
	if i := strings.IndexByte(where, '/'); i >= 0 {
		where = where[:i]
	}
	if strings.HasSuffix(p.Path, ".lock") {
		where = "ref lock"
	}
	msg := p.Message
	if i := strings.IndexAny(msg, ":;("); i > 0 {
		msg = msg[:i]
	}
	return where + ": " + msg
}

// fullRewind rewinds the project to a random acknowledged checkpoint,
// compares the whole tree and transcript, then undoes and compares with
// the state from before.
func (h *killHarness) fullRewind(i int) {
	t := h.t
	acks := h.acked()
	if len(acks) == 0 {
		return
	}
	target := acks[h.rng.IntN(len(acks))]
	pre, preConv := h.state()
	h.remember(pre, preConv)
	res := h.run(i, -1, "rewind", target.id.String(), "--json")
	h.st.fullRewinds++
	if res.code != 0 {
		h.st.unexpectedExits++
		t.Errorf("iteration %d: full rewind comparison: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
		h.keep(i)
		return
	}
	h.checkRewound(i, res, target, pre, preConv, "rewind")
	mid, midConv := h.state()
	res = h.run(i, -1, "undo", "--json")
	if res.code != 0 {
		h.st.unexpectedExits++
		t.Errorf("iteration %d: undo after the full rewind comparison: %s\n  stdout: %s", i, res, oneLine(res.stdout, 1500))
		return
	}
	h.checkUndo(i, res, mid, midConv, false)
	now, nowConv := h.state()
	if d := diffTrees(pre, now, 10); len(d) > 0 || nowConv != preConv {
		t.Errorf("iteration %d: undo of the rewind to %s did not restore the state from before (transcript equal: %v):\n  %s",
			i, target.id.Short(), nowConv == preConv, strings.Join(d, "\n  "))
	}
}

// isCheckpointTree reports whether the tree and conversation are exactly
// those of a recorded checkpoint.
func (h *killHarness) isCheckpointTree(tree treeState, conv digest) bool {
	for _, r := range h.recs {
		if r.conv == conv && len(diffTrees(r.tree, tree, 1)) == 0 {
			return true
		}
	}
	return false
}

// startDaemon starts the project's watch daemon when none runs.
func (h *killHarness) startDaemon() {
	if h.daemonPid() != 0 {
		return
	}
	if r := runSnap(h.proj, "watch", "--idle", "0"); r.code != 0 {
		h.t.Errorf("snap watch: %s\n  %s", r, r.stderr)
		return
	}
	h.st.daemonStarts++
}

// daemonPid is the running daemon's process (0: none answers).
func (h *killHarness) daemonPid() int {
	r := runSnap(h.proj, "watch", "--status", "--json")
	var st struct {
		Running bool `json:"running"`
		Daemon  struct {
			Pid int `json:"pid"`
		} `json:"daemon"`
	}
	if r.code != 0 || json.Unmarshal(r.stdout, &st) != nil || !st.Running {
		return 0
	}
	return st.Daemon.Pid
}

// killDaemon kills the daemon with SIGKILL.
func (h *killHarness) killDaemon() {
	if pid := h.daemonPid(); pid != 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
		h.st.daemonKills++
	}
}

// noteMonitored counts a checkpoint that read only what the daemon said.
func (h *killHarness) noteMonitored(res result) {
	var out struct {
		Monitored bool `json:"monitored"`
	}
	if res.code == 0 && json.Unmarshal(res.stdout, &out) == nil && out.Monitored {
		h.st.monitored++
	}
}
