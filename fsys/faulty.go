package fsys

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Class is a set of operation classes.
type Class uint8

const (
	// Write: operations that change the file system or make a change
	// durable: OpenFile with a write flag, CreateTemp, Write, Truncate,
	// Sync, Close of a file opened for writing, Rename, Remove, Mkdir,
	// MkdirAll, SyncDir; Openat with a write flag, Mkdirat, Renameat,
	// Unlinkat, Symlinkat, Write, Close of a descriptor opened for writing,
	// Fsync, Syncfs.
	Write Class = 1 << iota
	// Read: everything else: Open, read-only OpenFile, Read, ReadAt, Stat,
	// Close of a read-only file, ReadFile, ReadDir, Lstat; read-only
	// Openat, Fstatat, Read, Close of a read-only descriptor.
	Read
	// All is every operation.
	All = Write | Read
)

func (c Class) String() string {
	switch c {
	case Write:
		return "write"
	case Read:
		return "read"
	case All:
		return "all"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Op is one operation a Faulty saw.
type Op struct {
	Seq    int    // 1-based position among the counted operations; 0 when not counted
	Name   string // "createtemp", "write", "sync", "rename", "syncdir", "openat", "renameat", ...
	Path   string // the file (for descriptor-relative calls, resolved when possible)
	Class  Class  // Write or Read
	Failed bool   // the fault was injected here
}

func (o Op) String() string {
	s := fmt.Sprintf("%s %s", o.Name, o.Path)
	if o.Seq > 0 {
		s = fmt.Sprintf("#%d %s", o.Seq, s)
	}
	if o.Failed {
		s += " [failed]"
	}
	return s
}

// Fault says which operations a Faulty fails.
type Fault struct {
	// At is the position (1-based) of the counted operation that fails;
	// 0 injects nothing (a counting run).
	At int
	// Err is the errno returned (syscall.ENOSPC, EIO, EACCES, ...).
	Err syscall.Errno
	// Persistent fails every counted operation from At on; otherwise only
	// the At-th fails (a transient fault).
	Persistent bool
	// Count is the classes of operations counted; 0 means Write. Only
	// counted operations can fail.
	Count Class
	// Match, when set, restricts counting further to the operations for
	// which it returns true (for example one operation name, or one
	// directory).
	Match func(Op) bool
	// ShortWrite makes a failing Write write the first half of its bytes
	// before failing, as a full disk does; otherwise it writes nothing.
	ShortWrite bool
}

func (ft *Fault) counts(o Op) bool {
	c := ft.Count
	if c == 0 {
		c = Write
	}
	return c&o.Class != 0 && (ft.Match == nil || ft.Match(o))
}

// InjectedError is the error a Faulty injects: the errno, marked. It
// unwraps to Err, so errors.Is(err, syscall.ENOSPC) holds. Path-based
// operations return it inside an *fs.PathError (an *os.LinkError for
// Rename) naming the operation and the path, as package os does;
// descriptor-relative ones return it bare, as package unix returns an
// errno.
type InjectedError struct {
	Op  Op
	Err syscall.Errno
}

func (e *InjectedError) Error() string {
	return fmt.Sprintf("%s (injected at operation #%d)", e.Err.Error(), e.Op.Seq)
}

func (e *InjectedError) Unwrap() error { return e.Err }

// Faulty wraps an FS and a Sys and fails chosen operations (see Fault). It
// counts every operation of the counted classes made through it, in the
// order they are made, and logs every operation; with a single goroutine
// doing I/O the count, and so which operation is the At-th, is
// deterministic. A failed operation does nothing, except a failed Close,
// which still releases the file or descriptor (as close(2) does), and a
// failed ShortWrite. Faulty is safe for concurrent use.
type Faulty struct {
	fs  FS
	sys Sys

	mu    sync.Mutex
	fault Fault
	n     int
	ops   []Op
	wfds  map[int]string // descriptors opened for writing through Openat, and their paths
}

// NewFaulty returns a Faulty over fs and sys (nil: OS and RealSys) that
// injects nothing until Set.
func NewFaulty(fs FS, sys Sys) *Faulty {
	return &Faulty{fs: Or(fs), sys: OrSys(sys), wfds: map[int]string{}}
}

// Set installs fault and restarts counting and the log.
func (f *Faulty) Set(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.n, f.ops = fault, 0, nil
}

// Clear stops injecting (the fault clears); counting and logging go on.
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault.At = 0
}

// Count returns the number of counted operations since Set.
func (f *Faulty) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Ops returns every operation seen since Set, counted or not.
func (f *Faulty) Ops() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Op(nil), f.ops...)
}

// Injected returns the operations that failed since Set.
func (f *Faulty) Injected() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Op
	for _, o := range f.ops {
		if o.Failed {
			out = append(out, o)
		}
	}
	return out
}

// check records an operation and returns the injected error, or nil when
// it proceeds.
func (f *Faulty) check(name, path string, class Class) *InjectedError {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := Op{Name: name, Path: path, Class: class}
	if f.fault.counts(o) {
		f.n++
		o.Seq = f.n
		at := f.fault.At
		o.Failed = f.fault.Err != 0 && at > 0 && (o.Seq == at || f.fault.Persistent && o.Seq > at)
	}
	f.ops = append(f.ops, o)
	if o.Failed {
		return &InjectedError{Op: o, Err: f.fault.Err}
	}
	return nil
}

func (f *Faulty) shortWrite() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fault.ShortWrite
}

func pathErr(op, path string, e *InjectedError) error {
	return &fs.PathError{Op: op, Path: path, Err: e}
}

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// FS methods.

func (f *Faulty) Open(name string) (File, error) {
	if e := f.check("open", name, Read); e != nil {
		return nil, pathErr("open", name, e)
	}
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, f: f}, nil
}

func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	class := Read
	if flag&writeFlags != 0 {
		class = Write
	}
	if e := f.check("open", name, class); e != nil {
		return nil, pathErr("open", name, e)
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, f: f, write: class == Write}, nil
}

func (f *Faulty) CreateTemp(dir, pattern string) (File, error) {
	p := dir + string(os.PathSeparator) + pattern
	if e := f.check("createtemp", p, Write); e != nil {
		return nil, pathErr("createtemp", p, e)
	}
	file, err := f.fs.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, f: f, write: true}, nil
}

func (f *Faulty) ReadFile(name string) ([]byte, error) {
	if e := f.check("readfile", name, Read); e != nil {
		return nil, pathErr("readfile", name, e)
	}
	return f.fs.ReadFile(name)
}

func (f *Faulty) ReadDir(name string) ([]fs.DirEntry, error) {
	if e := f.check("readdir", name, Read); e != nil {
		return nil, pathErr("readdir", name, e)
	}
	return f.fs.ReadDir(name)
}

func (f *Faulty) Stat(name string) (fs.FileInfo, error) {
	if e := f.check("stat", name, Read); e != nil {
		return nil, pathErr("stat", name, e)
	}
	return f.fs.Stat(name)
}

func (f *Faulty) Lstat(name string) (fs.FileInfo, error) {
	if e := f.check("lstat", name, Read); e != nil {
		return nil, pathErr("lstat", name, e)
	}
	return f.fs.Lstat(name)
}

func (f *Faulty) Mkdir(name string, perm fs.FileMode) error {
	if e := f.check("mkdir", name, Write); e != nil {
		return pathErr("mkdir", name, e)
	}
	return f.fs.Mkdir(name, perm)
}

func (f *Faulty) MkdirAll(name string, perm fs.FileMode) error {
	if e := f.check("mkdirall", name, Write); e != nil {
		return pathErr("mkdirall", name, e)
	}
	return f.fs.MkdirAll(name, perm)
}

func (f *Faulty) Rename(oldpath, newpath string) error {
	if e := f.check("rename", oldpath+" -> "+newpath, Write); e != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: e}
	}
	return f.fs.Rename(oldpath, newpath)
}

func (f *Faulty) Remove(name string) error {
	if e := f.check("remove", name, Write); e != nil {
		return pathErr("remove", name, e)
	}
	return f.fs.Remove(name)
}

func (f *Faulty) SyncDir(name string) error {
	if e := f.check("syncdir", name, Write); e != nil {
		return pathErr("syncdir", name, e)
	}
	return f.fs.SyncDir(name)
}

// faultyFile routes a File's operations through its Faulty.
type faultyFile struct {
	File
	f     *Faulty
	write bool // opened for writing
}

func (ff *faultyFile) Read(p []byte) (int, error) {
	if e := ff.f.check("read", ff.Name(), Read); e != nil {
		return 0, pathErr("read", ff.Name(), e)
	}
	return ff.File.Read(p)
}

func (ff *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if e := ff.f.check("read", ff.Name(), Read); e != nil {
		return 0, pathErr("read", ff.Name(), e)
	}
	return ff.File.ReadAt(p, off)
}

func (ff *faultyFile) Stat() (fs.FileInfo, error) {
	if e := ff.f.check("fstat", ff.Name(), Read); e != nil {
		return nil, pathErr("fstat", ff.Name(), e)
	}
	return ff.File.Stat()
}

func (ff *faultyFile) Write(p []byte) (int, error) {
	if e := ff.f.check("write", ff.Name(), Write); e != nil {
		n := 0
		if ff.f.shortWrite() && len(p) > 1 {
			n, _ = ff.File.Write(p[:len(p)/2])
		}
		return n, pathErr("write", ff.Name(), e)
	}
	return ff.File.Write(p)
}

func (ff *faultyFile) Sync() error {
	if e := ff.f.check("sync", ff.Name(), Write); e != nil {
		return pathErr("sync", ff.Name(), e)
	}
	return ff.File.Sync()
}

func (ff *faultyFile) Truncate(size int64) error {
	if e := ff.f.check("truncate", ff.Name(), Write); e != nil {
		return pathErr("truncate", ff.Name(), e)
	}
	return ff.File.Truncate(size)
}

func (ff *faultyFile) Close() error {
	class := Read
	if ff.write {
		class = Write
	}
	e := ff.f.check("close", ff.Name(), class)
	err := ff.File.Close()
	if e != nil {
		return pathErr("close", ff.Name(), e)
	}
	return err
}

// Sys methods.

func (f *Faulty) fdPath(dirfd int, path string) string {
	if len(path) > 0 && path[0] == '/' {
		return path
	}
	if dir, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(dirfd)); err == nil {
		return dir + "/" + path
	}
	return "fd" + strconv.Itoa(dirfd) + ":" + path
}

func (f *Faulty) Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	class := Read
	if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_APPEND) != 0 {
		class = Write
	}
	p := f.fdPath(dirfd, path)
	if e := f.check("openat", p, class); e != nil {
		return -1, e
	}
	fd, err := f.sys.Openat(dirfd, path, flags, mode)
	if err == nil && class == Write {
		f.mu.Lock()
		f.wfds[fd] = p
		f.mu.Unlock()
	}
	return fd, err
}

func (f *Faulty) Mkdirat(dirfd int, path string, mode uint32) error {
	if e := f.check("mkdirat", f.fdPath(dirfd, path), Write); e != nil {
		return e
	}
	return f.sys.Mkdirat(dirfd, path, mode)
}

func (f *Faulty) Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	if e := f.check("renameat", f.fdPath(olddirfd, oldpath)+" -> "+f.fdPath(newdirfd, newpath), Write); e != nil {
		return e
	}
	return f.sys.Renameat(olddirfd, oldpath, newdirfd, newpath)
}

func (f *Faulty) Renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	if e := f.check("renameat2", f.fdPath(olddirfd, oldpath)+" -> "+f.fdPath(newdirfd, newpath), Write); e != nil {
		return e
	}
	return f.sys.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}

func (f *Faulty) Unlinkat(dirfd int, path string, flags int) error {
	if e := f.check("unlinkat", f.fdPath(dirfd, path), Write); e != nil {
		return e
	}
	return f.sys.Unlinkat(dirfd, path, flags)
}

func (f *Faulty) Symlinkat(target string, dirfd int, path string) error {
	if e := f.check("symlinkat", f.fdPath(dirfd, path), Write); e != nil {
		return e
	}
	return f.sys.Symlinkat(target, dirfd, path)
}

func (f *Faulty) Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	if e := f.check("fstatat", f.fdPath(dirfd, path), Read); e != nil {
		return e
	}
	return f.sys.Fstatat(dirfd, path, st, flags)
}

// fd returns the path of a descriptor and whether it was opened for
// writing through Openat.
func (f *Faulty) fd(fd int) (string, bool) {
	f.mu.Lock()
	p, ok := f.wfds[fd]
	f.mu.Unlock()
	if ok {
		return p, true
	}
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		return p, false
	}
	return "fd" + strconv.Itoa(fd), false
}

func (f *Faulty) Read(fd int, p []byte) (int, error) {
	path, _ := f.fd(fd)
	if e := f.check("read", path, Read); e != nil {
		return -1, e
	}
	return f.sys.Read(fd, p)
}

func (f *Faulty) Write(fd int, p []byte) (int, error) {
	path, _ := f.fd(fd)
	if e := f.check("write", path, Write); e != nil {
		n := -1
		if f.shortWrite() && len(p) > 1 {
			if k, err := f.sys.Write(fd, p[:len(p)/2]); err == nil {
				n = k
			}
		}
		return n, e
	}
	return f.sys.Write(fd, p)
}

func (f *Faulty) Close(fd int) error {
	path, write := f.fd(fd)
	class := Read
	if write {
		class = Write
	}
	e := f.check("close", path, class)
	f.mu.Lock()
	delete(f.wfds, fd)
	f.mu.Unlock()
	err := f.sys.Close(fd)
	if e != nil {
		return e
	}
	return err
}

func (f *Faulty) Fsync(fd int) error {
	path, _ := f.fd(fd)
	if e := f.check("fsync", path, Write); e != nil {
		return e
	}
	return f.sys.Fsync(fd)
}

func (f *Faulty) Syncfs(fd int) error {
	path, _ := f.fd(fd)
	if e := f.check("syncfs", path, Write); e != nil {
		return e
	}
	return f.sys.Syncfs(fd)
}

var (
	_ FS  = (*Faulty)(nil)
	_ Sys = (*Faulty)(nil)
)
