package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// measure times fn.
func measure(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// settle flushes dirty pages and pauses briefly, so a timed phase does not pay
// for the writes of the generator before it.
func settle() {
	syscall.Sync()
	time.Sleep(50 * time.Millisecond)
}

// cleanEnv is the environment for child processes: no SNAP_* variables, and
// git isolated from the user's global and system configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SNAP_") || strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.invalid",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.invalid")
}

func run(dir string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ---- snap, through its CLI ----

// snapPeer runs the snap binary in a project whose store is .snap/ inside it.
type snapPeer struct {
	bin, dir string
}

func (s *snapPeer) run(args ...string) ([]byte, error) { return run(s.dir, s.bin, args...) }

// hook runs `snap hook claude-code` in the project with payload on stdin
// and times it, process start included; anything the hook writes on
// stderr (only when something went wrong) is an error.
func (s *snapPeer) hook(payload map[string]any) (time.Duration, error) {
	in, err := json.Marshal(payload)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(s.bin, "hook", "claude-code")
	cmd.Dir, cmd.Env, cmd.Stdin = s.dir, cleanEnv(), bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err == nil && stderr.Len() > 0 {
		err = fmt.Errorf("hook: %s", strings.TrimSpace(stderr.String()))
	}
	return d, err
}

func (s *snapPeer) init() error {
	_, err := s.run("init")
	return err
}

// checkpointResult is the part of `snap checkpoint --json` the harness reads.
type checkpointResult struct {
	ID    string `json:"id"`
	Files struct {
		Added    []string `json:"added"`
		Modified []string `json:"modified"`
		Deleted  []string `json:"deleted"`
	} `json:"files"`
	Skipped   []json.RawMessage `json:"skipped"`
	NewBytes  int64             `json:"new_bytes"`
	Monitored bool              `json:"monitored"`
}

// checkpoint runs `snap checkpoint --json ARGS` and returns its result and time.
func (s *snapPeer) checkpoint(args ...string) (checkpointResult, time.Duration, error) {
	var out []byte
	d, err := measure(func() (err error) {
		out, err = s.run(append([]string{"checkpoint", "--json"}, args...)...)
		return err
	})
	var res checkpointResult
	if err == nil {
		if err = json.Unmarshal(out, &res); err == nil && res.ID == "" {
			err = fmt.Errorf("snap checkpoint printed no id: %s", out)
		}
		if err == nil && len(res.Skipped) > 0 {
			err = fmt.Errorf("snap checkpoint skipped files: %s", res.Skipped)
		}
	}
	return res, d, err
}

// rewindResult is the part of `snap rewind --json` the harness reads.
type rewindResult struct {
	Restored        []string          `json:"restored"`
	Deleted         []string          `json:"deleted"`
	Errors          []json.RawMessage `json:"errors"`
	SafetyMonitored bool              `json:"safety_monitored"`
}

func (s *snapPeer) rewind(ref string, args ...string) (rewindResult, time.Duration, error) {
	var out []byte
	d, err := measure(func() (err error) {
		out, err = s.run(append(append([]string{"rewind", "--json"}, args...), ref)...)
		return err
	})
	var res rewindResult
	if err == nil {
		if err = json.Unmarshal(out, &res); err == nil && len(res.Errors) > 0 {
			err = fmt.Errorf("snap rewind reported errors: %s", res.Errors)
		}
	}
	return res, d, err
}

// storeBytes is the size of the store: every file under .snap/ except the stat
// cache (cache/, the counterpart of git's index), tmp/ and trash/ (replaced
// files' old content, which a background gc --auto deletes after a rewind).
func (s *snapPeer) storeBytes() int64 {
	store := filepath.Join(s.dir, ".snap")
	return dirBytes(store, func(rel string) bool {
		return rel == "cache" || rel == "tmp" || rel == "trash"
	})
}

// ---- shadow git, through the git CLI ----

// gitPeer drives the git CLI the way Cline and Gemini CLI do: a git dir outside
// the work tree, `add -A` + `commit` per checkpoint, `reset --hard` to restore.
type gitPeer struct {
	gitDir, work string
}

// newGitPeer creates the shadow repository. With defaults false it sets
// gc.auto=0 (no automatic gc); with true it keeps every git default.
func newGitPeer(gitDir, work string, defaults bool) (*gitPeer, error) {
	g := &gitPeer{gitDir: gitDir, work: work}
	if _, err := g.git("init", "-q"); err != nil {
		return nil, err
	}
	if !defaults {
		if _, err := g.git("config", "gc.auto", "0"); err != nil {
			return nil, err
		}
	}
	// The work trees are separate copies, but make sure git never sees a store.
	ex := filepath.Join(gitDir, "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(ex), 0o755); err != nil {
		return nil, err
	}
	return g, os.WriteFile(ex, []byte(".snap/\n"), 0o644)
}

func (g *gitPeer) git(args ...string) ([]byte, error) {
	return run(g.work, "git", append([]string{"--git-dir=" + g.gitDir, "--work-tree=" + g.work}, args...)...)
}

// checkpoint is what a shadow-git agent runs per checkpoint.
func (g *gitPeer) checkpoint(msg string) error {
	if _, err := g.git("add", "-A"); err != nil {
		return err
	}
	_, err := g.git("commit", "-q", "--allow-empty", "--no-verify", "-m", msg)
	return err
}

func (g *gitPeer) status() error {
	_, err := g.git("status", "--porcelain")
	return err
}

func (g *gitPeer) head() (string, error) {
	out, err := g.git("rev-parse", "HEAD")
	return strings.TrimSpace(string(out)), err
}

func (g *gitPeer) reset(commit string) error {
	_, err := g.git("reset", "-q", "--hard", commit)
	return err
}

func (g *gitPeer) gc() error {
	_, err := g.git("gc", "-q")
	return err
}

// objectBytes is the size of the object directory (loose objects and packs).
func (g *gitPeer) objectBytes() int64 {
	return dirBytes(filepath.Join(g.gitDir, "objects"), nil)
}

// waitGC waits for a detached automatic gc to finish (at most a few minutes).
func (g *gitPeer) waitGC() {
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(filepath.Join(g.gitDir, "gc.pid")); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dirBytes sums the sizes of the regular files under dir; skip (given the
// slash path relative to dir) prunes files and directories.
func dirBytes(dir string, skip func(rel string) bool) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if skip != nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			if skip(filepath.ToSlash(rel)) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// ---- go-git, in a worker process ----

// go-git runs in-process in a worker: a copy of this binary started with
// goGitWorkerEnv=1, which keeps each repository open (as an agent embedding
// the library would) and times each operation itself, so process start is not
// counted. A separate process is what lets the harness stop an operation that
// does not finish within the time limit.
const goGitWorkerEnv = "SNAP_BENCH_GOGIT_WORKER"

type goGitRequest struct {
	Op     string `json:"op"` // init, commit, status, head, reset
	GitDir string `json:"git_dir"`
	Work   string `json:"work"`
	Arg    string `json:"arg,omitempty"`
}

type goGitResponse struct {
	NS  int64  `json:"ns"`
	Out string `json:"out,omitempty"`
	Err string `json:"err,omitempty"`
}

// errSkipped marks a peer that was stopped (or is not installed).
var errSkipped = errors.New("skipped")

// goGitPeer talks to one worker. After a timeout the worker is killed and
// every later call returns errSkipped; skipped says why.
type goGitPeer struct {
	gitDir, work string
	timeout      time.Duration
	cmd          *exec.Cmd
	in           io.WriteCloser
	out          *bufio.Reader
	skipped      string
}

func newGoGitPeer(gitDir, work string, timeout time.Duration) (*goGitPeer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &goGitPeer{gitDir: gitDir, work: work, timeout: timeout}
	p.cmd = exec.Command(self)
	p.cmd.Env = append(cleanEnv(), goGitWorkerEnv+"=1")
	p.cmd.Stderr = os.Stderr
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReader(stdout)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	if _, err := p.call("init", ""); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// call runs one operation and returns the time the worker measured.
func (p *goGitPeer) call(op, arg string) (goGitResponse, error) {
	if p.skipped != "" {
		return goGitResponse{}, errSkipped
	}
	req, _ := json.Marshal(goGitRequest{Op: op, GitDir: p.gitDir, Work: p.work, Arg: arg})
	if _, err := p.in.Write(append(req, '\n')); err != nil {
		return goGitResponse{}, err
	}
	done := make(chan error, 1)
	var resp goGitResponse
	go func() {
		line, err := p.out.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &resp)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return resp, fmt.Errorf("go-git worker: %w", err)
		}
		if resp.Err != "" {
			return resp, fmt.Errorf("go-git %s: %s", op, resp.Err)
		}
		return resp, nil
	case <-time.After(p.timeout):
		p.skipped = fmt.Sprintf("go-git did not finish %q within %s; its remaining rows are skipped", op, p.timeout)
		p.close()
		return resp, errSkipped
	}
}

func (p *goGitPeer) timed(op, arg string) (time.Duration, error) {
	resp, err := p.call(op, arg)
	return time.Duration(resp.NS), err
}

func (p *goGitPeer) checkpoint() (time.Duration, error) { return p.timed("commit", "") }
func (p *goGitPeer) status() (time.Duration, error)     { return p.timed("status", "") }
func (p *goGitPeer) reset(c string) (time.Duration, error) {
	return p.timed("reset", c)
}

func (p *goGitPeer) objectBytes() int64 {
	return dirBytes(filepath.Join(p.gitDir, "objects"), nil)
}

func (p *goGitPeer) close() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.in.Close()
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.cmd = nil
	}
}

// goGitWorker serves requests on in/out until in is closed.
func goGitWorker(in io.Reader, out io.Writer) error {
	repos := map[string]*git.Repository{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req goGitRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return err
		}
		var resp goGitResponse
		start := time.Now()
		out, err := goGitDo(repos, req)
		resp.NS = int64(time.Since(start))
		resp.Out = out
		if err != nil {
			resp.Err = err.Error()
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

func goGitDo(repos map[string]*git.Repository, req goGitRequest) (string, error) {
	if req.Op == "init" {
		st := filesystem.NewStorage(osfs.New(req.GitDir), cache.NewObjectLRUDefault())
		r, err := git.Init(st, osfs.New(req.Work))
		repos[req.GitDir] = r
		return "", err
	}
	r := repos[req.GitDir]
	if r == nil {
		return "", fmt.Errorf("no repository %s", req.GitDir)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	switch req.Op {
	case "commit":
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			return "", err
		}
		sig := &object.Signature{Name: "bench", Email: "bench@example.invalid", When: time.Now()}
		h, err := wt.Commit("checkpoint", &git.CommitOptions{Author: sig, AllowEmptyCommits: true})
		return h.String(), err
	case "status":
		_, err := wt.Status()
		return "", err
	case "head":
		h, err := r.Head()
		if err != nil {
			return "", err
		}
		return h.Hash().String(), nil
	case "reset":
		return "", wt.Reset(&git.ResetOptions{Commit: plumbing.NewHash(req.Arg), Mode: git.HardReset})
	}
	return "", fmt.Errorf("unknown op %q", req.Op)
}

// ---- peak RSS ----

// timeBin is GNU time, used to read a child's exact peak RSS.
const timeBin = "/usr/bin/time"

// runRSS runs name args in dir and returns its wall time and peak RSS in bytes.
//
// Method: wait4's ru_maxrss is wrong for children started by Go's os/exec,
// which uses vfork: the child shares the parent's address space until exec,
// so its high-water mark starts at the parent's RSS. With /usr/bin/time
// present the child runs under it (`time -f %M`), whose own fork starts from a
// process of a few hundred KiB, so the figure is the child's. Otherwise the
// child's /proc/PID/status VmHWM is polled every 2 ms (the high-water mark is
// monotonic, so only growth in the last 2 ms before exit can be missed).
func runRSS(dir, name string, args ...string) (out []byte, d time.Duration, peak int64, err error) {
	if _, err := os.Stat(timeBin); err == nil {
		f, err := os.CreateTemp("", "rss")
		if err != nil {
			return nil, 0, 0, err
		}
		f.Close()
		defer os.Remove(f.Name())
		d, err := measure(func() (err error) {
			out, err = run(dir, timeBin, append([]string{"-f", "%M", "-o", f.Name(), name}, args...)...)
			return err
		})
		if err != nil {
			return out, d, 0, err
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			return out, d, 0, err
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return out, d, 0, fmt.Errorf("%s printed nothing", timeBin)
		}
		kb, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
		return out, d, kb << 10, err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		select {
		case err := <-done:
			d := time.Since(start)
			if err != nil {
				err = fmt.Errorf("%s: %w: %s", name, err, stderr.String())
			}
			return stdout.Bytes(), d, peak, err
		case <-time.After(2 * time.Millisecond):
			if v := readVmHWM(status); v > peak {
				peak = v
			}
		}
	}
}

func readVmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// gitInstalled reports whether the git CLI is on PATH.
func gitInstalled() bool {
	_, err := exec.LookPath("git")
	return err == nil
}
