package torture

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// mutator edits a working tree the way an agent and its tools do: files
// created, rewritten, appended to, truncated, deleted, made executable,
// replaced by symlinks or directories, whole directories removed; and it
// appends to a JSONL transcript. Every choice comes from rng, so a seed
// reproduces the same sequence of edits. It keeps the tree small.
type mutator struct {
	rng      *rand.Rand
	root     string
	convPath string
	big      []byte // base content of large (chunked) files: edits of it dedup
	msgs     int
	maxFiles int
}

var (
	mutDirs  = []string{"", "", "src", "src/pkg", "docs", "a/b/c", "assets"}
	mutNames = []string{"main.go", "util.go", "README.md", "notes.txt", "data.bin", "run.sh", "x", "y.txt", "z.md", "conf.json"}
	mutLinks = []string{"main.go", "../src/main.go", "nonexistent", "docs/", "/etc/passwd", "a/b/c/x", "."}
)

func newMutator(rng *rand.Rand, root, convPath string) *mutator {
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	return &mutator{rng: rng, root: root, convPath: convPath, big: big, maxFiles: 40}
}

func (m *mutator) abs(p string) string { return filepath.Join(m.root, filepath.FromSlash(p)) }

// prepare makes every parent directory of p a real directory, replacing a
// file or symlink that is in the way (a tool would do the same).
func (m *mutator) prepare(p string) error {
	dir := path.Dir(p)
	if dir == "." {
		return nil
	}
	cur := ""
	for _, c := range strings.Split(dir, "/") {
		cur = path.Join(cur, c)
		fi, err := os.Lstat(m.abs(cur))
		if err == nil && !fi.IsDir() {
			if err := os.Remove(m.abs(cur)); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(m.abs(dir), 0o755)
}

// clear removes whatever is at p (a directory with its content).
func (m *mutator) clear(p string) error {
	if err := m.prepare(p); err != nil {
		return err
	}
	return os.RemoveAll(m.abs(p))
}

func (m *mutator) randomText(n int) []byte {
	const words = "the quick brown fox jumps over lazy dog func return if else for range nil err\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = words[m.rng.IntN(len(words))]
	}
	return b
}

func (m *mutator) content() []byte {
	switch r := m.rng.IntN(100); {
	case r < 5: // large: chunked, mostly shared with other versions
		n := 70<<10 + m.rng.IntN(len(m.big)-70<<10)
		b := append([]byte(nil), m.big[:n]...)
		off := m.rng.IntN(n - 64)
		copy(b[off:], m.randomText(64))
		return b
	case r < 10:
		return nil // empty file
	case r < 20: // binary
		b := make([]byte, m.rng.IntN(4096))
		for i := range b {
			b[i] = byte(m.rng.Uint32())
		}
		return b
	default:
		return m.randomText(m.rng.IntN(3000))
	}
}

// files lists the tree's files (not directories), sorted.
func (m *mutator) files() []string {
	t, err := scanTree(m.root)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(t))
	for p := range t {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (m *mutator) randomPath() string {
	return path.Join(mutDirs[m.rng.IntN(len(mutDirs))], mutNames[m.rng.IntN(len(mutNames))])
}

// step applies n random edits and returns what they were.
func (m *mutator) step(n int) ([]string, error) {
	var did []string
	for i := 0; i < n; i++ {
		d, err := m.one()
		if err != nil {
			return did, fmt.Errorf("%s: %w", d, err)
		}
		did = append(did, d)
	}
	if k := m.rng.IntN(4); k > 0 {
		if err := m.appendConv(k); err != nil {
			return did, err
		}
		did = append(did, fmt.Sprintf("transcript +%d lines", k))
	} else if m.rng.IntN(40) == 0 {
		// A rewritten (compacted) transcript: not an append.
		if err := os.WriteFile(m.convPath, []byte(m.convLine("compacted")), 0o644); err != nil {
			return did, err
		}
		did = append(did, "transcript rewritten")
	}
	return did, nil
}

func (m *mutator) convLine(role string) string {
	m.msgs++
	return fmt.Sprintf(`{"type":"%s","uuid":"u-%d","message":{"role":"%s","content":%q}}`+"\n",
		role, m.msgs, role, string(m.randomText(20+m.rng.IntN(200))))
}

func (m *mutator) appendConv(k int) error {
	f, err := os.OpenFile(m.convPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if _, err := f.WriteString(m.convLine(role)); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (m *mutator) one() (string, error) {
	files := m.files()
	pickFile := func() string {
		if len(files) == 0 {
			return ""
		}
		return files[m.rng.IntN(len(files))]
	}
	r := m.rng.IntN(100)
	if len(files) > m.maxFiles && r >= 25 {
		r = 0 // too many files: delete
	}
	if len(files) < 5 && r < 25 {
		r = 50
	}
	switch {
	case r < 15: // delete a file
		p := pickFile()
		return "rm " + p, os.Remove(m.abs(p))
	case r < 20: // delete a directory
		d := mutDirs[1+m.rng.IntN(len(mutDirs)-1)]
		if d == "" {
			d = "src"
		}
		return "rm -r " + d, m.clear(strings.Split(d, "/")[0])
	case r < 25: // type change: file <-> symlink <-> directory
		p := pickFile()
		if p == "" {
			return "noop", nil
		}
		if m.rng.IntN(2) == 0 {
			if err := m.clear(p); err != nil {
				return "", err
			}
			if err := os.MkdirAll(m.abs(p), 0o755); err != nil {
				return "", err
			}
			return "file->dir " + p, os.WriteFile(m.abs(p+"/inner.txt"), m.randomText(50), 0o644)
		}
		if err := m.clear(p); err != nil {
			return "", err
		}
		return "->symlink " + p, os.Symlink(mutLinks[m.rng.IntN(len(mutLinks))], m.abs(p))
	case r < 32: // symlink create or retarget
		p := m.randomPath()
		if err := m.clear(p); err != nil {
			return "", err
		}
		return "symlink " + p, os.Symlink(mutLinks[m.rng.IntN(len(mutLinks))], m.abs(p))
	case r < 38: // chmod
		p := pickFile()
		fi, err := os.Lstat(m.abs(p))
		if err != nil || !fi.Mode().IsRegular() {
			return "noop", nil
		}
		return "chmod " + p, os.Chmod(m.abs(p), fi.Mode().Perm()^0o111)
	case r < 46: // append
		p := pickFile()
		fi, err := os.Lstat(m.abs(p))
		if err != nil || !fi.Mode().IsRegular() {
			return "noop", nil
		}
		f, err := os.OpenFile(m.abs(p), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		_, err = f.Write(m.randomText(1 + m.rng.IntN(200)))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return "append " + p, err
	case r < 56: // same-size rewrite, sometimes with the old mtime put back (cp -p, some editors)
		p := pickFile()
		fi, err := os.Lstat(m.abs(p))
		if err != nil || !fi.Mode().IsRegular() {
			return "noop", nil
		}
		data, err := os.ReadFile(m.abs(p))
		if err != nil || len(data) == 0 {
			return "noop", nil
		}
		i := m.rng.IntN(len(data))
		data[i] ^= byte(1 + m.rng.IntN(255))
		if err := os.WriteFile(m.abs(p), data, 0); err != nil {
			return "", err
		}
		if m.rng.IntN(3) == 0 {
			mt := fi.ModTime()
			return "same-size rewrite, mtime kept " + p, os.Chtimes(m.abs(p), time.Time{}, mt)
		}
		return "same-size rewrite " + p, nil
	case r < 60: // truncate
		p := pickFile()
		fi, err := os.Lstat(m.abs(p))
		if err != nil || !fi.Mode().IsRegular() {
			return "noop", nil
		}
		return "truncate " + p, os.Truncate(m.abs(p), fi.Size()/2)
	default: // write a new file or overwrite one
		p := m.randomPath()
		if m.rng.IntN(3) == 0 && len(files) > 0 {
			p = pickFile()
		}
		if err := m.clear(p); err != nil {
			return "", err
		}
		perm := os.FileMode(0o644)
		if m.rng.IntN(6) == 0 {
			perm = 0o755
		}
		return "write " + p, os.WriteFile(m.abs(p), m.content(), perm)
	}
}
