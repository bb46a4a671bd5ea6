package watch

import "errors"

var (
	// ErrRunning is returned by Run when another daemon already runs for
	// the store (it holds <store>/watch.lock).
	ErrRunning = errors.New("a watch daemon is already running for this store")
	// ErrNotRunning is wrapped by the errors of Query, Status and Stop when
	// no daemon listens on the store's socket (none, or a stale socket
	// left by a killed one).
	ErrNotRunning = errors.New("no watch daemon is running for this store")
)
