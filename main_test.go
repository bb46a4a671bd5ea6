package snap_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the developer's git configuration out of every capture of
// the package's tests: captures honour git's global excludes file, which
// HOME, XDG_CONFIG_HOME and the GIT_CONFIG_* variables locate.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "snap-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("XDG_CONFIG_HOME")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	os.Unsetenv("GIT_CONFIG_SYSTEM")
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
