package fsstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/storage"
)

// Blobs is a storage.Blobs of files: blob name is the file Dir/name,
// written as a temporary file in TmpDir (fsync'd, renamed into Dir, Dir
// fsync'd) and read with pread. Every file operation goes through FS.
type Blobs struct {
	fs     fsys.FS
	dir    string
	tmpDir string
	prefix string // of temporary files: prefix<pid>-<kind><random>
}

var _ storage.Blobs = (*Blobs)(nil)
var _ storage.TempRemover = (*Blobs)(nil)

// NewBlobs returns the blobs stored in dir, with temporary files in tmpDir
// (on the same file system) named tempPrefix<pid>-<kind><random>; both
// directories are created if missing. vfs nil is fsys.OS.
func NewBlobs(vfs fsys.FS, dir, tmpDir, tempPrefix string) (*Blobs, error) {
	vfs = fsys.Or(vfs)
	for _, d := range []string{dir, tmpDir} {
		if err := vfs.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return &Blobs{fs: vfs, dir: dir, tmpDir: tmpDir, prefix: tempPrefix}, nil
}

// Dir is the directory holding the blobs.
func (b *Blobs) Dir() string { return b.dir }

// Path is the file of blob name.
func (b *Blobs) Path(name string) string { return filepath.Join(b.dir, name) }

func badName(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: storage.ErrBadName}
}

// Create starts a temporary file in the temporary directory.
func (b *Blobs) Create(kind string) (storage.BlobWriter, error) {
	if kind != "" && storage.ValidName(kind) != nil {
		return nil, badName("create", kind)
	}
	f, err := b.fs.CreateTemp(b.tmpDir, fmt.Sprintf("%s%d-%s*", b.prefix, os.Getpid(), kind))
	if err != nil {
		return nil, err
	}
	return &blobWriter{b: b, f: f}, nil
}

type blobWriter struct {
	b    *Blobs
	f    fsys.File
	done bool
}

// Name is the temporary file's path (tests read what was written so far).
func (w *blobWriter) Name() string { return w.f.Name() }

func (w *blobWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fs.ErrClosed
	}
	return w.f.Write(p)
}

// Commit: fsync, close, rename into the blob directory, fsync it. On an
// error the temporary file is removed (best effort).
func (w *blobWriter) Commit(name string) error {
	if w.done {
		return fs.ErrClosed
	}
	if err := storage.ValidName(name); err != nil {
		w.Abort()
		return err
	}
	w.done = true
	err := func() error {
		if err := w.f.Sync(); err != nil {
			return err
		}
		if err := w.f.Close(); err != nil {
			return err
		}
		if err := w.b.fs.Rename(w.f.Name(), w.b.Path(name)); err != nil {
			return err
		}
		return w.b.fs.SyncDir(w.b.dir)
	}()
	if err != nil {
		w.f.Close()
		w.b.fs.Remove(w.f.Name())
	}
	return err
}

func (w *blobWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	w.b.fs.Remove(w.f.Name())
}

// Open opens the blob's file; its size is read on first use.
func (b *Blobs) Open(name string) (storage.BlobReader, error) {
	if err := storage.ValidName(name); err != nil {
		return nil, badName("open", name)
	}
	f, err := b.fs.Open(b.Path(name))
	if err != nil {
		return nil, err
	}
	return &blobReader{File: f}, nil
}

type blobReader struct {
	fsys.File
	once sync.Once
	size int64
	err  error
}

func (r *blobReader) Size() (int64, error) {
	r.once.Do(func() {
		fi, err := r.File.Stat()
		if err != nil {
			r.err = err
			return
		}
		r.size = fi.Size()
	})
	return r.size, r.err
}

var _ storage.Mapper = (*blobReader)(nil)

// Map maps [off, off+n) of the file read-only (storage.Mapper); only a file
// of the real file system can be mapped.
func (r *blobReader) Map(off int64, n int) ([]byte, func(), error) {
	f, ok := r.File.(*os.File)
	if !ok || n <= 0 || off < 0 {
		return nil, nil, errors.ErrUnsupported
	}
	if size, err := r.Size(); err != nil || off+int64(n) > size {
		return nil, nil, errors.ErrUnsupported
	}
	start := off &^ int64(os.Getpagesize()-1)
	m, err := unix.Mmap(int(f.Fd()), start, int(off-start)+n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return m[off-start:], func() { unix.Munmap(m) }, nil
}

func (b *Blobs) Stat(name string) (storage.BlobInfo, error) {
	if err := storage.ValidName(name); err != nil {
		return storage.BlobInfo{}, badName("stat", name)
	}
	fi, err := b.fs.Stat(b.Path(name))
	if err != nil {
		return storage.BlobInfo{}, err
	}
	if !fi.Mode().IsRegular() {
		return storage.BlobInfo{}, &fs.PathError{Op: "stat", Path: b.Path(name), Err: fs.ErrNotExist}
	}
	return storage.BlobInfo{Name: name, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// List lists the regular files of the blob directory with legal names.
func (b *Blobs) List(prefix string) ([]string, error) {
	des, err := b.fs.ReadDir(b.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), prefix) && de.Type().IsRegular() && storage.ValidName(de.Name()) == nil {
			names = append(names, de.Name())
		}
	}
	return names, nil // ReadDir sorts
}

// Delete removes the files, then fsyncs the directory once.
func (b *Blobs) Delete(names ...string) ([]string, error) {
	var removed []string
	var errs []error
	for _, name := range names {
		if err := storage.ValidName(name); err != nil {
			errs = append(errs, badName("remove", name))
			continue
		}
		if err := b.fs.Remove(b.Path(name)); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, name)
	}
	if err := b.fs.SyncDir(b.dir); err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// RemoveTemps removes the regular files of the temporary directory that
// stale picks, then fsyncs it when it removed any.
func (b *Blobs) RemoveTemps(stale func(name string, modTime time.Time) bool, dryRun bool) (n int, bytes int64, err error) {
	des, err := b.fs.ReadDir(b.tmpDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	removed := false
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // gone meanwhile
		}
		if !stale(de.Name(), fi.ModTime()) {
			continue
		}
		if !dryRun {
			if err := b.fs.Remove(filepath.Join(b.tmpDir, de.Name())); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return n, bytes, err
			}
			removed = true
		}
		n++
		bytes += fi.Size()
	}
	if removed {
		return n, bytes, b.fs.SyncDir(b.tmpDir)
	}
	return n, bytes, nil
}
