// Package testenv holds what the test binaries of several packages set up
// alike.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// MainWithoutGitConfig runs m with a fresh empty HOME and git's
// configuration variables cleared, so that the developer's own git
// configuration (its global excludes file, which captures honour) never
// reaches a test, and exits with m's code.
func MainWithoutGitConfig(m *testing.M) {
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
