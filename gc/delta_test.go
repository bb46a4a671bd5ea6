package gc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// deltaSource returns about 5 KB of text, version v differing by one line.
func deltaSource(v int) []byte {
	var b bytes.Buffer
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&b, "func step%03d(x int) int { return x*%d + %d }\n", i, i%7, i%13)
		if i == 60 {
			fmt.Fprintf(&b, "// version %d\n", v)
		}
	}
	return b.Bytes()
}

// deltaTree returns a tree of 60 files whose first names file (content id,
// size) and whose other entries are fixed.
func deltaTree(file objects.ID, size int) []byte {
	tr := objects.Tree{Entries: []objects.TreeEntry{{Name: "a.go", Mode: objects.ModeFile, ID: file, Size: int64(size)}}}
	for i := 1; i < 60; i++ {
		c := fixedFile(i)
		tr.Entries = append(tr.Entries, objects.TreeEntry{Name: fmt.Sprintf("f%02d.go", i), Mode: objects.ModeFile, ID: objects.Hash(objects.TypeBlob, c), Size: int64(len(c))})
	}
	return tr.Encode()
}

func fixedFile(i int) []byte { return []byte(fmt.Sprint("file ", i)) }

// deltaStore stores version 1 of a project unreachable: a.go (in pack pb,
// with some junk) and its tree (in pack pt); then it checkpoints version 2,
// with a.go and the tree stored as deltas on version 1 (in pack p2).
func deltaStore(t *testing.T, f *fx) (b1, t1, b2, t2 objects.ID, pb, pt, p2 string) {
	t.Helper()
	v1, v2 := deltaSource(1), deltaSource(2)
	pb = f.write(func(w *objects.Writer) {
		b1 = f.put(w, objects.TypeBlob, v1)
		f.put(w, objects.TypeBlob, []byte("junk beside a base"))
	})
	pt = f.write(func(w *objects.Writer) { t1 = f.put(w, objects.TypeTree, deltaTree(b1, len(v1))) })
	_, p2 = f.commitTree("s", func(w *objects.Writer) objects.ID {
		for i := 1; i < 60; i++ {
			f.put(w, objects.TypeBlob, fixedFile(i))
		}
		var err error
		if b2, _, err = w.PutBlobBase(bytes.NewReader(v2), b1); err != nil {
			t.Fatal(err)
		}
		if t2, err = w.PutDelta(objects.TypeTree, deltaTree(b2, len(v2)), t1); err != nil {
			t.Fatal(err)
		}
		return t2
	})
	for _, id := range []objects.ID{b2, t2} {
		if i, _ := f.st.Info(id); !i.Delta {
			t.Fatalf("%s %s stored whole", i.Type, id.Short())
		}
	}
	return b1, t1, b2, t2, pb, pt, p2
}

// Only the deltas are reachable: gc keeps their bases (and drops the junk
// beside them), and everything still reads after gc --grace 0.
func TestCollectKeepsDeltaBases(t *testing.T) {
	f := newFx(t)
	b1, t1, b2, t2, p1, _, _ := deltaStore(t, f)
	age(t, f.dir, 2*time.Hour)
	res, err := Collect(context.Background(), f.st, f.rs, Options{Grace: 0})
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksRewritten != 1 || res.PacksDeleted != 0 || res.Unreachable != 1 {
		t.Fatalf("Result %+v: want the bases' pack rewritten without its one unreachable object", res)
	}
	st, _ := f.reopen()
	if _, err := os.Stat(filepath.Join(f.dir, objects.PacksDir, p1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the bases' pack was not rewritten")
	}
	for _, id := range []objects.ID{b1, t1, b2, t2} {
		if _, _, err := st.Read(id); err != nil {
			t.Fatalf("after gc: %v", err)
		}
	}
	data, err := st.ReadBlob(b2, 1<<20)
	if err != nil || !bytes.Equal(data, deltaSource(2)) {
		t.Fatalf("a.go v2: %v", err)
	}
	f.mustBeClean()
}

// A delta in a young pack (kept whatever it holds) keeps its unreachable
// base in an old pack that gc rewrites.
func TestCollectKeepsBasesOfYoungDeltas(t *testing.T) {
	f := newFx(t)
	f.base()
	v1, v2 := deltaSource(1), deltaSource(2)
	var base, junk objects.ID
	f.write(func(w *objects.Writer) {
		base = f.put(w, objects.TypeBlob, v1)
		junk = f.put(w, objects.TypeBlob, []byte("junk"))
	})
	age(t, f.dir, 2*time.Hour)
	var d objects.ID
	f.write(func(w *objects.Writer) { // a writer that has not moved its ref yet
		var err error
		if d, err = w.PutDelta(objects.TypeBlob, v2, base); err != nil {
			t.Fatal(err)
		}
	})
	if i, _ := f.st.Info(d); !i.Delta {
		t.Fatal("not a delta")
	}
	res, err := Collect(context.Background(), f.st, f.rs, Options{Grace: time.Hour})
	if err != nil || res.PacksRewritten+res.PacksDeleted != 1 {
		t.Fatalf("Collect: %+v, %v", res, err)
	}
	st, _ := f.reopen()
	if st.Has(junk) {
		t.Fatal("junk kept")
	}
	if _, data, err := st.Read(d); err != nil || !bytes.Equal(data, v2) {
		t.Fatalf("young delta after gc: %v", err)
	}
}

// fsck, connectivity only, reports a reachable delta whose base is missing
// as damage; gc then refuses to delete anything when the delta is a tree
// (what it names cannot be known).
func TestFsckMissingDeltaBase(t *testing.T) {
	for _, which := range []string{"blob", "tree"} {
		t.Run(which, func(t *testing.T) {
			f := newFx(t)
			b1, t1, b2, t2, pb, pt, p2 := deltaStore(t, f)
			gone := pb
			if which == "tree" {
				gone = pt
			}
			if err := os.Remove(filepath.Join(f.dir, objects.PacksDir, gone)); err != nil {
				t.Fatal(err)
			}
			lost, delta := b1, b2
			if which == "tree" {
				lost, delta = t1, t2
			}
			for _, full := range []bool{false, true} {
				rep := f.fsck(full)
				if !rep.Corrupt() {
					t.Fatalf("fsck (full %v) finds no error:\n%s", full, problemsText(rep.Problems))
				}
				n := 0
				for _, p := range rep.Problems {
					if p.Object == delta.String() {
						n++
						if p.Severity != SeverityError || p.Path != "packs/"+p2 ||
							!strings.Contains(p.Message, "stored as a delta on "+lost.String()+", which is missing") {
							t.Errorf("fsck (full %v): %s", full, p)
						}
					}
				}
				if n != 1 {
					t.Errorf("fsck (full %v): %d reports of %s, want 1:\n%s", full, n, delta.Short(), problemsText(rep.Problems))
				}
			}
			st, rs := f.reopen()
			age(t, f.dir, 2*time.Hour)
			_, err := Collect(context.Background(), st, rs, Options{Grace: 0})
			if which == "tree" && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("gc with an unreadable tree: %v, want ErrCorrupt", err)
			}
			if which == "blob" && err != nil {
				t.Fatalf("gc with an unreadable blob: %v", err)
			}
		})
	}
}
