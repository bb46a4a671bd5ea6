package worktree

import (
	"testing"

	"github.com/snapcore-dev/snap/internal/testenv"
)

// TestMain keeps the developer's git configuration out of every capture of
// the package's tests: captures honour git's global excludes file (see
// excludesFile), which HOME, XDG_CONFIG_HOME and the GIT_CONFIG_* variables
// locate.
func TestMain(m *testing.M) { testenv.MainWithoutGitConfig(m) }
