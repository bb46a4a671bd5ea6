package snap_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Front-ends use the engine through the root package only, besides the
// pure model packages: none reaches past Repo into the storage layers.
func TestFrontEndsImportOnlyTheEngine(t *testing.T) {
	const module = "github.com/snapcore-dev/snap"
	allowed := map[string]bool{module: true, module + "/conversation": true, module + "/tasks": true}
	checked := 0
	for _, dir := range []string{"cmd", "mcp", "agent", "gitbridge", "web"} {
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
