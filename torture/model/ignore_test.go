package model

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The model's own reading of git's ignore rules (gitignore(5)), written
// from the documentation, independent of the matcher snap uses; the test
// below checks it against `git check-ignore`.

// pattern is one line of an ignore file.
type pattern struct {
	base     string // directory of the ignore file ("" = root, also for .git/info/exclude)
	neg      bool   // "!pattern"
	dirOnly  bool   // "pattern/"
	anchored bool   // contains a slash before the end: matched against the path below base
	re       *regexp.Regexp
	src      string
}

// parseIgnore parses the content of an ignore file in directory base.
func parseIgnore(base, data string) []pattern {
	var out []pattern
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		line = strings.TrimRight(line, " ")
		p := pattern{base: base, src: line}
		if strings.HasPrefix(line, "!") {
			p.neg, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		if strings.Contains(line, "/") {
			p.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		if line == "" {
			continue
		}
		re, err := regexp.Compile("^" + globRE(line) + "$")
		if err != nil {
			continue // a pattern that does not parse matches nothing
		}
		p.re = re
		out = append(out, p)
	}
	return out
}

// globRE translates a glob ("**" as gitignore(5) defines it) to a regexp.
func globRE(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); {
		switch {
		case i == 0 && strings.HasPrefix(g, "**/"):
			b.WriteString("(?:.*/)?")
			i += 3
		case strings.HasPrefix(g[i:], "/**/"):
			b.WriteString("/(?:.*/)?")
			i += 4
		case g[i:] == "/**":
			b.WriteString("/.*")
			i += 3
		case g == "**":
			b.WriteString(".*")
			i += 2
		case g[i] == '*':
			b.WriteString("[^/]*")
			i++
		case g[i] == '?':
			b.WriteString("[^/]")
			i++
		case g[i] == '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				i++
				continue
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j + 2
		case g[i] == '\\' && i+1 < len(g):
			b.WriteString(regexp.QuoteMeta(g[i+1 : i+2]))
			i += 2
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
			i++
		}
	}
	return b.String()
}

// match reports whether p (path from the root) matches, and whether
// that excludes it.
func (pt pattern) match(p string, isDir bool) (matched bool) {
	rel := p
	if pt.base != "" {
		if !strings.HasPrefix(p, pt.base+"/") {
			return false
		}
		rel = p[len(pt.base)+1:]
	}
	if pt.dirOnly && !isDir {
		return false
	}
	if pt.anchored {
		return pt.re.MatchString(rel)
	}
	return pt.re.MatchString(path.Base(rel))
}

// ruleSet answers "is this path ignored" for one tree: its ignore files
// are read through files (path → content, ok=false when there is none or
// it is not read: not a regular file, unreadable).
type ruleSet struct {
	exclude []pattern
	files   func(p string) (string, bool)
	isDir   func(p string) bool
	cache   map[string][]pattern // directory → patterns in force for its entries
}

func newRuleSet(exclude string, files func(string) (string, bool), isDir func(string) bool) *ruleSet {
	return &ruleSet{exclude: parseIgnore("", exclude), files: files, isDir: isDir, cache: map[string][]pattern{}}
}

// ignoreNames are read in every directory, lowest precedence first.
var ignoreNames = []string{".gitignore", ".snapignore"}

// in returns the patterns in force for the entries of directory dir.
func (rs *ruleSet) in(dir string) []pattern {
	if ps, ok := rs.cache[dir]; ok {
		return ps
	}
	var ps []pattern
	if dir == "" {
		ps = append(ps, rs.exclude...)
	} else {
		parent := path.Dir(dir)
		if parent == "." {
			parent = ""
		}
		ps = append(ps, rs.in(parent)...)
	}
	for _, n := range ignoreNames {
		if data, ok := rs.files(join(dir, n)); ok {
			ps = append(ps, parseIgnore(dir, data)...)
		}
	}
	rs.cache[dir] = ps
	return ps
}

// ignoredHere: p itself is ignored by the patterns of its directory (its
// ancestors not considered).
func (rs *ruleSet) ignoredHere(p string, isDir bool) bool {
	dir := path.Dir(p)
	if dir == "." {
		dir = ""
	}
	ps := rs.in(dir)
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].match(p, isDir) {
			return !ps[i].neg
		}
	}
	return false
}

// ignored: p or one of its ancestors is ignored (a walk never enters an
// ignored directory). isDir is p's own kind; ancestors are directories.
func (rs *ruleSet) ignored(p string, isDir bool) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && rs.ignoredHere(p[:i], true) {
			return true
		}
	}
	return rs.ignoredHere(p, isDir)
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// TestIgnoreMatcherAgainstGit checks the model's matcher against
// `git check-ignore` on random trees and rules from the pool the harness
// uses, so the model's reading of the rules is git's.
func TestIgnoreMatcherAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	rng := rand.New(rand.NewPCG(baseSeed, 99))
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for round := 0; round < rounds; round++ {
		root := t.TempDir()
		git := func(stdin string, args ...string) (string, error) {
			cmd := exec.Command("git", args...)
			cmd.Dir = root
			cmd.Stdin = strings.NewReader(stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if err != nil && errb.Len() > 0 {
				err = fmt.Errorf("%v: %s", err, errb.String())
			}
			return out.String(), err
		}
		if _, err := git("", "init", "-q"); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		dirs := map[string]bool{}
		for i := 0; i < 40; i++ {
			p := randPath(rng, 3)
			if dirs[p] || conflictsWithFile(files, p) {
				continue
			}
			files[p] = "x"
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				dirs[d] = true
			}
		}
		ignores := map[string]string{}
		dirList := []string{""}
		for d := range dirs {
			dirList = append(dirList, d)
		}
		sort.Strings(dirList)
		for i := 0; i < 4; i++ {
			d := dirList[rng.IntN(len(dirList))]
			var lines []string
			for j := 0; j < 1+rng.IntN(4); j++ {
				lines = append(lines, rulePool[rng.IntN(len(rulePool))])
			}
			ignores[join(d, ".gitignore")] = strings.Join(lines, "\n") + "\n"
		}
		exclude := ""
		if rng.IntN(2) == 0 {
			exclude = rulePool[rng.IntN(len(rulePool))] + "\n"
		}
		for p, c := range files {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
		}
		for p, c := range ignores {
			os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
		}
		os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte(exclude), 0o644)
		rs := newRuleSet(exclude, func(p string) (string, bool) {
			c, ok := ignores[p]
			return c, ok
		}, func(p string) bool { return dirs[p] })
		var paths []string
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		out, err := git(strings.Join(paths, "\n")+"\n", "check-ignore", "--stdin")
		if err != nil && out != "" {
			t.Fatal(err)
		}
		gitIgnored := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				gitIgnored[l] = true
			}
		}
		for _, p := range paths {
			if got := rs.ignored(p, false); got != gitIgnored[p] {
				t.Errorf("round %d: %s: model ignored=%v, git=%v\nexclude: %q\nignore files: %q", round, p, got, gitIgnored[p], exclude, ignores)
			}
		}
	}
}

func conflictsWithFile(files map[string]string, p string) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if _, ok := files[d]; ok {
			return true
		}
	}
	return false
}
