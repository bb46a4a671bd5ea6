package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// A restore replacing and deleting files moves their old content into the
// trash (a replaced path never goes without content), whether it writes with one worker or
// several, reports every path in order, and EmptyTrash then deletes it.
func TestRestoreMovesReplacedContentToTrash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   int
		workers int
	}{{"sequential", 5, 1}, {"parallel", 2 * parallelWrites, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			store := filepath.Join(root, ".snap")
			st, err := objects.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var old, want []node
			for i := range tc.files {
				name := fmt.Sprintf("f%03d.txt", i)
				old = append(old, file(name, "old "+name))
				want = append(want, file(name, "new "+name))
				os.WriteFile(filepath.Join(root, name), []byte("old "+name), 0o644)
			}
			old = append(old, file("zz-gone.txt", "deleted content")) // not in the target
			os.WriteFile(filepath.Join(root, "zz-gone.txt"), []byte("deleted content"), 0o644)
			w := st.NewWriter()
			cur, target := build(t, w, []node{dir("d", old...)}), build(t, w, []node{dir("d", want...)})
			if _, err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(root, "d"), 0o755)
			for _, n := range old {
				os.Rename(filepath.Join(root, n.name), filepath.Join(root, "d", n.name))
			}
			trash := filepath.Join(store, "trash")
			res, err := Restore(context.Background(), st, cur, target, RestoreOptions{Root: root, StoreDir: store, Trash: trash, Workers: tc.workers})
			if err != nil || len(res.Errors) > 0 {
				t.Fatalf("restore: %v %v", err, res.Errors)
			}
			if len(res.Deleted) != 1 || len(res.Restored) != tc.files || !sort.StringsAreSorted(res.Restored) {
				t.Fatalf("restored %d paths (sorted: %v), want %d in order", len(res.Restored), sort.StringsAreSorted(res.Restored), tc.files)
			}
			for _, n := range want {
				if got, _ := os.ReadFile(filepath.Join(root, "d", n.name)); string(got) != n.content {
					t.Fatalf("%s holds %q, want %q", n.name, got, n.content)
				}
			}
			if names, _ := os.ReadDir(filepath.Join(root, "d")); len(names) != tc.files {
				t.Fatalf("d holds %d entries, want %d (temporary files left?)", len(names), tc.files)
			}
			moved := map[string]bool{}
			des, _ := os.ReadDir(trash)
			for _, de := range des {
				data, _ := os.ReadFile(filepath.Join(trash, de.Name()))
				moved[string(data)] = true
			}
			for _, n := range old {
				if !moved[n.content] {
					t.Fatalf("trash lacks the old content %q (holds %d files)", n.content, len(des))
				}
			}
			if TrashEmpty(trash) {
				t.Fatal("TrashEmpty is true with files in the trash")
			}
			if n, err := EmptyTrash(trash); err != nil || n != len(old) {
				t.Fatalf("EmptyTrash = %d, %v; want %d", n, err, len(old))
			}
			if !TrashEmpty(trash) {
				t.Fatal("trash not empty after EmptyTrash")
			}
		})
	}
}
