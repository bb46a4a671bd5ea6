package worktree

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore files read in every directory, lowest precedence first.
var ignoreFiles = []string{".gitignore", ".snapignore"}

// ignorer is the stack of ignore patterns in force in one directory:
// .git/info/exclude, then every .gitignore and .snapignore from the root
// down. Matching uses go-git's gitignore implementation.
type ignorer struct {
	patterns []gitignore.Pattern
	matcher  gitignore.Matcher
}

func newIgnorer(patterns []gitignore.Pattern) *ignorer {
	return &ignorer{patterns: patterns, matcher: gitignore.NewMatcher(patterns)}
}

// rootIgnorer loads .git/info/exclude of the project, if any.
func rootIgnorer(root string) *ignorer {
	data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude"))
	if err != nil {
		return newIgnorer(nil)
	}
	return newIgnorer(parsePatterns(data, nil))
}

// child returns the ignorer for a directory holding the given ignore-file
// contents (nil when it has none).
func (ig *ignorer) child(domain []string, files [][]byte) *ignorer {
	var add []gitignore.Pattern
	for _, data := range files {
		add = append(add, parsePatterns(data, domain)...)
	}
	if len(add) == 0 {
		return ig
	}
	ps := make([]gitignore.Pattern, 0, len(ig.patterns)+len(add))
	ps = append(append(ps, ig.patterns...), add...)
	return newIgnorer(ps)
}

// ignored reports whether the path (components from the root) is ignored.
func (ig *ignorer) ignored(path []string, isDir bool) bool {
	if len(ig.patterns) == 0 {
		return false
	}
	return ig.matcher.Match(path, isDir)
}

func parsePatterns(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
