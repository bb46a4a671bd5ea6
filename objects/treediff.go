package objects

import (
	"path"
	"strings"
)

// TreeReader reads trees; both Store and Writer (which also sees its
// pending trees) implement it.
type TreeReader interface {
	ReadTree(id ID) (*Tree, error)
}

// Change is one path that differs between two trees. A directory added or
// removed shows as its files, except an empty directory, which has none:
// it appears itself (Mode ModeDir, ID EmptyTree) where it exists on one
// side only. An absent side has Mode 0.
type Change struct {
	Path string
	Old  TreeEntry
	New  TreeEntry
}

// Added and Deleted classify a change (neither: modified).
func (c Change) Added() bool   { return c.Old.Mode == 0 }
func (c Change) Deleted() bool { return c.New.Mode == 0 }

// EmptyTree is the id of the tree with no entries: an empty directory.
var EmptyTree = Hash(TypeTree, (&Tree{}).Encode())

// DiffTrees calls fn for every non-directory path, and every empty
// directory, whose entry differs
// between trees a and b (either may be the zero ID, meaning empty), in path
// order. Subtrees with equal ids are skipped without being read, so the cost
// follows the size of the change, not of the tree.
func DiffTrees(r TreeReader, a, b ID, fn func(Change) error) error {
	return diffDir(r, "", a, b, nil, fn)
}

// DiffTreesWithin is DiffTrees reading only the directories within
// reports true for (its slash-separated path; "" is never asked): the
// changes beneath any other are not reported, and its subtrees not read.
func DiffTreesWithin(r TreeReader, a, b ID, within func(dir string) bool, fn func(Change) error) error {
	return diffDir(r, "", a, b, within, fn)
}

// TreeMemo is a TreeReader that keeps the trees it read last (up to a few
// hundred), for a reader that diffs a sequence of trees: each one's trees
// are the next one's too.
type TreeMemo struct {
	R     TreeReader
	trees map[ID]*Tree
}

func (m *TreeMemo) ReadTree(id ID) (*Tree, error) {
	if t, ok := m.trees[id]; ok {
		return t, nil
	}
	t, err := m.R.ReadTree(id)
	if err != nil {
		return nil, err
	}
	if m.trees == nil || len(m.trees) >= 512 {
		m.trees = map[ID]*Tree{}
	}
	m.trees[id] = t
	return t, nil
}

func readOrEmpty(r TreeReader, id ID) (*Tree, error) {
	if id.IsZero() {
		return &Tree{}, nil
	}
	return r.ReadTree(id)
}

func diffDir(r TreeReader, dir string, a, b ID, within func(string) bool, fn func(Change) error) error {
	if a == b {
		return nil
	}
	ta, err := readOrEmpty(r, a)
	if err != nil {
		return err
	}
	tb, err := readOrEmpty(r, b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ta.Entries) || j < len(tb.Entries) {
		var ea, eb TreeEntry
		switch {
		case j == len(tb.Entries) || (i < len(ta.Entries) && ta.Entries[i].Name < tb.Entries[j].Name):
			ea = ta.Entries[i]
			i++
		case i == len(ta.Entries) || tb.Entries[j].Name < ta.Entries[i].Name:
			eb = tb.Entries[j]
			j++
		default:
			ea, eb = ta.Entries[i], tb.Entries[j]
			i++
			j++
		}
		if ea.Mode == eb.Mode && ea.ID == eb.ID {
			continue
		}
		name := ea.Name
		if name == "" {
			name = eb.Name
		}
		p := path.Join(dir, name)
		var subA, subB ID
		var fileA, fileB TreeEntry
		if ea.Mode == ModeDir {
			subA = ea.ID
		} else {
			fileA = ea
		}
		if eb.Mode == ModeDir {
			subB = eb.ID
		} else {
			fileB = eb
		}
		// An empty directory removed comes first, a file replaced by one
		// or a directory's contents after the file side, so that a restore
		// following the order deletes before it creates.
		if ea.ID == EmptyTree && ea.Mode == ModeDir && eb.Mode != ModeDir {
			if err := fn(Change{Path: p, Old: ea}); err != nil {
				return err
			}
		}
		if fileA.Mode != 0 || fileB.Mode != 0 {
			if fileA.Mode != fileB.Mode || fileA.ID != fileB.ID {
				if err := fn(Change{Path: p, Old: fileA, New: fileB}); err != nil {
					return err
				}
			}
		}
		if eb.ID == EmptyTree && eb.Mode == ModeDir && ea.Mode != ModeDir {
			if err := fn(Change{Path: p, New: eb}); err != nil {
				return err
			}
		}
		if (!subA.IsZero() || !subB.IsZero()) && (within == nil || within(p)) {
			if err := diffDir(r, p, subA, subB, within, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// WalkTree calls fn for every non-directory entry and every empty directory
// beneath tree id, in path order, with its slash-separated path.
func WalkTree(r TreeReader, id ID, fn func(path string, e TreeEntry) error) error {
	return DiffTrees(r, ID{}, id, func(c Change) error { return fn(c.Path, c.New) })
}

// EntryAt returns the entry at slash-separated path p of tree (p "" is the
// tree itself, as a directory entry); ok is false when no entry is there.
// err reports a tree that could not be read.
func EntryAt(tr TreeReader, tree ID, p string) (e TreeEntry, ok bool, err error) {
	e = TreeEntry{Mode: ModeDir, ID: tree}
	if p = strings.Trim(p, "/"); p == "" {
		return e, true, nil
	}
	for _, name := range strings.Split(p, "/") {
		if e.Mode != ModeDir {
			return TreeEntry{}, false, nil
		}
		t, err := tr.ReadTree(e.ID)
		if err != nil {
			return TreeEntry{}, false, err
		}
		if e, ok = t.Find(name); !ok {
			return TreeEntry{}, false, nil
		}
	}
	return e, true, nil
}
