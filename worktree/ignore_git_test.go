package worktree

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// randomPattern builds an ignore line from the pieces git's rules treat
// specially: negation, anchoring, "**" at every position, classes,
// escapes, a directory-only slash and trailing spaces.
func randomPattern(r *rand.Rand, names []string) string {
	segs := []string{"*", "**", "*.log", "a*", "?", "[ab]", "[!a]*", "[^b]", "[[:alpha:]]*", "[a-c]", `\a`, "*b", "b**"}
	var parts []string
	for k := 1 + r.IntN(3); k > 0; k-- {
		if r.IntN(2) == 0 {
			parts = append(parts, names[r.IntN(len(names))])
		} else {
			parts = append(parts, segs[r.IntN(len(segs))])
		}
	}
	p := strings.Join(parts, "/")
	switch r.IntN(4) {
	case 0:
		p = "/" + p
	case 1:
		p += "/"
	}
	if r.IntN(3) == 0 {
		p = "!" + p
	}
	if r.IntN(10) == 0 {
		p += "  "
	}
	return p
}

// A capture records exactly the files git sees as untracked and not
// ignored (`git ls-files --others --exclude-standard`), for random trees
// and random rule stacks at several depths: the ignore rules are git's.
func TestCaptureIgnoresAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (make test installs it)")
	}
	names := []string{"a", "b", "ab", "build", "x.log", "lib", "src", "a b"}
	r := rand.New(rand.NewPCG(7, 11))
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	for round := 0; round < rounds; round++ {
		root := t.TempDir()
		cmd := exec.Command("git", "init", "-q")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		files := map[string]string{}
		var dirs []string
		for i := 0; i < 30; i++ {
			var comps []string
			for k := 1 + r.IntN(4); k > 0; k-- {
				comps = append(comps, names[r.IntN(len(names))])
			}
			p := strings.Join(comps, "/")
			// No file where a directory is, nor below a file.
			clash := false
			for q := range files {
				if q == p || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
					clash = true
				}
			}
			if clash {
				continue
			}
			files[p] = "x"
			for k := 1; k < len(comps); k++ {
				dirs = append(dirs, strings.Join(comps[:k], "/"))
			}
		}
		dirs = append(dirs, "")
		var rules []string
		for k := r.IntN(5); k >= 0; k-- {
			d := dirs[r.IntN(len(dirs))]
			var lines []string
			for j := 1 + r.IntN(5); j > 0; j-- {
				lines = append(lines, randomPattern(r, names))
			}
			ig := filepath.Join(d, ".gitignore")
			files[ig] = strings.Join(lines, "\n") + "\n"
			rules = append(rules, ig+": "+strings.Join(lines, " | "))
		}
		writeFiles(t, root, files)
		cmd = exec.Command("git", "ls-files", "-z", "--others", "--exclude-standard")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git ls-files: %v", err)
		}
		var want []string
		for _, p := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
			if len(p) > 0 {
				want = append(want, string(p))
			}
		}
		slices.Sort(want)
		got := captured(t, root)
		if !slices.Equal(got, want) {
			var missing, extra []string
			for _, p := range want {
				if !slices.Contains(got, p) {
					missing = append(missing, p)
				}
			}
			for _, p := range got {
				if !slices.Contains(want, p) {
					extra = append(extra, p)
				}
			}
			t.Fatalf("round %d: capture differs from git\n  not captured, git keeps: %q\n  captured, git ignores: %q\n  rules:\n    %s",
				round, missing, extra, strings.Join(rules, "\n    "))
		}
	}
}

// The cases go-git's matcher reads differently from git (go-git issue
// #2112), each checked against git's answer.
func TestIgnoreRulesGitReadsDifferently(t *testing.T) {
	for _, tc := range []struct {
		rules string
		files []string
		want  []string
	}{
		// A negated directory re-includes the directory, not what the
		// other rules ignore beneath it.
		{"*.log\n!src/\n", []string{"src/lib/debug.log", "src/a.go", "b.log"}, []string{".gitignore", "src/a.go"}},
		{"z.*\n!main.go\n", []string{"src/main.go/z.txt", "src/main.go/y"}, []string{".gitignore", "src/main.go/y"}},
		// DIR/** ignores what is inside DIR, not DIR (nor a file named DIR).
		{"a/**\n", []string{"a", "b/c"}, []string{".gitignore", "a", "b/c"}},
		{"a/**\n", []string{"a/x", "a/y/z"}, []string{".gitignore"}},
		// A re-included directory is tested again for what it holds.
		{"a/**/*\n!a/b\n", []string{"a/b/c", "a/d"}, []string{".gitignore"}},
		// What lies in an excluded directory cannot be re-included.
		{"build/\n!build/keep\n", []string{"build/keep", "x"}, []string{".gitignore", "x"}},
		{"build/*\n!build/keep\n", []string{"build/keep", "build/drop"}, []string{".gitignore", "build/keep"}},
		// Escapes and trailing spaces.
		{"\\!x\n\\#y\nz\\ \nw  \n", []string{"!x", "#y", "z ", "w", "v"}, []string{".gitignore", "v"}},
		{"**/foo\n", []string{"foo", "a/foo", "a/b/foo", "a/foo2"}, []string{".gitignore", "a/foo2"}},
		{"a/**/b\n", []string{"a/b", "a/x/b", "a/x/y/b", "ab"}, []string{".gitignore", "ab"}},
	} {
		root := t.TempDir()
		files := map[string]string{".gitignore": tc.rules}
		for _, f := range tc.files {
			files[f] = "x"
		}
		writeFiles(t, root, files)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if got := captured(t, root); !slices.Equal(got, want) {
			t.Errorf("rules %q: captured %q, want %q", tc.rules, got, want)
		}
		if _, err := exec.LookPath("git"); err == nil {
			os.Mkdir(filepath.Join(root, ".git"), 0o755)
			cmd := exec.Command("git", "init", "-q")
			cmd.Dir = root
			cmd.Run()
			cmd = exec.Command("git", "ls-files", "-z", "--others", "--exclude-standard")
			cmd.Dir = root
			out, _ := cmd.Output()
			var g []string
			for _, p := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
				if len(p) > 0 {
					g = append(g, string(p))
				}
			}
			slices.Sort(g)
			if !slices.Equal(g, want) {
				t.Errorf("rules %q: the test's expectation %q is not git's %q", tc.rules, want, g)
			}
		}
	}
}
