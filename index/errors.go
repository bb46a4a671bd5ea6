package index

import "errors"

// ErrCorrupt: the cache file does not decode. Load still returns an empty,
// usable cache with it.
var ErrCorrupt = errors.New("stat cache corrupt")
