package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Blobs is a flat namespace of named, immutable blobs: what objects.Store
// keeps (its pack files). Names are chosen by the caller, usually from the
// content (a pack is named by the hash of its index), and must pass
// ValidName. Implementations are safe for concurrent use by many
// goroutines; the file-system one also by many processes.
type Blobs interface {
	// Create starts a new blob. Nothing is visible under any name until
	// the writer's Commit returns nil; kind is a hint for the temporary
	// name ("" or "repack-" for objects).
	Create(kind string) (BlobWriter, error)
	// Open opens blob name for reads at any offset (fs.ErrNotExist when
	// there is none). An open reader keeps reading the content it opened
	// after the blob is deleted or replaced.
	Open(name string) (BlobReader, error)
	// Stat describes blob name (fs.ErrNotExist when there is none).
	Stat(name string) (BlobInfo, error)
	// List returns the names of the blobs whose names start with prefix,
	// sorted. Temporary data of uncommitted writers is never listed.
	List(prefix string) ([]string, error)
	// Delete removes the named blobs (a missing one is no error) and
	// makes the removals durable. It returns the names it removed and the
	// errors joined; a failure to make them durable is reported after all
	// were removed.
	Delete(names ...string) (removed []string, err error)
}

// BlobWriter is a blob being written. Writes are buffered by the caller.
type BlobWriter interface {
	io.Writer
	// Commit makes everything written durable and visible as name, whole
	// or not at all: when it returns nil the blob survives a crash. A blob
	// of that name is replaced atomically (callers commit a name again
	// only with the same content, or to replace a damaged copy). An error
	// before the blob became visible leaves nothing visible; a file-system
	// store may report a failure to make its directory durable after the
	// blob became visible (a crash may then lose it).
	Commit(name string) error
	// Abort discards what was written; after Commit it does nothing.
	Abort()
}

// BlobReader reads a committed blob at offsets (pread).
type BlobReader interface {
	io.ReaderAt
	// Size is the blob's length in bytes.
	Size() (int64, error)
	Close() error
}

// Mapper is a BlobReader that can map a range of its blob into memory,
// read-only (mmap): the bytes stay valid until unmap is called, after the
// reader is closed and after the blob is deleted or replaced (blobs are
// immutable: never truncated or rewritten in place). The file-system store
// implements it for files on a real file system; a reader that cannot map
// returns an error, and callers read with ReadAt instead.
type Mapper interface {
	Map(off int64, n int) (data []byte, unmap func(), err error)
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Name    string
	Size    int64
	ModTime time.Time // when it was committed (a file's mtime)
}

// TempRemover is implemented by stores whose writers leave temporary data
// behind when they crash (the file-system one: files in tmp/).
type TempRemover interface {
	// RemoveTemps removes the temporary data for which stale says yes (it
	// is given the temporary name and its last modification), or with
	// dryRun only counts it; it returns how many and their bytes.
	RemoveTemps(stale func(name string, modTime time.Time) bool, dryRun bool) (n int, bytes int64, err error)
}

// ReadAll returns the whole content of blob name.
func ReadAll(b Blobs, name string) ([]byte, error) {
	r, err := b.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	size, err := r.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if _, err := r.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		return nil, err
	}
	return buf, nil
}

// Refs is what refs.Store keeps: ref values with compare-and-swap, and the
// store's small files (the op log, the move journal, the expired and
// foreign lists), plus the store's locks. Values are opaque bytes here;
// package refs encodes and checks them. Ref names are refs' (components
// joined by "/", already validated by the caller); file names pass
// ValidName.
type Refs interface {
	// ReadRef returns the value of ref name: an error wrapping
	// fs.ErrNotExist when it does not exist, ErrRefDir when name is a
	// directory of other refs, a *BadEntryError when what is stored under
	// the name cannot be a ref (a symlink, a special file). At most
	// MaxRefSize+1 bytes are returned.
	ReadRef(name string) ([]byte, error)
	// UpdateRef changes ref name atomically: under the ref's lock (waited
	// for at most timeout, then ErrBusy, or until ctx is done) it reads the
	// current value and calls fn with it (cur nil and err wrapping
	// fs.ErrNotExist when absent; any other err as ReadRef's). fn returns
	// the new value, nil to delete, or an error that UpdateRef returns
	// with nothing changed. With create false the ref is never created
	// (fn may be called without the lock when it cannot exist). A name
	// that would need a ref as a directory is a *CollisionError. An error
	// after the change is visible wraps ErrNotDurable. No two UpdateRefs
	// of one name, in any goroutine or process, interleave.
	UpdateRef(ctx context.Context, name string, create bool, timeout time.Duration, fn func(cur []byte, err error) ([]byte, error)) error
	// WalkRefs calls fn for every entry below the ref directory base (""
	// or a name ending in "/"): ref names relative to the ref root, parent
	// directories before their entries, in lexical order, as
	// fs.WalkDirFunc does (fs.SkipDir skips a directory). Entries that are
	// not refs (a file-system store's <ref>.lock files) are included: the
	// caller filters. A missing base is an error wrapping fs.ErrNotExist;
	// a base that is not a directory, ErrNotDir.
	WalkRefs(base string, fn func(name string, isDir bool, err error) error) error

	// ReadFile returns a whole small file (fs.ErrNotExist when absent; a
	// *BadEntryError, without blocking, when it is not a regular file).
	ReadFile(name string) ([]byte, error)
	// ReadFileAt calls fn with file name open for reads at any offset
	// and its size (errors as ReadFile's, without calling fn), and
	// returns fn's error: a reader of a log's new records reads only
	// those, and a check of the bytes before them needs no copy of all.
	ReadFileAt(name string, fn func(r io.ReaderAt, size int64) error) error
	// Exists reports whether file name exists.
	Exists(name string) bool
	// WriteFile durably replaces file name with data, atomically.
	WriteFile(name string, data []byte) error
	// AppendLines appends data to file name (created if missing) and makes
	// it durable; a file that does not end in "\n" gets one first.
	AppendLines(name string, data []byte) error
	// AppendLog appends one record to the log file name (created if
	// missing). The caller holds the log's lock (Locks). fn is given the
	// log's content and size and returns where its valid part ends (cut:
	// a torn tail from cut to size is removed first) and the record to
	// write. When AppendLog returns nil the record is durable; on error
	// the log is put back to cut (best effort: only if that fails too can
	// the record remain).
	AppendLog(name string, fn func(r io.ReaderAt, size int64) (cut int64, record []byte, err error)) error
	// Remove removes file name (missing is no error).
	Remove(name string) error
	// Rename renames file old to new, atomically, replacing new.
	Rename(old, new string) error

	// Locks is the store's lock table (see Locker and the Lock* names).
	Locks() Locker
}

// MaxRefSize bounds what ReadRef returns: a valid ref is far shorter.
const MaxRefSize = 1024

// ValidName reports whether name may name a blob or a file of a store:
// 1 to 255 bytes of [A-Za-z0-9._-], not starting with ".". No separators,
// no control characters, nothing a file system or an object store reads
// differently.
func ValidName(name string) error {
	if name == "" || len(name) > 255 || name[0] == '.' {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q", ErrBadName, name)
		}
	}
	return nil
}
