package torture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// TestConcurrentGC runs 4 sessions checkpointing in parallel processes (each
// session edits its own directory and transcript of one project) while a
// loop runs `snap gc`, for 10 s (60 s in long mode), once with --grace 0s and
// once with the default grace. Meanwhile a planter leaves packs of
// unreferenced objects, aged 2 hours, whose contents the sessions then write:
// what a writer that crashed after committing its pack (and before moving
// its ref) leaves behind, and exactly what "freshen on dedup" (design §4)
// must protect. At the end every acknowledged checkpoint must be in its
// session's log and restore byte for byte, and fsck --full must be clean.
func TestConcurrentGC(t *testing.T) {
	d := 10 * time.Second
	if long() {
		d = 60 * time.Second
	}
	for i, grace := range []string{"0s", ""} {
		name := "grace=" + grace
		if grace == "" {
			name = "grace=default"
		}
		t.Run(name, func(t *testing.T) { concurrentGC(t, grace, d, uint64(10+i)) })
	}
}

// concAck is an acknowledged checkpoint of one session.
type concAck struct {
	session string
	id      objects.ID
	own     treeState // the session's own directory, held still
	conv    digest
	planted []string // paths whose content came from a planted (orphan) pack
	start   time.Time
	end     time.Time
}

// gcRun is one run of the gc loop.
type gcRun struct {
	start, end time.Time
	code       int
	rewritten  int
	deleted    int
	stderr     string
}

type concHarness struct {
	t       *testing.T
	proj    string
	store   string
	tmpDir  string // same filesystem, outside the project: for atomic writes
	grace   string
	planted chan []byte

	mu        sync.Mutex
	acks      []*concAck
	failures  map[string]int // checkpoint exit code + error code → count
	failMsgs  []string       // the first failure of each kind
	gcs       []gcRun
	history   map[string]map[digest]bool // "wN/path" → every version written
	plantedOf map[digest]bool            // contents planted in orphan packs
	plants    int
	// plantFailures: orphan packs whose commit failed (gc removed the
	// temporary file under the planter).
	plantFailures int
}

func concurrentGC(t *testing.T, grace string, d time.Duration, stream uint64) {
	base := t.TempDir()
	h := &concHarness{t: t, proj: filepath.Join(base, "project"), tmpDir: filepath.Join(base, "tmp"), grace: grace,
		planted: make(chan []byte, 64), failures: map[string]int{}, history: map[string]map[digest]bool{},
		plantedOf: map[digest]bool{}}
	h.store = filepath.Join(h.proj, ".snap")
	for _, dir := range []string{h.proj, h.tmpDir, filepath.Join(base, "agent"), filepath.Join(h.proj, "common")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := rngFor(stream)
	for i := 0; i < 6; i++ {
		if err := os.WriteFile(filepath.Join(h.proj, "common", fmt.Sprintf("c%d.txt", i)), textOf(rng, 500+rng.IntN(2000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := runSnap(h.proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	sessions := []string{"s1", "s2", "s3", "s4"}
	deadline := time.Now().Add(d)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k, s := range sessions {
		wg.Add(1)
		go func(s string, rng *rand.Rand) {
			defer wg.Done()
			h.worker(s, rng, filepath.Join(base, "agent", s+".jsonl"), deadline)
		}(s, rand.New(rand.NewPCG(baseSeed, stream*100+uint64(k))))
	}
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); h.gcLoop(stop) }()
	go func() { defer bg.Done(); h.planter(rand.New(rand.NewPCG(baseSeed, stream*100+99)), stop) }()
	wg.Wait()
	close(stop)
	bg.Wait()
	drainGC(h.proj)
	h.verify()
}

func textOf(rng *rand.Rand, n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz     \n"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// worker edits its session's directory (atomically: temporary file outside
// the project, then rename, so every captured version is one it wrote),
// appends to its transcript, and checkpoints, until the deadline.
func (h *concHarness) worker(session string, rng *rand.Rand, conv string, deadline time.Time) {
	dir := "w" + session[1:]
	own := treeState{}
	var convData []byte
	names := []string{"a.txt", "b.txt", "c.go", "d/e.txt", "d/f.md", "g.bin", "h.txt", "link"}
	seq := 0
	for n := 0; time.Now().Before(deadline); n++ {
		var planted []string
		for k := 0; k < 1+rng.IntN(3); k++ {
			name := names[rng.IntN(len(names))]
			p := path.Join(dir, name)
			full := filepath.Join(h.proj, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				h.fatal(err)
				return
			}
			seq++
			tmp := filepath.Join(h.tmpDir, fmt.Sprintf("%s-%d", session, seq))
			switch r := rng.IntN(10); {
			case r == 0 && len(own) > 1:
				os.Remove(full)
				delete(own, p)
				continue
			case name == "link":
				target := fmt.Sprintf("target-%d", rng.IntN(5))
				if err := os.Symlink(target, tmp); err != nil {
					h.fatal(err)
					return
				}
				own[p] = file{Mode: 'l', Data: target}
			default:
				var content []byte
				select {
				case content = <-h.planted:
					planted = append(planted, p)
				default:
					content = textOf(rng, rng.IntN(3000))
				}
				if err := os.WriteFile(tmp, content, 0o644); err != nil {
					h.fatal(err)
					return
				}
				own[p] = file{Mode: 'f', Data: string(content)}
			}
			if err := os.Rename(tmp, full); err != nil {
				h.fatal(err)
				return
			}
			h.mu.Lock()
			if h.history[p] == nil {
				h.history[p] = map[digest]bool{}
			}
			h.history[p][dig(string(own[p].Mode)+own[p].Data)] = true
			h.mu.Unlock()
		}
		for k := 0; k < 1+rng.IntN(2); k++ {
			convData = append(convData, fmt.Sprintf(`{"type":"user","session":%q,"n":%d,"message":{"role":"user","content":%q}}`+"\n",
				session, n, textOf(rng, 50))...)
		}
		if err := os.WriteFile(conv, convData, 0o644); err != nil {
			h.fatal(err)
			return
		}
		start := time.Now()
		res := runSnap(h.proj, "checkpoint", "-s", session, "--json", "-m", fmt.Sprintf("%s_%d", session, n), "--conversation", conv)
		end := time.Now()
		if res.code != 0 {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			json.Unmarshal(res.stderr, &e)
			h.mu.Lock()
			key := fmt.Sprintf("exit %d %s", res.code, e.Error.Code)
			if h.failures[key] == 0 {
				h.failMsgs = append(h.failMsgs, fmt.Sprintf("first %q: %s [%s]", key, res, start.Format("15:04:05.000")))
			}
			h.failures[key]++
			h.mu.Unlock()
			continue
		}
		var out struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(res.stdout, &out); err != nil {
			h.t.Errorf("%s: checkpoint output: %v", session, err)
			continue
		}
		id, err := objects.ParseID(out.ID)
		if err != nil {
			h.t.Errorf("%s: checkpoint id: %v", session, err)
			continue
		}
		h.mu.Lock()
		h.acks = append(h.acks, &concAck{session: session, id: id, own: own.clone(), conv: dig(string(convData)),
			planted: planted, start: start, end: end})
		h.mu.Unlock()
	}
}

func (h *concHarness) fatal(err error) {
	h.t.Errorf("worker: %v", err)
}

// gcLoop runs snap gc back to back until stop.
func (h *concHarness) gcLoop(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		args := []string{"gc", "--json"}
		if h.grace != "" {
			args = append(args, "--grace", h.grace)
		}
		start := time.Now()
		res := runSnap(h.proj, args...)
		run := gcRun{start: start, end: time.Now(), code: res.code, stderr: strings.TrimSpace(string(res.stderr))}
		var out struct {
			PacksRewritten int `json:"packs_rewritten"`
			PacksDeleted   int `json:"packs_deleted"`
		}
		if json.Unmarshal(res.stdout, &out) == nil {
			run.rewritten, run.deleted = out.PacksRewritten, out.PacksDeleted
		}
		h.mu.Lock()
		h.gcs = append(h.gcs, run)
		h.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// planter leaves, every 150 ms, a pack of objects nothing references, aged
// two hours, and hands their contents to the workers.
func (h *concHarness) planter(rng *rand.Rand, stop chan struct{}) {
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		case <-time.After(150 * time.Millisecond):
		}
		st, err := objects.Open(h.store)
		if err != nil {
			h.t.Errorf("planter: %v", err)
			return
		}
		w := st.NewWriter()
		var contents [][]byte
		for j := 0; j < 3; j++ {
			c := append([]byte(fmt.Sprintf("planted %d.%d\n", k, j)), textOf(rng, 200+rng.IntN(1500))...)
			if _, err := w.PutBytes(c); err != nil {
				h.t.Errorf("planter: %v", err)
			}
			contents = append(contents, c)
		}
		name, err := w.Commit()
		st.Close()
		if err != nil {
			// With --grace 0s, gc removes the temporary pack of a writer
			// still writing it (as it does the checkpoints'): try again.
			h.mu.Lock()
			h.plantFailures++
			h.mu.Unlock()
			continue
		}
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(filepath.Join(h.store, objects.PacksDir, name), old, old); errors.Is(err, fs.ErrNotExist) {
			// A gc --auto consolidated the young pack between its commit
			// and this (moving what checkpoints had since reused): the
			// race the harness exists to provoke, not a failure.
			continue
		} else if err != nil {
			h.t.Errorf("planter: %v", err)
		}
		h.mu.Lock()
		h.plants++
		for _, c := range contents {
			h.plantedOf[dig(string(c))] = true
		}
		h.mu.Unlock()
		for _, c := range contents {
			select {
			case h.planted <- c:
			default:
			}
		}
	}
}

// verify checks every acknowledged checkpoint and the store, and reports.
func (h *concHarness) verify() {
	t := h.t
	v, err := openView(h.store)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()

	// Present in their session's log.
	inLog := map[objects.ID]bool{}
	logRes := runSnap(h.proj, "log", "--all", "--json")
	if logRes.code != 0 {
		t.Errorf("%s", logRes)
	}
	var logOut struct {
		Checkpoints []struct {
			ID      string `json:"id"`
			Session string `json:"session"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal(logRes.stdout, &logOut); err != nil {
		t.Errorf("snap log --all --json: %v", err)
	}
	for _, e := range logOut.Checkpoints {
		if id, err := objects.ParseID(e.ID); err == nil {
			inLog[id] = true
		}
	}

	lost := 0
	var lostLines []string
	tornSeen := 0
	for _, a := range h.acks {
		tree, conv, has, err := v.content(a.id)
		var why string
		switch {
		case err != nil:
			why = err.Error()
		case !has || dig(conv) != a.conv:
			why = "conversation differs"
		default:
			got := treeState{}
			for p, f := range tree {
				if strings.HasPrefix(p, "w"+a.session[1:]+"/") {
					got[p] = f
				} else if strings.HasPrefix(p, "w") && !h.history[p][dig(string(f.Mode)+f.Data)] {
					tornSeen++
					t.Errorf("checkpoint %s (%s) holds %s = %s, a version its session never wrote", a.id.Short(), a.session, p, f)
				}
			}
			if d := diffTrees(a.own, got, 5); len(d) > 0 {
				why = strings.Join(d, "; ")
			}
		}
		if why == "" && len(logOut.Checkpoints) > 0 && !inLog[a.id] {
			why = "not in snap log --all"
		}
		if why == "" {
			continue
		}
		lost++
		lostLines = append(lostLines, fmt.Sprintf("%s %s [%s–%s] %s%s; %s", a.session, a.id, a.start.Format("15:04:05.000"),
			a.end.Format("15:04:05.000"), h.diagnose(v, a), h.overlappingGC(a), why))
	}

	// A sample through the binary.
	rng := rand.New(rand.NewPCG(baseSeed, 77))
	catChecks, catFails := 0, 0
	for k := 0; k < 40 && len(h.acks) > 0; k++ {
		a := h.acks[rng.IntN(len(h.acks))]
		var paths []string
		for p := range a.own {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		if len(paths) == 0 {
			continue
		}
		p := paths[rng.IntN(len(paths))]
		res := runSnap(h.proj, "cat", "-s", a.session, a.id.String()+":"+p)
		catChecks++
		if res.code != 0 || string(res.stdout) != a.own[p].Data {
			catFails++
			t.Errorf("snap cat %s:%s (%s): %s", a.id.Short(), p, a.session, res)
		}
	}

	res, rep, err := fsck(h.proj)
	fsckErrs := 0
	switch {
	case err != nil:
		fsckErrs = -1
		t.Errorf("%v", err)
	case res.code != 0 || len(rep.errors()) > 0:
		fsckErrs = len(rep.errors())
		var ps []string
		for i, p := range rep.errors() {
			if i == 10 {
				ps = append(ps, fmt.Sprintf("... %d more", len(rep.errors())-10))
				break
			}
			ps = append(ps, p.String())
		}
		t.Errorf("fsck --full at the end: exit %d, %d errors:\n  %s", res.code, fsckErrs, strings.Join(ps, "\n  "))
	}

	gcCodes := map[string]int{}
	deleted, rewritten := 0, 0
	for _, g := range h.gcs {
		key := fmt.Sprintf("exit %d", g.code)
		if g.code != 0 {
			key += ": " + firstLine(g.stderr, 120)
		}
		gcCodes[key]++
		deleted += g.deleted
		rewritten += g.rewritten
	}
	usedPlanted := 0
	for _, a := range h.acks {
		if len(a.planted) > 0 {
			usedPlanted++
		}
	}
	lines := []string{
		fmt.Sprintf("concurrency harness (gc --grace %s): seed %d", orDefault(h.grace), baseSeed),
		fmt.Sprintf("  acknowledged checkpoints: %d (%d wrote content of a planted orphan pack); failed checkpoints: %s",
			len(h.acks), usedPlanted, fmtCounts(h.failures)),
		fmt.Sprintf("  gc runs: %d (%s); packs deleted: %d, rewritten: %d; orphan packs planted: %d (%d failed to commit)",
			len(h.gcs), fmtCounts(gcCodes), deleted, rewritten, h.plants, h.plantFailures),
		fmt.Sprintf("  acknowledged checkpoints lost: %d; torn versions: %d; snap cat checks: %d (%d failed); fsck --full errors at the end: %d",
			lost, tornSeen, catChecks, catFails, fsckErrs),
	}
	for _, m := range h.failMsgs {
		lines = append(lines, "  failed checkpoint: "+firstLine(m, 400))
	}
	for i, l := range lostLines {
		if i == 15 {
			lines = append(lines, fmt.Sprintf("  ... %d more lost", len(lostLines)-15))
			break
		}
		lines = append(lines, "  LOST "+l)
	}
	t.Log("\n" + strings.Join(lines, "\n"))
	fmt.Println(strings.Join(lines, "\n"))
	if lost > 0 {
		t.Errorf("%d acknowledged checkpoints lost (gc --grace %s)", lost, orDefault(h.grace))
	}
}

func orDefault(g string) string {
	if g == "" {
		return "default"
	}
	return g
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// diagnose says which objects of a lost checkpoint are missing and whether
// their content had been planted in an orphan pack.
func (h *concHarness) diagnose(v *storeView, a *concAck) string {
	if !v.st.Has(a.id) {
		return "(checkpoint object missing) "
	}
	ck, err := v.st.ReadCheckpoint(a.id)
	if err != nil {
		return "(checkpoint unreadable) "
	}
	var missing []string
	var walk func(id objects.ID, p string)
	walk = func(id objects.ID, p string) {
		if !v.st.Has(id) {
			what := p
			if f, ok := a.own[p]; ok && h.plantedOf[dig(f.Data)] {
				what += " (planted content: dedup against an old orphan pack)"
			}
			missing = append(missing, what)
			return
		}
		if t, _ := v.st.TypeOf(id); t == objects.TypeTree {
			tr, err := v.st.ReadTree(id)
			if err != nil {
				return
			}
			for _, e := range tr.Entries {
				walk(e.ID, path.Join(p, e.Name))
			}
		}
	}
	walk(ck.Tree, "")
	walk(ck.State, "state:")
	if len(missing) == 0 {
		return ""
	}
	sort.Strings(missing)
	return fmt.Sprintf("(missing: %s) ", strings.Join(missing, ", "))
}

// overlappingGC lists the gc runs that overlapped a checkpoint's command
// and removed or rewrote packs.
func (h *concHarness) overlappingGC(a *concAck) string {
	var out []string
	for _, g := range h.gcs {
		if g.end.Before(a.start) || g.start.After(a.end) || g.deleted+g.rewritten == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("gc %s–%s deleted %d rewrote %d", g.start.Format("05.000"), g.end.Format("05.000"), g.deleted, g.rewritten))
	}
	if len(out) == 0 {
		return ""
	}
	return "overlapping " + strings.Join(out, ", ") + "; "
}

// TestGCFreshenOnDedup is the deterministic form of what TestConcurrentGC
// finds with the default grace period. A pack of unreferenced objects older
// than the grace period (what a writer that crashed after committing its
// pack leaves) holds content X; a checkpoint of a tree containing X dedups
// against it; while that checkpoint is still running (a large file keeps it
// busy), gc runs with the default grace and deletes the old pack, since
// nothing references X yet. Design §4: "gc never deletes an object that a
// running writer may still reference: grace period, exclusive sweep lock,
// freshen on dedup hits". The checkpoint then exits 0 naming X, which is
// gone. A second checkpoint, of another session and with no gc running,
// shows the stat cache then reusing X's id without checking that the store
// still has it.
func TestGCFreshenOnDedup(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "project")
	store := filepath.Join(proj, ".snap")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := runSnap(proj, "init"); r.code != 0 {
		t.Fatalf("%s", r)
	}
	rng := rngFor(20)
	// A large file keeps the checkpoint busy for a few hundred ms.
	if err := os.WriteFile(filepath.Join(proj, "big.txt"), textOf(rng, 32<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	x := append([]byte("content first stored by a writer that crashed\n"), textOf(rng, 2000)...)
	st, err := objects.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	w := st.NewWriter()
	xid, err := w.PutBytes(x)
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := w.Commit()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(store, objects.PacksDir, orphan), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "x.txt"), x, 0o644); err != nil {
		t.Fatal(err)
	}
	// An old file, as most are: the stat cache will trust its entry.
	if err := os.Chtimes(filepath.Join(proj, "x.txt"), time.Now(), time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}

	done := make(chan result, 1)
	go func() { done <- runSnap(proj, "checkpoint", "--json", "-m", "with_x") }()
	// Wait until the checkpoint has opened the store and is writing its
	// pack (the large file), then collect.
	deadline := time.Now().Add(10 * time.Second)
	for {
		des, _ := os.ReadDir(filepath.Join(store, objects.TmpDir))
		if len(des) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the checkpoint never started writing")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case ck := <-done:
		t.Skipf("the checkpoint finished before gc could start (%s); machine too fast for this interleaving", ck)
	default:
	}
	// gc starts while the checkpoint runs. A correct gc either keeps the
	// old pack or waits for the writer; either way x.txt must restore.
	gcRes := runSnap(proj, "gc", "--json")
	ck := <-done
	t.Logf("%s: %s", gcRes, oneLine(gcRes.stdout, 300))
	if ck.code != 0 {
		t.Fatalf("%s", ck)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ck.stdout, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(store, objects.PacksDir, orphan)); err == nil {
		t.Logf("gc kept the old pack holding x.txt's content (freshened or locked): good")
	}
	cat := runSnap(proj, "cat", out.ID+":x.txt")
	if cat.code != 0 || string(cat.stdout) != string(x) {
		t.Errorf("BUG (no freshen on dedup): checkpoint %s exited 0, but x.txt (blob %s, deduplicated against a pack older than the grace period) does not restore: %s",
			out.ID[:12], xid.Short(), cat)
	}
	if res, rep, err := fsck(proj); err != nil || res.code != 0 {
		t.Errorf("fsck --full after the checkpoint and gc: %s\n%s", res, problemsText(rep.errors()))
	}

	// Another session, no gc running: the stat cache knows x.txt's id.
	ck2 := runSnap(proj, "checkpoint", "-s", "other", "--json")
	if ck2.code != 0 {
		t.Fatalf("%s", ck2)
	}
	if err := json.Unmarshal(ck2.stdout, &out); err != nil {
		t.Fatal(err)
	}
	cat = runSnap(proj, "cat", "-s", "other", out.ID+":x.txt")
	if cat.code != 0 || string(cat.stdout) != string(x) {
		t.Errorf("BUG (stat cache trusts missing objects): checkpoint %s of session other, taken with no gc running, exited 0, but x.txt does not restore: %s",
			out.ID[:12], cat)
	}
}
