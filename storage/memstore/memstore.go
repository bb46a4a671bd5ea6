package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/snapcore-dev/snap/storage"
)

// Blobs is a storage.Blobs in memory. A committed blob's bytes are never
// modified, so readers keep what they opened.
type Blobs struct {
	mu    sync.RWMutex
	blobs map[string]memBlob
}

type memBlob struct {
	data []byte
	mod  time.Time
}

var _ storage.Blobs = (*Blobs)(nil)

// NewBlobs returns an empty blob store.
func NewBlobs() *Blobs { return &Blobs{blobs: map[string]memBlob{}} }

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }
func badName(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: storage.ErrBadName}
}

func (b *Blobs) Create(kind string) (storage.BlobWriter, error) {
	if kind != "" && storage.ValidName(kind) != nil {
		return nil, badName("create", kind)
	}
	return &blobWriter{b: b}, nil
}

type blobWriter struct {
	b    *Blobs
	buf  bytes.Buffer
	done bool
}

func (w *blobWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fs.ErrClosed
	}
	return w.buf.Write(p)
}

func (w *blobWriter) Commit(name string) error {
	if w.done {
		return fs.ErrClosed
	}
	w.done = true
	if storage.ValidName(name) != nil {
		return badName("commit", name)
	}
	data := bytes.Clone(w.buf.Bytes())
	w.buf = bytes.Buffer{}
	w.b.mu.Lock()
	w.b.blobs[name] = memBlob{data, time.Now()}
	w.b.mu.Unlock()
	return nil
}

func (w *blobWriter) Abort() {
	w.done = true
	w.buf = bytes.Buffer{}
}

func (b *Blobs) get(op, name string) (memBlob, error) {
	if storage.ValidName(name) != nil {
		return memBlob{}, badName(op, name)
	}
	b.mu.RLock()
	m, ok := b.blobs[name]
	b.mu.RUnlock()
	if !ok {
		return memBlob{}, notExist(op, name)
	}
	return m, nil
}

func (b *Blobs) Open(name string) (storage.BlobReader, error) {
	m, err := b.get("open", name)
	if err != nil {
		return nil, err
	}
	return reader{bytes.NewReader(m.data), int64(len(m.data))}, nil
}

type reader struct {
	*bytes.Reader
	size int64
}

func (r reader) Size() (int64, error) { return r.size, nil }
func (r reader) Close() error         { return nil }

func (b *Blobs) Stat(name string) (storage.BlobInfo, error) {
	m, err := b.get("stat", name)
	if err != nil {
		return storage.BlobInfo{}, err
	}
	return storage.BlobInfo{Name: name, Size: int64(len(m.data)), ModTime: m.mod}, nil
}

func (b *Blobs) List(prefix string) ([]string, error) {
	b.mu.RLock()
	var names []string
	for n := range b.blobs {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	b.mu.RUnlock()
	sort.Strings(names)
	return names, nil
}

func (b *Blobs) Delete(names ...string) ([]string, error) {
	var removed []string
	var errs []error
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range names {
		if storage.ValidName(n) != nil {
			errs = append(errs, badName("remove", n))
			continue
		}
		if _, ok := b.blobs[n]; ok {
			delete(b.blobs, n)
			removed = append(removed, n)
		}
	}
	return removed, errors.Join(errs...)
}

// SetModTime sets the commit time of a blob (tests: the grace period).
func (b *Blobs) SetModTime(name string, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.blobs[name]; ok {
		m.mod = t
		b.blobs[name] = m
	}
}

// Refs is a storage.Refs in memory, with in-process locks.
type Refs struct {
	mu    sync.Mutex
	refs  map[string][]byte
	files map[string][]byte
	locks *Locker
}

var _ storage.Refs = (*Refs)(nil)

// NewRefs returns an empty ref store.
func NewRefs() *Refs {
	return &Refs{refs: map[string][]byte{}, files: map[string][]byte{}, locks: NewLocker()}
}

func (s *Refs) Locks() storage.Locker { return s.locks }

// isDirLocked reports whether name is a directory of refs.
func (s *Refs) isDirLocked(name string) bool {
	p := name + "/"
	for n := range s.refs {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func (s *Refs) readLocked(name string) ([]byte, error) {
	if v, ok := s.refs[name]; ok {
		return bytes.Clone(v), nil
	}
	if s.isDirLocked(name) {
		return nil, storage.ErrRefDir
	}
	return nil, fmt.Errorf("ref %q: %w", name, fs.ErrNotExist)
}

func (s *Refs) ReadRef(name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readLocked(name)
}

// UpdateRef holds the store's mutex across fn: an update is one step.
// (ctx and timeout do not matter: no one holds it long.)
func (s *Refs) UpdateRef(ctx context.Context, name string, create bool, timeout time.Duration, fn func(cur []byte, err error) ([]byte, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if create {
		comps := strings.Split(name, "/")
		for i := 1; i < len(comps); i++ {
			if p := strings.Join(comps[:i], "/"); s.refs[p] != nil {
				return &storage.CollisionError{Name: name, With: p}
			}
		}
	}
	cur, rerr := s.readLocked(name)
	val, err := fn(cur, rerr)
	if err != nil {
		return err
	}
	switch {
	case val == nil:
		delete(s.refs, name)
	case !create && rerr != nil:
		return errors.New("update of a ref that cannot exist")
	default:
		s.refs[name] = bytes.Clone(val)
	}
	return nil
}

// WalkRefs lists a snapshot of the refs (and the directories their names
// imply) below base.
func (s *Refs) WalkRefs(base string, fn func(name string, isDir bool, err error) error) error {
	s.mu.Lock()
	entries := map[string]bool{} // name -> is a directory
	for n := range s.refs {
		if !strings.HasPrefix(n, base) {
			continue
		}
		entries[n] = false
		for i := len(base); i < len(n); i++ {
			if n[i] == '/' {
				entries[n[:i]] = true
			}
		}
	}
	_, baseIsRef := s.refs[strings.TrimSuffix(base, "/")]
	s.mu.Unlock()
	if base != "" && len(entries) == 0 {
		if baseIsRef {
			return storage.ErrNotDir
		}
		return notExist("walk", base)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	// Lexical order per directory, parents first: compare with "/" lowest.
	sort.Slice(names, func(i, j int) bool {
		return strings.ReplaceAll(names[i], "/", "\x00") < strings.ReplaceAll(names[j], "/", "\x00")
	})
	var skip string // a directory being skipped, with its "/"
	for _, n := range names {
		if skip != "" && strings.HasPrefix(n, skip) {
			continue
		}
		skip = ""
		err := fn(n, entries[n], nil)
		if err == fs.SkipDir {
			if entries[n] {
				skip = n + "/"
				continue
			}
			return nil
		}
		if err == fs.SkipAll {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Refs) file(op, name string) error {
	if storage.ValidName(name) != nil {
		return badName(op, name)
	}
	return nil
}

func (s *Refs) ReadFile(name string) ([]byte, error) {
	if err := s.file("read", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.files[name]
	if !ok {
		return nil, notExist("read", name)
	}
	return bytes.Clone(v), nil
}

func (s *Refs) ReadFileAt(name string, fn func(r io.ReaderAt, size int64) error) error {
	v, err := s.ReadFile(name) // (a copy: fn reads it without the lock)
	if err != nil {
		return err
	}
	return fn(bytes.NewReader(v), int64(len(v)))
}

func (s *Refs) Exists(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.files[name]
	return ok
}

func (s *Refs) WriteFile(name string, data []byte) error {
	if err := s.file("write", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = bytes.Clone(data)
	return nil
}

func (s *Refs) AppendLines(name string, data []byte) error {
	if err := s.file("append", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.files[name]
	if len(v) > 0 && v[len(v)-1] != '\n' {
		v = append(v, '\n')
	}
	s.files[name] = append(bytes.Clone(v), data...)
	return nil
}

func (s *Refs) AppendLog(name string, fn func(r io.ReaderAt, size int64) (cut int64, record []byte, err error)) error {
	if err := s.file("append", name); err != nil {
		return err
	}
	s.mu.Lock()
	v := bytes.Clone(s.files[name])
	s.mu.Unlock()
	cut, rec, err := fn(readerAt{bytes.NewReader(v)}, int64(len(v)))
	if err != nil {
		return err
	}
	if cut < 0 || cut > int64(len(v)) {
		return fmt.Errorf("append %s: cut %d outside the log", name, cut)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.files[name]; !bytes.Equal(cur, v) {
		return fmt.Errorf("append %s: log changed during the append (its lock is not held)", name)
	}
	s.files[name] = append(v[:cut:cut], rec...)
	return nil
}

// readerAt is a bytes.Reader whose ReadAt of nothing is no error at any
// offset up to the end, as a file's pread is (bytes.Reader says io.EOF at
// the end even for an empty buffer).
type readerAt struct{ r *bytes.Reader }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 && off >= 0 && off <= r.r.Size() {
		return 0, nil
	}
	return r.r.ReadAt(p, off)
}

func (s *Refs) Remove(name string) error {
	if err := s.file("remove", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, name)
	return nil
}

func (s *Refs) Rename(old, new string) error {
	if err := s.file("rename", old); err != nil {
		return err
	}
	if err := s.file("rename", new); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.files[old]
	if !ok {
		return notExist("rename", old)
	}
	s.files[new] = v
	delete(s.files, old)
	return nil
}
