package worktree

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/objects"
)

// The plain-name fast path answers exactly as the full matcher, for
// stacks of ignore files at several depths, files and directories, on
// every path whose ancestors are not ignored (the only ones walks ask
// about).
func TestIgnoreLiteralFastPath(t *testing.T) {
	names := []string{"a", "b", "build", "x.o", "_obj"}
	r := rand.New(rand.NewPCG(1, 2))
	compared := 0
	for round := 0; round < 300; round++ {
		// The ignorer of each directory along a path holds the patterns of
		// its ancestors' ignore files: query each with paths beneath it.
		ig := newIgnorer(nil, nil)
		var dom []string
		for depth := 0; depth < 3; depth++ {
			var lines []string
			for k := r.IntN(3); k > 0; k-- {
				l := names[r.IntN(len(names))]
				if r.IntN(2) == 0 {
					l += "/"
				}
				lines = append(lines, l)
			}
			ig = ig.child(append([]string(nil), dom...), [][]byte{[]byte(strings.Join(lines, "\n"))})
			if len(ig.patterns) > 0 && ig.literal == nil {
				t.Fatal("plain-name patterns did not take the fast path")
			}
			slow := newIgnorer(ig.patterns, nil)
			for q := 0; q < 100; q++ {
				path := append([]string(nil), dom...)
				for k := 1 + r.IntN(3); k > 0; k-- {
					path = append(path, names[r.IntN(len(names))])
				}
				isDir := r.IntN(2) == 0
				ancestorIgnored := false // the walks never ask about such paths
				for k := 1; k < len(path); k++ {
					ancestorIgnored = ancestorIgnored || slow.ignored(path[:k], true)
				}
				if ancestorIgnored {
					continue
				}
				compared++
				if got, want := ig.ignored(path, isDir), slow.ignored(path, isDir); got != want {
					t.Fatalf("round %d: %v (dir %v): fast path %v, full matcher %v; patterns %v", round, path, isDir, got, want, ig.literal)
				}
			}
			dom = append(dom, names[r.IntN(len(names))])
		}
	}
	if compared < 30000 {
		t.Fatalf("only %d of 90000 queries had no ignored ancestor", compared)
	}
	// A pattern that is not a plain name turns the fast path off.
	if ig := newIgnorer(nil, nil).child(nil, [][]byte{[]byte("build\n*.o\n")}); ig.literal != nil {
		t.Fatal("glob pattern kept the fast path")
	}
}

// Ignored agrees with a capture: what it calls ignored is not captured,
// and everything else is.
func TestIgnoredAgreesWithCapture(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".gitignore":        "*.log\nbuild/\n/top.txt\n!keep.log\n",
		"src/.gitignore":    "gen/\nlocal.txt\n",
		"src/.snapignore":   "secret.txt\n",
		"a.log":             "x",
		"keep.log":          "x",
		"top.txt":           "x",
		"src/top.txt":       "x",
		"build/out.bin":     "x",
		"src/build/x.go":    "x",
		"src/gen/g.go":      "x",
		"src/local.txt":     "x",
		"src/secret.txt":    "x",
		"src/main.go":       "x",
		"src/deep/a.log":    "x",
		"src/deep/main.go":  "x",
		".git/info/exclude": "excluded.txt\n",
		"excluded.txt":      "x",
	}
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(c), 0o644)
	}
	st, err := objects.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	defer w.Abort()
	snap, err := Capture(context.Background(), w, Options{Root: root, StoreDir: filepath.Join(root, ".snap")})
	if err != nil {
		t.Fatal(err)
	}
	captured := map[string]bool{}
	if err := objects.WalkTree(w, snap.Tree, func(p string, e objects.TreeEntry) error {
		captured[strings.TrimPrefix(p, "/")] = e.Mode != objects.ModeDir
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for p := range files {
		if strings.HasPrefix(p, ".git/") {
			continue
		}
		if got := Ignored(root, p, false); got == captured[p] {
			t.Errorf("%s: Ignored %v, captured %v", p, got, captured[p])
		}
	}
	if !Ignored(root, "build/new/file.txt", false) || Ignored(root, "src/new.txt", false) {
		t.Error("paths that do not exist yet")
	}
}

// M25 (model, seed 803): a FIFO where an ignore or exclude file is looked
// for made Ignored (and so 'snap edit') wait forever on its open. Neither
// Ignored nor Excludes may block, and a symlinked or FIFO .gitignore is
// read as a capture reads it: not at all.
func TestIgnoredNeverBlocksOnAFIFO(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"src", ".git/info"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{".gitignore", "src/.snapignore", ".git/info/exclude"} {
		if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "elsewhere"), []byte("*.go\n"), 0o644)
	os.Symlink("../elsewhere", filepath.Join(root, "src", ".gitignore"))
	done := make(chan bool, 1)
	go func() {
		Excludes(root)
		done <- Ignored(root, "src/main.go", false)
	}()
	select {
	case ignored := <-done:
		if ignored {
			t.Error("src/main.go is ignored through a symlinked .gitignore, which a capture does not read")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ignored or Excludes blocked on a FIFO")
	}
}
