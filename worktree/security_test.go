package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
)

// node describes a hostile tree entry to build directly as store objects,
// bypassing every check a capture would make.
type node struct {
	name     string
	mode     objects.Mode
	content  string // file content or symlink target
	children []node // for ModeDir
}

func file(name, content string) node {
	return node{name: name, mode: objects.ModeFile, content: content}
}
func link(name, target string) node {
	return node{name: name, mode: objects.ModeSymlink, content: target}
}
func dir(name string, ch ...node) node { return node{name: name, mode: objects.ModeDir, children: ch} }

// build puts the tree into w without sorting, validating or deduplicating.
func build(t *testing.T, w *objects.Writer, children []node) objects.ID {
	t.Helper()
	var tr objects.Tree
	for _, n := range children {
		e := objects.TreeEntry{Name: n.name, Mode: n.mode}
		if n.mode == objects.ModeDir {
			e.ID = build(t, w, n.children)
		} else {
			id, err := w.PutBytes([]byte(n.content))
			if err != nil {
				t.Fatal(err)
			}
			e.ID, e.Size = id, int64(len(n.content))
		}
		tr.Entries = append(tr.Entries, e)
	}
	id, err := w.Put(objects.TypeTree, tr.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// listAll maps every path under dir (not following symlinks) to its
// content or link target.
func listAll(t *testing.T, dir string, skip string) map[string]string {
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if p == skip {
			return filepath.SkipDir
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[p] = "-> " + target
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			out[p] = string(data)
		case fi.IsDir():
			out[p] = "dir"
		}
		return nil
	})
	return out
}

// TestRestoreRefusesHostileTrees restores hand-built hostile trees beside
// sentinel files: every hostile entry is refused, nothing is written outside
// the project root, into .git or into the store, and sentinels are intact.
func TestRestoreRefusesHostileTrees(t *testing.T) {
	cases := []struct {
		name string
		// current is what is on disk (and captured) before the restore.
		current []node
		// ignored creates on-disk paths the capture ignores (via .gitignore).
		ignored map[string]string // path → symlink target ("->x") or content
		target  []node
		// allowed: paths the restore may legitimately write inside the root.
		allowed []string
		// safe: not an attack to refuse, but a case that must be handled
		// without writing through the symlink.
		safe bool
		// fold, when set, is what the file system written to is made to
		// fold (RestoreOptions.probe); else the real one is probed.
		fold *folding
	}{
		{name: "dotdot", target: []node{file("..", "evil")}},
		{name: "dotdot dir", target: []node{dir("..", file("outside.txt", "evil"))}},
		{name: "dot", target: []node{file(".", "evil")}},
		{name: "empty name", target: []node{file("", "evil")}},
		{name: "absolute path", target: []node{file("/tmp/evil", "evil")}},
		{name: "slash in name", target: []node{file("a/../../outside.txt", "evil")}},
		{name: "backslash", target: []node{file(`..\outside.txt`, "evil")}},
		{name: "dot git", target: []node{dir(".git", file("config", "evil"))}},
		{name: "dot GIT", target: []node{dir(".GIT", file("config", "evil"))}},
		{name: "dot git trailing dot", target: []node{dir(".git.", file("config", "evil"))}},
		{name: "dot git trailing space", target: []node{dir(".git ", file("config", "evil"))}},
		{name: "git short name", target: []node{dir("GIT~1", file("config", "evil"))}},
		{name: "dot git hfs ignorable", target: []node{dir(".g\u200cit", file("config", "evil"))}},
		{name: "nested dot git", target: []node{dir("sub", dir("deep", dir(".Git", file("hooks", "evil"))))}},
		{name: "dot git file", target: []node{file(".git", "gitdir: /tmp/evil")}},
		{name: "store", target: []node{dir(".snap", file("config", "evil"))}},
		{name: "store upper", target: []node{dir(".SNAP", dir("packs", file("x.pack", "evil")))}},
		{name: "newline", target: []node{file("a\nb", "evil")}},
		{name: "nul", target: []node{file("a\x00b", "evil")}},
		{name: "escape char", target: []node{file("a\x1b[31m", "evil")}},
		{name: "duplicate entries", target: []node{file("a", "one"), file("a", "two")}},
		{name: "unsorted entries", target: []node{file("b", "one"), file("a", "two")}},
		{name: "case collision", target: []node{file("README", "one"), file("readme", "two")}, fold: &folding{caseless: true}},
		{name: "unicode normalisation collision", target: []node{file("cafe\u0301", "one"), file("caf\u00e9", "two")}, fold: &folding{normalising: true}},
		{name: "case collision, deep", target: []node{dir("include", dir("linux", file("xt_CONNMARK.h", "one"), file("xt_connmark.h", "two")))}, fold: &folding{caseless: true, normalising: true}},
		{name: "case collision, directories", target: []node{dir("Src", file("a", "one")), dir("src", file("b", "two"))}, fold: &folding{caseless: true}},
		// Where the file system does not fold, both names are written.
		{name: "case pair, no folding", target: []node{file("README", "one"), file("readme", "two")}, fold: &folding{},
			allowed: []string{"README", "readme"}, safe: true},
		{name: "normalisation pair, no folding", target: []node{file("cafe\u0301", "one"), file("caf\u00e9", "two")}, fold: &folding{},
			allowed: []string{"caf\u00e9", "cafe\u0301"}, safe: true},
		{name: "case pair, caseless but not normalising", target: []node{file("cafe\u0301", "one"), file("caf\u00e9", "two")}, fold: &folding{caseless: true},
			allowed: []string{"caf\u00e9", "cafe\u0301"}, safe: true},
		{
			name:    "ignored symlink to outside, path beneath",
			ignored: map[string]string{"link": "->OUTSIDE"},
			target:  []node{file(".gitignore", "link\n"), dir("link", file("evil.txt", "evil"))},
			allowed: []string{".gitignore"},
		},
		{
			name:    "ignored symlink to outside dir, deep path beneath",
			ignored: map[string]string{"a/link": "->OUTSIDE"},
			target:  []node{file(".gitignore", "link\n"), dir("a", dir("link", dir("x", file("evil.txt", "evil"))))},
			allowed: []string{".gitignore"},
		},
		{
			name:    "captured symlink replaced by directory",
			current: []node{link("d", "OUTSIDE")},
			target:  []node{dir("d", file("evil.txt", "inside"))},
			allowed: []string{"d", "d/evil.txt"},
			safe:    true,
		},
		{
			name:    "captured symlink leaf replaced by file",
			current: []node{link("f", "OUTSIDE/outside.txt")},
			target:  []node{file("f", "inside")},
			allowed: []string{"f"},
			safe:    true,
		},
		{
			name:    "ignored file not overwritten",
			ignored: map[string]string{"notes.txt": "user notes"},
			target:  []node{file(".gitignore", "notes.txt\n"), file("notes.txt", "evil")},
			allowed: []string{".gitignore"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			outside := filepath.Join(parent, "outside")
			store := filepath.Join(root, ".snap")
			for p, c := range map[string]string{
				filepath.Join(outside, "outside.txt"):    "sentinel",
				filepath.Join(root, ".git", "config"):    "[core]\n",
				filepath.Join(root, "sentinel.txt"):      "keep me",
				filepath.Join(root, ".snap", "sentinel"): "store",
			} {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(c), 0o644)
			}
			st, err := objects.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			w := st.NewWriter()
			fix := func(ns []node) []node {
				for i := range ns {
					ns[i].content = strings.ReplaceAll(ns[i].content, "OUTSIDE", outside)
					ns[i].children = append([]node(nil), ns[i].children...)
				}
				return ns
			}
			cur := build(t, w, append(fix(tc.current), file("sentinel.txt", "keep me")))
			tgt := build(t, w, append(fix(tc.target), file("sentinel.txt", "keep me")))
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			// Materialise the current tree and the ignored paths on disk.
			for _, n := range fix(tc.current) {
				if n.mode == objects.ModeSymlink {
					os.Symlink(n.content, filepath.Join(root, n.name))
				}
			}
			for p, c := range tc.ignored {
				full := filepath.Join(root, p)
				os.MkdirAll(filepath.Dir(full), 0o755)
				if target, ok := strings.CutPrefix(c, "->"); ok {
					os.Symlink(strings.ReplaceAll(target, "OUTSIDE", outside), full)
				} else {
					os.WriteFile(full, []byte(c), 0o644)
				}
			}
			beforeOutside := listAll(t, outside, "")
			beforeRoot := listAll(t, root, "")

			opts := RestoreOptions{Root: root, StoreDir: store}
			if tc.fold != nil {
				opts.probe = func(fsys.Sys, int) (folding, error) { return *tc.fold, nil }
			}
			res, err := Restore(context.Background(), st, cur, tgt, opts)
			refused := err != nil || (res != nil && len(res.Errors) > 0)
			if refused == tc.safe {
				t.Fatalf("refused = %v, want %v: %+v %v", refused, !tc.safe, res, err)
			}
			if d := diffMaps(beforeOutside, listAll(t, outside, "")); d != "" {
				t.Fatalf("restore changed files outside the root:\n%s", d)
			}
			afterRoot := listAll(t, root, "")
			allowed := map[string]bool{}
			for _, p := range tc.allowed {
				allowed[filepath.Join(root, p)] = true
			}
			for p, v := range afterRoot {
				if beforeRoot[p] != v && !allowed[p] {
					t.Errorf("restore wrote %s = %q", p, v)
				}
			}
			for p, v := range beforeRoot {
				if _, ok := afterRoot[p]; !ok && !allowed[p] {
					t.Errorf("restore removed %s (%q)", p, v)
				}
			}
			for p, want := range map[string]string{
				filepath.Join(root, ".git", "config"):    "[core]\n",
				filepath.Join(root, "sentinel.txt"):      "keep me",
				filepath.Join(root, ".snap", "sentinel"): "store",
				filepath.Join(outside, "outside.txt"):    "sentinel",
			} {
				if got, err := os.ReadFile(p); err != nil || string(got) != want {
					t.Errorf("sentinel %s = %q, %v", p, got, err)
				}
			}
		})
	}
}

func diffMaps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k+": "+v+" → "+b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+": new "+v)
		}
	}
	return strings.Join(out, "\n")
}

// Temporary files of a killed restore are never captured; those of dead
// processes are removed, those of live ones left alone.
func TestCaptureSkipsRestoreTemps(t *testing.T) {
	root := t.TempDir()
	st, err := objects.Open(filepath.Join(root, ".snap"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dead := TempPrefix + "999999999-1" // beyond pid_max: no such process
	live := TempName()
	for _, n := range []string{"keep.txt", dead, live} {
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	snap, err := Capture(context.Background(), st.NewDryWriter(), Options{Root: root, StoreDir: filepath.Join(root, ".snap")})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Files != 1 {
		t.Fatalf("captured %d files, want only keep.txt", snap.Files)
	}
	if _, err := os.Stat(filepath.Join(root, dead)); !os.IsNotExist(err) {
		t.Errorf("dead process's temp file still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, live)); err != nil {
		t.Errorf("live process's temp file removed: %v", err)
	}
}
