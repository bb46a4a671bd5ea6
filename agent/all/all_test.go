package all_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/agent"
	_ "github.com/snapcore-dev/snap/agent/all"
)

const module = "github.com/snapcore-dev/snap"

// Every adapter package under agent/ (one that calls agent.Register) is
// linked in here, registers exactly one adapter, and has a test that runs
// the conformance suite (agenttest.Run): adding an agent is one package
// and one line in all.go, and the suite holds it to the contract.
func TestEveryAdapterLinkedAndTested(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "all.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		linked = append(linked, p)
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	adapters := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "all" || e.Name() == "agenttest" {
			continue
		}
		dir := filepath.Join("..", e.Name())
		registers, tested := false, false
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(p, "_test.go") {
				tested = tested || strings.Contains(string(b), "agenttest.Run(")
			} else {
				registers = registers || strings.Contains(string(b), "agent.Register(")
			}
		}
		if !registers {
			continue
		}
		adapters++
		if !slices.Contains(linked, module+"/agent/"+e.Name()) {
			t.Errorf("agent/%s registers an adapter but agent/all does not import it: no program links it", e.Name())
		}
		if !tested {
			t.Errorf("agent/%s: no test calls agenttest.Run (the adapters' conformance suite)", e.Name())
		}
	}
	if got := len(agent.All()); got != adapters || adapters == 0 {
		t.Errorf("%d adapters registered, %d adapter packages", got, adapters)
	}
}

// The front-ends (cmd/, mcp/) know agents only through the registry: no
// import of an adapter package (cmd/snap imports agent/all, blank), no
// string naming an adapter ('snap hook NAME', a switch on NAME) and no
// path of an adapter's settings files or transcript directories.
func TestFrontEndsNameNoAgent(t *testing.T) {
	type word struct {
		re   *regexp.Regexp
		what string
	}
	var words []word
	for _, a := range agent.All() {
		words = append(words, word{regexp.MustCompile(`(^|[^a-z0-9-])` + regexp.QuoteMeta(a.Name()) + `([^a-z0-9-]|$)`), "the adapter name " + a.Name()})
		var paths []string
		for _, s := range a.Scopes() {
			for _, base := range []string{"/R", "/H"} {
				if p, err := a.SettingsPath(s, "/R", "/H"); err == nil && strings.HasPrefix(p, base+"/") {
					paths = append(paths, strings.TrimPrefix(p, base+"/"))
				}
			}
		}
		for _, d := range a.TranscriptDirs("/H") {
			paths = append(paths, strings.TrimPrefix(d, "/H/"))
		}
		for _, p := range paths {
			words = append(words, word{regexp.MustCompile(regexp.QuoteMeta(filepath.ToSlash(p))), a.Name() + "'s path " + p})
			// Its directory alone, as a filepath.Join element.
			first := strings.Split(filepath.ToSlash(p), "/")[0]
			words = append(words, word{regexp.MustCompile(`^` + regexp.QuoteMeta(first) + `$`), a.Name() + "'s directory " + first})
		}
	}
	checked := 0
	for _, root := range []string{"../../cmd", "../../mcp"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, module+"/agent/") && path != module+"/agent/all" {
					t.Errorf("%s imports %s: front-ends read the registry (agent.All, agent.Lookup)", p, path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(lit.Value)
				for _, w := range words {
					if w.re.MatchString(s) {
						t.Errorf("%s: a string names %s: %.80q (the front-ends read the registry)", p, w.what, s)
					}
				}
				return true
			})
			return nil
		})
	}
	if checked == 0 {
		t.Fatal("no front-end source found")
	}
}
