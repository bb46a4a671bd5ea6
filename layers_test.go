package snap_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Front-ends, and the agent workflow they share, use the engine through
// the root package only, besides the pure model packages: none reaches
// past Repo into the storage layers.
func TestFrontEndsImportOnlyTheEngine(t *testing.T) {
	const module = "github.com/snapcore-dev/snap"
	allowed := map[string]bool{module: true, module + "/conversation": true, module + "/tasks": true, module + "/edits": true, module + "/merge": true, module + "/agenttrace": true, module + "/redact": true,
		module + "/workflow": true}
	checked := 0
	for _, dir := range []string{"cmd", "mcp", "agent", "gitbridge", "ui", "workflow"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if dir == "cmd" && (path == module+"/gitbridge" || path == module+"/mcp" || path == module+"/ui" || strings.HasPrefix(path, module+"/agent")) {
					continue // the CLI composes the front-ends it serves
				}
				if strings.HasPrefix(path, module+"/"+dir) {
					continue // within one front-end (agent/claudecode uses agent)
				}
				if (path == module || strings.HasPrefix(path, module+"/")) && !allowed[path] {
					t.Errorf("%s imports %s: front-ends use the root package (and pure model packages) only", p, path)
				}
			}
			return nil
		})
	}
	if checked == 0 {
		t.Fatal("no front-end source found")
	}
}

// Each package keeps its exported sentinel errors in its errors.go, where
// a reader looks for what a call may return.
func TestSentinelErrorsInErrorsGo(t *testing.T) {
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || d.Name() == "errors.go" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for i, name := range spec.(*ast.ValueSpec).Names {
					vs := spec.(*ast.ValueSpec)
					if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					if call, ok := vs.Values[i].(*ast.CallExpr); ok {
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
							t.Errorf("%s declares %s: sentinel errors belong in the package's errors.go", p, name.Name)
						}
					}
				}
			}
		}
		return nil
	})
}

// The engine speaks no CLI: no string of the root package, the storage
// layers or the pure model packages names a snap command or a flag. The
// engine returns advice (snap.Advice) and each front-end words it.
func TestEngineSpeaksNoCLI(t *testing.T) {
	cli := regexp.MustCompile(`'snap [a-z]|"snap [a-z]|\bsnap (init|rewind|undo|redo|task|edit|session|checkpoint|label|gc|fsck|push|pull)\b|(^|[\s(])--[a-z]`)
	dirs := []string{".", "objects", "refs", "gc", "worktree", "index", "fsys", "tasks", "edits", "merge", "conversation", "redact", "storage", "workflow"}
	checked := 0
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a package that does not exist (yet)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && cli.MatchString(s) {
					t.Errorf("%s: %q names a CLI command or flag: return snap.Advice and let the front-end word it", fset.Position(lit.Pos()), s)
				}
				return true
			})
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked", checked)
	}
}

// One write path: outside refs/, no program code moves a ref or appends to
// the op log but through refs.Store.Commit (which moves the refs of an
// operation and records it as one step, under the locks it takes in one
// order); Update, Delete and Append are for tests. A tripwire on the
// receivers the code names its ref store by (r.refs, rs, refs()).
func TestOneWritePath(t *testing.T) {
	direct := regexp.MustCompile(`\b(refs|rs|Refs\(\))\.(Update|Delete|Append)\(`)
	checked := 0
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "testdata" || p == "refs" || p == "torture") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "storagetest") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			if direct.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d: %s: move refs and record the operation with refs.Store.Commit", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if checked < 50 {
		t.Fatalf("only %d files checked", checked)
	}
}

// The engine's operations are transactions (tx.go): in the root package,
// only tx.go makes a pack durable, moves refs or records an operation, and
// only locks.go takes the store's locks, so the order of the write
// (objects, then refs and the one op-log record) and of the locks is
// stated and kept in one place each.
func TestOneTransactionType(t *testing.T) {
	only := regexp.MustCompile(`\brefs\.Commit\(|\.Commit\(\)|\bNewWriter\(\)|storage\.Lock(Writer|Sweep)\(|Locks\(\)\.Lock\(|flock\.Lock\{`)
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		p := e.Name()
		if e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || p == "tx.go" || p == "locks.go" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			if only.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d: %s: write through a tx (tx.go: write, commit) and lock in locks.go (begin, lockMoves, lockEdits)", p, i+1, strings.TrimSpace(line))
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d files checked", checked)
	}
}

// doc.go maps the package's files by concept: every file is in the map,
// and every file the map names exists.
func TestDocMapsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(doc), "The package's files, by concept")
	end := strings.Index(string(doc), "Store layout")
	if start < 0 || end < start {
		t.Fatal("doc.go has no map of the package's files")
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b[a-z0-9]+\.go\b`).FindAllString(string(doc)[start:end], -1) {
		named[m] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && n != "doc.go" {
			have[n] = true
			if !named[n] {
				t.Errorf("%s is not in doc.go's map of files by concept", n)
			}
		}
	}
	for n := range named {
		if !have[n] {
			t.Errorf("doc.go's map names %s, which does not exist", n)
		}
	}
}
