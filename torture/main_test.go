package torture

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var longFlag = flag.Bool("torture.long", false, "run the long torture mode (1,000 kill iterations, 60 s of concurrency); also SNAP_TORTURE=long")

var (
	snapBin  string // the snap binary built by TestMain
	baseSeed uint64 // printed at start; SNAP_TORTURE_SEED sets it
)

// long reports whether the long mode was asked for.
func long() bool { return *longFlag || os.Getenv("SNAP_TORTURE") == "long" }

func TestMain(m *testing.M) {
	flag.Parse()
	baseSeed = uint64(time.Now().UnixNano())
	if s := os.Getenv("SNAP_TORTURE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "torture: bad SNAP_TORTURE_SEED %q: %v\n", s, err)
			os.Exit(2)
		}
		baseSeed = v
	}
	mode := "short (CI)"
	if long() {
		mode = "long"
	}
	fmt.Printf("torture: seed %d (reproduce with SNAP_TORTURE_SEED=%d), mode %s\n", baseSeed, baseSeed, mode)

	dir, err := os.MkdirTemp("", "snap-torture-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(1)
	}
	snapBin = filepath.Join(dir, "snap")
	build := exec.Command("go", "build", "-o", snapBin, "github.com/snapcore-dev/snap/cmd/snap")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "torture: building snap:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rngFor returns the deterministic generator of one test: the base seed
// mixed with the test's own stream number.
func rngFor(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(baseSeed, stream)) }

// ---------------------------------------------------------------------------
// Running the binary.

// result is one finished (or killed) run of snap.
type result struct {
	args   []string
	code   int  // exit code; -1 when killed
	killed bool // terminated by our SIGKILL while still running
	stdout []byte
	stderr []byte
	dur    time.Duration
}

func (r result) String() string {
	s := fmt.Sprintf("snap %s: ", strings.Join(r.args, " "))
	if r.killed {
		s += "killed"
	} else {
		s += fmt.Sprintf("exit %d", r.code)
	}
	if e := strings.TrimSpace(string(r.stderr)); e != "" {
		s += ": " + e
	}
	return s
}

// snapEnv is the environment of every snap run: ours, minus anything that
// would select another store or session.
func snapEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SNAP_STORE=") || strings.HasPrefix(kv, "SNAP_SESSION=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runSnap runs snap in dir to completion.
func runSnap(dir string, args ...string) result { return runSnapKill(dir, -1, args...) }

// runSnapKill runs snap in dir and, when killAfter >= 0, sends it SIGKILL
// after that delay if it is still running.
func runSnapKill(dir string, killAfter time.Duration, args ...string) result {
	cmd := exec.Command(snapBin, args...)
	cmd.Dir = dir
	cmd.Env = snapEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	res := result{args: args}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.code, res.stderr = -2, []byte(err.Error())
		return res
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if killAfter < 0 {
		err = <-done
	} else {
		t := time.NewTimer(killAfter)
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
		}
	}
	res.dur = time.Since(start)
	res.stdout, res.stderr = out.Bytes(), errb.Bytes()
	res.code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code, res.killed = -1, ws.Signal() == syscall.SIGKILL
		} else {
			res.code = ee.ExitCode()
		}
	} else if err != nil {
		res.code, res.stderr = -2, append(res.stderr, []byte(err.Error())...)
	}
	return res
}

// fsckReport is `snap fsck --json`.
type fsckReport struct {
	Objects     int            `json:"objects"`
	Packs       int            `json:"packs"`
	Checkpoints int            `json:"checkpoints"`
	Refs        int            `json:"refs"`
	Ops         int            `json:"ops"`
	Problems    []fsckProblem  `json:"problems"`
	Error       map[string]any `json:"error"`
}

type fsckProblem struct {
	Severity string `json:"severity"`
	Object   string `json:"object"`
	Path     string `json:"path"`
	Message  string `json:"message"`
}

func (p fsckProblem) String() string {
	s := p.Severity + ":"
	if p.Path != "" {
		s += " " + p.Path + ":"
	}
	if p.Object != "" {
		s += " " + p.Object[:min(12, len(p.Object))] + ":"
	}
	return s + " " + p.Message
}

func (r *fsckReport) errors() []fsckProblem {
	var out []fsckProblem
	for _, p := range r.Problems {
		if p.Severity != "warning" {
			out = append(out, p)
		}
	}
	return out
}

// fsck runs `snap fsck --full --json` in dir and parses the report.
func fsck(dir string) (result, *fsckReport, error) {
	res := runSnap(dir, "fsck", "--full", "--json")
	var rep fsckReport
	if err := json.Unmarshal(res.stdout, &rep); err != nil {
		return res, nil, fmt.Errorf("fsck --json output does not parse: %v (%s)", err, res)
	}
	return res, &rep, nil
}

// ---------------------------------------------------------------------------
// Working trees.

// file is one non-directory entry of a working tree.
type file struct {
	Mode byte   // 'f' regular, 'x' executable, 'l' symlink
	Data string // content, or the symlink's target
}

func (f file) String() string {
	d := f.Data
	if len(d) > 24 {
		d = fmt.Sprintf("%q...(%d bytes)", d[:24], len(d))
	} else {
		d = strconv.Quote(d)
	}
	return string(f.Mode) + " " + d
}

// treeState is a working tree as its files: slash path → file. Directories
// are implied (snap does not record empty ones).
type treeState map[string]file

func (t treeState) clone() treeState {
	c := make(treeState, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// scanTree reads the working tree under root, without its .snap store.
func scanTree(root string) (treeState, error) {
	t := treeState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == ".snap" {
			return fs.SkipDir
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t[rel] = file{Mode: 'l', Data: target}
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m := byte('f')
			if fi.Mode().Perm()&0o100 != 0 {
				m = 'x'
			}
			t[rel] = file{Mode: m, Data: string(data)}
		default:
			return fmt.Errorf("%s: unexpected file type %v", rel, d.Type())
		}
		return nil
	})
	return t, err
}

// diffTrees describes how got differs from want (at most max lines).
func diffTrees(want, got treeState, max int) []string {
	var out []string
	var paths []string
	seen := map[string]bool{}
	for p := range want {
		paths, seen[p] = append(paths, p), true
	}
	for p := range got {
		if !seen[p] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		w, inW := want[p]
		g, inG := got[p]
		switch {
		case !inG:
			out = append(out, fmt.Sprintf("%s: missing (want %s)", p, w))
		case !inW:
			out = append(out, fmt.Sprintf("%s: unexpected (%s)", p, g))
		case w != g:
			out = append(out, fmt.Sprintf("%s: got %s, want %s", p, g, w))
		default:
			continue
		}
		if len(out) == max {
			out = append(out, "...")
			break
		}
	}
	return out
}

// copyDir copies a directory tree (regular files, symlinks, directories).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		default:
			fi, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, fi.Mode().Perm()|0o600)
		}
	})
}

// storeLocks lists the ref lock files present under store/refs.
func storeLocks(store string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(store, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			rel, _ := filepath.Rel(store, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// tmpFiles lists files named .snap-tmp-* under root (outside .snap).
func tmpFiles(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".snap" {
			return fs.SkipDir
		}
		if strings.HasPrefix(d.Name(), ".snap-tmp-") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// drainGC waits until no gc runs in the project (a checkpoint may start one
// in the background): gc exits 11 while another runs. So that nothing
// touches the store while a test checks it or removes it.
func drainGC(dir string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if r := runSnap(dir, "gc", "--json"); r.code != 11 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
