package fsys

import "errors"

// ErrNotRegular: ReadRegular found something else than a regular file.
var ErrNotRegular = errors.New("not a regular file")
