package snap_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	snap "github.com/snapcore-dev/snap"
)

// Example_agentLoop is the smallest agent loop on the library: a
// checkpoint before each tool call, named by the call's id, and when a
// call leaves the tests failing, a rewind to the checkpoint taken just
// before it. The rewind's safety checkpoint keeps the failed attempt
// (Undo brings it back).
func Example_agentLoop() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "snap-agent-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exampleWriteFile(filepath.Join(dir, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	repo, _, err := snap.Init(snap.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()

	// The model's tool calls: each writes a file.
	calls := []struct{ id, path, content string }{
		{"toolu_01", "sub.go", "package calc\n\nfunc Sub(a, b int) int { return a - b }\n"},
		{"toolu_02", "calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n"}, // a bug
	}
	// The test run: Add must add.
	testsPass := func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "calc.go"))
		return strings.Contains(string(b), "return a + b")
	}
	for _, call := range calls {
		if _, err := repo.Checkpoint(ctx, snap.CheckpointOptions{
			Session: "agent", Kind: "pre-tool", MessageID: call.id, Summary: "before " + call.id,
		}); err != nil {
			log.Fatal(err)
		}
		exampleWriteFile(filepath.Join(dir, call.path), call.content)
		if testsPass() {
			fmt.Println(call.id, "tests pass")
			continue
		}
		rw, err := repo.Rewind(ctx, snap.RewindOptions{Session: "agent", Target: "msg:" + call.id})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(call.id, "tests fail: rewound, restored", rw.Restored, "attempt kept:", rw.SafetyCreated)
	}
	fmt.Println("files:", exampleListFiles(dir), "tests pass:", testsPass())
	if _, err := repo.EmptyTrash(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// toolu_01 tests pass
	// toolu_02 tests fail: rewound, restored [calc.go] attempt kept: true
	// files: [calc.go sub.go] tests pass: true
}
