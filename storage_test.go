package snap_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

func storeBytes(t *testing.T, r *snap.Repo) int64 {
	t.Helper()
	var n int64
	filepath.Walk(filepath.Join(r.StoreDir, "packs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// transcriptLines returns real Claude Code transcript records: the shared
// real data when present, else the excerpt checked into testdata.
func transcriptLines(t *testing.T) [][]byte {
	t.Helper()
	for _, p := range []string{"../shared/realdata/entire-cli_8df6319ef9a6_claude.jsonl", "testdata/conversation/claude_f5e7d3c25b68_lines1-30.jsonl"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var lines [][]byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				lines = append(lines, append([]byte(nil), sc.Bytes()...))
			}
		}
		if len(lines) > 0 {
			return lines
		}
	}
	t.Skip("no transcript found in ../shared/realdata or testdata/conversation")
	return nil
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestTranscriptStorageAcceptance: 200 checkpoints of a JSONL transcript
// growing by ~5 KB each grow the store by less than 3× the final
// transcript's zlib-compressed size plus 2 KiB per checkpoint.
func TestTranscriptStorageAcceptance(t *testing.T) {
	lines := transcriptLines(t)
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"main.go": "package main\n"})
	conv := filepath.Join(t.TempDir(), "session.jsonl")
	rng := rand.New(rand.NewPCG(1, 2))
	var doc []byte
	const steps = 200
	start := storeBytes(t, r)
	k := 0
	for i := 0; i < steps; i++ {
		for target := (i + 1) * 5000; len(doc) < target; k++ {
			// Real records, each given fresh ids so repeats do not dedup.
			line := uuidRE.ReplaceAllFunc(lines[k%len(lines)], func([]byte) []byte {
				return []byte(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff))
			})
			if len(line) > 20000 { // keep steps near 5 KB
				continue
			}
			doc = append(append(doc, line...), '\n')
		}
		os.WriteFile(conv, doc, 0o644)
		checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv), Kind: "post-tool"})
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(doc)
	zw.Close()
	growth := storeBytes(t, r) - start
	budget := int64(3*z.Len() + steps*2048)
	t.Logf("final transcript %d bytes (zlib %d); store grew %d bytes over %d checkpoints (%d per checkpoint); budget %d",
		len(doc), z.Len(), growth, steps, growth/steps, budget)
	st := r.Objects().Stats()
	t.Logf("packs %d, objects %d, by type (count, bytes): %v", st.Packs, st.Objects, r.Objects().StoredBytes())
	if growth >= budget {
		t.Fatalf("store grew %d bytes, budget %d", growth, budget)
	}
}

// TestHelperBigCheckpoint is not a test: TestBigFileEdit runs the test
// binary as a separate process that enters here, so its peak memory can be
// measured.
func TestHelperBigCheckpoint(t *testing.T) {
	dir := os.Getenv("SNAP_BIG_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	r, err := snap.Open(snap.Options{Dir: dir})
	if err == nil {
		_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	// VmHWM is this process's own peak RSS (rusage's ru_maxrss would include
	// the parent's, inherited through the vfork that started us).
	status, _ := os.ReadFile("/proc/self/status")
	if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
		fmt.Printf("HWM %s\n", m[1])
	}
	os.Exit(0)
}

// TestBigFileEdit: a 1 KiB edit in the middle of a 256 MiB file grows the
// store by less than 2 MiB, and checkpointing it peaks below 256 MiB of
// memory (measured as the max RSS of a separate process).
func TestBigFileEdit(t *testing.T) {
	size := 256 << 20
	if testing.Short() {
		size = 32 << 20
	}
	r, root := snaptest.NewRepo(t)
	p := filepath.Join(root, "big.bin")
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1})
	rng.Read(data)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBigCheckpoint$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SNAP_BIG_DIR="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("checkpoint process: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`HWM (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no peak memory reported:\n%s", out)
		}
		var kb int64
		fmt.Sscan(string(m[1]), &kb)
		return kb << 10
	}
	rss1 := run()
	before := storeBytes(t, r)
	f, _ := os.OpenFile(p, os.O_WRONLY, 0)
	edit := make([]byte, 1024)
	rng.Read(edit)
	f.WriteAt(edit, int64(size/2))
	f.Close()
	rss2 := run()
	growth := storeBytes(t, r) - before
	t.Logf("%d MiB file: first checkpoint peak RSS %d MiB; 1 KiB edit: store grew %d bytes, peak RSS %d MiB",
		size>>20, rss1>>20, growth, rss2>>20)
	if growth >= 2<<20 {
		t.Errorf("store grew %d bytes for a 1 KiB edit", growth)
	}
	if rss1 >= 256<<20 || rss2 >= 256<<20 {
		t.Errorf("peak RSS %d / %d MiB", rss1>>20, rss2>>20)
	}
	copy(data[size/2:], edit)
	var buf bytes.Buffer
	r.Objects().Reload()
	if err := r.Cat(ctx, mustResolve(t, r, "", "@"), "big.bin", &buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("big file does not read back exactly: %v", err)
	}
}

// Every front-end reads the environment through the engine: SNAP_STORE
// (relative to Dir), SNAP_LOCK_TIMEOUT, SNAP_SESSION, SNAP_NO_AUTO_GC.
func TestOptionsFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(snap.EnvStore, "st")
	t.Setenv(snap.EnvLockTimeout, "250ms")
	t.Setenv(snap.EnvSession, "from-env")
	o := snap.Options{Dir: dir}.FromEnv()
	if o.Store != filepath.Join(dir, "st") || o.LockTimeout != 250*time.Millisecond {
		t.Fatalf("FromEnv: store %q, lock timeout %v", o.Store, o.LockTimeout)
	}
	if o := (snap.Options{Dir: dir, Store: "/x", LockTimeout: time.Second}).FromEnv(); o.Store != "/x" || o.LockTimeout != time.Second {
		t.Fatalf("FromEnv overrode what was given: %+v", o)
	}
	t.Setenv(snap.EnvLockTimeout, "soon")
	if o := (snap.Options{Dir: dir}).FromEnv(); o.LockTimeout != 0 {
		t.Fatalf("an unparsable SNAP_LOCK_TIMEOUT was used: %v", o.LockTimeout)
	}
	if s := snap.SessionFromEnv(""); s != "from-env" {
		t.Fatalf("SessionFromEnv: %q", s)
	}
	if s := snap.SessionFromEnv("named"); s != "named" {
		t.Fatalf("SessionFromEnv with a name: %q", s)
	}
	t.Setenv(snap.EnvSession, "")
	if s := snap.SessionFromEnv(""); s != snap.DefaultSession {
		t.Fatalf("SessionFromEnv unset: %q", s)
	}
	// A rewind of a few files leaves them in the trash for the next gc; one
	// that replaced AutoGCTrashFiles files starts one for them.
	r, root := snaptest.NewRepo(t)
	files := func(n int, v string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("f%03d", i)] = v
		}
		return m
	}
	snaptest.WriteFiles(t, root, files(snap.AutoGCTrashFiles, "1"))
	checkpoint(t, r, snap.CheckpointOptions{})
	snaptest.WriteFiles(t, root, files(3, "2"))
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if r.AutoGCDue(ctx) {
		t.Fatal("a rewind that replaced 3 files started the automatic gc")
	}
	snaptest.WriteFiles(t, root, files(snap.AutoGCTrashFiles, "3"))
	if _, err := r.Rewind(ctx, snap.RewindOptions{Target: "@"}); err != nil {
		t.Fatal(err)
	}
	if !r.AutoGCDue(ctx) {
		t.Fatalf("the trash holds %d files and the automatic gc is not due", snap.AutoGCTrashFiles+3)
	}
	t.Setenv(snap.EnvNoAutoGC, "1")
	if r.AutoGCDue(ctx) {
		t.Fatal("SNAP_NO_AUTO_GC did not turn the automatic gc off")
	}
}

// Options.LockTimeout bounds the ref and op-log locks too (adversarial F7:
// a hook's SNAP_LOCK_TIMEOUT=1s waited 5 s on refs.lock, 30 s on
// oplog.lock).
func TestLockTimeoutBoundsRefLocks(t *testing.T) {
	_, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	r, err := snap.Open(snap.Options{Dir: root, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"refs.lock", "oplog.lock"} {
		f, err := os.OpenFile(filepath.Join(r.StoreDir, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = r.Checkpoint(ctx, snap.CheckpointOptions{AllowEmpty: true})
		f.Close()
		if !errors.Is(err, snap.ErrBusy) || time.Since(start) > 3*time.Second {
			t.Fatalf("%s held: %v after %v, want busy within the 300 ms bound", name, err, time.Since(start))
		}
	}
}

// gc removes the temporary files a process killed while saving a cache
// left (a session's index, the stat cache), once they are an hour old;
// younger ones may be a save in progress and stay.
func TestGCRemovesStaleCacheTemps(t *testing.T) {
	ctx := t.Context()
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"a": "1"})
	checkpoint(t, r, snap.CheckpointOptions{})
	old := time.Now().Add(-2 * time.Hour)
	stale := []string{filepath.Join(r.StoreDir, "cache", "sessions", "0123.tmp-41"), filepath.Join(r.StoreDir, "cache", "stat.tmp-42")}
	fresh := filepath.Join(r.StoreDir, "cache", "sessions", "0123.tmp-43")
	for _, p := range append(stale, fresh) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half a save"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range stale {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.GC(ctx, snap.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TempFilesRemoved < len(stale) {
		t.Fatalf("gc removed %d temporary files, want at least %d", res.TempFilesRemoved, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a fresh temporary file was removed: %v", err)
	}
}
