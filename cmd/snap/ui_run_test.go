//go:build !snapcore

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// --url-file writes a new private file, whatever was there (adversarial
// U3: an existing file kept its mode, a symlink was followed).
func TestWritePrivate(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "ui-url")
	if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f, link} {
		if err := writePrivate(p, "http://x/?token=t\n"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != 0o600 {
			t.Fatalf("%s: %v %v, want a regular file of mode 0600", p, fi.Mode(), err)
		}
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the symlink's target was written")
	}
}
