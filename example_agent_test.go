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

// Example_task shows staged edits inside a task: the text to replace
// occurs twice, so the first answer is needs_match with lettered
// candidates; both are staged, the file is untouched until the task
// commit applies them together; a second task is abandoned and its
// changes rewound. The task tree is what an agent pastes into its next
// prompt.
func Example_task() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "snap-task-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.yaml")
	exampleWriteFile(config, "api:\n  timeout: 30\ndb:\n  timeout: 30\n")
	repo, _, err := snap.Init(snap.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close()
	const s = "agent"

	if _, err := repo.TaskBegin(ctx, snap.TaskOptions{Session: s, Text: "raise the timeouts"}); err != nil {
		log.Fatal(err)
	}
	req := snap.EditRequest{Session: s, Path: "config.yaml", Old: "timeout: 30", New: "timeout: 60"}
	ans, err := repo.EditStage(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ans.Status, "candidates:", len(ans.Candidates))
	for _, c := range ans.Candidates {
		req.Match = c.MatchID
		if ans, err = repo.EditStage(ctx, req); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(ans.Status, "pending:", len(ans.Pending), "file changed yet:", strings.Contains(exampleRead(config), "60"))
	done, err := repo.TaskCommit(ctx, snap.TaskOptions{Session: s, Text: "both timeouts at 60"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed:", done.Edits.AppliedChanges, "changes to", done.Edits.Paths)

	// A failed attempt: its files go back to where the task began.
	if _, err := repo.TaskBegin(ctx, snap.TaskOptions{Session: s, Text: "switch to TOML"}); err != nil {
		log.Fatal(err)
	}
	exampleWriteFile(filepath.Join(dir, "config.toml"), "[api]\ntimeout = 60\n")
	if _, err := repo.TaskRevert(ctx, snap.TaskOptions{Session: s, Text: "the loader reads YAML only"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("files:", exampleListFiles(dir))

	tree, err := repo.Tasks(ctx, s, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(tree.Prompt())
	if _, err := repo.EmptyTrash(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// needs_match candidates: 2
	// editing pending: 2 file changed yet: false
	// committed: 2 changes to [config.yaml]
	// files: [config.yaml]
	// No open task.
	// Done #1 raise the timeouts: both timeouts at 60
	// Abandoned #2 switch to TOML: the loader reads YAML only
}

func exampleRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	return string(b)
}
