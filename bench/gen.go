package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Deterministic generators. Everything a workload writes is a function of the
// seed and of the Go toolchain's own source tree, so two runs on one machine
// (and two peers in one run) see the same bytes.

// maxSourceSize keeps single files small enough that 20,000 of them come to
// about 80 MB, the size of the reference tree in design.md §7.
const maxSourceSize = 48 << 10

// textExts are the toolchain files used as source text.
var textExts = map[string]bool{".go": true, ".s": true, ".c": true, ".h": true, ".txt": true, ".md": true}

type sourceFile struct {
	rel  string
	data []byte
}

// loadSources reads the text files of $(go env GOROOT)/{src,test,misc} that are
// at most maxSourceSize bytes, in path order.
func loadSources() ([]sourceFile, error) {
	root := goroot()
	var out []sourceFile
	for _, top := range []string{"src", "test", "misc"} {
		base := filepath.Join(root, top)
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == base && os.IsNotExist(err) {
					return filepath.SkipDir
				}
				return err
			}
			if d.IsDir() {
				// Names git or snap treat specially never come from the toolchain, but be sure.
				if n := d.Name(); n == ".git" || n == ".snap" {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !textExts[filepath.Ext(p)] {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.Size() == 0 || info.Size() > maxSourceSize {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, sourceFile{rel: filepath.ToSlash(rel), data: data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no source files found under GOROOT %s", root)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

func goroot() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return s
		}
	}
	//lint:ignore SA1019 the fallback when the go command is not on PATH
	return runtime.GOROOT()
}

// rng returns a generator determined by the seed and a stream number.
func rng(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// streams separate the random sequences of the workloads.
const (
	streamTree uint64 = 1 << 40 * (iota + 1)
	streamW1
	streamW2
	streamW3
	streamW4
	streamW5
	streamW6
	streamW7
)

// tree is a deterministic project of n files built from the toolchain sources.
// File i is source i mod len(sources); past the first pass it lives under
// copyNN/ and carries one inserted comment line, so every file differs.
type tree struct {
	src  []sourceFile
	n    int
	seed int64
}

func newTree(src []sourceFile, n int, seed int64) *tree {
	return &tree{src: src, n: n, seed: seed}
}

func (t *tree) path(i int) string {
	s := t.src[i%len(t.src)]
	if pass := i / len(t.src); pass > 0 {
		return fmt.Sprintf("copy%02d/%s", pass, s.rel)
	}
	return s.rel
}

// content is file i's generated content.
func (t *tree) content(i int) []byte {
	s := t.src[i%len(t.src)]
	pass := i / len(t.src)
	if pass == 0 {
		return s.data
	}
	r := rng(t.seed, streamTree+uint64(i))
	return insertLine(s.data, r.IntN(countLines(s.data)+1), fmt.Sprintf("// snap-bench copy %d %016x", pass, r.Uint64()))
}

// write creates every file of the tree under dir.
func (t *tree) write(dir string) error {
	made := map[string]bool{}
	for i := 0; i < t.n; i++ {
		p := filepath.Join(dir, filepath.FromSlash(t.path(i)))
		if d := filepath.Dir(p); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			made[d] = true
		}
		if err := os.WriteFile(p, t.content(i), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bytes is the tree's total size.
func (t *tree) bytes() int64 {
	var n int64
	for i := 0; i < t.n; i++ {
		if i < len(t.src) {
			n += int64(len(t.src[i].data))
		} else {
			n += int64(len(t.content(i)))
		}
	}
	return n
}

func countLines(b []byte) int { return bytes.Count(b, []byte{'\n'}) }

// insertLine inserts line (plus a newline) before line number at (0-based);
// at past the end appends it.
func insertLine(b []byte, at int, line string) []byte {
	off := 0
	for k := 0; k < at; k++ {
		j := bytes.IndexByte(b[off:], '\n')
		if j < 0 {
			off = len(b)
			break
		}
		off += j + 1
	}
	out := make([]byte, 0, len(b)+len(line)+2)
	out = append(out, b[:off]...)
	if off > 0 && b[off-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, line...)
	out = append(out, '\n')
	return append(out, b[off:]...)
}

// pick returns k distinct indexes in [0,n) (k ≤ n), in random order.
func pick(r *rand.Rand, n, k int) []int {
	if k > n {
		k = n
	}
	return r.Perm(n)[:k]
}

// words is a small vocabulary for generated comments and messages.
var words = strings.Fields(`the agent edits file function test build parser cache index tree store
checkpoint rewind session message tool result error value return update refactor rename
handle request response config option path buffer reader writer context deadline retry`)

func sentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[r.IntN(len(words))]
	}
	return strings.Join(w, " ")
}

// transcriptStep returns the two JSONL records (a tool result carrying a slice
// of real source text and an assistant reply) appended at step i of a
// generated session: about 4 KB, shaped like Claude Code's records.
func transcriptStep(src []sourceFile, r *rand.Rand, i int) []byte {
	n := 1300 + r.IntN(700)
	s := src[r.IntN(len(src))].data
	for try := 0; try < 100 && len(s) < n; try++ {
		s = src[r.IntN(len(src))].data
	}
	n = min(n, len(s))
	start := r.IntN(len(s) - n + 1)
	snippet := string(s[start : start+n])
	user := map[string]any{
		"type": "user", "uuid": fmt.Sprintf("u-%06d", i), "sessionId": "bench",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%06d", i), "content": snippet}}},
	}
	var text strings.Builder
	for text.Len() < 1500+r.IntN(600) {
		text.WriteString(sentence(r, 12))
		text.WriteString(". ")
	}
	asst := map[string]any{
		"type": "assistant", "uuid": fmt.Sprintf("a-%06d", i), "sessionId": "bench",
		"message": map[string]any{"id": fmt.Sprintf("msg_%06d", i), "role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": text.String()},
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%06d", i+1), "name": "Edit",
				"input": map[string]any{"file_path": "main.go", "old_string": "a", "new_string": "b"}}}},
	}
	var out []byte
	for _, rec := range []any{user, asst} {
		b, _ := json.Marshal(rec)
		out = append(out, b...)
		out = append(out, '\n')
	}
	return out
}

// fillRandom fills b with deterministic pseudo-random (incompressible) bytes.
func fillRandom(r *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint64())
	}
}
