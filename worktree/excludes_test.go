package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// captured captures root and lists the files it recorded.
func captured(t *testing.T, root string) []string {
	t.Helper()
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
	var paths []string
	if err := objects.WalkTree(w, snap.Tree, func(p string, e objects.TreeEntry) error {
		if e.Mode != objects.ModeDir {
			paths = append(paths, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	return paths
}

// writeFiles creates files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// git's global excludes file (core.excludesFile) is honoured as git
// finds it, below .git/info/exclude and every .gitignore in precedence.
func TestCaptureHonoursGlobalExcludesFile(t *testing.T) {
	tree := map[string]string{"a.tmp": "1", "keep.tmp": "1", "sub/b.tmp": "1", "sub/c.txt": "1", "x.log": "1"}
	all := []string{"a.tmp", "keep.tmp", "sub/b.tmp", "sub/c.txt", "x.log"}
	for _, tc := range []struct {
		name string
		xdg  bool              // set XDG_CONFIG_HOME (to HOME/xdg)
		home map[string]string // files under HOME ("XDG/" stands for the XDG directory)
		proj map[string]string // files under the project root, besides tree
		want []string
	}{
		{name: "none", want: all},
		{name: "default XDG ignore", xdg: true, home: map[string]string{"XDG/git/ignore": "*.tmp\n"},
			want: []string{"sub/c.txt", "x.log"}},
		{name: "default ~/.config/git/ignore", home: map[string]string{".config/git/ignore": "*.tmp"},
			want: []string{"sub/c.txt", "x.log"}},
		{name: "~/.gitconfig core.excludesFile with ~/", home: map[string]string{
			".gitconfig": "[user]\n\tname = x\n[core]\n\texcludesFile = ~/my-excludes\n", "my-excludes": "*.log\n",
			".config/git/ignore": "*.tmp\n"}, // not read: core.excludesFile is set
			want: []string{"a.tmp", "keep.tmp", "sub/b.tmp", "sub/c.txt"}},
		{name: "XDG git/config", xdg: true, home: map[string]string{
			"XDG/git/config": "[core]\nexcludesfile = " + "XDG/ex\n", "XDG/ex": "x.log\n"},
			want: []string{"a.tmp", "keep.tmp", "sub/b.tmp", "sub/c.txt"}},
		{name: "~/.gitconfig wins over XDG git/config", xdg: true, home: map[string]string{
			"XDG/git/config": "[core]\nexcludesfile = XDG/ex\n", "XDG/ex": "x.log\n",
			".gitconfig": "[core]\n  excludesfile = ~/ex2\n", "ex2": "sub/\n"},
			want: []string{"a.tmp", "keep.tmp", "x.log"}},
		{name: "the project's .git/config wins, relative to the root", home: map[string]string{
			".gitconfig": "[core]\nexcludesfile = ~/ex2\n", "ex2": "*.tmp\n"},
			proj: map[string]string{".git/config": "[core]\n\tbare = false\n\texcludesFile = .git/my-ignore\n", ".git/my-ignore": "x.log\n"},
			want: []string{"a.tmp", "keep.tmp", "sub/b.tmp", "sub/c.txt"}},
		{name: ".git/info/exclude and .gitignore override it", home: map[string]string{".config/git/ignore": "*.tmp\n*.log\n"},
			proj: map[string]string{".git/info/exclude": "!keep.tmp\n", ".gitignore": "!x.log\n"},
			want: []string{".gitignore", "keep.tmp", "sub/c.txt", "x.log"}},
		{name: "an empty core.excludesFile turns it off", home: map[string]string{
			".gitconfig": "[core]\nexcludesfile =\n", ".config/git/ignore": "*.tmp\n"}, want: all},
		{name: "a missing excludes file", home: map[string]string{".gitconfig": "[core]\nexcludesfile = ~/nope\n"}, want: all},
		{name: "an unparsable config is passed over", home: map[string]string{
			".gitconfig": "[core\nexcludesfile = ~/ex\n", "ex": "*.tmp\n", ".config/git/ignore": "x.log\n"},
			want: []string{"a.tmp", "keep.tmp", "sub/b.tmp", "sub/c.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			xdg := filepath.Join(home, "xdg")
			if tc.xdg {
				t.Setenv("XDG_CONFIG_HOME", xdg)
			} else {
				t.Setenv("XDG_CONFIG_HOME", "")
			}
			fix := func(m map[string]string) map[string]string {
				out := map[string]string{}
				for p, c := range m {
					out[strings.ReplaceAll(p, "XDG", "xdg")] = strings.ReplaceAll(c, "XDG", xdg)
				}
				return out
			}
			writeFiles(t, home, fix(tc.home))
			root := t.TempDir()
			writeFiles(t, root, tree)
			writeFiles(t, root, tc.proj)
			if got := captured(t, root); !slices.Equal(got, tc.want) {
				t.Fatalf("captured %v, want %v", got, tc.want)
			}
		})
	}
}

// The system configuration and GIT_CONFIG_GLOBAL are read as git reads
// them; GIT_CONFIG_NOSYSTEM turns the former off.
func TestExcludesFileFromGitEnvironment(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	writeFiles(t, home, map[string]string{
		"system": "[core]\nexcludesfile = /from/system\n",
		"global": "[core]\nexcludesfile = /from/global\n",
	})
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "system"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	if got := excludesFile(root); got != "/from/system" {
		t.Errorf("with a system config: %q", got)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "global"))
	if got := excludesFile(root); got != "/from/global" {
		t.Errorf("with GIT_CONFIG_GLOBAL: %q", got)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "none"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "true")
	if got, want := excludesFile(root), filepath.Join(home, ".config", "git", "ignore"); got != want {
		t.Errorf("with neither: %q, want %q", got, want)
	}
}
