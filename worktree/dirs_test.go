package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// Dirs lists exactly the directories a capture enters (every directory of
// the captured tree, and the root), and as ignored the top-most ones a
// capture reaches and does not enter, under nested .gitignore and
// .snapignore rules with negations, the exclude file, an ignored
// node_modules at two depths, a nested store, .git, the store, a symlink
// to a directory, a temporary directory and a name a tree cannot hold.
func TestDirsAgreesWithCapture(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".gitignore":              "node_modules/\n*.log\n/gen*/\n!/gen-keep/\nbuild/\n",
		"node_modules/pkg/a.js":   "x",
		"src/node_modules/x/y.js": "x",
		"gen-out/a.go":            "x",
		"gen-keep/a.go":           "x",
		"gen-keep/build/b.o":      "x",
		"src/.gitignore":          "tmp/\n!build/\n",
		"src/.snapignore":         "secret/\n",
		"src/main.go":             "x",
		"src/build/out.o":         "x",
		"src/tmp/t":               "x",
		"src/secret/k":            "x",
		"src/deep/er/est/f.md":    "x",
		"logs.log/f":              "x",
		"other-store/config":      "{}",
		"other-store/packs/p":     "x",
		"other-store/refs/r":      "x",
		".git/info/exclude":       "excluded-dir/\n",
		".git/objects/o/x":        "x",
		"excluded-dir/f":          "x",
		"sub/.git/HEAD":           "x",
		"sub/pkg/f":               "x",
		".snap/config":            "{}",
		".snap/packs/p":           "x",
		".snap/refs/r":            "x",
		TempPrefix + "999999-1/f": "x",
		"bad\x01dir/f":            "x",
	}
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "empty", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(root, "link-to-src")); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(root, ".snap")

	st, err := objects.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	defer w.Abort()
	snap, err := Capture(context.Background(), w, Options{Root: root, StoreDir: storeDir, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var captured []string // every directory of the captured tree
	var walk func(p string, id objects.ID)
	walk = func(p string, id objects.ID) {
		captured = append(captured, p)
		tree, err := w.ReadTree(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tree.Entries {
			if e.Mode == objects.ModeDir {
				walk(strings.TrimPrefix(p+"/"+e.Name, "/"), e.ID)
			}
		}
	}
	walk("", snap.Tree)
	slices.Sort(captured)

	dirs, ignored, err := Dirs(root, storeDir, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs { // walk order: every directory after its parent
		if d != "" && !slices.Contains(dirs[:i], parentDir(d)) {
			t.Errorf("Dirs lists %q before its parent", d)
		}
	}
	sorted := slices.Sorted(slices.Values(dirs))
	if !slices.Equal(sorted, captured) {
		t.Errorf("Dirs:\n  %q\ncapture entered:\n  %q", sorted, captured)
	}
	wantIgnored := []string{"excluded-dir", "gen-keep/build", "gen-out", "logs.log", "node_modules", "other-store", "src/node_modules", "src/secret", "src/tmp"}
	if got := slices.Sorted(slices.Values(ignored)); !slices.Equal(got, wantIgnored) {
		t.Errorf("ignored %q, want %q", got, wantIgnored)
	}
	for _, d := range ignored {
		if !slices.Contains(dirs, parentDir(d)) {
			t.Errorf("ignored %q is not top-most: its parent is not entered", d)
		}
		if d != "other-store" && !Ignored(root, d, true) {
			t.Errorf("ignored %q, which Ignored does not ignore", d)
		}
	}
	if !slices.ContainsFunc(snap.Skipped, func(s Skipped) bool { return s.Path == "other-store/" }) {
		t.Errorf("the capture did not report the nested store: %v", snap.Skipped)
	}

	// Beneath a directory: the part of the whole walk beneath it.
	for _, under := range []string{"src", "gen-keep", "src/deep", "empty"} {
		d, ig, err := Dirs(root, storeDir, under)
		if err != nil {
			t.Fatalf("Dirs %q: %v", under, err)
		}
		var wantD, wantI []string
		for _, x := range dirs {
			if x == under || strings.HasPrefix(x, under+"/") {
				wantD = append(wantD, x)
			}
		}
		for _, x := range ignored {
			if strings.HasPrefix(x, under+"/") {
				wantI = append(wantI, x)
			}
		}
		if !slices.Equal(d, wantD) || !slices.Equal(ig, wantI) {
			t.Errorf("Dirs %q = %q, %q; want %q, %q", under, d, ig, wantD, wantI)
		}
	}
	// Not entered: ignored (or beneath), a store, or never a capture's.
	for under, want := range map[string][]string{
		"src/tmp":               {"src/tmp"},
		"node_modules/pkg":      {"node_modules/pkg"},
		"other-store":           {"other-store"},
		"other-store/packs":     {"other-store/packs"},
		"excluded-dir":          {"excluded-dir"},
		".git":                  nil,
		".git/objects":          nil,
		"sub/.git":              nil,
		".snap":                 nil,
		".snap/packs":           nil,
		"link-to-src":           nil,
		"src/main.go":           nil,
		TempPrefix + "999999-1": nil,
		"bad\x01dir":            nil,
	} {
		d, ig, err := Dirs(root, storeDir, under)
		if err != nil || d != nil || !slices.Equal(ig, want) {
			t.Errorf("Dirs %q = %q, %q, %v; want nothing entered, ignored %q", under, d, ig, err, want)
		}
	}
	if _, _, err := Dirs(root, storeDir, "src/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Dirs of a missing directory: %v, want not exist", err)
	}
	for _, bad := range []string{"../x", "/abs", "a//b", "a/./b", "a/"} {
		if _, _, err := Dirs(root, storeDir, bad); err == nil {
			t.Errorf("Dirs %q: no error", bad)
		}
	}
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
