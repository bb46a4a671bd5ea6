package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// StoreDirName is the store's directory name at the project root.
const StoreDirName = ".snap"

// DefaultSession is the session used when none is named.
const DefaultSession = "default"

// Options locate a project and its store.
type Options struct {
	// Dir is the project directory, or any directory inside it. Empty means
	// the current directory.
	Dir string
	// Store is an explicit store path. Empty means the nearest ancestor of
	// Dir holding .snap/, or Dir/.snap for Init.
	Store string
	// FS is the file system of every file in the store (packs, refs, op
	// log, stat cache, config, move journal); nil is the real one
	// (fsys.OS). Locks are always taken directly. Fault-injection tests
	// pass an fsys.Faulty.
	FS fsys.FS
	// Sys makes the directory-relative system calls that read and change
	// the working tree (capture and restore); nil is the kernel
	// (fsys.RealSys).
	Sys fsys.Sys
	// LockTimeout bounds every wait for a lock another snap process holds
	// (a gc sweep, writers for a gc, a rewind in progress), after which
	// the operation fails with ErrBusy; 0 is DefaultLockTimeout (60 s). A
	// hook that must never block its agent sets a short one.
	LockTimeout time.Duration
	// Clock is the time checkpoints and op-log records are stamped with,
	// and retention measures by; nil is time.Now (tests pass a fake one).
	Clock func() time.Time
	// OnComplete, when set, is told of each move (a rewind, undo, edit
	// commit...) that a killed or interrupted process left part way and
	// this one completed before its own operation, with the checkpoint of
	// what it found on disk, if it recorded one (InterruptedMove.Found):
	// a front-end says so, since the completion overwrote that work.
	OnComplete func(InterruptedMove)
	// LongRunning: the process keeps the repository open for long (a
	// server, a daemon). The store then reads its pack indexes into memory
	// rather than mapping them (objects.Store.ReadIndexes), so a pack
	// damaged in place under it fails a request instead of the process,
	// and every history read checks the op log's bytes before the mark of
	// a session's index again (refs.Store.RememberMarks) rather than once.
	LongRunning bool
}

// The environment every front-end honours (see Options.FromEnv, SessionFromEnv
// and Repo.AutoGCDue).
const (
	EnvSession     = "SNAP_SESSION"      // the session when none is named
	EnvStore       = "SNAP_STORE"        // the store when none is given
	EnvLockTimeout = "SNAP_LOCK_TIMEOUT" // Options.LockTimeout, as a duration ("5s", "200ms")
	EnvNoAutoGC    = "SNAP_NO_AUTO_GC"   // set (but not to 0, false, no or off): never start an automatic gc
)

// FromEnv returns o with what it leaves unset taken from the environment:
// Store from $SNAP_STORE (a relative path is taken from Dir, else from the
// current directory), LockTimeout from $SNAP_LOCK_TIMEOUT (a duration,
// "5s", or a number of seconds, "5"; ignored when it does not parse).
func (o Options) FromEnv() Options {
	if o.Store == "" {
		o.Store = os.Getenv(EnvStore)
	}
	if o.LockTimeout == 0 {
		v := os.Getenv(EnvLockTimeout)
		if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
			o.LockTimeout = time.Duration(n * float64(time.Second))
		} else if d, err := ParseDuration(v); err == nil && d > 0 {
			o.LockTimeout = d
		}
	}
	if o.Store != "" && !filepath.IsAbs(o.Store) {
		base, err := filepath.Abs(o.Dir) // "" is the current directory
		if err == nil {
			o.Store = filepath.Join(base, o.Store)
		}
	}
	return o
}

// SessionFromEnv returns name, else $SNAP_SESSION, else DefaultSession.
func SessionFromEnv(name string) string {
	if name != "" {
		return name
	}
	if s := os.Getenv(EnvSession); s != "" {
		return s
	}
	return DefaultSession
}

// DefaultLockTimeout is Options.LockTimeout's default.
const DefaultLockTimeout = gc.DefaultLockTimeout

// Repo is an open project: its working tree and its store. A Repo is safe
// for concurrent use; several processes may open the same store at once.
type Repo struct {
	Root     string // project root, absolute
	StoreDir string // store directory, absolute

	objects *objects.Store
	refs    *refs.Store
	// lockTimeout: Options.LockTimeout, defaulted.
	lockTimeout time.Duration
	clock       func() time.Time // Options.Clock, defaulted
	onComplete  func(InterruptedMove)
	config      Config
	fs          fsys.FS  // never nil
	sys         fsys.Sys // nil: the kernel
	// kept: the sessions' indexes this Repo derived last, each as of its
	// mark (sessionindex.go), unless it runs long (Options.LongRunning).
	keptMu sync.Mutex
	kept   map[string]*sessionIndex
}

// Config is the store's settings file (StoreDir/config, JSON).
type Config struct {
	Version int `json:"version"`
	// Root is the project root the store belongs to (absolute), recorded
	// at init. It binds an external store to one project; a store inside
	// the project belongs to the directory holding it wherever that moves.
	Root           string `json:"root,omitempty"`
	MaxFileSize    int64  `json:"max_file_size,omitempty"`   // capture.max-file-size
	GCGrace        string `json:"gc_grace,omitempty"`        // gc.grace
	KeepLast       *int   `json:"keep_last,omitempty"`       // retention.keep-last
	KeepWithin     string `json:"keep_within,omitempty"`     // retention.keep-within
	ArchivedExpire string `json:"archived_expire,omitempty"` // retention.archived-expire
	TasksMaxDepth  int    `json:"tasks_max_depth,omitempty"` // tasks.max-depth
	GitAuthor      string `json:"git_author,omitempty"`      // git.author
	GitCommitOn    string `json:"git_commit_on,omitempty"`   // git.commit-on
	WatchAuto      bool   `json:"watch_auto,omitempty"`      // watch.auto
}

// locate finds the project root and the store. A store inside a project
// (<root>/.snap, found from Dir or any ancestor) belongs to the directory
// holding it. An external store (Options.Store) belongs to the root
// recorded in its config at init: Dir must lie inside that root, and the
// root, not Dir, is what every command captures and restores. With create
// (Init), an external store that exists and records another root is
// refused, and one that records none is given Dir.
func locate(opts Options, create bool) (root, store string, err error) {
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", "", err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(dir); err != nil {
		if opts.Dir != "" && errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("%w: -C %s does not exist", ErrUsage, opts.Dir)
		}
		return "", "", err
	} else if !fi.IsDir() {
		return "", "", fmt.Errorf("%w: %s is not a directory", ErrUsage, dir)
	}
	if opts.Store != "" {
		store := opts.Store
		if !filepath.IsAbs(store) {
			store = filepath.Join(dir, store)
		}
		store = filepath.Clean(store)
		root, exists, err := recordedRoot(fsys.Or(opts.FS), store)
		switch {
		case err != nil:
			return "", "", err
		case !exists && !create:
			return "", "", fmt.Errorf("%w at %s", ErrNoStore, store)
		case root == "" && create:
			return realPath(dir), store, nil
		case root == "":
			return "", "", Advise(fmt.Errorf("%w: store %s does not record its project root (made by an older snap): initialising it again in the project root records it", ErrOtherProject, store), Advice{Do: DoInit})
		case !within(dir, root):
			if create {
				return "", "", Advise(fmt.Errorf("%w: store %s was made for project %s", ErrOtherProject, store, root), Advice{Do: DoInitOwnStore})
			}
			return "", "", fmt.Errorf("%w: %s is outside project %s, which store %s belongs to", ErrOtherProject, dir, root, store)
		}
		return root, store, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, StoreDirName)); err == nil && fi.IsDir() {
			return d, filepath.Join(d, StoreDirName), nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if create {
		return dir, filepath.Join(dir, StoreDirName), nil
	}
	return "", "", fmt.Errorf("%w in %s or any parent", ErrNoStore, dir)
}

// recordedRoot is the project root a store's config records ("" when it
// records none) and whether the store exists.
func recordedRoot(vfs fsys.FS, store string) (string, bool, error) {
	data, err := fsys.ReadRegular(vfs, filepath.Join(store, "config"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return "", true, fmt.Errorf("%w: store config: %v", objects.ErrCorrupt, err)
	}
	return c.Root, true, nil
}

// within reports whether dir is root or lies beneath it, as the file
// system resolves both (a symlink on the way is followed: the same
// directory reached two ways is one, and a symlink repointed elsewhere is
// not the root any more).
func within(dir, root string) bool {
	rel, err := filepath.Rel(realPath(root), realPath(dir))
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// realPath is p with every symlink resolved (p itself when that fails).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Init creates the store if needed (idempotent) and opens it, recording the
// project root in it. In a git repository it adds the store to
// .git/info/exclude. It reports whether the store was created.
func Init(opts Options) (*Repo, bool, error) {
	root, store, err := locate(opts, true)
	if err != nil {
		return nil, false, err
	}
	created := false
	vfs := fsys.Or(opts.FS)
	if _, err := vfs.Stat(filepath.Join(store, "config")); errors.Is(err, fs.ErrNotExist) {
		if err := vfs.MkdirAll(store, 0o755); err != nil {
			return nil, false, err
		}
		if err := fsys.WriteFileAtomic(vfs, filepath.Join(store, "config"), mustJSON(Config{Version: 1, Root: root})); err != nil {
			return nil, false, err
		}
		created = true
	}
	if err := excludeFromGit(root, store); err != nil {
		return nil, false, err
	}
	r, err := openAt(root, store, opts)
	if err == nil && r.config.Root == "" {
		// A store made before roots were recorded: record it now.
		c := r.config
		c.Root = root
		if err = fsys.WriteFileAtomic(vfs, filepath.Join(store, "config"), mustJSON(c)); err == nil {
			r.config = c
		}
	}
	return r, created, err
}

// Open opens an existing store.
func Open(opts Options) (*Repo, error) {
	root, store, err := locate(opts, false)
	if err != nil {
		return nil, err
	}
	return openAt(root, store, opts)
}

func openAt(root, store string, opts Options) (*Repo, error) {
	vfs := fsys.Or(opts.FS)
	data, err := fsys.ReadRegular(vfs, filepath.Join(store, "config"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoStore, store)
	}
	if err != nil {
		return nil, err
	}
	r := &Repo{Root: root, StoreDir: store, fs: vfs, sys: opts.Sys, lockTimeout: opts.LockTimeout, clock: opts.Clock, onComplete: opts.OnComplete}
	if r.lockTimeout <= 0 {
		r.lockTimeout = DefaultLockTimeout
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	if err := json.Unmarshal(data, &r.config); err != nil {
		return nil, fmt.Errorf("%w: store config: %v", objects.ErrCorrupt, err)
	}
	if r.objects, err = objects.OpenFS(store, vfs); err != nil {
		return nil, err
	}
	if opts.LongRunning {
		r.objects.ReadIndexes()
	}
	if r.refs, err = refs.OpenFS(store, vfs); err != nil {
		return nil, err
	}
	if !opts.LongRunning {
		// A command reads a session's history once or twice: the log's
		// bytes before an index's mark are checksummed once, and what the
		// index says is kept (refs.Store.RememberMarks).
		r.refs.RememberMarks()
		r.kept = map[string]*sessionIndex{}
	}
	// An explicit bound (a hook's short SNAP_LOCK_TIMEOUT) bounds the ref
	// and op-log locks too.
	r.refs.SetLockTimeout(opts.LockTimeout)
	return r, nil
}

// Close releases the store's open files.
func (r *Repo) Close() error { return r.objects.Close() }

// Objects returns the object store (for gc, fsck and tests).
func (r *Repo) Objects() *objects.Store { return r.objects }

// Refs returns the ref store and op log.
func (r *Repo) Refs() *refs.Store { return r.refs }

// MaxFileSize is the capture size limit in force.
func (r *Repo) MaxFileSize() int64 {
	if r.config.MaxFileSize > 0 {
		return r.config.MaxFileSize
	}
	return worktree.DefaultMaxFileSize
}

// trashDir holds the files a rewind deleted or replaced, until
// EmptyTrash removes it (see worktree.RestoreOptions.Trash).
func (r *Repo) trashDir() string { return filepath.Join(r.StoreDir, "trash") }

// EmptyTrash deletes the files rewinds deleted or replaced (kept
// out of their way so that a rewind does not wait for the file system to
// free it) and reports how many files it removed. The CLI runs it in the
// background after a rewind, undo or redo, and in every gc; a program using
// the library should call it (e.g. in a goroutine) once a rewind is done.
func (r *Repo) EmptyTrash(ctx context.Context) (int, error) { return worktree.EmptyTrash(r.trashDir()) }

func (r *Repo) cachePath() string { return filepath.Join(r.StoreDir, "cache", "stat") }

// loadCache returns the stat cache, read on its first use (a capture the
// watch daemon says needs nothing reads none of it); a corrupt or
// unreadable cache is an empty cache.
func (r *Repo) loadCache() *index.Cache { return index.LoadLazy(r.fs, r.cachePath()) }

// excludeFromGit adds the store to .git/info/exclude when the project is a
// git repository and the store lies inside it.
func excludeFromGit(root, store string) error {
	// The work tree holding the project (it may be a subdirectory), and
	// its git directory: a .git directory, or a .git file naming one (a
	// linked worktree, whose info/exclude is the main repository's).
	top := root
	for {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			return nil
		}
		top = parent
	}
	gitDir := filepath.Join(top, ".git")
	if fi, err := os.Lstat(gitDir); err == nil && fi.Mode().IsRegular() {
		data, err := os.ReadFile(gitDir)
		target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
		if err != nil || !ok {
			return nil
		}
		if gitDir = strings.TrimSpace(target); !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(top, gitDir)
		}
		if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
			c := strings.TrimSpace(string(common))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			gitDir = c
		}
	}
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(top, store)
	if err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	line := "/" + filepath.ToSlash(rel) + "/"
	p := filepath.Join(gitDir, "info", "exclude")
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		data = append(data, '\n')
	}
	data = append(data, line+"\n"...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
