package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// fx is a store built directly with the object and ref layers.
type fx struct {
	t   *testing.T
	dir string
	st  *objects.Store
	rs  *refs.Store
	now int64
}

func newFx(t *testing.T) *fx {
	t.Helper()
	dir := t.TempDir()
	st, err := objects.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rs, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &fx{t: t, dir: dir, st: st, rs: rs, now: 1700000000000000000}
}

// reopen returns stores opened afresh on the directory: they see only what
// is on disk.
func (f *fx) reopen() (*objects.Store, *refs.Store) {
	f.t.Helper()
	st, err := objects.Open(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { st.Close() })
	rs, err := refs.Open(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return st, rs
}

// write runs fn with a new writer and commits it as one pack.
func (f *fx) write(fn func(w *objects.Writer)) string {
	f.t.Helper()
	w := f.st.NewWriter()
	fn(w)
	name, err := w.Commit()
	if err != nil {
		f.t.Fatal(err)
	}
	return name
}

func (f *fx) put(w *objects.Writer, t objects.Type, data []byte) objects.ID {
	f.t.Helper()
	id, err := w.Put(t, data)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// tree stores files (slash-separated path -> content) as nested trees and
// returns the root tree's id and total size.
func (f *fx) tree(w *objects.Writer, files map[string]string) (objects.ID, int64) {
	f.t.Helper()
	sub := map[string]map[string]string{}
	var tr objects.Tree
	for p, content := range files {
		if i := strings.IndexByte(p, '/'); i >= 0 {
			if sub[p[:i]] == nil {
				sub[p[:i]] = map[string]string{}
			}
			sub[p[:i]][p[i+1:]] = content
			continue
		}
		id, err := w.PutBytes([]byte(content))
		if err != nil {
			f.t.Fatal(err)
		}
		tr.Entries = append(tr.Entries, objects.TreeEntry{Name: p, Mode: objects.ModeFile, ID: id, Size: int64(len(content))})
	}
	for name, files := range sub {
		id, size := f.tree(w, files)
		tr.Entries = append(tr.Entries, objects.TreeEntry{Name: name, Mode: objects.ModeDir, ID: id, Size: size})
	}
	sort.Slice(tr.Entries, func(i, j int) bool { return tr.Entries[i].Name < tr.Entries[j].Name })
	var total int64
	for _, e := range tr.Entries {
		total += e.Size
	}
	return f.put(w, objects.TypeTree, tr.Encode()), total
}

// commitTree stores a checkpoint of tree (and a conversation document) on
// top of the session head, moves the head and logs the op, as the engine
// does. It returns the checkpoint id and its pack.
func (f *fx) commitTree(session string, tree func(w *objects.Writer) objects.ID) (objects.ID, string) {
	f.t.Helper()
	head := "sessions/" + session + "/head"
	parent, err := f.rs.Get(head)
	if err != nil {
		parent = objects.ID{}
	}
	f.now += int64(time.Second)
	var id objects.ID
	pack := f.write(func(w *objects.Writer) {
		state, _ := f.tree(w, map[string]string{"conversation": "[{\"role\":\"user\",\"content\":\"step\"}]"})
		ck := objects.Checkpoint{Tree: tree(w), State: state, Session: session, Kind: "manual", Time: f.now}
		if !parent.IsZero() {
			ck.Parents = []objects.ID{parent}
		}
		id = f.put(w, objects.TypeCheckpoint, ck.Encode())
	})
	if err := f.rs.Update(head, parent, id); err != nil {
		f.t.Fatal(err)
	}
	op := &refs.Op{Kind: "checkpoint", Session: session, Checkpoint: id,
		Refs: []refs.RefChange{{Name: head, Old: parent, New: id}}}
	if err := f.rs.Append(op); err != nil {
		f.t.Fatal(err)
	}
	return id, pack
}

// commit checkpoints files in session.
func (f *fx) commit(session string, files map[string]string) (objects.ID, string) {
	return f.commitTree(session, func(w *objects.Writer) objects.ID {
		id, _ := f.tree(w, files)
		return id
	})
}

// base builds a small healthy store: two checkpoints in session s, one in
// session t sharing files, and a label.
func (f *fx) base() {
	f.commit("s", map[string]string{"README.md": "hello\n", "src/main.go": "package main\n", "src/util/u.go": "package util\n"})
	c2, _ := f.commit("s", map[string]string{"README.md": "hello again\n", "src/main.go": "package main\n", "src/util/u.go": "package util\n"})
	f.commit("t", map[string]string{"README.md": "hello\n", "docs/a.txt": strings.Repeat("docs ", 100)})
	if err := f.rs.Update("labels/v1", objects.ID{}, c2); err != nil {
		f.t.Fatal(err)
	}
}

// flip flips one byte in the middle of a record's data.
func flip(t *testing.T, dir string, info objects.ObjectInfo) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, objects.PacksDir, info.Pack), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := info.Offset + 10 + info.Stored/2 // 10: the record header
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x08
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func info(t *testing.T, st *objects.Store, id objects.ID) objects.ObjectInfo {
	t.Helper()
	i, ok := st.Info(id)
	if !ok {
		t.Fatalf("%s not stored", id.Short())
	}
	return i
}

// fsck runs Fsck on stores opened afresh.
func (f *fx) fsck(full bool) *FsckReport {
	f.t.Helper()
	st, rs := f.reopen()
	rep, err := Fsck(context.Background(), st, rs, full)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

// mustBeClean fails unless a full fsck finds nothing at all.
func (f *fx) mustBeClean() {
	f.t.Helper()
	if rep := f.fsck(true); len(rep.Problems) > 0 {
		f.t.Fatalf("fsck --full found problems:\n%s", problemsText(rep.Problems))
	}
}

func problemsText(ps []Problem) string {
	var s []string
	for _, p := range ps {
		s = append(s, "  "+p.String())
	}
	return strings.Join(s, "\n")
}

// packsState lists the files of packs/ with their size and mtime.
func packsState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sub := range []string{objects.PacksDir, objects.TmpDir} {
		des, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			fi, err := de.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[sub+"/"+de.Name()] = fmt.Sprint(fi.ModTime(), " ", fi.Size())
		}
	}
	return out
}

// age sets the mtime of every pack and temporary file to d ago.
func age(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	when := time.Now().Add(-d)
	for _, sub := range []string{objects.PacksDir, objects.TmpDir} {
		des, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			if err := os.Chtimes(filepath.Join(dir, sub, de.Name()), when, when); err != nil {
				t.Fatal(err)
			}
		}
	}
}
