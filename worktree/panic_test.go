package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
)

// panicSys panics when a name it is given is looked at.
type panicSys struct {
	fsys.Sys
	name string
}

func (p panicSys) Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	if path == p.name {
		panic("boom at " + path)
	}
	return p.Sys.Fstatat(dirfd, path, st, flags)
}

// A panic in a walker goroutine fails the capture with an error naming it;
// it does not kill the process (which the CLI could not recover).
func TestWalkerPanicIsAnError(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b", "c", "d"} {
		os.MkdirAll(filepath.Join(root, d, "deep"), 0o755)
		os.WriteFile(filepath.Join(root, d, "deep", "boom"), []byte("x"), 0o644)
	}
	st, err := objects.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.NewWriter()
	defer w.Abort()
	_, err = Capture(context.Background(), w, Options{Root: root, StoreDir: filepath.Join(root, ".snap"), Workers: 8,
		Sys: panicSys{Sys: fsys.RealSys, name: "boom"}})
	if err == nil || !strings.Contains(err.Error(), "internal error: boom") {
		t.Fatalf("capture with a panicking walker: %v", err)
	}
}
