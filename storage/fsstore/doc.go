// Package fsstore is the file-system implementation of package storage:
// what a store directory (".snap") holds, exactly as objects and refs wrote
// it before the storage seam existed (the on-disk format is unchanged).
//
//	packs/<name>        a blob (Blobs): written as tmp/<prefix><pid>-<kind><random>,
//	                    fsync'd, renamed into packs/, packs/ fsync'd; read with
//	                    pread through a descriptor that outlives a deletion
//	tmp/                temporary files of writers in progress or crashed
//	                    (RemoveTemps)
//	refs/<name>         a ref (Refs): replaced by rename of refs/<name>.lock,
//	                    under an exclusive flock(2) on refs.lock; see refs/doc.go
//	oplog, move-journal, expired, foreign
//	                    the store's small files (Refs.ReadFile, AppendLog,
//	                    WriteFile, AppendLines)
//	*.lock, gc.turnstile
//	                    empty files carrying flock(2)s (Locker), never removed
//
// Every file operation goes through the fsys.FS given (nil is fsys.OS), so
// fault-injection tests pass an fsys.Faulty, except the flock(2)s and the
// files that carry them, which are always direct: locks are not data.
//
// Crash safety, as the storage contracts require: a blob or a ref becomes
// visible by rename(2) of a file already fsync'd, then its directory is
// fsync'd (a new ref's ancestors too); a crash before the rename leaves a
// temporary file that nothing reads, after it the new value. An appended
// log record is fsync'd before AppendLog returns, and a failure truncates
// it away again. A crashed ref writer leaves refs/<name>.lock, which the
// next writer (holding the refs.lock flock, so sure no live writer owns it)
// replaces.
package fsstore
