package objects

import (
	"github.com/snapcore-dev/snap/internal/bin"

	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// Mode is the kind of a tree entry. Only these four exist: snap never stores
// or restores setuid bits, devices, FIFOs or sockets.
type Mode uint8

// Tree entry modes. The numeric values are part of the tree encoding.
const (
	ModeFile    Mode = 1 // regular file
	ModeExec    Mode = 2 // regular file with the executable bit
	ModeSymlink Mode = 3 // symbolic link; its blob holds the target
	ModeDir     Mode = 4 // directory; its id names a tree
)

func (m Mode) String() string {
	switch m {
	case ModeFile:
		return "file"
	case ModeExec:
		return "exec"
	case ModeSymlink:
		return "symlink"
	case ModeDir:
		return "dir"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool { return m >= ModeFile && m <= ModeDir }

// TreeEntry is one name in a directory. Size is the file's length in bytes
// (the target's length for a symlink, the total of all files beneath for a
// directory).
type TreeEntry struct {
	Name string
	Mode Mode
	ID   ID
	Size int64
}

// Tree is a directory: entries strictly sorted by name (bytewise), unique.
type Tree struct {
	Entries []TreeEntry
}

// Find returns the entry called name, or false.
func (t *Tree) Find(name string) (TreeEntry, bool) {
	lo, hi := 0, len(t.Entries)
	for lo < hi {
		m := (lo + hi) / 2
		switch c := strings.Compare(t.Entries[m].Name, name); {
		case c == 0:
			return t.Entries[m], true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return TreeEntry{}, false
}

// Encode returns the canonical encoding:
//
//	uvarint count
//	count × { mode u8 | uvarint len(name) | name | id [32] | uvarint size }
//
// The caller must have sorted the entries; Encode does not validate.
func (t *Tree) Encode() []byte {
	n := binary.MaxVarintLen64
	for _, e := range t.Entries {
		n += 1 + binary.MaxVarintLen64 + len(e.Name) + IDSize + binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(t.Entries)))
	for _, e := range t.Entries {
		b = append(b, byte(e.Mode))
		b = binary.AppendUvarint(b, uint64(len(e.Name)))
		b = append(b, e.Name...)
		b = append(b, e.ID[:]...)
		b = binary.AppendUvarint(b, uint64(e.Size))
	}
	return b
}

// minTreeEntry is the smallest possible encoded entry: mode, name length,
// one name byte, id, size.
const minTreeEntry = 1 + 1 + 1 + IDSize + 1

// DecodeTree parses and validates a tree: canonical encoding, legal modes,
// legal names (ValidName), strictly sorted, no duplicates, no trailing bytes.
// Every violation is ErrCorrupt (or ErrBadName wrapped in it).
func DecodeTree(data []byte) (*Tree, error) {
	r := reader{B: data}
	count := r.Uvarint()
	if r.Failed || count > uint64(len(data)/minTreeEntry) {
		return nil, fmt.Errorf("%w: tree: bad entry count", ErrCorrupt)
	}
	t := &Tree{Entries: make([]TreeEntry, 0, count)}
	for i := uint64(0); i < count; i++ {
		var e TreeEntry
		e.Mode = Mode(r.Byte())
		nameLen := r.Uvarint()
		e.Name = string(r.Bytes(nameLen))
		copy(e.ID[:], r.Bytes(IDSize))
		size := r.Uvarint()
		if r.Failed {
			return nil, fmt.Errorf("%w: tree: entry %d truncated", ErrCorrupt, i)
		}
		if !e.Mode.Valid() {
			return nil, fmt.Errorf("%w: tree: entry %q has illegal mode %d", ErrCorrupt, e.Name, e.Mode)
		}
		if size > 1<<62 {
			return nil, fmt.Errorf("%w: tree: entry %q has impossible size", ErrCorrupt, e.Name)
		}
		e.Size = int64(size)
		if err := ValidName(e.Name); err != nil {
			return nil, fmt.Errorf("%w: tree: %w", ErrCorrupt, err)
		}
		if i > 0 && t.Entries[i-1].Name >= e.Name {
			return nil, fmt.Errorf("%w: tree: entries %q and %q unsorted or duplicate", ErrCorrupt, t.Entries[i-1].Name, e.Name)
		}
		t.Entries = append(t.Entries, e)
	}
	if len(r.B) != 0 {
		return nil, fmt.Errorf("%w: tree: %d trailing bytes", ErrCorrupt, len(r.B))
	}
	if !bytes.Equal(t.Encode(), data) {
		return nil, fmt.Errorf("%w: tree: non-canonical encoding", ErrCorrupt)
	}
	return t, nil
}

// ValidName reports whether name may appear as a tree entry, and so be
// created by a restore. It refuses "", ".", "..", names containing '/', '\\',
// NUL or any control character, names that are not valid UTF-8, and any
// spelling of ".git" or ".snap" that some filesystem would treat as such:
// any case, trailing dots or spaces (NTFS), code points HFS+ ignores, the
// 8.3 short names GIT~1 and SNAP~1, and NTFS stream suffixes (".git::$DATA").
func ValidName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrBadName, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: %q contains a separator or control character", ErrBadName, name)
		}
	}
	if IsReservedName(name) {
		return fmt.Errorf("%w: %q is reserved", ErrBadName, name)
	}
	return nil
}

// IsReservedName reports whether name is, on some filesystem, the same
// directory as ".git" or ".snap".
func IsReservedName(name string) bool {
	if isASCII(name) { // the common case, without allocating
		n := name
		if i := strings.IndexByte(n, ':'); i >= 0 {
			n = n[:i]
		}
		for len(n) > 0 && (n[len(n)-1] == '.' || n[len(n)-1] == ' ') {
			n = n[:len(n)-1]
		}
		if len(n) < len(".git") || len(n) > len("snap~1") {
			return false
		}
		return strings.EqualFold(n, ".git") || strings.EqualFold(n, ".snap") ||
			strings.EqualFold(n, "git~1") || strings.EqualFold(n, "snap~1")
	}
	n := strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexByte(n, ':'); i >= 0 { // NTFS alternate data stream
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	n = folder.String(n)
	switch n {
	case ".git", ".snap", "git~1", "snap~1":
		return true
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// folder is Unicode case folding (so ".ſnap" folds to ".snap"), as
// case-insensitive filesystems compare names.
var folder = cases.Fold()

// hfsIgnorable lists the code points HFS+ drops when comparing names
// (as git's is_hfs_dotgit does).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// reader decodes the binary formats of this package.
type reader = bin.Reader
