package objects

import (
	"fmt"
	"slices"
	"testing"
)

// memTrees is a TreeReader over trees built in memory; reads counts the
// reads of each tree.
type memTrees struct {
	trees map[ID]*Tree
	reads map[ID]int
}

func (m *memTrees) ReadTree(id ID) (*Tree, error) {
	t, ok := m.trees[id]
	if !ok {
		return nil, fmt.Errorf("%w: tree %s", ErrNotFound, id.Short())
	}
	m.reads[id]++
	return t, nil
}

func (m *memTrees) put(entries ...TreeEntry) TreeEntry {
	t := &Tree{Entries: entries}
	id := Hash(TypeTree, t.Encode())
	m.trees[id] = t
	return TreeEntry{Mode: ModeDir, ID: id}
}

func named(name string, e TreeEntry) TreeEntry { e.Name = name; return e }

func blob(name, content string) TreeEntry {
	return TreeEntry{Name: name, Mode: ModeFile, ID: Hash(TypeBlob, []byte(content)), Size: int64(len(content))}
}

func TestDiffTreesWithinReadsOnlyTheDirectoriesAsked(t *testing.T) {
	m := &memTrees{trees: map[ID]*Tree{}, reads: map[ID]int{}}
	a := m.put(named("lib", m.put(blob("x.go", "1"))), named("src", m.put(named("deep", m.put(blob("y.go", "1"))), blob("z.go", "1"))))
	b := m.put(named("lib", m.put(blob("x.go", "2"))), named("src", m.put(named("deep", m.put(blob("y.go", "2"))), blob("z.go", "2"))))
	var all, within []string
	if err := DiffTrees(m, a.ID, b.ID, func(c Change) error { all = append(all, c.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all, []string{"lib/x.go", "src/deep/y.go", "src/z.go"}) {
		t.Fatalf("DiffTrees: %v", all)
	}
	clear(m.reads)
	asked := map[string]bool{}
	err := DiffTreesWithin(m, a.ID, b.ID, func(d string) bool { asked[d] = true; return d == "src" }, func(c Change) error {
		within = append(within, c.Path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(within, []string{"src/z.go"}) || !asked["lib"] || !asked["src/deep"] || len(m.reads) != 4 {
		t.Fatalf("within src: %v (asked %v, %d trees read)", within, asked, len(m.reads))
	}

	// TreeMemo reads each tree once.
	memo := &TreeMemo{R: m}
	clear(m.reads)
	for range 3 {
		if err := DiffTrees(memo, a.ID, b.ID, func(Change) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for id, n := range m.reads {
		if n != 1 {
			t.Fatalf("tree %s read %d times through a TreeMemo", id.Short(), n)
		}
	}
	if _, err := memo.ReadTree(Hash(TypeTree, []byte("none"))); err == nil {
		t.Fatal("a missing tree read through a TreeMemo")
	}
}
