package fsys

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// Sys is the descriptor-relative system-call seam of the working-tree side
// (package worktree): the calls whose flags and dirfd-relative resolution
// are its security boundary. Each method has exactly the semantics of the
// golang.org/x/sys/unix function of the same name (flags are passed
// through untouched, so O_NOFOLLOW, O_EXCL, AT_SYMLINK_NOFOLLOW and
// AT_REMOVEDIR keep their meaning), returns a bare unix.Errno or an error
// wrapping one, and works on real kernel descriptors: an implementation
// wraps RealSys (or another Sys), it never invents descriptors, so callers
// may mix its fds with direct calls (fstat, readdir, dup). Implementations
// must be safe for concurrent use.
type Sys interface {
	Openat(dirfd int, path string, flags int, mode uint32) (fd int, err error)
	Mkdirat(dirfd int, path string, mode uint32) error
	Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error
	Renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error
	Unlinkat(dirfd int, path string, flags int) error
	Symlinkat(target string, dirfd int, path string) error
	Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error
	Read(fd int, p []byte) (n int, err error)
	Write(fd int, p []byte) (n int, err error)
	Close(fd int) error
	// Fsync is fsync(2) of a descriptor (a file or a directory); Syncfs is
	// syncfs(2): every file system write in flight on fd's file system
	// made durable at once.
	Fsync(fd int) error
	Syncfs(fd int) error
}

// RealSys is the kernel, package unix.
var RealSys Sys = realSys{}

// OrSys returns s, or RealSys when s is nil.
func OrSys(s Sys) Sys {
	if s == nil {
		return RealSys
	}
	return s
}

type realSys struct{}

func (realSys) Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return unix.Openat(dirfd, path, flags, mode)
}
func (realSys) Mkdirat(dirfd int, path string, mode uint32) error {
	return unix.Mkdirat(dirfd, path, mode)
}
func (realSys) Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return unix.Renameat(olddirfd, oldpath, newdirfd, newpath)
}
func (realSys) Renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}
func (realSys) Unlinkat(dirfd int, path string, flags int) error {
	return unix.Unlinkat(dirfd, path, flags)
}
func (realSys) Symlinkat(target string, dirfd int, path string) error {
	return unix.Symlinkat(target, dirfd, path)
}
func (realSys) Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(dirfd, path, st, flags)
}
func (realSys) Read(fd int, p []byte) (int, error)  { return unix.Read(fd, p) }
func (realSys) Write(fd int, p []byte) (int, error) { return unix.Write(fd, p) }
func (realSys) Close(fd int) error                  { return unix.Close(fd) }
func (realSys) Fsync(fd int) error                  { return unix.Fsync(fd) }
func (realSys) Syncfs(fd int) error                 { return unix.Syncfs(fd) }

// FdReader returns an io.Reader over the descriptor fd of a regular file,
// reading through s: io.EOF at the end, EINTR retried. It does not close fd.
func FdReader(s Sys, fd int) io.Reader { return &fdReader{s, fd} }

type fdReader struct {
	s  Sys
	fd int
}

func (r *fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := r.s.Read(r.fd, p)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return max(n, 0), err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// FdWriter returns an io.Writer over the descriptor fd of a regular file,
// writing through s: every byte is written (short writes are continued,
// EINTR retried) or an error is returned, as os.File.Write does. It does
// not close fd.
func FdWriter(s Sys, fd int) io.Writer { return &fdWriter{s, fd} }

type fdWriter struct {
	s  Sys
	fd int
}

func (w *fdWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := w.s.Write(w.fd, p[done:])
		if n > 0 {
			done += n
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.ErrShortWrite
		}
	}
	return done, nil
}
