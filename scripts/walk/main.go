// Command walk measures the static call tree below an entry function of
// snap: the functions and files it reaches, and the "climbs back up": call
// edges from a file into a file already further up the current call path
// (a cycle between files, which a reader following the walk climbs back
// up). Each function is visited once, depth first, in the call graph's
// order (golang.org/x/tools/go/callgraph/static: direct calls only), so
// the figures are a consistent measure to compare two trees by, not an
// exact count of every path. It is a module of its own (its dependency on
// x/tools stays out of snap's go.mod):
//
//	cd scripts/walk && go run . -dir ../.. -root -v
//	go run . -dir ../.. -entry github.com/snapcore-dev/snap/agent.Hook
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/static"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

func main() {
	dir := flag.String("dir", ".", "module root")
	entry := flag.String("entry", "(*github.com/snapcore-dev/snap.Repo).Checkpoint", "entry function")
	rootOnly := flag.Bool("root", false, "count only functions of the root package")
	verbose := flag.Bool("v", false, "list climbs")
	flag.Parse()
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: *dir}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	cg := static.CallGraph(prog)
	var start *callgraph.Node
	for fn, n := range cg.Nodes {
		if fn != nil && fn.String() == *entry {
			start = n
		}
	}
	if start == nil {
		fmt.Fprintln(os.Stderr, "no entry", *entry)
		os.Exit(1)
	}
	fset := prog.Fset
	const mod = "github.com/snapcore-dev/snap"
	in := func(fn *ssa.Function) bool {
		if fn == nil || fn.Pkg == nil {
			return false
		}
		p := fn.Pkg.Pkg.Path()
		if *rootOnly {
			return p == mod
		}
		return p == mod || strings.HasPrefix(p, mod+"/")
	}
	file := func(fn *ssa.Function) string {
		pos := fn.Pos()
		if !pos.IsValid() && fn.Parent() != nil {
			pos = fn.Parent().Pos()
		}
		f := fset.Position(pos).Filename
		if f == "" {
			return "?"
		}
		return filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
	}
	funcs := map[*ssa.Function]bool{}
	files := map[string]bool{}
	climbs := map[string]bool{}
	var path []string // files on the current path (with repeats collapsed)
	onPath := map[*ssa.Function]bool{}
	var visit func(n *callgraph.Node)
	visit = func(n *callgraph.Node) {
		fn := n.Func
		f := file(fn)
		funcs[fn] = true
		files[f] = true
		pushed := len(path) == 0 || path[len(path)-1] != f
		if pushed {
			// a climb: entering a file already on the path above (not the caller's own)
			for i := 0; i < len(path)-1; i++ {
				if path[i] == f {
					climbs[path[len(path)-1]+" -> "+f+" ("+fn.Name()+")"] = true
					break
				}
			}
			path = append(path, f)
		}
		onPath[fn] = true
		for _, e := range n.Out {
			callee := e.Callee.Func
			if !in(callee) || onPath[callee] || funcs[callee] || strings.HasSuffix(file(callee), "_test.go") {
				continue
			}
			visit(e.Callee)
		}
		onPath[fn] = false
		if pushed {
			path = path[:len(path)-1]
		}
	}
	visit(start)
	var cl []string
	for c := range climbs {
		cl = append(cl, c)
	}
	sort.Strings(cl)
	var fl []string
	for f := range files {
		fl = append(fl, f)
	}
	sort.Strings(fl)
	fmt.Printf("entry %s\nfunctions %d\nfiles %d\nclimbs back up (distinct file->file edges into a file higher on the path) %d\n", *entry, len(funcs), len(files), len(cl))
	if *verbose {
		fmt.Println("files:", strings.Join(fl, " "))
		for _, c := range cl {
			fmt.Println("  climb", c)
		}
	}
}
