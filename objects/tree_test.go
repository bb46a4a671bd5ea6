package objects

import (
	"encoding/binary"
	"errors"
	"testing"
)

func treeForTest(entries ...TreeEntry) []byte {
	return (&Tree{Entries: entries}).Encode()
}

func entryForTest(name string, mode Mode, size int64) TreeEntry {
	return TreeEntry{Name: name, Mode: mode, ID: Hash(TypeBlob, []byte(name)), Size: size}
}

func TestDecodeTreeRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		entries []TreeEntry
	}{
		{"empty", nil},
		{"one", []TreeEntry{entryForTest("a", ModeFile, 1)}},
		{"all modes", []TreeEntry{
			entryForTest("dir", ModeDir, 1<<40),
			entryForTest("file", ModeFile, 0),
			entryForTest("link", ModeSymlink, 5),
			entryForTest("x.sh", ModeExec, 300),
		}},
		{"bytewise order", []TreeEntry{ // uppercase before lowercase, ASCII before UTF-8
			entryForTest("B", ModeFile, 1),
			entryForTest("a", ModeFile, 1),
			entryForTest("a b", ModeFile, 1),
			entryForTest("ab", ModeFile, 1),
			entryForTest("é", ModeFile, 1),
		}},
		{"max size", []TreeEntry{entryForTest("big", ModeFile, 1<<62)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := treeForTest(c.entries...)
			tr, err := DecodeTree(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Entries) != len(c.entries) {
				t.Fatalf("%d entries, want %d", len(tr.Entries), len(c.entries))
			}
			for i := range c.entries {
				if tr.Entries[i] != c.entries[i] {
					t.Fatalf("entry %d = %+v, want %+v", i, tr.Entries[i], c.entries[i])
				}
			}
		})
	}
}

func TestDecodeTreeRefuses(t *testing.T) {
	a, b := entryForTest("a", ModeFile, 1), entryForTest("b", ModeDir, 2)
	good := treeForTest(a, b)
	withMode := func(m Mode) []byte {
		e := a
		e.Mode = m
		return treeForTest(e)
	}
	withName := func(n string) []byte {
		e := a
		e.Name = n
		return treeForTest(e)
	}
	// One entry, its size encoded as a two-byte varint for 1.
	oneEntry := treeForTest(a)
	nonCanonSize := append(append([]byte(nil), oneEntry[:len(oneEntry)-1]...), 0x81, 0x00)
	// The entry count 1 encoded in two bytes.
	nonCanonCount := append([]byte{0x81, 0x00}, oneEntry[1:]...)
	// The name length 1 encoded in two bytes.
	nonCanonNameLen := append([]byte{1, byte(ModeFile), 0x81, 0x00}, oneEntry[3:]...)
	tooBig := append(append([]byte(nil), oneEntry[:len(oneEntry)-1]...), binary.AppendUvarint(nil, 1<<62+1)...)
	countTooLarge := append(binary.AppendUvarint(nil, 3), good[1:]...)

	cases := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"unsorted", treeForTest(b, a)},
		{"unsorted among three", treeForTest(a, entryForTest("c", ModeFile, 1), b)},
		{"duplicate", treeForTest(a, a)},
		{"duplicate name different mode", treeForTest(a, entryForTest("a", ModeDir, 1))},
		{"mode 0", withMode(0)},
		{"mode 5", withMode(5)},
		{"mode 255", withMode(255)},
		{"name .git", withName(".git")},
		{"name .GIT.", withName(".GIT.")},
		{"name ..", withName("..")},
		{"name a/b", withName("a/b")},
		{"name with NUL", withName("a\x00")},
		{"empty name", withName("")},
		{"name not UTF-8", withName("\xff")},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"trailing entry-like bytes", append(append([]byte(nil), good...), good[1:]...)},
		{"count larger than entries", countTooLarge},
		{"huge count", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"varint overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"non-canonical size varint", nonCanonSize},
		{"non-canonical count varint", nonCanonCount},
		{"non-canonical name length varint", nonCanonNameLen},
		{"size above 2^62", tooBig},
	}
	for n := 0; n < len(good); n++ {
		cases = append(cases, struct {
			name string
			data []byte
		}{"truncated", good[:n]})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := DecodeTree(c.data)
			if err == nil {
				t.Fatalf("DecodeTree(%x) = %+v, want an error", c.data, tr.Entries)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
	// A bad name is also ErrBadName.
	if _, err := DecodeTree(withName(".git")); !errors.Is(err, ErrBadName) {
		t.Fatalf("bad name: %v does not wrap ErrBadName", err)
	}
}

func TestTreeFind(t *testing.T) {
	names := []string{"A", "Makefile", "a", "b.go", "dir", "z", "é"}
	var entries []TreeEntry
	for i, n := range names {
		entries = append(entries, entryForTest(n, ModeFile, int64(i)))
	}
	tr, err := DecodeTree(treeForTest(entries...))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		e, ok := tr.Find(n)
		if !ok || e != entries[i] {
			t.Errorf("Find(%q) = %+v, %v", n, e, ok)
		}
	}
	for _, n := range []string{"", "0", "B", "Makefil", "Makefilez", "c", "zz", "é!", "\uffff"} {
		if e, ok := tr.Find(n); ok {
			t.Errorf("Find(%q) found %+v", n, e)
		}
	}
	var empty Tree
	if _, ok := empty.Find("a"); ok {
		t.Error("Find in an empty tree succeeded")
	}
}

func TestModeStringAndValid(t *testing.T) {
	for m, want := range map[Mode]string{ModeFile: "file", ModeExec: "exec", ModeSymlink: "symlink", ModeDir: "dir", 0: "mode(0)", 9: "mode(9)"} {
		if m.String() != want {
			t.Errorf("Mode(%d).String() = %q", m, m.String())
		}
		if m.Valid() != (want != "mode(0)" && want != "mode(9)") {
			t.Errorf("Mode(%d).Valid() = %v", m, m.Valid())
		}
	}
}
