package faults

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// entry is one path of a working tree as the tests compare it.
type entry struct {
	kind string // "file", "exec", "link"
	data string // content or link target
}

// treeState is a working tree: captured paths (slash-separated) to content.
type treeState map[string]entry

// edit is a change to a working tree: a nil *entry deletes the path.
type edit map[string]*entry

func file(s string) *entry { return &entry{"file", s} }
func exec(s string) *entry { return &entry{"exec", s} }
func link(s string) *entry { return &entry{"link", s} }

// bigContent is deterministic content larger than objects.SmallBlobMax, so
// it is stored as a chunk list.
func bigContent(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// apply writes e into the tree at root.
func apply(t testing.TB, root string, e edit) {
	t.Helper()
	paths := make([]string, 0, len(e))
	for p := range e {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.RemoveAll(full); err != nil {
			t.Fatal(err)
		}
		en := e[p]
		if en == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch en.kind {
		case "file":
			err = os.WriteFile(full, []byte(en.data), 0o644)
		case "exec":
			err = os.WriteFile(full, []byte(en.data), 0o755)
		case "link":
			err = os.Symlink(en.data, full)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ignoredDir is ignored by the project's .gitignore: restores must never
// touch it.
const ignoredDir = "build"

// readState reads the tree at root as capture sees it (no store, no .git,
// not the ignored directory), and lists the restore temporary files left in
// it (debris) apart. Empty directories are not content.
func readState(t testing.TB, root string) (st treeState, debris []string) {
	t.Helper()
	st = treeState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() && (rel == ".snap" || rel == ".git" || rel == ignoredDir) {
			return fs.SkipDir
		}
		if strings.HasPrefix(d.Name(), worktree.TempPrefix) {
			debris = append(debris, rel)
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			st[rel] = entry{"link", target}
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			kind := "file"
			if fi.Mode()&0o100 != 0 {
				kind = "exec"
			}
			st[rel] = entry{kind, string(data)}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, debris
}

// diffStates describes how got differs from want ("" when equal).
func diffStates(got, want treeState) string {
	var d []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			d = append(d, "missing "+p)
		case g != w:
			d = append(d, fmt.Sprintf("%s: %s %.20q, want %s %.20q", p, g.kind, g.data, w.kind, w.data))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// copyTree copies a project and its store, keeping modes, symlinks and
// modification times.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(out, fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(out, data, fi.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(out, fi.ModTime(), fi.ModTime())
		}
	})
}

// fixture is the project every run starts from (a copy of it):
//
//	c0 (labels/keep) ← c1 ← c2 (sessions/s/head), and an orphan pack;
//	the working tree is dirty: v3, not checkpointed.
//
// gc with KeepLast 1 expires c1 and drops the orphan pack; a rewind to c0
// deletes, re-creates, modifies files, a directory and a symlink.
type fixture struct {
	dir    string // holds proj/ (the project) and proj/.snap (its store)
	states [4]treeState
	ck     [3]objects.ID // c0, c1, c2
	v3Tree objects.ID    // tree id of the dirty working tree
	// v3Entries: its entries by path
	v3Entries map[string]objects.TreeEntry
	ignored   treeState // content of the ignored directory
	ops       int       // op-log records of the fixture
}

func (fx *fixture) root() string { return filepath.Join(fx.dir, "proj") }

// scratchDir returns a directory removed when the test ends, on a tmpfs when
// one is available: the harness injects faults above the file system and
// checks logical state, not durability (the kill -9 torture does), and on a
// disk every fsync would flush the data the previous runs left dirty,
// making hundreds of runs slow. $SNAP_FAULTS_DIR picks the parent
// directory instead (say, to run on the disk the store will live on).
func scratchDir(t testing.TB) string {
	parent := os.Getenv("SNAP_FAULTS_DIR")
	if parent == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
	}
	if parent == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "snap-faults-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newFixture(t testing.TB) *fixture {
	fx := &fixture{dir: scratchDir(t)}
	root := fx.root()
	big := bigContent(1, 100<<10)
	v := []edit{
		{ // v0
			".gitignore":         file(ignoredDir + "/\n"),
			"README.md":          file("# project\n"),
			"src/main.go":        file("package main\n\nfunc main() {}\n"),
			"src/util/helper.go": file("package util\n"),
			"bin/run.sh":         exec("#!/bin/sh\necho run\n"),
			"link":               link("src/main.go"),
			"data/big.bin":       file(big),
		},
		{ // v1
			"README.md":          file("# project v1\n"),
			"src/new.go":         file("package main // new\n"),
			"src/util/helper.go": nil,
		},
		{ // v2
			"data/big.bin": file(big[:50<<10] + "EDITED" + big[50<<10:]),
			"link":         link("README.md"),
			"bin/run.sh":   file("#!/bin/sh\necho not executable any more\n"),
		},
		{ // v3: dirty, never checkpointed in the fixture
			"src/main.go": file("package main\n\nfunc main() { println(3) }\n"),
			"README.md":   nil,
			"docs/a.md":   file("# docs\n"),
			"src/util/x":  file("x\n"),
		},
	}
	if err := os.MkdirAll(filepath.Join(root, ".snap"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The store's settings file, as snap init writes it, so that the
	// engine (package snap) can open the store too.
	if err := os.WriteFile(filepath.Join(root, ".snap", "config"), []byte("{\n  \"version\": 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply(t, root, edit{ignoredDir + "/out.o": file("ignored build output\n")})
	l, err := openLive(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	ctx := context.Background()
	for i, e := range v {
		apply(t, root, e)
		fx.states[i], _ = readState(t, root)
		if i == 3 {
			break
		}
		if fx.ck[i], err = l.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			if err := l.moveRefs([]refMove{{name: "labels/keep", new: fx.ck[0]}}, "fixture-label"); err != nil {
				t.Fatal(err)
			}
		case 1:
			// An orphan pack: committed, never referenced (a crashed writer).
			w := l.st.NewWriter()
			if _, err := w.PutBytes([]byte("orphan object, unreachable")); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The working tree's files were written long before any run: a file
	// changed within the last timestamp tick is read twice (see
	// worktree's readFile), which would make the operation counts depend
	// on how fast the runs start.
	aged := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, string(filepath.Separator)+".snap") {
			os.Chtimes(p, aged, aged)
		}
		return nil
	})
	w := l.st.NewDryWriter()
	snap, err := worktree.Capture(ctx, w, worktree.Options{Root: root, StoreDir: l.store, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	fx.v3Tree = snap.Tree
	fx.v3Entries = map[string]objects.TreeEntry{}
	if err := objects.WalkTree(w, snap.Tree, func(p string, e objects.TreeEntry) error {
		fx.v3Entries[p] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ops, err := l.rs.Ops()
	if err != nil {
		t.Fatal(err)
	}
	fx.ops = len(ops)
	fx.ignored = readDirFiles(t, filepath.Join(root, ignoredDir))
	// Packs older than the fixture: gc's grace period of 0 sees them old.
	past := time.Now().Add(-time.Minute)
	packs, _ := filepath.Glob(filepath.Join(l.store, objects.PacksDir, "*"))
	for _, p := range packs {
		os.Chtimes(p, past, past)
	}
	for i := range fx.ck {
		if msg := restoresTo(t, l.store, fx.ck[i], fx.states[i]); msg != "" {
			t.Fatalf("fixture c%d: %s", i, msg)
		}
	}
	if msg := fsckClean(l.store); msg != "" {
		t.Fatalf("fixture: %s", msg)
	}
	return fx
}

func readDirFiles(t testing.TB, dir string) treeState {
	st := treeState{}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st[de.Name()] = entry{"file", string(data)}
	}
	return st
}

// openReal opens the store with the real file system, as a fresh process
// would.
func openReal(store string) (*objects.Store, *refs.Store, error) {
	st, err := objects.Open(store)
	if err != nil {
		return nil, nil, err
	}
	rs, err := refs.Open(store)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, rs, nil
}

// fsckClean runs a full fsck with the real file system and describes the
// errors it reports ("" when none; warnings are allowed).
func fsckClean(store string) string {
	st, rs, err := openReal(store)
	if err != nil {
		return "open: " + err.Error()
	}
	defer st.Close()
	rep, err := gc.Fsck(context.Background(), st, rs, true)
	if err != nil {
		return "fsck: " + err.Error()
	}
	if !rep.Corrupt() {
		return ""
	}
	var msgs []string
	for _, p := range rep.Problems {
		if p.Severity == gc.SeverityError {
			msgs = append(msgs, p.String())
		}
	}
	return "fsck: " + strings.Join(msgs, "; ")
}

var verifySeq atomic.Int64

// restoresTo restores checkpoint id, with the real file system, into an
// empty directory and compares it with want ("" when byte-exact).
func restoresTo(t testing.TB, store string, id objects.ID, want treeState) string {
	st, _, err := openReal(store)
	if err != nil {
		return "open: " + err.Error()
	}
	defer st.Close()
	ck, err := st.ReadCheckpoint(id)
	if err != nil {
		return fmt.Sprintf("checkpoint %s: %v", id.Short(), err)
	}
	dir := filepath.Join(filepath.Dir(store), "..", fmt.Sprintf("verify-%d", verifySeq.Add(1)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	res, err := worktree.Restore(context.Background(), st, objects.ID{}, ck.Tree, worktree.RestoreOptions{Root: dir, StoreDir: store})
	if err != nil {
		return fmt.Sprintf("restore %s: %v", id.Short(), err)
	}
	if len(res.Errors) > 0 {
		return fmt.Sprintf("restore %s: %v", id.Short(), res.Errors)
	}
	got, _ := readState(t, dir)
	if d := diffStates(got, want); d != "" {
		return fmt.Sprintf("checkpoint %s restores differently: %s", id.Short(), d)
	}
	return ""
}
