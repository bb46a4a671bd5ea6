package snap_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	snap "github.com/snapcore-dev/snap"
)

// Example_library runs the "As a library" snippet of README.md for real, in
// a temporary directory: a project with one file and a transcript kept
// outside it, a checkpoint, an agent's edits, a rewind to the checkpoint
// and the undo of that rewind. TestReadmeSnippetIsTheExample checks that
// every line of the README's snippet is a line of this function.
func Example_library() {
	tmp, err := os.MkdirTemp("", "snap-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	projectDir := filepath.Join(tmp, "project")
	transcriptPath := filepath.Join(tmp, "transcript.jsonl")
	exampleWriteFile(filepath.Join(projectDir, "main.go"), "package main\n")
	exampleWriteFile(transcriptPath, `{"role":"user","content":"add a parser"}`+"\n")
	ctx := context.Background()

	repo, _, err := snap.Init(snap.Options{Dir: projectDir})
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()
	doc, err := snap.ReadStateDoc("conversation", transcriptPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	cp, err := repo.Checkpoint(ctx, snap.CheckpointOptions{Session: "s1", MessageID: "msg_01", State: []snap.StateDoc{doc}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("checkpoint #1 added:", cp.Files.Added, "messages:", cp.Stats.Messages)

	// The agent edits a file, writes a new one and its transcript grows.
	exampleWriteFile(filepath.Join(projectDir, "main.go"), "package main\n\nfunc main() {}\n")
	exampleWriteFile(filepath.Join(projectDir, "parser.go"), "package main\n")
	exampleAppendFile(transcriptPath, `{"role":"assistant","content":"done"}`+"\n")

	rw, err := repo.Rewind(ctx, snap.RewindOptions{Session: "s1", Target: "#1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rewind restored:", rw.Restored, "deleted:", rw.Deleted, "safety checkpoint taken:", rw.SafetyCreated)
	fmt.Println("after the rewind:", exampleListFiles(projectDir), "transcript lines:", exampleCountLines(transcriptPath))

	_, err = repo.Undo(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the undo:", exampleListFiles(projectDir), "transcript lines:", exampleCountLines(transcriptPath))

	// A rewind moves the files it replaces or deletes into the store's
	// trash; a program using the library empties it once the rewind is done.
	if _, err := repo.EmptyTrash(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// checkpoint #1 added: [main.go] messages: 1
	// rewind restored: [main.go] deleted: [parser.go] safety checkpoint taken: true
	// after the rewind: [main.go] transcript lines: 1
	// after the undo: [main.go parser.go] transcript lines: 2
}

func exampleWriteFile(path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		log.Fatal(err)
	}
}

func exampleAppendFile(path, content string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// exampleListFiles lists the project's files, the store left out.
func exampleListFiles(dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == snap.StoreDirName {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func exampleCountLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// TestReadmeSnippetIsTheExample keeps README.md's library snippet and
// Example_library from drifting apart: every non-blank line of the
// snippet must be a line of this file (both trimmed of white space).
func TestReadmeSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := readmeGoSnippet(t, string(readme))
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range snippet {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n++
		if !lines[l] {
			t.Errorf("README.md's library snippet has a line that Example_library lacks:\n\t%s", l)
		}
	}
	if n == 0 {
		t.Error("README.md's library snippet is empty")
	}
}

// readmeGoSnippet returns the lines of the one ```go block of the README that
// calls snap.Init.
func readmeGoSnippet(t *testing.T, readme string) []string {
	t.Helper()
	var blocks [][]string
	var cur []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			if strings.Contains(strings.Join(cur, "\n"), "snap.Init(") {
				blocks = append(blocks, cur)
			}
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		t.Fatal("README.md: a ```go block is not closed")
	}
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d ```go blocks calling snap.Init, want 1", len(blocks))
	}
	return blocks[0]
}

// designRef is a citation of a section of docs/design.md in a comment:
// "design §N", also spelled "design.md §N" (N a number).
var designRef = regexp.MustCompile(`(?i)\bdesign(?:\.md)? §([0-9]+)`)

// TestDesignReferencesResolve checks that every section of docs/design.md
// that a Go file cites exists, as a heading "## N.", and that the
// document keeps its sections 1 to 8.
func TestDesignReferencesResolve(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[int]bool{}
	heading := regexp.MustCompile(`^## ([0-9]+)\. `)
	for _, l := range strings.Split(string(doc), "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			headings[n] = true
		}
	}
	for n := 1; n <= 8; n++ {
		if !headings[n] {
			t.Errorf("docs/design.md has no section \"## %d. ...\"", n)
		}
	}
	cited := 0
	err = filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir // .git, stores, fixtures
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(data), "\n") {
			for _, m := range designRef.FindAllStringSubmatch(l, -1) {
				cited++
				n, _ := strconv.Atoi(m[1])
				if !headings[n] {
					t.Errorf("%s:%d cites %q, but docs/design.md has no section \"## %d.\"", p, i+1, m[0], n)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Error("no Go file cites a section of the design; the scan is broken")
	}
}
