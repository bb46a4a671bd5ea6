package worktree

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/snapcore-dev/snap/objects"

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
	// literal is set when every pattern is a plain name ("build",
	// "*.o" is not one, nor "/x", "a/b" or "!x"): then a path is ignored
	// iff one of its components below the pattern's directory is that
	// name (a directory, for "name/"), which a map answers without
	// go-git's per-component glob matching.
	literal map[string][]literalPattern
}

// literalPattern is a plain-name pattern: its directory depth and whether
// it only matches directories.
type literalPattern struct {
	depth   int
	dirOnly bool
}

func newIgnorer(patterns []gitignore.Pattern, lits map[string][]literalPattern) *ignorer {
	return &ignorer{patterns: patterns, matcher: gitignore.NewMatcher(patterns), literal: lits}
}

// rootIgnorer loads .git/info/exclude of the project, if any.
func rootIgnorer(root string) *ignorer {
	data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude"))
	if err != nil {
		return newIgnorer(nil, nil)
	}
	ps, lits := parsePatterns(data, nil, map[string][]literalPattern{})
	return newIgnorer(ps, lits)
}

// child returns the ignorer for a directory holding the given ignore-file
// contents (nil when it has none).
func (ig *ignorer) child(domain []string, files [][]byte) *ignorer {
	var lits map[string][]literalPattern
	if ig.literal != nil || len(ig.patterns) == 0 {
		lits = make(map[string][]literalPattern, len(ig.literal))
		for k, v := range ig.literal {
			lits[k] = append([]literalPattern(nil), v...)
		}
	}
	var add []gitignore.Pattern
	for _, data := range files {
		var ps []gitignore.Pattern
		ps, lits = parsePatterns(data, domain, lits)
		add = append(add, ps...)
	}
	if len(add) == 0 {
		return ig
	}
	ps := make([]gitignore.Pattern, 0, len(ig.patterns)+len(add))
	ps = append(append(ps, ig.patterns...), add...)
	return newIgnorer(ps, lits)
}

// ignored reports whether the path (components from the root) is ignored,
// given that no proper prefix of it is (the walks check each directory
// before they enter it).
func (ig *ignorer) ignored(path []string, isDir bool) bool {
	if len(ig.patterns) == 0 {
		return false
	}
	if ig.literal != nil {
		// A plain name matches one component; the ancestors' were checked
		// when the walk entered them, against every pattern that applies
		// to them, so only the last component can match now.
		i := len(path) - 1
		for _, lp := range ig.literal[path[i]] {
			if i >= lp.depth && (!lp.dirOnly || isDir) {
				return true
			}
		}
		return false
	}
	return ig.matcher.Match(path, isDir)
}

// parsePatterns parses an ignore file of the directory domain. lits, when
// not nil, collects its plain-name patterns; it comes back nil once any
// pattern is not one (see ignorer.literal).
func parsePatterns(data []byte, domain []string, lits map[string][]literalPattern) ([]gitignore.Pattern, map[string][]literalPattern) {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
		if lits != nil {
			name, dirOnly := strings.CutSuffix(line, "/")
			if name == "" || strings.ContainsAny(name, "*?[]\\/!# \t") {
				lits = nil
				continue
			}
			lits[name] = append(lits[name], literalPattern{depth: len(domain), dirOnly: dirOnly})
		}
	}
	return ps, lits
}

// ignoreSet is every rule set a capture honours in one directory: the
// ignore files on disk and, for each stored tree in Options.IgnoreTrees,
// the ignore files that tree holds. A path is ignored when any set ignores
// it.
type ignoreSet struct {
	disk   *ignorer
	stored []storedIgnore
}

// storedIgnore is the rule set of a stored tree in one directory.
type storedIgnore struct {
	ig   *ignorer
	tree *objects.Tree // the directory in the stored tree; nil when it has none there
}

func (s *ignoreSet) ignored(path []string, isDir bool) bool {
	if s.disk.ignored(path, isDir) {
		return true
	}
	for _, st := range s.stored {
		if st.ig.ignored(path, isDir) {
			return true
		}
	}
	return false
}

// storedIgnoreFiles reads the ignore files a stored directory holds.
func storedIgnoreFiles(r blobReader, t *objects.Tree) [][]byte {
	var out [][]byte
	for _, name := range ignoreFiles {
		e, ok := t.Find(name)
		if !ok || (e.Mode != objects.ModeFile && e.Mode != objects.ModeExec) || e.Size > 1<<20 {
			continue
		}
		var buf bytes.Buffer
		if _, err := r.WriteBlob(e.ID, &buf); err == nil {
			out = append(out, buf.Bytes())
		}
	}
	return out
}

// blobReader reads trees and blobs (a Writer, or the Source of a restore).
type blobReader interface {
	objects.TreeReader
	WriteBlob(id objects.ID, out io.Writer) (int64, error)
}

// enter returns the rule set of directory comps (fd open on it; names its
// entry names, sorted, or nil when unknown), given s, its parent's.
func (s *ignoreSet) enter(r blobReader, fd int, comps, names []string) *ignoreSet {
	var data [][]byte
	for _, name := range ignoreFiles {
		if i := sort.SearchStrings(names, name); names == nil || i < len(names) && names[i] == name {
			if d, err := readSmallAt(fd, name); err == nil {
				data = append(data, d)
			}
		}
	}
	out := s
	if data != nil {
		out = &ignoreSet{disk: s.disk.child(comps, data), stored: s.stored}
	}
	if len(s.stored) == 0 {
		return out
	}
	stored := make([]storedIgnore, len(s.stored))
	for i, st := range s.stored {
		stored[i] = st
		if st.tree != nil {
			if files := storedIgnoreFiles(r, st.tree); files != nil {
				stored[i].ig = st.ig.child(comps, files)
			}
		}
	}
	return &ignoreSet{disk: out.disk, stored: stored}
}

// sub returns the rule set to enter subdirectory name with: the stored
// trees' directories are looked up (their ignore files are read by enter).
func (s *ignoreSet) sub(r blobReader, name string) *ignoreSet {
	if len(s.stored) == 0 {
		return s
	}
	stored := make([]storedIgnore, len(s.stored))
	for i, st := range s.stored {
		stored[i] = storedIgnore{ig: st.ig}
		if st.tree != nil {
			if e, ok := st.tree.Find(name); ok && e.Mode == objects.ModeDir {
				if t, err := r.ReadTree(e.ID); err == nil {
					stored[i].tree = t
				}
			}
		}
	}
	return &ignoreSet{disk: s.disk, stored: stored}
}
