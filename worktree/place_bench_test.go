package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkPlace compares ways to put new content at 1,000 existing
// 4 KiB files, each written to a temporary file first (design.md §5,
// "Restore"): exchanged with the old file and the old content renamed into
// a trash directory (what place does: the path always holds the old or the
// new content, a write that raced the restore can be swapped back, and the
// old blocks are freed later, outside the rewind); exchanged and the old
// content unlinked at once; renamed over the old file.
//
//	go test -run='^$' -bench=Place -benchtime=5x ./worktree/
func BenchmarkPlace(b *testing.B) {
	const files = 1000
	content := make([]byte, 4096)
	for _, how := range []string{"exchange+trash", "exchange+unlink", "rename-over"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				trash := filepath.Join(dir, "trash")
				os.Mkdir(trash, 0o755)
				for i := range files {
					os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), content, 0o644)
				}
				dfd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				tfd, _ := unix.Open(trash, unix.O_DIRECTORY|unix.O_RDONLY, 0)
				b.StartTimer()
				for i := range files {
					name, tmp := fmt.Sprint("f", i), fmt.Sprint(".snap-tmp-", i)
					fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
					if err != nil {
						b.Fatal(err)
					}
					unix.Write(fd, content)
					unix.Close(fd)
					switch how {
					case "exchange+trash":
						err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_EXCHANGE)
						if err == nil {
							err = unix.Renameat(dfd, tmp, tfd, fmt.Sprint("t", i))
						}
					case "exchange+unlink":
						err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_EXCHANGE)
						if err == nil {
							err = unix.Unlinkat(dfd, tmp, 0)
						}
					case "rename-over":
						err = unix.Renameat(dfd, tmp, dfd, name)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				unix.Close(dfd)
				unix.Close(tfd)
				b.StartTimer()
			}
		})
	}
}
