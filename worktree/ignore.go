package worktree

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/snapcore-dev/snap/objects"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"golang.org/x/sys/unix"
)

// Ignore files read in every directory, lowest precedence first.
var ignoreFiles = []string{".gitignore", ".snapignore"}

// ignorer is the stack of ignore patterns in force in one directory:
// git's global excludes file, .git/info/exclude, then every .gitignore and
// .snapignore from the root down, matched as git matches them (see
// wildmatch.go): the last pattern that matches a path decides.
type ignorer struct {
	patterns []pattern
	// literal is set when every pattern is a plain name ("build",
	// "*.o" is not one, nor "/x", "a/b" or "!x"): then a path is ignored
	// iff one of its components below the pattern's directory is that
	// name (a directory, for "name/"), which a map answers without
	// trying every pattern.
	literal map[string][]literalPattern
}

// literalPattern is a plain-name pattern: its directory depth and whether
// it only matches directories.
type literalPattern struct {
	depth   int
	dirOnly bool
}

func newIgnorer(patterns []pattern, lits map[string][]literalPattern) *ignorer {
	return &ignorer{patterns: patterns, literal: lits}
}

// rootIgnorer is the rule set in force at the project root before any
// ignore file of the tree: git's global excludes file (core.excludesFile,
// see excludesFile), then the project's .git/info/exclude, which wins over
// it, as in git.
func rootIgnorer(root string) *ignorer {
	return excludesIgnorer(Excludes(root))
}

// Excludes is the text of the exclude rules in force at the project root
// now, as rootIgnorer reads them: git's global excludes file, then
// .git/info/exclude. Neither is part of the tree, so a move records them
// (design §5): its undo restores the tree under the rules that were in
// force when the move began (IgnoreTree.Excludes).
func Excludes(root string) string {
	var data []byte
	if f := excludesFile(root); f != "" {
		if d, err := readSmall(f); err == nil && len(d) > 0 {
			data = append(d, '\n')
		}
	}
	if d, err := readSmall(filepath.Join(root, ".git", "info", "exclude")); err == nil {
		data = append(data, d...)
	}
	return string(data)
}

// excludesIgnorer is the rule set of exclude rules' text.
func excludesIgnorer(text string) *ignorer {
	if text == "" {
		return newIgnorer(nil, nil)
	}
	ps, lits := parsePatterns([]byte(text), nil, map[string][]literalPattern{})
	return newIgnorer(ps, lits)
}

// readSmall reads at most 1 MiB of a configuration or exclude file
// outside the tree (git's configuration, its excludes file,
// .git/info/exclude): symlinks are followed, as git follows them, but only
// a regular file is read. A FIFO or a device is never opened for a
// blocking read (M25: a FIFO made the read, and so the command, wait
// forever).
func readSmall(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// systemGitConfig is git's system-wide configuration file (tests empty it).
var systemGitConfig = "/etc/gitconfig"

// excludesFile is the path of git's global excludes file for the project at
// root, or "" for none, found as git finds it: the last core.excludesFile
// set in the system configuration ($GIT_CONFIG_SYSTEM, else /etc/gitconfig;
// none with $GIT_CONFIG_NOSYSTEM), the user's ($GIT_CONFIG_GLOBAL, else
// $XDG_CONFIG_HOME/git/config then ~/.gitconfig) or the project's
// .git/config, with ~/ expanded and a relative path taken from the root;
// when none sets it, $XDG_CONFIG_HOME/git/ignore ($XDG_CONFIG_HOME
// defaults to ~/.config). Configuration files are parsed with go-git's
// decoder; their include directives are not followed.
func excludesFile(root string) string {
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var files []string
	if !gitEnvTrue("GIT_CONFIG_NOSYSTEM") {
		sys := os.Getenv("GIT_CONFIG_SYSTEM")
		if sys == "" {
			sys = systemGitConfig
		}
		files = append(files, sys)
	}
	if g, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); ok {
		files = append(files, g)
	} else {
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	files = append(files, filepath.Join(root, ".git", "config"))
	value, set := "", false
	for _, f := range files {
		if f == "" {
			continue
		}
		if v, ok := configExcludesFile(f); ok {
			value, set = v, true
		}
	}
	switch {
	case !set:
		if xdg == "" {
			return ""
		}
		return filepath.Join(xdg, "git", "ignore")
	case value == "":
		return ""
	case value == "~" || strings.HasPrefix(value, "~/"):
		if home == "" {
			return ""
		}
		value = filepath.Join(home, value[1:])
	case !filepath.IsAbs(value):
		value = filepath.Join(root, value)
	}
	return value
}

// configExcludesFile reads core.excludesFile from the git configuration
// file name: its value, and whether the file sets it.
func configExcludesFile(name string) (string, bool) {
	data, err := readSmall(name)
	if err != nil || !bytes.Contains(bytes.ToLower(data), []byte("excludesfile")) {
		return "", false
	}
	cfg := config.New()
	if err := config.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil || !cfg.HasSection("core") {
		return "", false
	}
	opts := cfg.Section("core").Options
	if !opts.Has("excludesfile") {
		return "", false
	}
	return opts.Get("excludesfile"), true
}

// gitEnvTrue reports whether the environment variable name holds one of
// git's true values.
func gitEnvTrue(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
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
	var add []pattern
	for _, data := range files {
		var ps []pattern
		ps, lits = parsePatterns(data, domain, lits)
		add = append(add, ps...)
	}
	if len(add) == 0 {
		return ig
	}
	ps := make([]pattern, 0, len(ig.patterns)+len(add))
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
	for i := len(ig.patterns) - 1; i >= 0; i-- {
		if p := &ig.patterns[i]; p.match(path, isDir) {
			return !p.negate
		}
	}
	return false
}

// parsePatterns parses an ignore file of the directory domain. lits, when
// not nil, collects its plain-name patterns; it comes back nil once any
// pattern is not one (see ignorer.literal).
func parsePatterns(data []byte, domain []string, lits map[string][]literalPattern) ([]pattern, map[string][]literalPattern) {
	var ps []pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for first := true; sc.Scan(); first = false {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if first {
			line = strings.TrimPrefix(line, "\uFEFF") // a byte-order mark, as git skips it
		}
		p, ok := parsePattern(line, domain)
		if !ok {
			continue
		}
		ps = append(ps, p)
		if lits != nil {
			if !p.nodir || p.negate || p.literal < len(p.text) {
				lits = nil
				continue
			}
			lits[p.text] = append(lits[p.text], literalPattern{depth: len(domain), dirOnly: p.dirOnly})
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
	// skipped: what the tree's capture could not read (IgnoreTree.Skipped):
	// an ignore file among them holds its previous content, not the one
	// that was in force (M18).
	skipped []string
}

// ignored reports whether the rules on disk ignore the path, and, when
// they do not, whether a stored tree's rules do.
func (s *ignoreSet) ignored(path []string, isDir bool) (byDisk, byStored bool) {
	if s.disk.ignored(path, isDir) {
		return true, false
	}
	for _, st := range s.stored {
		if st.ig.ignored(path, isDir) {
			return false, true
		}
	}
	return false, false
}

// storedOnly is the Skipped reason of a path only a stored tree's rules
// (a rewind target's) ignore.
const storedOnly = "ignored under the rewind target's rules"

// storedIgnoreFiles reads the ignore files stored directory t (at comps)
// holds, but those its capture skipped (kept: see storedIgnore.skipped;
// the restore leaves them as they are on disk, whose rules apply anyway).
func storedIgnoreFiles(r blobReader, t *objects.Tree, comps, skipped []string) [][]byte {
	var out [][]byte
	for _, name := range ignoreFiles {
		if len(skipped) > 0 && kept(path.Join(append(slices.Clone(comps), name)...), skipped) {
			continue
		}
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
// entry names, sorted, or nil when unknown), given s, its parent's. read,
// when set, is told of each ignore file there: its content, or why it
// could not be read.
func (s *ignoreSet) enter(r blobReader, fd int, comps, names []string, read func(name string, data []byte, err error)) *ignoreSet {
	var data [][]byte
	for _, name := range ignoreFiles {
		if i := sort.SearchStrings(names, name); names == nil || i < len(names) && names[i] == name {
			d, err := readSmallAt(fd, name)
			if err == nil {
				data = append(data, d)
			}
			if read != nil && !errors.Is(err, unix.ENOENT) {
				read(name, d, err)
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
			if files := storedIgnoreFiles(r, st.tree, comps, st.skipped); files != nil {
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
		stored[i] = storedIgnore{ig: st.ig, skipped: st.skipped}
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

// Ignored reports whether rel, a project-relative path (slashes), is
// ignored by the rules on disk now — git's excludes file,
// .git/info/exclude, and every .gitignore and .snapignore from the root
// down — as a capture decides it: a path beneath an ignored directory is
// ignored too. isDir says whether rel itself is a directory. The caller
// has checked that no component of rel's directory is a symlink.
func Ignored(root, rel string, isDir bool) bool {
	comps := strings.Split(rel, "/")
	ig := rootIgnorer(root)
	for i := range comps {
		dir := slices.Clone(comps[:i])
		var files [][]byte
		for _, name := range ignoreFiles {
			// As a capture reads it (readSmallAt): a small regular file,
			// not through a symlink, never a FIFO (M25).
			if d, err := readSmallAt(unix.AT_FDCWD, filepath.Join(root, filepath.FromSlash(strings.Join(dir, "/")), name)); err == nil {
				files = append(files, d)
			}
		}
		ig = ig.child(dir, files)
		if ig.ignored(comps[:i+1], i < len(comps)-1 || isDir) {
			return true
		}
	}
	return false
}

// readSmallAt reads a small regular file (an ignore file) relative to dirfd.
func readSmallAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 1<<20 {
		return nil, errors.New("not a small regular file")
	}
	buf := make([]byte, st.Size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf, nil
}
