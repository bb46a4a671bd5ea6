package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/worktree"
)

// benchTree makes a project of 10,000 directories (makeBenchTree) and
// starts its daemon in this process.
func benchTree(b *testing.B) *project {
	p, _, _ := benchTreeStats(b)
	return p
}

// benchTreeStats is benchTree, also returning the time to watch the tree
// and the heap the daemon holds (report them after b.Loop, which drops
// metrics reported before it).
func benchTreeStats(b *testing.B) (*project, time.Duration, float64) {
	b.Helper()
	root := b.TempDir()
	p := &project{t: &testing.T{}, root: root, store: filepath.Join(root, ".snap")}
	makeBenchTree(b, root)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p.inspect = make(chan func(*daemon))
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan error, 1)
	start := time.Now()
	go func() { p.done <- Run(ctx, Config{Root: root, StoreDir: p.store, inspect: p.inspect}) }()
	b.Cleanup(func() { cancel(); <-p.done })
	for {
		a, err := Query(p.store, "", 5*time.Second)
		if err == nil {
			p.token = a.Token
			break
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / (1 << 20)
	var watches int
	p.inDaemonB(b, func(d *daemon) { watches = d.watches })
	if watches != 10001 { // and the root
		b.Fatalf("%d directories watched, want 10001", watches)
	}
	return p, took, heap
}

// inDaemonB is inDaemon for a benchmark.
func (p *project) inDaemonB(b *testing.B, f func(*daemon)) {
	done := make(chan bool)
	p.inspect <- func(d *daemon) { f(d); close(done) }
	<-done
}

// A Query on an unchanged tree of 10,000 directories: dial, sync (the
// cookie's round trip through inotify), answer, reply.
func BenchmarkQuery(b *testing.B) {
	p, took, heap := benchTreeStats(b)
	for b.Loop() {
		a, err := Query(p.store, p.token, 5*time.Second)
		if err != nil || a.All || len(a.Dirs) != 0 {
			b.Fatalf("%+v, %v", a, err)
		}
		p.token = a.Token
	}
	b.ReportMetric(float64(took.Milliseconds()), "ms-to-watch")
	b.ReportMetric(heap, "MiB-heap")
}

// The daemon's own part of a query on an unchanged tree of 10,000
// directories, in three parts: the cookie made and removed (in a watched
// directory), the exclude rules re-read, the answer computed (the log
// searched, Unwatched); no socket, no inotify round trip.
func BenchmarkAnswer(b *testing.B) {
	p := benchTree(b)
	var cookie, excludes, answer time.Duration
	p.inDaemonB(b, func(d *daemon) {
		for b.Loop() {
			t0 := time.Now()
			name := filepath.Join(d.store, "bench-cookie")
			f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
			os.Remove(name)
			t1 := time.Now()
			d.flush()
			if x := worktree.Excludes(d.root); x != d.excludes {
				b.Fatal("the excludes changed")
			}
			t2 := time.Now()
			if a := d.answer(p.token); a.All || len(a.Dirs) != 0 {
				b.Fatalf("%+v", a)
			}
			t3 := time.Now()
			cookie += t1.Sub(t0)
			excludes += t2.Sub(t1)
			answer += t3.Sub(t2)
		}
	})
	n := float64(b.N)
	b.ReportMetric(float64(cookie.Nanoseconds())/n, "ns-cookie/op")
	b.ReportMetric(float64(excludes.Nanoseconds())/n, "ns-excludes/op")
	b.ReportMetric(float64(answer.Nanoseconds())/n, "ns-answer/op")
}

// A daemon process (this test binary, as TestMain starts it) watching a
// tree of 10,000 directories: its resident memory, and the CPU time it
// uses idle, over five seconds once it has settled.
func BenchmarkIdleProcess(b *testing.B) {
	root := b.TempDir()
	makeBenchTree(b, root)
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "SNAP_WATCH_TEST_DAEMON="+root)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	start := time.Now()
	for {
		if _, err := Query(filepath.Join(root, ".snap"), "", 5*time.Second); err == nil {
			break
		}
		if time.Since(start) > time.Minute {
			b.Fatal("the daemon does not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(3 * time.Second)
	cpu0 := procCPU(b, cmd.Process.Pid)
	time.Sleep(5 * time.Second)
	cpu1 := procCPU(b, cmd.Process.Pid)
	rss := procRSS(b, cmd.Process.Pid)
	for b.Loop() {
	}
	b.ReportMetric(float64(took.Milliseconds()), "ms-to-answer")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/5, "µs-cpu/s-idle")
	b.ReportMetric(rss, "MiB-rss")
}

// procCPU is the time process pid has run on a CPU (all its threads;
// /proc/<pid>/schedstat, in nanoseconds).
func procCPU(b *testing.B, pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // exited
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
		total += time.Duration(ns)
	}
	return total
}

// procRSS is the resident memory of process pid, in MiB.
func procRSS(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// makeBenchTree makes 10,000 directories beneath root (100 × 99 beneath
// 100, each with a file) and root/.snap.
func makeBenchTree(b *testing.B, root string) {
	if err := os.Mkdir(filepath.Join(root, ".snap"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		for j := range 100 {
			dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
			if j > 0 {
				dir = filepath.Join(dir, fmt.Sprintf("s%02d", j))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("package f\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The periodic audit (every retryEvery) of 10,000 watched directories.
func BenchmarkAudit(b *testing.B) {
	p := benchTree(b)
	p.inDaemonB(b, func(d *daemon) {
		for b.Loop() {
			d.audit()
		}
	})
}
