package gitbridge

import "errors"

// ErrNoGitRepo: no git repository holds the project and none was named.
var ErrNoGitRepo = errors.New("no git repository")
