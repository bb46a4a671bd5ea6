package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/storage"
)

// Refs is a storage.Refs of files in a store directory: ref name is the
// file refs/<name> (directories for its "/"), updated under an exclusive
// flock(2) on refs.lock and a <ref>.lock file that becomes the new value by
// rename; small files are files of the store directory. Every file
// operation but the flock(2)s goes through FS.
type Refs struct {
	fs      fsys.FS
	dir     string
	refsDir string
	locks   *Locker
}

var _ storage.Refs = (*Refs)(nil)

// OpenRefs opens the refs of the store directory dir, which must exist,
// creating dir/refs if missing (durably). vfs nil is fsys.OS.
func OpenRefs(vfs fsys.FS, dir string) (*Refs, error) {
	vfs = fsys.Or(vfs)
	fi, err := vfs.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	s := &Refs{fs: vfs, dir: dir, refsDir: filepath.Join(dir, "refs"), locks: NewLocker(dir)}
	switch err := vfs.Mkdir(s.refsDir, 0o755); {
	case err == nil:
		if err := vfs.SyncDir(dir); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrExist):
		fi, err := vfs.Stat(s.refsDir)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", s.refsDir)
		}
	default:
		return nil, err
	}
	return s, nil
}

// Locks returns the flock(2) locks of the store directory.
func (s *Refs) Locks() storage.Locker { return s.locks }

func (s *Refs) refPath(name string) string {
	return filepath.Join(s.refsDir, filepath.FromSlash(name))
}

// ReadRef opens refs/<name> without following a symlink at the leaf.
func (s *Refs) ReadRef(name string) ([]byte, error) {
	// (O_NONBLOCK: a FIFO in a ref's place is refused below, not waited on
	// for a writer for ever: torture/index2-findings/02.)
	f, err := s.fs.OpenFile(s.refPath(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return nil, fmt.Errorf("ref %q: %w", name, fs.ErrNotExist)
		case errors.Is(err, syscall.ELOOP):
			return nil, &storage.BadEntryError{Name: name, Reason: "ref is a symlink"}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, storage.ErrRefDir
	}
	if !fi.Mode().IsRegular() {
		return nil, &storage.BadEntryError{Name: name, Reason: "ref is not a regular file"}
	}
	return io.ReadAll(io.LimitReader(f, storage.MaxRefSize+1))
}

// UpdateRef: create the ref's directories (create) or check its parent
// exists (delete); flock refs.lock; create <ref>.lock exclusively (one left
// by a crashed writer is replaced: a live one would hold the flock); read;
// fn; write the lock file, fsync, rename over the ref, fsync its directory
// (and every ancestor up to refs/ for a new ref), or remove the ref and the
// lock file and fsync the directory.
func (s *Refs) UpdateRef(ctx context.Context, name string, create bool, timeout time.Duration, fn func(cur []byte, err error) ([]byte, error)) error {
	path := s.refPath(name)
	parent := filepath.Dir(path)
	if !create {
		// A ref that cannot exist is not locked for, and no directory is
		// created for it.
		fi, err := s.fs.Stat(parent)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err // not absence: I/O
		}
		if err != nil || !fi.IsDir() {
			_, err := fn(nil, fmt.Errorf("ref %q: %w", name, fs.ErrNotExist))
			if err == nil {
				err = errors.New("update of a ref that cannot exist")
			}
			return err
		}
	} else if err := s.mkdirs(name, parent); err != nil {
		return err
	}

	guard, err := s.locks.lockFile(ctx, storage.RefsLock, storage.Exclusive, timeout)
	if err != nil {
		return err
	}
	defer guard.Close()
	lockPath := path + ".lock"
	lock, err := s.createLock(lockPath)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			lock.Close()
			s.fs.Remove(lockPath)
		}
	}()

	cur, rerr := s.ReadRef(name)
	if rerr != nil {
		cur = nil
	}
	val, err := fn(cur, rerr)
	if err != nil {
		return err
	}
	existed := rerr == nil

	if val == nil {
		if !existed {
			return nil
		}
		if err := s.fs.Remove(path); err != nil {
			return err
		}
		lock.Close()
		locked = false
		if err := s.fs.Remove(lockPath); err != nil {
			// A stale lock file is harmless: the next writer replaces it.
			return fmt.Errorf("%w: %w", storage.ErrNotDurable, err)
		}
		return s.syncRefDirs(parent, false)
	}
	if _, err := lock.Write(val); err != nil {
		return err
	}
	if err := lock.Sync(); err != nil {
		return err
	}
	if err := lock.Close(); err != nil {
		return err
	}
	if err := s.fs.Rename(lockPath, path); err != nil {
		return err
	}
	locked = false
	return s.syncRefDirs(parent, !existed)
}

// syncRefDirs makes a ref's changed directory entry durable: it fsyncs
// parent and, when the ref is new (ancestors), every directory above it up
// to refs/. An error here comes after the change is in place: it wraps
// ErrNotDurable.
func (s *Refs) syncRefDirs(parent string, ancestors bool) error {
	if err := s.fs.SyncDir(parent); err != nil {
		return fmt.Errorf("%w: %w", storage.ErrNotDurable, err)
	}
	if ancestors {
		// A new ref may live in directories whose own entries are not yet
		// durable (created just now, here or by a concurrent writer): sync
		// every ancestor up to refs/.
		for d := parent; d != s.refsDir; {
			d = filepath.Dir(d)
			if err := s.fs.SyncDir(d); err != nil {
				return fmt.Errorf("%w: %w", storage.ErrNotDurable, err)
			}
		}
	}
	return nil
}

// mkdirs creates the directories leading to ref name (parent is its parent
// directory). A component that exists as a ref file is a name collision.
func (s *Refs) mkdirs(name, parent string) error {
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
			return err
		}
		fi, err := s.fs.Lstat(d)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &storage.CollisionError{Name: name, With: strings.Join(comps[:i+1], "/")}
		}
	}
	return nil
}

// createLock creates lockPath exclusively. The caller holds refs.lock, so
// an existing lock file is stale (its writer crashed): it is removed.
func (s *Refs) createLock(lockPath string) (fsys.File, error) {
	f, err := s.fs.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if err := s.fs.Remove(lockPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		f, err = s.fs.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	return f, err
}

// WalkRefs walks refs/<base> with fsys.WalkDir.
func (s *Refs) WalkRefs(base string, fn func(name string, isDir bool, err error) error) error {
	root := filepath.Join(s.refsDir, filepath.FromSlash(base))
	return fsys.WalkDir(s.fs, root, func(path string, d fs.DirEntry, err error) error {
		if path == root {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return storage.ErrNotDir
			}
			return nil
		}
		rel, rerr := filepath.Rel(s.refsDir, path)
		if rerr != nil {
			return rerr
		}
		isDir := d != nil && d.IsDir()
		return fn(filepath.ToSlash(rel), isDir, err)
	})
}

func (s *Refs) file(name string) (string, error) {
	if err := storage.ValidName(name); err != nil {
		return "", badName("open", name)
	}
	return filepath.Join(s.dir, name), nil
}

// ReadFile reads a regular file whole. Anything else under the name (a
// FIFO, a device, a symlink to one) is a *storage.BadEntryError, found
// without blocking: opening a FIFO with no writer, or reading /dev/zero,
// would never end (torture/history-findings 01).
func (s *Refs) ReadFile(name string) ([]byte, error) {
	p, err := s.file(name)
	if err != nil {
		return nil, err
	}
	data, err := fsys.ReadRegular(s.fs, p)
	if errors.Is(err, fsys.ErrNotRegular) {
		return nil, &storage.BadEntryError{Name: name, Reason: "not a regular file"}
	}
	return data, err
}

func (s *Refs) ReadFileAt(name string, fn func(r io.ReaderAt, size int64) error) error {
	p, err := s.file(name)
	if err != nil {
		return err
	}
	f, fi, err := fsys.OpenRegular(s.fs, p)
	if errors.Is(err, fsys.ErrNotRegular) {
		return &storage.BadEntryError{Name: name, Reason: "not a regular file"}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f, fi.Size())
}

func (s *Refs) Exists(name string) bool {
	p, err := s.file(name)
	if err != nil {
		return false
	}
	_, err = s.fs.Stat(p)
	return err == nil
}

// WriteFile is fsys.WriteFileAtomic: temporary file, fsync, rename, fsync
// of the directory.
func (s *Refs) WriteFile(name string, data []byte) error {
	p, err := s.file(name)
	if err != nil {
		return err
	}
	return fsys.WriteFileAtomic(s.fs, p, data)
}

func (s *Refs) Remove(name string) error {
	p, err := s.file(name)
	if err != nil {
		return err
	}
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (s *Refs) Rename(old, new string) error {
	po, err := s.file(old)
	if err != nil {
		return err
	}
	pn, err := s.file(new)
	if err != nil {
		return err
	}
	return s.fs.Rename(po, pn)
}

// AppendLines opens the file for appending, completes a torn last line
// with "\n", writes, fsyncs the file and the directory.
func (s *Refs) AppendLines(name string, data []byte) error {
	path, err := s.file(name)
	if err != nil {
		return err
	}
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if r, err := s.fs.Open(path); err == nil {
			r.ReadAt(last, fi.Size()-1)
			r.Close()
		}
		if last[0] != '\n' {
			data = append([]byte("\n"), data...)
		}
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// AppendLog opens the log O_APPEND, truncates a torn tail, writes the
// record, fsyncs it (and the directory when the log is new); on failure it
// truncates the record away again.
func (s *Refs) AppendLog(name string, fn func(r io.ReaderAt, size int64) (cut int64, record []byte, err error)) error {
	path, err := s.file(name)
	if err != nil {
		return err
	}
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	cut, rec, err := fn(f, size)
	if err != nil {
		return err
	}
	if cut < size {
		if err := f.Truncate(cut); err != nil {
			return fmt.Errorf("truncate torn tail: %w", err)
		}
	}
	if _, err := f.Write(rec); err != nil {
		f.Truncate(cut) // best effort; a partial record is a torn tail anyway
		return err
	}
	if err := f.Sync(); err != nil {
		// The record is in the file but may not be durable: take it back,
		// so that an error means no record (best effort: should this
		// fail too, the record stays).
		f.Truncate(cut)
		return err
	}
	if size == 0 {
		// The log file may be new: make its directory entry durable.
		if err := s.fs.SyncDir(s.dir); err != nil {
			f.Truncate(cut) // as above
			return err
		}
	}
	return nil
}
