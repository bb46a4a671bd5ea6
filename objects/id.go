package objects

import (
	"encoding/hex"
	"fmt"

	"github.com/zeebo/blake3"
)

// IDSize is the length in bytes of an object id (blake3-256).
const IDSize = 32

// ID names an object: blake3-256 over its type tag and canonical uncompressed
// encoding (see doc.go). The zero ID names nothing.
type ID [IDSize]byte

// Type is the kind of an object. It is part of the hashed input, so two
// objects of different types never share an id.
type Type uint8

// Object types. The numeric values are stored in pack indexes: never reuse one.
const (
	TypeBlob       Type = 1 // raw bytes: a small file, a symlink target, or one chunk
	TypeChunkList  Type = 2 // a large blob split into chunks (see chunklist.go)
	TypeTree       Type = 3 // a directory (see tree.go)
	TypeCheckpoint Type = 4 // a checkpoint node (see checkpoint.go)
)

func (t Type) String() string {
	switch t {
	case TypeBlob:
		return "blob"
	case TypeChunkList:
		return "chunklist"
	case TypeTree:
		return "tree"
	case TypeCheckpoint:
		return "checkpoint"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Valid reports whether t is a known object type.
func (t Type) Valid() bool { return t >= TypeBlob && t <= TypeCheckpoint }

// Hash computes the id of an object of type t whose canonical encoding is data.
func Hash(t Type, data []byte) ID {
	h := blake3.New()
	h.Write([]byte{byte(t)})
	h.Write(data)
	var id ID
	h.Sum(id[:0])
	return id
}

// String returns the id as 64 lowercase hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short returns the first 12 hex digits, for display.
func (id ID) Short() string { return hex.EncodeToString(id[:6]) }

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// ParseID parses 64 hex digits.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*IDSize {
		return id, fmt.Errorf("%w: %q is not 64 hex digits", ErrBadID, s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: %q: %v", ErrBadID, s, err)
	}
	return id, nil
}

// MarshalText encodes the id as hex, so ids appear as strings in JSON.
func (id ID) MarshalText() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalText parses a hex id; an empty string is the zero ID.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ID{}
		return nil
	}
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
