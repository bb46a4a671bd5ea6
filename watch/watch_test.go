package watch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/snapcore-dev/snap/internal/testenv"
	"github.com/snapcore-dev/snap/worktree"
)

// TestMain runs a daemon when the test binary is started as one (see
// TestKilledDaemon); else the tests, without the developer's git
// configuration.
func TestMain(m *testing.M) {
	if root := os.Getenv("SNAP_WATCH_TEST_DAEMON"); root != "" {
		err := Run(context.Background(), Config{Root: root, StoreDir: filepath.Join(root, ".snap")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testenv.MainWithoutGitConfig(m)
}

// project is a project under test with its daemon.
type project struct {
	t           *testing.T
	root, store string
	token       string
	cancel      context.CancelFunc
	done        chan error
	inspect     chan func(*daemon)
}

func newProject(t *testing.T, files map[string]string) *project {
	t.Helper()
	p := &project{t: t, root: t.TempDir()}
	p.store = filepath.Join(p.root, ".snap")
	if err := os.Mkdir(p.store, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, content := range files {
		p.write(path, content)
	}
	return p
}

// start runs the daemon (cfg changed by mod) until the test ends, and
// takes a first token.
func (p *project) start(mod func(*Config)) {
	p.t.Helper()
	p.inspect = make(chan func(*daemon))
	cfg := Config{Root: p.root, StoreDir: p.store, Logf: p.t.Logf, inspect: p.inspect}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan error, 1)
	go func() { p.done <- Run(ctx, cfg) }()
	p.t.Cleanup(p.shutdown)
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := Query(p.store, "", 5*time.Second)
		if err == nil {
			if !a.All || a.Reason != "no token" {
				p.t.Fatalf("first query: %+v, want All for no token", a)
			}
			p.token = a.Token
			return
		}
		select {
		case err := <-p.done:
			p.t.Fatalf("Run: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the daemon does not answer: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shutdown ends the daemon and waits for Run to return.
func (p *project) shutdown() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("Run: %v", err)
		}
		p.done <- err
	case <-time.After(20 * time.Second):
		p.t.Error("Run did not return after its context ended")
	}
	p.cancel = nil
}

// query queries since the last token and keeps the new one.
func (p *project) query() *Answer {
	p.t.Helper()
	a, err := Query(p.store, p.token, 10*time.Second)
	if err != nil {
		p.t.Fatalf("Query: %v", err)
	}
	p.token = a.Token
	return a
}

// inDaemon runs f in the daemon's loop.
func (p *project) inDaemon(f func(*daemon)) {
	p.t.Helper()
	done := make(chan bool)
	select {
	case p.inspect <- func(d *daemon) { f(d); close(done) }:
	case <-time.After(30 * time.Second):
		p.t.Fatal("the daemon's loop does not take the inspection")
	}
	<-done
}

func (p *project) abs(rel string) string { return filepath.Join(p.root, filepath.FromSlash(rel)) }

func (p *project) write(rel, content string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p.abs(rel)), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(p.abs(rel), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) must(err error) {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
}

// covers reports whether answer a says that path (of a file or directory
// whose entry changed) may have changed: its directory is in Dirs, or it
// lies beneath an entry of Trees or Unwatched, or a is All.
func covers(a *Answer, path string) bool {
	if a.All {
		return true
	}
	dir := parentOf(path)
	if slices.Contains(a.Dirs, dir) {
		return true
	}
	for _, list := range [][]string{a.Trees, a.Unwatched} {
		for _, t := range list {
			if t == "" || dir == t || strings.HasPrefix(dir, t+"/") {
				return true
			}
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Every kind of change is reported, as narrowly as the events allow: the
// changed entry's directory in Dirs, a directory that appeared or whose
// rules changed in Trees, and an ignored directory in Unwatched.
func TestChangesAreReported(t *testing.T) {
	p := newProject(t, map[string]string{
		".gitignore":              "node_modules/\n",
		"src/a.go":                "package a\n",
		"src/x.txt":               "x",
		"docs/readme.md":          "readme",
		"node_modules/pkg/a.js":   "js",
		"lib/.gitignore":          "gen/\n",
		"lib/gen/x/y.txt":         "generated",
		"lib/gen/w.txt":           "generated",
		"lib/l.go":                "package lib\n",
		"deep/er/est/file.txt":    "deep",
		".git/info/exclude":       "",
		".git/objects/whatever":   "git",
		"replaced/sub/inside.txt": "inside",
	})
	// The walks trust directories changed before they began (less a
	// margin): let the tree's be so.
	time.Sleep(2 * fileTimeMargin)
	p.start(nil)
	a := p.query()
	if a.All || len(a.Dirs)+len(a.Trees) != 0 {
		t.Fatalf("unchanged tree: %+v", a)
	}
	if want := []string{"lib/gen", "node_modules"}; !slices.Equal(a.Unwatched, want) {
		t.Fatalf("Unwatched %q, want %q", a.Unwatched, want)
	}

	for _, c := range []struct {
		name       string
		change     func()
		paths      []string // must be covered
		dirs       []string // exactly
		trees      []string // exactly
		unwatched  []string // exactly, when not nil
		notIgnored bool
	}{
		{name: "create file", change: func() { p.write("src/new.txt", "new") },
			paths: []string{"src/new.txt"}, dirs: []string{"src"}},
		{name: "modify in place", change: func() {
			f, err := os.OpenFile(p.abs("src/a.go"), os.O_WRONLY, 0)
			p.must(err)
			f.WriteAt([]byte("PACKAGE"), 0)
			f.Close()
		}, paths: []string{"src/a.go"}, dirs: []string{"src"}},
		{name: "chmod", change: func() { p.must(os.Chmod(p.abs("src/a.go"), 0o755)) },
			paths: []string{"src/a.go"}, dirs: []string{"src"}},
		{name: "delete", change: func() { p.must(os.Remove(p.abs("src/new.txt"))) },
			paths: []string{"src/new.txt"}, dirs: []string{"src"}},
		{name: "rename within a directory", change: func() { p.must(os.Rename(p.abs("src/a.go"), p.abs("src/b.go"))) },
			paths: []string{"src/a.go", "src/b.go"}, dirs: []string{"src"}},
		{name: "rename across directories", change: func() { p.must(os.Rename(p.abs("src/b.go"), p.abs("docs/b.go"))) },
			paths: []string{"src/b.go", "docs/b.go"}, dirs: []string{"docs", "src"}},
		{name: "nested directories made quickly", change: func() {
			p.must(exec.Command("sh", "-c", "cd "+p.root+" && mkdir -p a/b/c && touch a/b/c/f").Run())
		}, paths: []string{"a", "a/b/c/f"}, dirs: []string{""}, trees: []string{"a"}},
		{name: "a file in the new directory", change: func() { p.write("a/b/c/f", "now") },
			paths: []string{"a/b/c/f"}, dirs: []string{"a/b/c"}},
		{name: "a directory moved", change: func() { p.must(os.Rename(p.abs("a"), p.abs("docs/a2"))) },
			paths: []string{"a", "docs/a2", "docs/a2/b/c/f"}, dirs: []string{"", "docs"}, trees: []string{"docs/a2"}},
		{name: "a file in the moved directory", change: func() { p.write("docs/a2/b/c/g", "g") },
			paths: []string{"docs/a2/b/c/g"}, dirs: []string{"docs/a2/b/c"}},
		{name: "a directory replaced by a file", change: func() {
			p.must(os.RemoveAll(p.abs("replaced")))
			p.write("replaced", "a file now")
		}, paths: []string{"replaced"}, dirs: []string{""}},
		{name: "a file replaced by a symlink", change: func() {
			p.must(os.Remove(p.abs("src/x.txt")))
			p.must(os.Symlink("../docs", p.abs("src/x.txt")))
		}, paths: []string{"src/x.txt"}, dirs: []string{"src"}},
		{name: "a change in an ignored directory", change: func() { p.write("node_modules/pkg/a.js", "changed") },
			paths: []string{"node_modules/pkg/a.js"}},
		{name: "a change in .git", change: func() { p.write(".git/objects/whatever", "changed") }},
		{name: "a directory with an ignored one moved in", change: func() {
			out := filepath.Join(t.TempDir(), "pkg")
			p.must(os.MkdirAll(filepath.Join(out, "node_modules", "dep"), 0o755))
			p.must(os.WriteFile(filepath.Join(out, "node_modules", "dep", "i.js"), []byte("js"), 0o644))
			p.must(os.Rename(out, p.abs("pkg")))
		}, paths: []string{"pkg", "pkg/node_modules/dep/i.js"}, dirs: []string{""}, trees: []string{"pkg"},
			unwatched: []string{"lib/gen", "node_modules", "pkg/node_modules"}},
		{name: "a change in its ignored directory", change: func() { p.write("pkg/node_modules/dep/i.js", "changed") },
			paths: []string{"pkg/node_modules/dep/i.js"}},
		{name: "an ignored directory un-ignored, one beneath it ignored", change: func() { p.write("lib/.gitignore", "x/\n") },
			paths: []string{"lib/gen/w.txt"}, dirs: []string{}, trees: []string{"lib"},
			unwatched: []string{"lib/gen/x", "node_modules", "pkg/node_modules"}},
		{name: "a file in the un-ignored directory", change: func() { p.write("lib/gen/w.txt", "changed") },
			paths: []string{"lib/gen/w.txt"}, dirs: []string{"lib/gen"}},
		{name: "all of it un-ignored", change: func() { p.write("lib/.gitignore", "") },
			paths: []string{"lib/gen/x/y.txt"}, dirs: []string{}, trees: []string{"lib"}, unwatched: []string{"node_modules", "pkg/node_modules"}},
		{name: "a file in the directory un-ignored", change: func() { p.write("lib/gen/x/y.txt", "changed") },
			paths: []string{"lib/gen/x/y.txt"}, dirs: []string{"lib/gen/x"}},
		{name: "a directory ignored by the exclude file", change: func() { p.write(".git/info/exclude", "deep/\n") },
			paths: []string{"deep/er/est/file.txt"}, trees: []string{""}, unwatched: []string{"deep", "node_modules", "pkg/node_modules"}},
		{name: "a change in the excluded directory", change: func() { p.write("deep/er/est/file.txt", "changed") },
			paths: []string{"deep/er/est/file.txt"}},
		{name: "nothing", change: func() {}},
	} {
		c.change()
		a := p.query()
		if a.All {
			t.Fatalf("%s: All (%s)", c.name, a.Reason)
		}
		for _, path := range c.paths {
			if !covers(a, path) {
				t.Errorf("%s: %s not covered by %+v", c.name, path, a)
			}
		}
		if !slices.Equal(a.Dirs, nonNil(c.dirs)) || !slices.Equal(a.Trees, nonNil(c.trees)) {
			t.Errorf("%s: Dirs %q Trees %q, want %q %q", c.name, a.Dirs, a.Trees, nonNil(c.dirs), nonNil(c.trees))
		}
		if c.unwatched != nil && !slices.Equal(a.Unwatched, c.unwatched) {
			t.Errorf("%s: Unwatched %q, want %q", c.name, a.Unwatched, c.unwatched)
		}
		p.checkWatches()
	}
}

// An unchanged tree, even read, gives empty Dirs and Trees; a token can be
// used again, and answers for everything since.
func TestUnchangedTree(t *testing.T) {
	p := newProject(t, map[string]string{"a/b/c.txt": "c", "d/e.txt": "e", ".gitignore": "build/\n", "build/x": "x"})
	p.start(nil)
	first := p.token
	for range 3 {
		a := p.query()
		if a.All || len(a.Dirs) != 0 || len(a.Trees) != 0 || !slices.Equal(a.Unwatched, []string{"build"}) {
			t.Fatalf("unchanged tree: %+v", a)
		}
		if _, err := os.ReadFile(p.abs("a/b/c.txt")); err != nil {
			t.Fatal(err)
		}
		os.ReadDir(p.abs("d"))
	}
	p.write("d/e.txt", "changed")
	p.query()
	p.token = first
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"d"}) {
		t.Fatalf("since the first token: %+v", a)
	}
}

// Tokens of another daemon's run, malformed ones and none give All with a
// reason; a token handed out right after start is valid at once.
func TestTokens(t *testing.T) {
	p := newProject(t, map[string]string{"a/f": "f"})
	p.start(nil)
	if a := p.query(); a.All {
		t.Fatalf("a token of this run, right after start: %+v", a)
	}
	old := p.token
	p.shutdown()
	p.start(nil)
	for since, reason := range map[string]string{
		old:                  "just started",
		"":                   "no token",
		"garbage":            "malformed token",
		"0123456789abcdef:x": "malformed token",
		strings.Split(p.token, ":")[0] + ":99999999": "token from the future",
	} {
		a, err := Query(p.store, since, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !a.All || a.Reason != reason {
			t.Errorf("since %q: All %v (%q), want All (%q)", since, a.All, a.Reason, reason)
		}
		if _, _, ok := parseToken(a.Token); !ok {
			t.Errorf("since %q: token %q", since, a.Token)
		}
	}
	if a := p.query(); a.All {
		t.Fatalf("a token of the new run: %+v", a)
	}
	// A caller whose git configuration is found elsewhere: its excludes
	// file may differ.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if a, err := Query(p.store, p.token, 5*time.Second); err != nil || !a.All || !strings.Contains(a.Reason, "XDG_CONFIG_HOME") {
		t.Fatalf("another git environment: %+v, %v", a, err)
	}
}

// One daemon per store: a second Run fails at once with ErrRunning, and
// leaves the first one serving.
func TestSecondRun(t *testing.T) {
	p := newProject(t, map[string]string{"f": "f"})
	p.start(nil)
	start := time.Now()
	err := Run(context.Background(), Config{Root: p.root, StoreDir: p.store})
	if !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("second Run took %v", time.Since(start))
	}
	if a := p.query(); a.All {
		t.Fatalf("the first daemon after a second Run: %+v", a)
	}
}

// Stop makes Run return, removes the socket, and Query then fails with
// ErrNotRunning; Status reports the daemon's state before.
func TestStatusAndStop(t *testing.T) {
	p := newProject(t, map[string]string{"a/b/f": "f", ".gitignore": "x/\n", "x/y": "y"})
	p.start(nil)
	p.query()
	st, err := Status(p.store, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Watched: the root, a, a/b and the store; x is ignored.
	if st.Pid != os.Getpid() || st.Root != p.root || st.Watches != 4 || st.Unwatched != 1 || st.Queries != 2 ||
		st.Epoch != strings.Split(p.token, ":")[0] || st.EpochReason != "just started" || st.Started.IsZero() || st.Overflows != 0 ||
		!slices.Equal(st.UnwatchedDirs, []string{`"x": ignored`}) {
		t.Errorf("status %+v", st)
	}
	if err := Stop(p.store, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("Run after Stop: %v", err)
		}
		p.done <- nil
	case <-time.After(time.Second):
		t.Fatal("Run did not return after Stop")
	}
	if _, err := os.Lstat(filepath.Join(p.store, sockName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is still there: %v", err)
	}
	if _, err := Query(p.store, p.token, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Query after Stop: %v, want ErrNotRunning", err)
	}
	if err := Stop(p.store, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Stop after Stop: %v, want ErrNotRunning", err)
	}
	if _, err := Status(p.store, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Status after Stop: %v, want ErrNotRunning", err)
	}
}

// Query fails within its timeout with no daemon, with a stale socket (a
// killed daemon's) and with a hung one (it accepts and never answers).
func TestQueryFailures(t *testing.T) {
	p := newProject(t, nil)
	timed := func(what string, timeout time.Duration) error {
		t.Helper()
		start := time.Now()
		_, err := Query(p.store, "", timeout)
		if took := time.Since(start); took > timeout+100*time.Millisecond {
			t.Errorf("%s: Query took %v, timeout %v", what, took, timeout)
		}
		if err == nil {
			t.Errorf("%s: Query did not fail", what)
		}
		return err
	}
	if err := timed("no daemon", time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("no daemon: %v, want ErrNotRunning", err)
	}

	sock := filepath.Join(p.store, sockName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // never answered
		}
	}()
	timed("hung daemon", 300*time.Millisecond)
	ln.Close()
	for _, c := range conns {
		c.Close()
	}

	staleSocket(t, sock)
	if err := timed("stale socket", time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stale socket: %v, want ErrNotRunning", err)
	}

	// A daemon that answers garbage.
	os.Remove(sock)
	ln, err = net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, garbage := range []string{"not json\n", `{"answer":{"token":"nonsense"}}` + "\n", `{"answer":{"token":"0123456789abcdef:1","dirs":["../x"]}}` + "\n", `{"error":"no"}` + "\n"} {
		go func() {
			c, err := ln.Accept()
			if err == nil {
				bufio.NewReader(c).ReadString('\n')
				c.Write([]byte(garbage))
				c.Close()
			}
		}()
		timed("garbage "+garbage, time.Second)
	}
	ln.Close()
}

// staleSocket leaves a socket file at path that no one listens on, as a
// killed daemon does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
}

// A daemon killed with SIGKILL leaves its socket: Query fails fast, and the
// next Run removes it and serves.
func TestKilledDaemon(t *testing.T) {
	p := newProject(t, map[string]string{"a/f": "f"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SNAP_WATCH_TEST_DAEMON="+p.root)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := Status(p.store, time.Second)
		if err == nil {
			if st.Pid != cmd.Process.Pid {
				t.Fatalf("status of pid %d, want the child's %d", st.Pid, cmd.Process.Pid)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child daemon does not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Lstat(filepath.Join(p.store, sockName)); err != nil {
		t.Fatalf("no stale socket after kill -9: %v", err)
	}
	start := time.Now()
	if _, err := Query(p.store, "", 5*time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Query of a killed daemon: %v, want ErrNotRunning", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Query of a killed daemon took %v", took)
	}
	cookie := filepath.Join(p.store, cookiePrefix+"999999-1") // left by the killed daemon
	if err := os.WriteFile(cookie, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.start(nil)
	p.write("a/g", "g")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a"}) {
		t.Fatalf("after the restart: %+v", a)
	}
	if _, err := os.Lstat(cookie); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a stale cookie is left: %v", err)
	}
}

// A store whose socket path is too long for a unix socket gets its socket
// in a private directory under the temporary directory.
func TestLongStorePath(t *testing.T) {
	root := t.TempDir()
	long := filepath.Join(root, strings.Repeat("long-directory-name-", 6))
	p := &project{t: t, root: long, store: filepath.Join(long, ".snap")}
	if err := os.MkdirAll(p.store, 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("a/f", "f")
	p.start(nil)
	sock, dir, err := socketPath(p.store)
	if err != nil || dir == "" || !strings.HasPrefix(sock, os.TempDir()) || len(sock) > maxSocketPath {
		t.Fatalf("socket %q in %q (%v)", sock, dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %v, %v", fi, err)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v", fi, err)
	}
	sum := sha256.Sum256([]byte(p.store))
	if !strings.Contains(sock, fmt.Sprintf("%x", sum)) {
		t.Errorf("socket %s is not named for the store", sock)
	}
	p.write("a/g", "g")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a"}) {
		t.Fatalf("%+v", a)
	}
	// Through a symlink to the store: the same socket.
	link := filepath.Join(root, "s")
	if err := os.Symlink(p.store, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Query(link, "", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.shutdown()
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is left after exit: %v", err)
	}
}

// The daemon exits when its root is removed, when its store is, and when
// no query came for Idle.
func TestExits(t *testing.T) {
	for _, c := range []struct {
		name   string
		mod    func(*Config)
		remove func(p *project)
	}{
		{"root removed", nil, func(p *project) { p.must(os.RemoveAll(p.root)) }},
		{"root moved", nil, func(p *project) { p.must(os.Rename(p.root, p.root+"-moved")) }},
		{"store removed", nil, func(p *project) { p.must(os.RemoveAll(p.store)) }},
		{"socket removed", nil, func(p *project) { p.must(os.Remove(filepath.Join(p.store, sockName))) }},
		{"idle", func(c *Config) { c.Idle = 300 * time.Millisecond }, func(*project) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"a/f": "f"})
			p.start(c.mod)
			c.remove(p)
			select {
			case err := <-p.done:
				if err != nil {
					t.Fatal(err)
				}
				p.done <- nil
			case <-time.After(3 * checkEvery):
				t.Fatal("the daemon did not exit")
			}
			if c.name == "idle" {
				if _, err := os.Lstat(filepath.Join(p.store, sockName)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the socket is left: %v", err)
				}
				// The lock is free: a new daemon can start.
				p.start(nil)
			}
		})
	}
}

// An overflow of the event queue (a real one: the daemon is held while
// events pile up in the kernel, then an injected one) starts a new epoch:
// older tokens get All, the tree is watched again, and newer tokens work.
func TestOverflow(t *testing.T) {
	p := newProject(t, map[string]string{"a/f": "f", "b/c/d": "d"})
	hold := make(chan struct{})
	held := make(chan struct{})
	errs := make(chan error)
	var once atomic.Bool
	p.start(func(c *Config) {
		c.errs = errs
		c.eventHook = func(ev fsnotify.Event) {
			if strings.HasSuffix(ev.Name, "/a/first") && once.CompareAndSwap(false, true) {
				close(held)
				<-hold
			}
		}
	})
	released := false
	defer func() {
		if !released {
			close(hold)
		}
	}()
	before := p.token
	p.write("a/first", "x")
	<-held
	// While the daemon is held, more events than the kernel queues.
	max := 16384
	if data, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		max, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if max > 100000 {
		t.Skipf("max_queued_events is %d", max)
	}
	// Writes alternating between two files: the kernel coalesces an
	// event with the one before it only when they are identical.
	f, err := os.OpenFile(p.abs("a/f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.OpenFile(p.abs("a/first"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < max+2*eventBuffer+100; i++ {
		f.WriteAt([]byte{byte(i)}, 0)
		g.WriteAt([]byte{byte(i)}, 0)
	}
	f.Close()
	g.Close()
	p.write("b/c/new", "new")
	close(hold)
	released = true
	a := p.query()
	if !a.All || a.Reason != "event queue overflowed" {
		t.Fatalf("after an overflow: %+v", a)
	}
	p.token = before
	if a := p.query(); !a.All {
		t.Fatalf("a token from before the overflow: %+v", a)
	}
	p.write("b/c/d", "changed")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"b/c"}) {
		t.Fatalf("after the new epoch: %+v", a)
	}
	p.checkWatches()

	errs <- fsnotify.ErrEventOverflow
	if a := p.query(); !a.All || a.Reason != "event queue overflowed" {
		t.Fatalf("after an injected overflow: %+v", a)
	}
	errs <- errors.New("something else")
	if a := p.query(); !a.All || !strings.HasPrefix(a.Reason, "watcher error: ") {
		t.Fatalf("after an error: %+v", a)
	}
	st, err := Status(p.store, time.Second)
	if err != nil || st.Overflows != 3 || st.LastOverflow.IsZero() {
		t.Fatalf("status %+v, %v", st, err)
	}
	p.write("a/f", "again")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a"}) {
		t.Fatalf("after the errors: %+v", a)
	}
	p.checkWatches()
}

// A directory whose watch cannot be added (past the watch limit, say) is
// reported unwatched, with what is beneath it; once a retry succeeds, it
// is watched and marked in Trees.
func TestWatchCannotBeAdded(t *testing.T) {
	p := newProject(t, map[string]string{"ok/f": "f", "full/sub/f": "f", "full/g": "g", "denied/h": "h"})
	fail := make(chan bool, 1)
	fail <- true
	failing := func() bool { v := <-fail; fail <- v; return v }
	p.start(func(c *Config) {
		c.addHook = func(path string) error {
			switch {
			case !failing():
			case strings.HasSuffix(path, "/full"):
				return syscall.ENOSPC
			case strings.HasSuffix(path, "/denied"):
				return syscall.EACCES
			}
			return nil
		}
	})
	a := p.query()
	if !slices.Equal(a.Unwatched, []string{"denied", "full"}) {
		t.Fatalf("Unwatched %q, want [denied full]", a.Unwatched)
	}
	if st, err := Status(p.store, time.Second); err != nil || st.Failed != 2 {
		t.Fatalf("status %+v, %v", st, err)
	}
	p.write("full/g", "changed") // no event: covered by Unwatched only
	p.write("full/sub/f", "changed")
	a = p.query()
	if !covers(a, "full/g") || !covers(a, "full/sub/f") || a.All {
		t.Fatalf("%+v", a)
	}
	<-fail
	fail <- false
	// A chmod of a directory that could not be watched walks it again.
	p.must(os.Chmod(p.abs("denied"), 0o750))
	a = p.query()
	if !slices.Equal(a.Unwatched, []string{"full"}) || !slices.Equal(a.Trees, []string{"denied"}) {
		t.Fatalf("after the chmod: %+v", a)
	}
	// The others are tried again every retryEvery.
	p.inDaemon(func(d *daemon) { d.retry() })
	a = p.query()
	if len(a.Unwatched) != 0 || !slices.Equal(a.Trees, []string{"full"}) {
		t.Fatalf("after the retry: %+v", a)
	}
	p.write("full/g", "again")
	p.write("denied/h", "again")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"denied", "full"}) {
		t.Fatalf("after the retry: %+v", a)
	}
	p.checkWatches()
}

// A connection from another user is refused (the daemon is told here to
// expect another uid than this process's).
func TestOtherUserRefused(t *testing.T) {
	p := newProject(t, map[string]string{"f": "f"})
	p.start(nil)
	p.inDaemon(func(d *daemon) { d.uid.Store(int64(os.Getuid()) + 1) })
	start := time.Now()
	_, err := Query(p.store, p.token, 2*time.Second)
	if err == nil || errors.Is(err, ErrNotRunning) || time.Since(start) > time.Second {
		t.Fatalf("a refused query: %v after %v", err, time.Since(start))
	}
	if _, err := Status(p.store, 2*time.Second); err == nil {
		t.Fatal("a refused status succeeded")
	}
	p.inDaemon(func(d *daemon) { d.uid.Store(int64(os.Getuid())) })
	p.query()
}

// A directory made beneath one after the walk listed it and before its
// watch was added (the hook makes it just before) has no event: the walk
// finds it in its next round, and what changes in it is reported.
func TestDirectoryMadeDuringWalk(t *testing.T) {
	p := newProject(t, map[string]string{"x/f": "f"})
	var once atomic.Bool
	p.start(func(c *Config) {
		c.addHook = func(path string) error {
			if strings.HasSuffix(path, "/x") && once.CompareAndSwap(false, true) {
				if err := os.MkdirAll(filepath.Join(path, "late", "deeper"), 0o755); err != nil {
					return err
				}
			}
			return nil
		}
	})
	if !once.Load() {
		t.Fatal("the hook did not run")
	}
	p.write("x/late/deeper/f", "f")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"x/late/deeper"}) || len(a.Trees) != 0 {
		t.Fatalf("%+v", a)
	}
	p.checkWatches()
}

// An event of a removal or a move may be older than the tree on disk (the
// directory came back since, and was walked): the daemon looks at what is
// there now, and keeps watching it.
func TestStaleRemovalEvent(t *testing.T) {
	p := newProject(t, map[string]string{"a/b/f": "f"})
	p.start(nil)
	for _, op := range []fsnotify.Op{fsnotify.Rename, fsnotify.Remove} {
		p.inDaemon(func(d *daemon) {
			d.event(fsnotify.Event{Name: filepath.Join(p.root, "a", "b"), Op: op})
			d.drain()
		})
		if a := p.query(); a.All || !covers(a, "a/b/f") {
			t.Fatalf("%v: %+v", op, a)
		}
		p.write("a/b/f", "changed")
		if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a/b"}) {
			t.Fatalf("%v: a change after: %+v", op, a)
		}
		p.checkWatches()
	}
}

// A directory replaced without an event (a file system mounted on it, as
// the daemon is made to believe here) is found by the periodic audit,
// walked again and reported.
func TestAudit(t *testing.T) {
	p := newProject(t, map[string]string{"a/b/f": "f"})
	p.start(nil)
	p.inDaemon(func(d *daemon) {
		d.nodes["a/b"].id.ino++ // as if another directory were there now
		d.audit()
	})
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a"}) || !slices.Equal(a.Trees, []string{"a/b"}) {
		t.Fatalf("%+v", a)
	}
	p.checkWatches()
	p.inDaemon(func(d *daemon) { d.audit() })
	if a := p.query(); a.All || len(a.Dirs)+len(a.Trees) != 0 {
		t.Fatalf("a second audit: %+v", a)
	}
}

// A query while the daemon cannot sync in time (its loop is held) gets All
// with a valid token, within the client's timeout.
func TestSyncTimeout(t *testing.T) {
	p := newProject(t, map[string]string{"a/f": "f"})
	hold := make(chan struct{})
	var once atomic.Bool
	p.start(func(c *Config) {
		c.eventHook = func(ev fsnotify.Event) {
			if strings.HasSuffix(ev.Name, "/a/f") && once.CompareAndSwap(false, true) {
				<-hold
			}
		}
	})
	released := false
	defer func() {
		if !released {
			close(hold)
		}
	}()
	p.write("a/f", "changed")
	start := time.Now()
	a, err := Query(p.store, p.token, 500*time.Millisecond)
	if took := time.Since(start); took > 600*time.Millisecond {
		t.Errorf("Query took %v", took)
	}
	if err != nil || !a.All {
		t.Fatalf("%+v, %v", a, err)
	}
	close(hold)
	released = true
	p.token = a.Token
	p.write("a/g", "g")
	if a := p.query(); a.All || !slices.Equal(a.Dirs, []string{"a"}) {
		t.Fatalf("%+v", a)
	}
}

// ~300 random changes in batches: after each batch, every path that
// differs from the previous batch's snapshot of the tree is covered by the
// answer, and the daemon's watches are those of the directories a capture
// enters.
func TestRandomChanges(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WATCH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (WATCH_SEED to repeat)", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	p := newProject(t, map[string]string{"a/f1": "1", "b/c/f2": "2", ".gitignore": "*.log\n", "d/x.log": "log"})
	p.start(func(c *Config) { c.Logf = nil })
	prev := snapshot(t, p.root)
	names := []string{"a", "b", "c", "d", "e"}
	files := []string{"f1", "f2", "x.log", "y.txt"}
	rules := []string{"", "a/\n", "*.log\n", "c\n", "b/\n!b/\n", "/d/\n", "e/*\n", "*.txt\n"}
	pick := func(dirsOnly bool) string { // an existing path, "" the root
		var all []string
		for path, e := range prev {
			if !dirsOnly || e.mode.IsDir() {
				all = append(all, path)
			}
		}
		slices.Sort(all)
		if dirsOnly {
			all = append(all, "")
		}
		if len(all) == 0 {
			return "a" // (not there: the change fails) never "", the root
		}
		return all[r.IntN(len(all))]
	}
	join := func(dir, name string) string {
		if dir == "" {
			return name
		}
		return dir + "/" + name
	}
	var alls, reported int
	for batch := 0; batch < 30; batch++ {
		var did []string
		for range 10 {
			dir, target := pick(true), pick(false)
			var err error
			switch op := r.IntN(14); op {
			case 0, 1: // create or overwrite a file
				path := join(dir, files[r.IntN(len(files))])
				err = os.WriteFile(p.abs(path), []byte(strconv.Itoa(r.IntN(1000))), 0o644)
				did = append(did, "write "+path)
			case 2: // modify in place
				var f *os.File
				if f, err = os.OpenFile(p.abs(target), os.O_WRONLY|os.O_APPEND, 0); err == nil {
					f.WriteString("+")
					f.Close()
				}
				did = append(did, "append "+target)
			case 3: // chmod
				mode := os.FileMode(0o644)
				if e, ok := prev[target]; ok && e.mode.IsDir() {
					mode = 0o755
					if r.IntN(2) == 0 {
						mode = 0o700
					}
				} else if r.IntN(2) == 0 {
					mode = 0o755
				}
				err = os.Chmod(p.abs(target), mode)
				did = append(did, "chmod "+target)
			case 4: // delete
				err = os.RemoveAll(p.abs(target))
				did = append(did, "rm -r "+target)
			case 5, 6: // rename (a file or a directory) within or across directories
				to := join(dir, names[r.IntN(len(names))])
				if to != target && !strings.HasPrefix(to, target+"/") {
					err = os.Rename(p.abs(target), p.abs(to))
				}
				did = append(did, "mv "+target+" "+to)
			case 7, 8: // nested directories with a file
				path := join(join(join(dir, names[r.IntN(len(names))]), names[r.IntN(len(names))]), names[r.IntN(len(names))])
				if err = os.MkdirAll(p.abs(path), 0o755); err == nil {
					err = os.WriteFile(p.abs(join(path, files[r.IntN(len(files))])), []byte("n"), 0o644)
				}
				did = append(did, "mkdir -p "+path)
			case 9: // replace by a file
				if err = os.RemoveAll(p.abs(target)); err == nil {
					err = os.WriteFile(p.abs(target), []byte("replaced"), 0o644)
				}
				did = append(did, "replace by a file "+target)
			case 10: // replace by a symlink
				if err = os.RemoveAll(p.abs(target)); err == nil {
					err = os.Symlink("../"+names[r.IntN(len(names))], p.abs(target))
				}
				did = append(did, "replace by a symlink "+target)
			case 11, 12: // ignore rules
				path := join(dir, ".gitignore")
				if r.IntN(3) == 0 {
					path = join(dir, ".snapignore")
				}
				err = os.WriteFile(p.abs(path), []byte(rules[r.IntN(len(rules))]), 0o644)
				did = append(did, "rules "+path)
			case 13: // a directory moved in from outside
				out := filepath.Join(t.TempDir(), "out")
				if err = os.MkdirAll(filepath.Join(out, "in", "deeper"), 0o755); err == nil {
					os.WriteFile(filepath.Join(out, "in", "deeper", "f1"), []byte("moved in"), 0o644)
					err = os.Rename(out, p.abs(join(dir, names[r.IntN(len(names))])))
				}
				did = append(did, "moved in "+dir)
			}
			_ = err // changes that cannot be made (a rename onto a directory, say) are skipped
		}
		a := p.query()
		if a.All {
			alls++
			t.Logf("batch %d: All: %s", batch, a.Reason)
		}
		now := snapshot(t, p.root)
		for path := range diff(prev, now) {
			q := path
			// Beneath a directory that is gone: the directory's own entry
			// is what changed.
			for {
				dir := parentOf(q)
				if dir == "" {
					break
				}
				if e, ok := now[dir]; ok && e.mode.IsDir() {
					break
				}
				q = dir
			}
			if !covers(a, q) {
				t.Errorf("batch %d: %s changed (as %s), not covered by %+v\nchanges: %q", batch, path, q, a, did)
			}
		}
		reported += len(a.Dirs) + len(a.Trees)
		p.checkWatches()
		if t.Failed() {
			t.FailNow()
		}
		prev = now
	}
	if alls > 0 {
		t.Errorf("%d of 30 answers were All", alls)
	}
	t.Logf("%d directories reported in 30 answers", reported)
}

// entry is a path's state in a snapshot.
type entry struct {
	mode os.FileMode
	size int64
	sum  [32]byte
}

// snapshot walks the tree (all of it but .snap and .git): path → entry.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		if rel == ".snap" || rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode(), size: fi.Size()}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.sum = sha256.Sum256(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			e.sum = sha256.Sum256([]byte(target))
		case fi.IsDir():
			e.size = 0
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diff returns the paths whose entries differ between two snapshots.
func diff(a, b map[string]entry) map[string]bool {
	out := map[string]bool{}
	for p, e := range a {
		if f, ok := b[p]; !ok || f != e {
			out[p] = true
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out[p] = true
		}
	}
	return out
}

// checkWatches checks, in the daemon's loop, that every directory a
// capture enters is watched (or beneath one reported unwatched), under its
// own path in fsnotify's registry and on its inode in the kernel's, and
// that nothing else is watched.
func (p *project) checkWatches() {
	p.t.Helper()
	var problems []string
	p.inDaemon(func(d *daemon) {
		dirs, ignored, err := worktree.Dirs(d.root, d.store, "")
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		unwatchedAbove := func(x string) bool {
			for n := d.nodes[x]; n != nil; n = n.parent {
				if n.why != "" {
					return true
				}
			}
			for q := x; q != ""; {
				q = parentOf(q)
				if n := d.nodes[q]; n != nil && n.why != "" {
					return true
				}
			}
			return false
		}
		want := map[string]bool{d.store: true}
		for _, x := range dirs {
			n := d.nodes[x]
			if n != nil && n.watched && n.why == "" {
				want[d.abs(x)] = true
				continue
			}
			if !unwatchedAbove(x) {
				problems = append(problems, fmt.Sprintf("%q is neither watched nor reported unwatched", x))
			}
		}
		for _, x := range ignored {
			if !unwatchedAbove(x) {
				problems = append(problems, fmt.Sprintf("ignored %q is not reported unwatched", x))
			}
		}
		got := map[string]bool{}
		for _, w := range watchList(d) {
			got[w] = true
		}
		for w := range want {
			if !got[w] {
				problems = append(problems, fmt.Sprintf("%s is not in fsnotify's watch list", w))
			}
		}
		for w := range got {
			if !want[w] {
				problems = append(problems, fmt.Sprintf("%s is watched, and need not be", w))
			}
		}
		inodes, err := kernelWatches()
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		wantInodes := map[uint64]bool{}
		for w := range want {
			var st syscall.Stat_t
			if err := syscall.Lstat(w, &st); err != nil || !inodes[st.Ino] {
				problems = append(problems, fmt.Sprintf("%s (inode %d) has no watch in the kernel (%v)", w, st.Ino, err))
			}
			wantInodes[st.Ino] = true
		}
		for ino := range inodes {
			if !wantInodes[ino] {
				where := "not in the tree"
				filepath.WalkDir(d.root, func(path string, de fs.DirEntry, err error) error {
					var st syscall.Stat_t
					if err == nil && syscall.Lstat(path, &st) == nil && st.Ino == ino {
						where = path
					}
					return nil
				})
				problems = append(problems, fmt.Sprintf("the kernel watches inode %d (%s), which need not be", ino, where))
			}
		}
	})
	for _, pr := range problems {
		p.t.Error(pr)
	}
}

// watchList is fsnotify's list of watched paths, read as watchOps adds a
// watch: fsnotify may be waiting, holding the lock WatchList takes, to
// send the loop an error.
func watchList(d *daemon) []string {
	done := make(chan []string)
	go func() { done <- d.w.WatchList() }()
	for {
		select {
		case list := <-done:
			return list
		case err := <-d.w.Errors:
			d.werrs = append(d.werrs, err)
		}
	}
}

// kernelWatches returns the inodes the inotify instances of this process
// watch, from /proc/self/fdinfo.
func kernelWatches() (map[uint64]bool, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	inodes := map[uint64]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err != nil || link != "anon_inode:inotify" {
			continue
		}
		data, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "inotify wd:") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "ino:"); ok {
					ino, err := strconv.ParseUint(v, 16, 64)
					if err != nil {
						return nil, err
					}
					inodes[ino] = true
				}
			}
		}
	}
	return inodes, nil
}
