package snap_test

import (
	"testing"

	"github.com/snapcore-dev/snap/internal/testenv"
)

// TestMain keeps the developer's git configuration out of every capture of
// the package's tests (captures honour git's global excludes file).
func TestMain(m *testing.M) { testenv.MainWithoutGitConfig(m) }
