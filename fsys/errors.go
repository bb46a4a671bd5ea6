package fsys

import "errors"

// ErrNotRegular: ReadRegular found something else than a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: a file is larger than its reader allows (ReadRegularMax).
var ErrTooLarge = errors.New("file too large")
