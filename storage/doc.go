// Package storage is the seam between snap's storage layers and the
// medium that keeps their bytes: small interfaces for what objects.Store
// and refs.Store persist, and the store's lock protocol. Implementations:
// storage/fsstore (a store directory on a file system: the format snap has
// always written) and storage/memstore (in memory); storage/storagetest is
// the conformance suite both pass, and that any new backend (a team store
// on object storage) must pass too.
//
//	objects.Store ──▶ Blobs   (pack files)
//	refs.Store    ──▶ Refs    (ref values, op log, journal, id lists) ──▶ Locker
//	gc, root      ──▶ LockWriter / LockSweep / LockReader over refs.Store.Locks()
//
// # Blobs
//
// A flat namespace of named, immutable blobs (names: ValidName). A blob is
// written through a BlobWriter and becomes visible whole, under its name,
// only when Commit returns nil, and then it is durable; an aborted or
// failed write leaves nothing visible. Committing an existing name again
// replaces it atomically (names are content hashes, so only a damaged copy
// ever changes). Blobs are read at offsets (BlobReader.ReadAt); an open
// reader keeps reading what it opened after a delete or replacement, which
// is what lets a gc in another process remove a pack under a reader. List
// never shows uncommitted data. Delete is durable when it returns.
//
// # Refs
//
// Ref values are opaque bytes (package refs encodes ids and checks them).
// UpdateRef is a compare-and-swap by callback: under the ref's lock, the
// current value is read and the callback decides the new one (or
// refuses, or deletes); no two updates of one ref interleave, in any
// goroutine or process. A name that would need an existing ref as its
// directory is refused (*CollisionError). An error after the change became
// visible wraps ErrNotDurable. The store's small files (the op log, the
// move journal, the expired and foreign lists) are whole-file reads, atomic
// replacement (WriteFile), durable line appends (AppendLines) and the log
// append (AppendLog: the caller holds oplog.lock; a torn tail is cut where
// the caller's parser says, and a failed append leaves no record).
//
// # Locks
//
// Locker is a table of named readers-writer locks shared by every user of
// one store, waited for with a timeout (ErrBusy) or until a context ends.
// The lock names and their order are in lock.go; LockWriter (every
// writer), LockSweep (gc) and LockReader (fsck) are the protocol that
// keeps gc from deleting what a writer will reference (design §4).
//
// # Errors
//
// Absence is fs.ErrNotExist (errors.Is), a lock not obtained in time
// ErrBusy (refs.ErrBusy is the same value), an illegal name ErrBadName.
package storage
