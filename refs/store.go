package refs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
)

// defaultLockTimeout bounds how long Update and Delete wait for another
// live writer to release refs.lock before failing with ErrBusy.
const defaultLockTimeout = 5 * time.Second

// refsLockName is the file whose flock(2) serialises ref writers.
const refsLockName = "refs.lock"

// refFileSize is the exact size of a ref file: 64 hex digits and "\n".
const refFileSize = 2*objects.IDSize + 1

// Store gives access to the refs and the op log of one store directory.
// A Store is safe for concurrent use by many goroutines, and any number of
// processes may use the same store directory at once (see doc.go).
type Store struct {
	dir     string
	refsDir string
	fs      fsys.FS // every file operation but flock(2) goes through it

	lockTimeout  time.Duration // see defaultLockTimeout; tests shorten it
	oplogTimeout time.Duration // see defaultOplogTimeout; tests shorten it
	appendMu     sync.Mutex    // orders this Store's appenders before they take the flock
}

// Ref is a named pointer to an object.
type Ref struct {
	Name string
	ID   objects.ID
}

// Open opens the refs and op log of the store directory dir, which must exist.
// It creates dir/refs if missing (durably). It is OpenFS(dir, nil).
func Open(dir string) (*Store, error) { return OpenFS(dir, nil) }

// OpenFS is Open with every file operation on refs, lock files, the op log
// and the expired list made through vfs (nil means fsys.OS). The flock(2)
// calls on refs.lock and oplog.lock are always made directly: locks are not
// data.
func OpenFS(dir string, vfs fsys.FS) (*Store, error) {
	vfs = fsys.Or(vfs)
	fi, err := vfs.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("refs: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("refs: open %s: not a directory", dir)
	}
	s := &Store{dir: dir, refsDir: filepath.Join(dir, "refs"), fs: vfs, lockTimeout: defaultLockTimeout, oplogTimeout: defaultOplogTimeout}
	switch err := vfs.Mkdir(s.refsDir, 0o755); {
	case err == nil:
		if err := vfs.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("refs: open: %w", err)
		}
	case errors.Is(err, fs.ErrExist):
		fi, err := vfs.Stat(s.refsDir)
		if err != nil {
			return nil, fmt.Errorf("refs: open: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("refs: open %s: not a directory", s.refsDir)
		}
	default:
		return nil, fmt.Errorf("refs: open: %w", err)
	}
	return s, nil
}

// Get returns the id the ref name points at. It fails with ErrNotFound when
// the ref does not exist and with ErrCorrupt when its file is damaged.
func (s *Store) Get(name string) (objects.ID, error) {
	if err := ValidName(name); err != nil {
		return objects.ID{}, err
	}
	id, err := s.read(name)
	if errors.Is(err, errIsDir) || errors.Is(err, errNoRef) {
		return objects.ID{}, fmt.Errorf("refs: %q: %w", name, ErrNotFound)
	}
	return id, err
}

// Update atomically sets ref name to new if it currently holds old; a zero old
// means the ref must not exist yet. new must not be zero (use Delete).
//
// On mismatch nothing changes and the error is a *ConflictError (ErrConflict).
// If another writer holds refs.lock for longer than defaultLockTimeout (5 s), Update
// fails with ErrBusy. When Update returns nil the new value is durable: the
// ref file and its directory entry have been fsync'd. Concurrent Updates of
// one ref, from any goroutines or processes, are serialised by the lock file,
// so no update is ever lost.
//
// An I/O error before the rename that installs the new value leaves the ref
// at old: the Update can simply be repeated. One after it (an fsync of a
// directory) wraps ErrNotDurable: the ref reads as new, but that may not
// survive a crash; Update(name, new, new) makes it durable.
func (s *Store) Update(name string, old, new objects.ID) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if new.IsZero() {
		return fmt.Errorf("refs: update %q: new id is zero (use Delete)", name)
	}
	return s.cas(context.Background(), "update", name, old, new)
}

// Delete atomically removes ref name if it currently holds old, which must
// not be zero. Errors are as for Update (an error wrapping ErrNotDurable:
// the ref is gone, but that may not survive a crash). When Delete returns nil
// the removal is durable. Directories left empty are not removed.
func (s *Store) Delete(name string, old objects.ID) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if old.IsZero() {
		return fmt.Errorf("refs: delete %q: old id is zero", name)
	}
	return s.cas(context.Background(), "delete", name, old, objects.ID{})
}

// List returns the refs whose names start with prefix, sorted by name. The
// prefix is "" (all refs), whole components each followed by "/"
// ("sessions/"), optionally followed by the start of a component
// ("labels/re"). Files that are not refs (lock files, illegal names) are
// skipped. Damaged ref files are left out of the result and reported in the
// returned error, joined *CorruptError values (ErrCorrupt); the other refs are
// still returned. List sees each ref either before or after any concurrent
// update, never a partial value.
func (s *Store) List(prefix string) ([]Ref, error) {
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	base := prefix[:strings.LastIndexByte(prefix, '/')+1] // "" or ends in "/"
	root := filepath.Join(s.refsDir, filepath.FromSlash(base))
	var refs []Ref
	var bad []error
	err := fsys.WalkDir(s.fs, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(s.refsDir, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			if path == root {
				return nil
			}
			dirPrefix := name + "/"
			if ValidName(name) != nil ||
				!strings.HasPrefix(dirPrefix, prefix) && !strings.HasPrefix(prefix, dirPrefix) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(name, prefix) || ValidName(name) != nil {
			return nil // lock files and foreign files are not refs
		}
		id, err := s.read(name)
		switch {
		case err == nil:
			refs = append(refs, Ref{Name: name, ID: id})
		case errors.Is(err, errNoRef) || errors.Is(err, errIsDir): // deleted meanwhile
		case errors.Is(err, ErrCorrupt):
			bad = append(bad, err)
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("refs: list %q: %w", prefix, err)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	return refs, errors.Join(bad...)
}

var (
	errNoRef = errors.New("no ref")                  // internal: the ref file does not exist
	errIsDir = errors.New("name is a ref directory") // internal: the name is a directory of refs
)

// read returns the value of ref name, errNoRef, errIsDir, a *CorruptError,
// or an I/O error.
func (s *Store) read(name string) (objects.ID, error) {
	f, err := s.fs.OpenFile(s.refPath(name), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return objects.ID{}, errNoRef
		case isSymlinkLoop(err):
			return objects.ID{}, &CorruptError{Path: "refs/" + name, Reason: "ref is a symlink"}
		}
		return objects.ID{}, fmt.Errorf("refs: read %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return objects.ID{}, fmt.Errorf("refs: read %q: %w", name, err)
	}
	if fi.IsDir() {
		return objects.ID{}, errIsDir
	}
	if !fi.Mode().IsRegular() {
		return objects.ID{}, &CorruptError{Path: "refs/" + name, Reason: "ref is not a regular file"}
	}
	b, err := io.ReadAll(io.LimitReader(f, refFileSize+1))
	if err != nil {
		return objects.ID{}, fmt.Errorf("refs: read %q: %w", name, err)
	}
	id, reason := parseRef(b)
	if reason != "" {
		return objects.ID{}, &CorruptError{Path: "refs/" + name, Reason: reason}
	}
	return id, nil
}

// parseRef decodes the content of a ref file; reason is "" when valid.
func parseRef(b []byte) (id objects.ID, reason string) {
	if len(b) != refFileSize || b[refFileSize-1] != '\n' {
		return id, fmt.Sprintf("not 64 hex digits and a newline (%d bytes)", len(b))
	}
	for _, c := range b[:refFileSize-1] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return id, fmt.Sprintf("not 64 lowercase hex digits: %q", b[:refFileSize-1])
		}
	}
	hex.Decode(id[:], b[:refFileSize-1]) // cannot fail: checked above
	if id.IsZero() {
		return id, "holds the zero id"
	}
	return id, ""
}

func (s *Store) refPath(name string) string {
	return filepath.Join(s.refsDir, filepath.FromSlash(name))
}

// cas is the locked compare-and-swap behind Update (new non-zero) and Delete
// (new zero). name has been validated.
func (s *Store) cas(ctx context.Context, verb, name string, old, new objects.ID) error {
	path := s.refPath(name)
	parent := filepath.Dir(path)
	if new.IsZero() {
		// Delete never creates directories.
		fi, err := s.fs.Stat(parent)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("refs: %s %q: %w", verb, name, err) // not absence: I/O
		}
		if err != nil || !fi.IsDir() {
			return &ConflictError{Name: name, Expected: old}
		}
	} else if err := s.mkdirs(name, parent); err != nil {
		return err
	}

	// Ref writers are serialised by a flock(2) on refs.lock, which the
	// kernel drops if its holder dies. So a <ref>.lock file found while
	// holding it was left by a crashed writer, and is replaced.
	guard, err := flockWithin(ctx, filepath.Join(s.dir, refsLockName), s.lockTimeout)
	if err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	defer guard.Close()
	lockPath := path + ".lock"
	lock, err := s.createLock(lockPath)
	if err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	locked := true
	defer func() {
		if locked {
			lock.Close()
			s.fs.Remove(lockPath)
		}
	}()

	cur, err := s.read(name)
	switch {
	case errors.Is(err, errNoRef):
		cur = objects.ID{}
	case errors.Is(err, errIsDir):
		return fmt.Errorf("refs: %s %q: %w: name is a directory holding other refs", verb, name, ErrBadName)
	case err != nil:
		return err
	}
	if cur != old {
		return &ConflictError{Name: name, Expected: old, Actual: cur}
	}

	if new.IsZero() {
		if err := s.fs.Remove(path); err != nil {
			return fmt.Errorf("refs: %s %q: %w", verb, name, err)
		}
		lock.Close()
		locked = false
		if err := s.fs.Remove(lockPath); err != nil {
			// A stale lock file is harmless: the next writer replaces it.
			return fmt.Errorf("refs: %s %q: %w: %w", verb, name, ErrNotDurable, err)
		}
		return s.syncRefDirs(verb, name, parent, false)
	}

	buf := make([]byte, 0, refFileSize)
	buf = hex.AppendEncode(buf, new[:])
	buf = append(buf, '\n')
	if _, err := lock.Write(buf); err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	if err := lock.Sync(); err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	if err := lock.Close(); err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	if err := s.fs.Rename(lockPath, path); err != nil {
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	locked = false
	return s.syncRefDirs(verb, name, parent, cur.IsZero())
}

// syncRefDirs makes a ref's changed directory entry durable: it fsyncs
// parent and, when the ref is new (ancestors), every directory above it up
// to refs/. An error here comes after the change is in place: it wraps
// ErrNotDurable.
func (s *Store) syncRefDirs(verb, name, parent string, ancestors bool) error {
	if err := s.fs.SyncDir(parent); err != nil {
		return fmt.Errorf("refs: %s %q: %w: %w", verb, name, ErrNotDurable, err)
	}
	if ancestors {
		// A new ref may live in directories whose own entries are not yet
		// durable (created just now, here or by a concurrent writer): sync
		// every ancestor up to refs/.
		for d := parent; d != s.refsDir; {
			d = filepath.Dir(d)
			if err := s.fs.SyncDir(d); err != nil {
				return fmt.Errorf("refs: %s %q: %w: %w", verb, name, ErrNotDurable, err)
			}
		}
	}
	return nil
}

// mkdirs creates the directories leading to ref name (parent is its parent
// directory). A component that exists as a ref file is a name collision.
func (s *Store) mkdirs(name, parent string) error {
	if parent == s.refsDir {
		return nil
	}
	if fi, err := s.fs.Stat(parent); err == nil && fi.IsDir() {
		return nil // the common case: the directories exist
	}
	comps := strings.Split(name, "/")
	d := s.refsDir
	for i, c := range comps[:len(comps)-1] {
		d = filepath.Join(d, c)
		err := s.fs.Mkdir(d, 0o755)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("refs: %q: %w", name, err)
		}
		fi, err := s.fs.Lstat(d)
		if err != nil {
			return fmt.Errorf("refs: %q: %w", name, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("refs: %w %q: collides with ref %q", ErrBadName, name, strings.Join(comps[:i+1], "/"))
		}
	}
	return nil
}

// createLock creates lockPath exclusively. The caller holds refs.lock, so
// an existing lock file is stale (its writer crashed): it is removed.
func (s *Store) createLock(lockPath string) (fsys.File, error) {
	f, err := s.fs.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if err := s.fs.Remove(lockPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		f, err = s.fs.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	return f, err
}

// SetLockTimeout bounds the waits for the ref and op-log locks by d
// instead of their defaults (5 s and 30 s); d <= 0 keeps them. Call it
// before the store is used.
func (s *Store) SetLockTimeout(d time.Duration) {
	if d > 0 {
		s.lockTimeout, s.oplogTimeout = d, d
	}
}
