package watch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/internal/flock"
)

// Answer is the daemon's reply to a query.
type Answer struct {
	// Token is the daemon's state now; pass it as since next time.
	Token string `json:"token"`
	// All: the daemon cannot vouch for anything; scan everything.
	All bool `json:"all"`
	// Dirs are directories (slash-separated, relative to the root; "" is
	// the root) whose own entries (names, file contents, modes, links) may
	// have changed since the token queried.
	Dirs []string `json:"dirs"`
	// Trees are directories beneath which anything may have changed
	// (created, moved in, un-ignored, watch re-added). No entry of Dirs
	// or Trees lies beneath an entry of Trees.
	Trees []string `json:"trees"`
	// Unwatched are the top-most directories the daemon does not watch
	// (ignored by the rules on disk, holding a snap store, unreadable, or
	// a watch could not be added): nothing beneath them is vouched for.
	Unwatched []string `json:"unwatched"`
	// Reason says why All, for --status and debugging.
	Reason string `json:"reason,omitempty"`
}

// State is what Status reports of a running daemon.
type State struct {
	Pid      int       `json:"pid"`     // the daemon's process
	Root     string    `json:"root"`    // the project root it watches
	StoreDir string    `json:"store"`   // its store
	Socket   string    `json:"socket"`  // the socket it listens on
	Started  time.Time `json:"started"` // when it started
	// Watches is the number of directories watched (the store included).
	Watches int `json:"watches"`
	// Unwatched is the number of directories reported unwatched
	// (Answer.Unwatched), Failed the part of them a watch could not be
	// added to (retried every RetryEvery).
	Unwatched int `json:"unwatched"`
	Failed    int `json:"failed"`
	// UnwatchedDirs says why of the first 100 unwatched directories:
	// "\"path\": reason".
	UnwatchedDirs []string `json:"unwatched_dirs,omitempty"`
	// Queries is the number of queries answered, LastQuery the time of
	// the last.
	Queries   uint64    `json:"queries"`
	LastQuery time.Time `json:"last_query,omitzero"`
	// Epoch is the current epoch, EpochReason why it began ("just
	// started", "event queue overflowed", ...), Token the current token.
	Epoch       string `json:"epoch"`
	EpochReason string `json:"epoch_reason"`
	Token       string `json:"token"`
	// Overflows counts the event queue overflows (and errors that could
	// not be attributed), each a new epoch; LastOverflow is the last one's
	// time.
	Overflows    int       `json:"overflows"`
	LastOverflow time.Time `json:"last_overflow,omitzero"`
}

// request is the one line a client writes.
type request struct {
	Op    string `json:"op"` // "query", "status" or "stop"
	Since string `json:"since,omitempty"`
	// WaitMs bounds how long the daemon may take to answer a query
	// (the client's remaining time less a margin).
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Env: the caller's variables that locate git's global excludes file
	// (see gitEnv); the rules a capture honours depend on them.
	Env []string `json:"env,omitempty"`
}

// reply is the one line the daemon writes back.
type reply struct {
	Answer   *Answer `json:"answer,omitempty"`
	State    *State  `json:"state,omitempty"`
	Stopping bool    `json:"stopping,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// maxLine bounds a request or a reply line.
const (
	maxRequest = 1 << 20
	maxReply   = 256 << 20
)

// Query asks the daemon of the store at storeDir what changed since token
// since ("" = never: All). It never waits longer than timeout in total
// (dial + sync + reply); any failure (no daemon, dead, hung, garbage) is
// an error, and the caller then scans everything. An error wraps
// ErrNotRunning when no daemon listens.
func Query(storeDir, since string, timeout time.Duration) (*Answer, error) {
	deadline := time.Now().Add(timeout)
	// Leave the daemon's answer a margin to travel back before the deadline.
	wait := timeout - min(timeout/5, 50*time.Millisecond)
	rep, err := roundTrip(storeDir, request{Op: "query", Since: since, WaitMs: max(wait.Milliseconds(), 1), Env: gitEnv()}, deadline)
	if err != nil {
		return nil, err
	}
	a := rep.Answer
	if a == nil {
		return nil, errors.New("watch: the daemon's reply holds no answer")
	}
	if err := checkAnswer(a); err != nil {
		return nil, err
	}
	return a, nil
}

// checkAnswer refuses an answer that is not well formed.
func checkAnswer(a *Answer) error {
	if _, _, ok := parseToken(a.Token); !ok {
		return fmt.Errorf("watch: the daemon answered a malformed token %q", a.Token)
	}
	for _, list := range [][]string{a.Dirs, a.Trees, a.Unwatched} {
		for _, p := range list {
			if p != "" && (!filepath.IsLocal(p) || path.Clean(p) != p) {
				return fmt.Errorf("watch: the daemon answered a malformed path %q", p)
			}
		}
	}
	return nil
}

// Status asks the running daemon of the store at storeDir for its state
// (pid, root, started, watches, unwatched count, queries answered, epoch,
// last overflow), waiting at most timeout.
func Status(storeDir string, timeout time.Duration) (*State, error) {
	rep, err := roundTrip(storeDir, request{Op: "status"}, time.Now().Add(timeout))
	if err != nil {
		return nil, err
	}
	if rep.State == nil {
		return nil, errors.New("watch: the daemon's reply holds no state")
	}
	return rep.State, nil
}

// Stop asks the daemon of the store at storeDir to exit and waits until it
// has (it has released <store>/watch.lock), at most timeout in all.
func Stop(storeDir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	rep, err := roundTrip(storeDir, request{Op: "stop"}, deadline)
	if err != nil {
		return err
	}
	if !rep.Stopping {
		return errors.New("watch: the daemon did not agree to stop")
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return fmt.Errorf("watch: the daemon did not exit within %v", timeout)
	}
	f, err := flock.Lock{Path: filepath.Join(absPath(storeDir), lockName), Timeout: wait, Busy: ErrRunning}.Acquire(context.Background())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // the store is gone, and the daemon with it
		}
		return fmt.Errorf("watch: the daemon did not exit within %v: %w", timeout, err)
	}
	f.Close()
	return nil
}

// roundTrip sends req to the daemon of the store and reads its reply, all
// before deadline.
func roundTrip(storeDir string, req request, deadline time.Time) (*reply, error) {
	sock, dir, err := socketPath(storeDir)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if err := checkSocketDir(dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w (%v)", ErrNotRunning, err)
			}
			return nil, err
		}
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.Dial("unix", sock)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (%v)", ErrNotRunning, err)
		}
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	// The daemon must be the user's own: another's could claim that
	// nothing changed.
	if uid, err := peerUID(conn); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	} else if uid != os.Getuid() {
		return nil, fmt.Errorf("watch: the socket %s is served by uid %d, not this user", sock, uid)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("watch: send: %w", err)
	}
	data, err := readLine(conn, maxReply)
	if err != nil {
		return nil, fmt.Errorf("watch: no reply: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("watch: a reply that is not JSON: %w", err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("watch: the daemon: %s", rep.Error)
	}
	return &rep, nil
}

// readLine reads one line (its newline dropped) of at most limit bytes.
func readLine(r io.Reader, limit int) ([]byte, error) {
	line, err := bufio.NewReader(io.LimitReader(r, int64(limit)+1)).ReadBytes('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case err == io.EOF && len(line) > limit:
		return nil, errors.New("line too long")
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

// peerUID returns the uid of the process at the other end of a unix
// socket connection (SO_PEERCRED).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Uid), nil
}

// Files of the daemon in the store.
const (
	lockName     = "watch.lock"
	sockName     = "watch.sock"
	cookiePrefix = "watch-cookie-"
)

// maxSocketPath: a longer socket path does not fit sockaddr_un (108 bytes
// with its NUL); the socket then lives in a directory of the user's under
// os.TempDir().
const maxSocketPath = 100

// absPath is p made absolute and clean.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// socketPath returns the daemon's socket for the store at storeDir:
// <store>/watch.sock, or, when that is longer than maxSocketPath,
// <tmp>/snap-watch-<uid>/<sha256 of the store's real path>.sock, with dir
// that directory (else "").
func socketPath(storeDir string) (sock, dir string, err error) {
	store := absPath(storeDir)
	if real, err := filepath.EvalSymlinks(store); err == nil {
		store = real // every spelling of the store finds one socket
	}
	sock = filepath.Join(store, sockName)
	if len(sock) <= maxSocketPath {
		return sock, "", nil
	}
	sum := sha256.Sum256([]byte(store))
	dir = filepath.Join(os.TempDir(), "snap-watch-"+strconv.Itoa(os.Getuid()))
	sock = filepath.Join(dir, hex.EncodeToString(sum[:])+".sock")
	if len(sock) > maxSocketPath {
		return "", "", fmt.Errorf("watch: the socket path %s is too long for a unix socket", sock)
	}
	return sock, dir, nil
}

// checkSocketDir checks that dir, the directory of a socket outside the
// store, is a directory (not a symlink) that only this user can enter: no
// one else can have put a socket there.
func checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("watch: %s is not a directory of this user's that only it can enter (mode %v)", dir, fi.Mode())
	}
	return nil
}

// gitEnv returns the caller's variables that locate git's configuration
// and so its global excludes file (see worktree.Excludes), set ones only,
// in a fixed order: a daemon whose own differ cannot answer for it.
func gitEnv() []string {
	var env []string
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// parseToken splits a token "<epoch>:<seq>".
func parseToken(t string) (epoch string, seq uint64, ok bool) {
	epoch, s, found := strings.Cut(t, ":")
	if !found || len(epoch) != 16 {
		return "", 0, false
	}
	if _, err := hex.DecodeString(epoch); err != nil {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return epoch, seq, true
}
