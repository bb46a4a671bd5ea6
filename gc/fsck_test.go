package gc

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// want describes one expected problem. msg must occur in the message, or
// start it when it begins with "^".
type want struct {
	sev  Severity
	obj  objects.ID
	path string
	msg  string
}

func (w want) matches(p Problem) bool {
	obj := ""
	if !w.obj.IsZero() {
		obj = w.obj.String()
	}
	if p.Severity != w.sev || p.Object != obj || p.Path != w.path {
		return false
	}
	if m, ok := strings.CutPrefix(w.msg, "^"); ok {
		return strings.HasPrefix(p.Message, m)
	}
	return strings.Contains(p.Message, w.msg)
}

func errAt(obj objects.ID, path, msg string) want { return want{SeverityError, obj, path, msg} }
func warnAt(path, msg string) want                { return want{SeverityWarning, objects.ID{}, path, msg} }

// checkProblems asserts that got holds exactly the wanted problems, in any
// order.
func checkProblems(t *testing.T, what string, got []Problem, wants []want) {
	t.Helper()
	used := make([]bool, len(got))
	ok := len(got) == len(wants)
	for _, w := range wants {
		found := false
		for i, p := range got {
			if !used[i] && w.matches(p) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			ok = false
			t.Errorf("%s: missing %s problem object=%s path=%q message~%q", what, w.sev, w.obj.Short(), w.path, w.msg)
		}
	}
	if !ok {
		t.Fatalf("%s: got %d problems, want %d:\n%s", what, len(got), len(wants), problemsText(got))
	}
	corrupt := false
	for _, w := range wants {
		corrupt = corrupt || w.sev == SeverityError
	}
	if rep := (&FsckReport{Problems: got}); rep.Corrupt() != corrupt {
		t.Fatalf("%s: Corrupt() = %v, want %v", what, rep.Corrupt(), corrupt)
	}
}

func TestFsckCleanStore(t *testing.T) {
	f := newFx(t)
	f.base()
	// A large file: chunk lists of two levels.
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 1<<20+12345)
	for i := range big {
		big[i] = byte(rng.IntN(256))
	}
	f.commit("s", map[string]string{"big.bin": string(big), "src/main.go": "package main\n"})
	var lists int
	f.st.Each(func(_ objects.ID, t objects.Type) {
		if t == objects.TypeChunkList {
			lists++
		}
	})
	if lists < 2 {
		t.Fatalf("want nested chunk lists, have %d lists", lists)
	}
	for _, full := range []bool{false, true} {
		rep := f.fsck(full)
		checkProblems(t, "clean", rep.Problems, nil)
		if rep.Refs != 3 || rep.Ops != 4 || rep.Checkpoints != 4 || rep.Packs != 4 || rep.Objects != f.st.Stats().Objects {
			t.Fatalf("counts %+v", rep)
		}
		if rep.Problems == nil {
			t.Fatal("Problems is nil, want [] for JSON")
		}
	}
}

func TestFsckFindings(t *testing.T) {
	ghost := objects.Hash(objects.TypeCheckpoint, []byte("never written"))
	cases := []struct {
		name string
		// setup damages a base store and returns the problems connectivity
		// must report, and those only a full check adds.
		setup func(t *testing.T, f *fx) (conn, fullOnly []want)
	}{
		{"flipped byte in an unreachable blob", func(t *testing.T, f *fx) ([]want, []want) {
			var id objects.ID
			pack := f.write(func(w *objects.Writer) { id = f.put(w, objects.TypeBlob, []byte("junk that nothing references")) })
			flip(t, f.dir, info(t, f.st, id))
			return nil, []want{errAt(id, "packs/"+pack, "^unreachable blob")}
		}},
		{"flipped byte in a reachable tree", func(t *testing.T, f *fx) ([]want, []want) {
			c, pack := f.commit("x", map[string]string{"only-here.txt": "unique content\n"})
			ck, _ := f.st.ReadCheckpoint(c)
			flip(t, f.dir, info(t, f.st, ck.Tree))
			return []want{errAt(ck.Tree, "packs/"+pack, "cannot be read")}, nil
		}},
		{"flipped byte in a reachable blob", func(t *testing.T, f *fx) ([]want, []want) {
			content := strings.Repeat("a blob only a full check reads ", 10)
			_, pack := f.commit("x", map[string]string{"f.txt": content})
			id := objects.Hash(objects.TypeBlob, []byte(content))
			flip(t, f.dir, info(t, f.st, id))
			return nil, []want{errAt(id, "packs/"+pack, "^reachable blob")}
		}},
		{"corrupt duplicate copy in a second pack", func(t *testing.T, f *fx) ([]want, []want) {
			content := "stored in two packs\n"
			id := objects.Hash(objects.TypeBlob, []byte(content))
			other, _ := f.reopen() // does not see the next pack: writes its own copy
			f.commit("x", map[string]string{"dup.txt": content})
			w := other.NewWriter()
			if _, err := w.Put(objects.TypeBlob, []byte(content)); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			fresh, _ := f.reopen()
			primary := info(t, fresh, id).Pack
			for _, p := range fresh.PackInfo() {
				if p.Name == primary {
					continue
				}
				objs, _ := fresh.PackObjects(p.Name)
				for _, o := range objs {
					if o.ID == id {
						flip(t, f.dir, o)
						return nil, []want{errAt(id, "packs/"+p.Name, "^reachable blob")}
					}
				}
			}
			t.Fatal("no second copy")
			return nil, nil
		}},
		{"truncated pack", func(t *testing.T, f *fx) ([]want, []want) {
			pack := f.write(func(w *objects.Writer) { f.put(w, objects.TypeBlob, []byte("junk")) })
			p := filepath.Join(f.dir, objects.PacksDir, pack)
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()-7); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(objects.ID{}, "packs/"+pack, "cannot be indexed")}, nil
		}},
		{"trailing garbage after the footer", func(t *testing.T, f *fx) ([]want, []want) {
			pack := f.write(func(w *objects.Writer) { f.put(w, objects.TypeBlob, []byte("junk")) })
			fh, err := os.OpenFile(filepath.Join(f.dir, objects.PacksDir, pack), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString("garbage")
			fh.Close()
			return []want{errAt(objects.ID{}, "packs/"+pack, "cannot be indexed")}, nil
		}},
		{"missing object", func(t *testing.T, f *fx) ([]want, []want) {
			missing := objects.Hash(objects.TypeBlob, []byte("never written"))
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				tr := objects.Tree{Entries: []objects.TreeEntry{{Name: "gone.txt", Mode: objects.ModeFile, ID: missing, Size: 13}}}
				return f.put(w, objects.TypeTree, tr.Encode())
			})
			return []want{errAt(missing, "", "missing content")}, nil
		}},
		{"missing object named by many trees is reported once", func(t *testing.T, f *fx) ([]want, []want) {
			missing := objects.Hash(objects.TypeBlob, []byte("never written"))
			for i := 0; i < 5; i++ {
				f.commitTree("x", func(w *objects.Writer) objects.ID {
					other, _ := f.tree(w, map[string]string{"n.txt": strings.Repeat("v", i+1)})
					tr := objects.Tree{Entries: []objects.TreeEntry{
						{Name: "gone.txt", Mode: objects.ModeFile, ID: missing, Size: 13},
						{Name: "sub", Mode: objects.ModeDir, ID: other, Size: int64(i + 1)},
					}}
					return f.put(w, objects.TypeTree, tr.Encode())
				})
			}
			return []want{errAt(missing, "", "missing content")}, nil
		}},
		{"tree with unsorted entries", func(t *testing.T, f *fx) ([]want, []want) {
			return badTree(t, f, "b.txt", "a.txt"), nil
		}},
		{"tree with duplicate entries", func(t *testing.T, f *fx) ([]want, []want) {
			return badTree(t, f, "a.txt", "a.txt"), nil
		}},
		{"chunk list entry with the wrong size", func(t *testing.T, f *fx) ([]want, []want) {
			var list objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				b := f.put(w, objects.TypeBlob, []byte(strings.Repeat("c", 100)))
				l := objects.ChunkList{Entries: []objects.ChunkRef{{ID: b, Size: 101}}}
				list = f.put(w, objects.TypeChunkList, l.Encode())
				return fileTree(f, w, list, 101)
			})
			return []want{errAt(list, "", "entry 0 records 101 bytes, blob")}, nil
		}},
		{"chunk list whose child list totals another size", func(t *testing.T, f *fx) ([]want, []want) {
			var top objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				b := f.put(w, objects.TypeBlob, []byte(strings.Repeat("c", 100)))
				l0 := objects.ChunkList{Entries: []objects.ChunkRef{{ID: b, Size: 100}}}
				l1 := objects.ChunkList{Level: 1, Entries: []objects.ChunkRef{{ID: f.put(w, objects.TypeChunkList, l0.Encode()), Size: 150}}}
				top = f.put(w, objects.TypeChunkList, l1.Encode())
				return fileTree(f, w, top, 150)
			})
			return []want{errAt(top, "", "records 150 bytes, chunk list")}, nil
		}},
		{"chunk list of level 1 naming a blob", func(t *testing.T, f *fx) ([]want, []want) {
			var b objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				b = f.put(w, objects.TypeBlob, []byte(strings.Repeat("c", 100)))
				l1 := objects.ChunkList{Level: 1, Entries: []objects.ChunkRef{{ID: b, Size: 100}}}
				return fileTree(f, w, f.put(w, objects.TypeChunkList, l1.Encode()), 100)
			})
			return []want{errAt(b, "", "names a blob, expected a chunklist")}, nil
		}},
		{"file size disagrees with its content", func(t *testing.T, f *fx) ([]want, []want) {
			var tree objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				tree = fileTree(f, w, f.put(w, objects.TypeBlob, []byte("abc")), 5)
				return tree
			})
			return []want{errAt(tree, "", `"f" records 5 bytes`)}, nil
		}},
		{"directory entry naming a blob", func(t *testing.T, f *fx) ([]want, []want) {
			var b objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				b = f.put(w, objects.TypeBlob, []byte("abc"))
				tr := objects.Tree{Entries: []objects.TreeEntry{{Name: "d", Mode: objects.ModeDir, ID: b, Size: 3}}}
				return f.put(w, objects.TypeTree, tr.Encode())
			})
			return []want{errAt(b, "", "names a blob, expected a tree")}, nil
		}},
		{"directory size disagrees with its entries", func(t *testing.T, f *fx) ([]want, []want) {
			var tree objects.ID
			f.commitTree("x", func(w *objects.Writer) objects.ID {
				sub, _ := f.tree(w, map[string]string{"a": "abc"})
				tr := objects.Tree{Entries: []objects.TreeEntry{{Name: "d", Mode: objects.ModeDir, ID: sub, Size: 4}}}
				tree = f.put(w, objects.TypeTree, tr.Encode())
				return tree
			})
			return []want{{SeverityWarning, tree, "", `directory "d" records 4 bytes`}}, nil
		}},
		{"checkpoint that does not decode", func(t *testing.T, f *fx) ([]want, []want) {
			var ck objects.ID
			pack := f.write(func(w *objects.Writer) { ck = f.put(w, objects.TypeCheckpoint, []byte(`{"tree":"x"}`)) })
			if err := f.rs.Update("labels/broken", objects.ID{}, ck); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(ck, "packs/"+pack, "checkpoint named by ref refs/labels/broken cannot be read")}, nil
		}},
		{"missing parent", func(t *testing.T, f *fx) ([]want, []want) {
			var ck objects.ID
			f.write(func(w *objects.Writer) {
				tree, _ := f.tree(w, map[string]string{"a": "b"})
				c := objects.Checkpoint{Tree: tree, State: tree, Parents: []objects.ID{ghost}, Session: "x", Kind: "manual", Time: 1}
				ck = f.put(w, objects.TypeCheckpoint, c.Encode())
			})
			if err := f.rs.Update("labels/orphan", objects.ID{}, ck); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(ghost, "", "missing checkpoint, named by checkpoint "+ck.Short()+" (parent)")}, nil
		}},
		{"ref pointing to a missing checkpoint", func(t *testing.T, f *fx) ([]want, []want) {
			if err := f.rs.Update("labels/ghost", objects.ID{}, ghost); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(ghost, "refs/labels/ghost", "names a missing checkpoint")}, nil
		}},
		{"ref pointing to a tree", func(t *testing.T, f *fx) ([]want, []want) {
			var tree objects.ID
			f.write(func(w *objects.Writer) { tree, _ = f.tree(w, map[string]string{"a": "tree as ref"}) })
			if err := f.rs.Update("labels/tree", objects.ID{}, tree); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(tree, "refs/labels/tree", "names a tree, not a checkpoint")}, nil
		}},
		{"op-log entry naming a missing checkpoint", func(t *testing.T, f *fx) ([]want, []want) {
			if err := f.rs.Append(&refs.Op{Kind: "rewind", Session: "s", Target: ghost, Safety: ghost}); err != nil {
				t.Fatal(err)
			}
			return []want{errAt(ghost, "oplog", "op 4 target, op 4 safety) names a missing checkpoint")}, nil
		}},
		{"damaged op-log record", func(t *testing.T, f *fx) ([]want, []want) {
			p := filepath.Join(f.dir, "oplog")
			data, _ := os.ReadFile(p)
			i := strings.Index(string(data), `"kind":"checkpoint"`)
			data[i+9] = 'C'
			os.WriteFile(p, data, 0o644)
			return []want{errAt(objects.ID{}, "oplog", "line 1")}, nil
		}},
		{"damaged ref file", func(t *testing.T, f *fx) ([]want, []want) {
			os.WriteFile(filepath.Join(f.dir, "refs", "labels", "bad"), []byte("xyz\n"), 0o644)
			return []want{errAt(objects.ID{}, "refs/labels/bad", "not 64 hex digits")}, nil
		}},
		{"stray temporary file", func(t *testing.T, f *fx) ([]want, []want) {
			os.WriteFile(filepath.Join(f.dir, objects.TmpDir, "pack-123"), []byte("SNAPPACK"), 0o644)
			return []want{warnAt("tmp/pack-123", "temporary file")}, nil
		}},
		{"stale ref lock file", func(t *testing.T, f *fx) ([]want, []want) {
			os.WriteFile(filepath.Join(f.dir, "refs", "labels", "v1.lock"), nil, 0o644)
			return []want{warnAt("refs/labels/v1.lock", "lock file")}, nil
		}},
		{"foreign file in packs", func(t *testing.T, f *fx) ([]want, []want) {
			os.WriteFile(filepath.Join(f.dir, objects.PacksDir, "notes.txt"), nil, 0o644)
			return []want{warnAt("packs/notes.txt", "not a pack file")}, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t)
			f.base()
			conn, fullOnly := tc.setup(t, f)
			checkProblems(t, "fsck", f.fsck(false).Problems, conn)
			checkProblems(t, "fsck --full", f.fsck(true).Problems, append(conn, fullOnly...))
		})
	}
}

// badTree stores a checkpoint whose tree has the two names in that order,
// which DecodeTree must refuse.
func badTree(t *testing.T, f *fx, first, second string) []want {
	var tree objects.ID
	_, pack := f.commitTree("x", func(w *objects.Writer) objects.ID {
		b := f.put(w, objects.TypeBlob, []byte("x"))
		tr := objects.Tree{Entries: []objects.TreeEntry{
			{Name: first, Mode: objects.ModeFile, ID: b, Size: 1},
			{Name: second, Mode: objects.ModeFile, ID: b, Size: 1},
		}}
		tree = f.put(w, objects.TypeTree, tr.Encode())
		return tree
	})
	return []want{errAt(tree, "packs/"+pack, "unsorted or duplicate")}
}

// fileTree stores a tree holding one file "f" with the given content id and
// recorded size.
func fileTree(f *fx, w *objects.Writer, id objects.ID, size int64) objects.ID {
	tr := objects.Tree{Entries: []objects.TreeEntry{{Name: "f", Mode: objects.ModeFile, ID: id, Size: size}}}
	return f.put(w, objects.TypeTree, tr.Encode())
}

// Fsck waits for a running gc rather than racing it.
func TestFsckWaitsForGC(t *testing.T) {
	f := newFx(t)
	f.base()
	unlock, err := lockSweep(context.Background(), f.dir, DefaultLockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := Fsck(ctx, f.st, f.rs, false); err == nil {
		t.Fatal("Fsck ran beside a gc")
	}
	unlock()
	if rep, err := Fsck(context.Background(), f.st, f.rs, false); err != nil || rep.Corrupt() {
		t.Fatalf("Fsck after the gc: %v, %+v", err, rep)
	}
}
