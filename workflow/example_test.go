package workflow_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

// Example shows staged edits inside a task: the text to replace
// occurs twice, so the first answer is needs_match with lettered
// candidates; both are staged, the file is untouched until the task
// commit applies them together; a second task is abandoned and its
// changes rewound. The task tree is what an agent pastes into its next
// prompt.
func Example() {
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
	flow := workflow.New(repo)
	const s = "agent"

	if _, err := flow.TaskBegin(ctx, workflow.TaskOptions{Session: s, Text: "raise the timeouts"}); err != nil {
		log.Fatal(err)
	}
	req := workflow.EditRequest{Session: s, Path: "config.yaml", Old: "timeout: 30", New: "timeout: 60"}
	ans, err := flow.EditStage(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ans.Status, "candidates:", len(ans.Candidates))
	for _, c := range ans.Candidates {
		req.Match = c.MatchID
		if ans, err = flow.EditStage(ctx, req); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(ans.Status, "pending:", len(ans.Pending), "file changed yet:", strings.Contains(exampleRead(config), "60"))
	done, err := flow.TaskCommit(ctx, workflow.TaskOptions{Session: s, Text: "both timeouts at 60"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed:", done.Edits.AppliedChanges, "changes to", done.Edits.Paths)

	// A failed attempt: its files go back to where the task began.
	if _, err := flow.TaskBegin(ctx, workflow.TaskOptions{Session: s, Text: "switch to TOML"}); err != nil {
		log.Fatal(err)
	}
	exampleWriteFile(filepath.Join(dir, "config.toml"), "[api]\ntimeout = 60\n")
	if _, err := flow.TaskRevert(ctx, workflow.TaskOptions{Session: s, Text: "the loader reads YAML only"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("files:", exampleListFiles(dir))

	tree, err := flow.Tasks(ctx, s, nil)
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

func exampleWriteFile(path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
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
