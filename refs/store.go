package refs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/storage/fsstore"
)

// defaultLockTimeout bounds how long Update and Delete wait for another
// live writer to release refs.lock before failing with ErrBusy.
const defaultLockTimeout = 5 * time.Second

// refsLockName is the file whose flock(2) serialises ref writers.
const refsLockName = storage.RefsLock

// refFileSize is the exact size of a ref file: 64 hex digits and "\n".
const refFileSize = 2*objects.IDSize + 1

// Store gives access to the refs and the op log of one store: a store
// directory (Open, OpenFS) or any storage.Refs (OpenStorage). A Store is
// safe for concurrent use by many goroutines, and any number of processes
// may use the same store directory at once (see doc.go).
type Store struct {
	be      storage.Refs // every read and write of refs, the op log and the lists
	dir     string       // the store directory; "" when not on disk
	refsDir string

	lockTimeout  time.Duration // see defaultLockTimeout; tests shorten it
	oplogTimeout time.Duration // see defaultOplogTimeout; tests shorten it
	appendMu     sync.Mutex    // orders this Store's appenders before they take the flock

	// checked: marks whose prefix OpsAfter checksummed against the log,
	// kept once RememberMarks was called (see there).
	checkedMu sync.Mutex
	checked   map[Mark]bool
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
	be, err := fsstore.OpenRefs(vfs, dir)
	if err != nil {
		return nil, fmt.Errorf("refs: open: %w", err)
	}
	s := OpenStorage(be)
	s.dir, s.refsDir = dir, filepath.Join(dir, "refs")
	return s, nil
}

// OpenStorage returns the Store kept in be (an in-memory store, or any
// other storage.Refs).
func OpenStorage(be storage.Refs) *Store {
	return &Store{be: be, lockTimeout: defaultLockTimeout, oplogTimeout: defaultOplogTimeout}
}

// Locks returns the store's lock table: the locks of package storage
// (gc.lock, move.lock, ...) live with the store that holds the refs.
func (s *Store) Locks() storage.Locker { return s.be.Locks() }

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
// means the ref must not exist yet. new must not be zero (use Delete). It is
// Commit of one change without a record: an operation of the engine moves
// its refs with Commit, which records it (TestOneWritePath); Update, Delete
// and Append are for tests and tools.
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
	return s.Commit(context.Background(), []RefChange{{Name: name, Old: old, New: new}}, nil)
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
	return s.Commit(context.Background(), []RefChange{{Name: name, Old: old}}, nil)
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
	var refs []Ref
	var bad []error
	var inner error // an error below base (the walk stops)
	err := s.be.WalkRefs(base, func(name string, isDir bool, err error) error {
		if err != nil {
			inner = err
			return err
		}
		if isDir {
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
			inner = err
			return err
		}
		return nil
	})
	if err != nil && inner == nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, storage.ErrNotDir)) {
		err = nil // no refs under base
	}
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
	b, err := s.be.ReadRef(name)
	if err != nil {
		return objects.ID{}, s.readErr(name, err)
	}
	return parseRefFile(name, b)
}

// readErr maps an error of storage.Refs.ReadRef to read's.
func (s *Store) readErr(name string, err error) error {
	var bad *storage.BadEntryError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNoRef
	case errors.Is(err, storage.ErrRefDir):
		return errIsDir
	case errors.As(err, &bad):
		return &CorruptError{Path: "refs/" + name, Reason: bad.Reason}
	}
	return fmt.Errorf("refs: read %q: %w", name, err)
}

// parseRefFile decodes the content of ref name's file, or describes its
// damage.
func parseRefFile(name string, b []byte) (objects.ID, error) {
	if len(b) > refFileSize+1 {
		b = b[:refFileSize+1] // as much as a reader of 66 bytes sees
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

// cas is the locked compare-and-swap behind Update (new non-zero) and Delete
// (new zero). name has been validated.
func (s *Store) cas(ctx context.Context, verb, name string, old, new objects.ID) error {
	var cur objects.ID
	var conflict, bad error // from the callback: returned as they are
	err := s.be.UpdateRef(ctx, name, !new.IsZero(), s.lockTimeout, func(b []byte, err error) ([]byte, error) {
		cur = objects.ID{}
		switch {
		case err == nil:
			id, err := parseRefFile(name, b)
			if err != nil {
				bad = err
				return nil, err
			}
			cur = id
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, storage.ErrRefDir):
			bad = fmt.Errorf("refs: %s %q: %w: name is a directory holding other refs", verb, name, ErrBadName)
			return nil, bad
		default:
			bad = s.readErr(name, err)
			return nil, bad
		}
		if cur != old {
			conflict = &ConflictError{Name: name, Expected: old, Actual: cur}
			return nil, conflict
		}
		if new.IsZero() {
			return nil, nil
		}
		buf := make([]byte, 0, refFileSize)
		buf = hex.AppendEncode(buf, new[:])
		return append(buf, '\n'), nil
	})
	var coll *storage.CollisionError
	switch {
	case err == nil:
		return nil
	case conflict != nil && err == conflict, bad != nil && err == bad:
		return err
	case errors.As(err, &coll):
		return fmt.Errorf("refs: %w %q: collides with ref %q", ErrBadName, name, coll.With)
	case errors.Is(err, storage.ErrNotDurable):
		return fmt.Errorf("refs: %s %q: %w", verb, name, err)
	}
	return fmt.Errorf("refs: %s %q: %w", verb, name, err)
}

// SetLockTimeout bounds the waits for the ref and op-log locks by d
// instead of their defaults (5 s and 30 s); d <= 0 keeps them. Call it
// before the store is used.
func (s *Store) SetLockTimeout(d time.Duration) {
	if d > 0 {
		s.lockTimeout, s.oplogTimeout = d, d
	}
}

// refPath is the file of ref name in a store on disk (tests).
func (s *Store) refPath(name string) string {
	return filepath.Join(s.refsDir, filepath.FromSlash(name))
}
