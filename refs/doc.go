// Package refs keeps snap's named pointers (refs) and its operation log.
//
// # Layout
//
// Inside the store directory (".snap"):
//
//	refs/<name>          a ref
//	refs/<name>.lock     a ref's lock file, present while a writer updates it
//	oplog                the operation log
//	oplog.lock           empty file that appenders flock(2); never removed
//	refs.lock            empty file that ref writers flock(2); never removed
//
// The engine uses the names sessions/<session>/head and labels/<label>.
//
// # Ref names
//
// A ref name is one or more components joined by "/", at most 1024 bytes. A
// component is 1 to 128 bytes matching [A-Za-z0-9][A-Za-z0-9._-]* and does
// not end in ".lock" (so a ref never collides with a lock file, and ".", ".."
// and hidden names cannot occur). Session and label names follow the
// component rule (ValidComponent). A name cannot be both a ref and a
// directory of refs ("labels/a" and "labels/a/b"); the second one created is
// refused with ErrBadName.
//
// # Ref files
//
// A ref file holds exactly 65 bytes: the 64 lowercase hex digits of an
// objects.ID, then "\n". It never holds the zero id: a ref that does not
// exist has no file. Ref files are never modified in place; a new value
// replaces the file by rename, so readers see the old or the new value,
// never a mix.
//
// Update and Delete are compare-and-swap, as in git:
//
//  1. create the ref's parent directories;
//  2. take an exclusive flock(2) on refs.lock (waiting up to about 5 s for a
//     live writer, then ErrBusy), then create <ref>.lock with
//     O_CREAT|O_EXCL; one that already exists was left by a crashed writer
//     (a live one would hold the flock) and is removed first;
//  3. read the current value and compare it with the expected old one
//     (zero = absent); on mismatch remove the lock and fail with a
//     *ConflictError (ErrConflict);
//  4. Update: write the new value into the lock file, fsync it, rename it
//     over the ref, fsync the ref's directory, and when the ref is new also
//     every ancestor directory up to refs/. Delete: remove the ref, remove
//     the lock, fsync the directory.
//
// A writer that crashes between 2 and 4 leaves the lock file behind and the
// ref at its old value; the kernel releases its flock, and the next writer
// replaces the stale lock file, so a crash never needs manual repair. Check
// reports such files as warnings. Empty directories are never removed.
//
// I/O errors: one before the rename (Update) or the removal (Delete) leaves
// the ref at its old value and removes the lock file (best effort), so the
// call can simply be repeated. One after it (fsyncing a directory, removing
// the lock file of a Delete) wraps ErrNotDurable: readers already see the
// change, which a crash may still undo; Update(name, new, new) makes it
// durable. An I/O error is never reported as a conflict or as absence.
//
// # Operation log
//
// The log is a sequence of records, one per line:
//
//	<json> TAB <sum> LF
//
// <json> is the compact JSON encoding of an Op (encoding/json, HTML escaping
// off): it contains no raw TAB or LF. Zero ids and empty fields are omitted,
// ids are 64 lowercase hex digits, times are RFC 3339 with nanoseconds. <sum>
// is 16 lowercase hex digits of the CRC-64 (ECMA polynomial, hash/crc64) of
// the <json> bytes. A record verifies when it has this shape, the sum
// matches, the JSON decodes into an Op, seq >= 1 and kind is not empty.
// Unknown JSON fields are ignored, so later versions may add fields.
//
// Invariants:
//
//   - Records are only appended; the only other change is the removal of a
//     torn tail by Append.
//   - The seq of the k-th record is k: seqs start at 1 and grow by one per
//     record, with no gaps or duplicates.
//   - Each Append fsyncs its record before returning, and removes a torn tail
//     before writing, so at most one record (the last) can be torn.
//   - An Append that fails leaves no record: a record written but not
//     fsync'd (or, in a new log file, whose directory entry could not be
//     fsync'd) is truncated away before the error is returned. Only if that
//     truncation fails too (a persistent I/O fault) can it remain, whole or
//     torn.
//
// The torn tail is what a crash during Append can leave at the end of the
// file: the bytes after the last LF if the file does not end in LF, or else
// the last line if it does not verify (the LF reached the disk, earlier bytes
// did not). Readers ignore it silently; the next Append truncates the file at
// its start, and Check reports it as a *Warning.
//
// A record that does not verify anywhere else is corruption, not a crash: it
// is never removed. Ops returns all verified records plus an error joining
// one *CorruptError per bad record; Check reports the same. Append still
// works, giving the next record the seq it would have in an intact log (each
// bad record is counted as one seq), so seqs stay equal to line numbers.
// Verified records whose seq breaks the invariant (counting bad records as
// above) are reported as *CorruptError too, once per break.
//
// # Storage
//
// What this package keeps goes through a storage.Refs (package storage):
// OpenFS uses storage/fsstore, the layout above; OpenStorage takes any
// implementation (storage/memstore). The ref encoding, the compare of
// Update and Delete, the op-log record format and its torn-tail rule are
// this package's; the storage carries bytes, atomicity and durability,
// and the store's lock table (Store.Locks).
//
// # File system
//
// Every file operation goes through the fsys.FS given to OpenFS (Open uses
// the real one), except the flock(2)s and the lock files that carry them
// (refs.lock, oplog.lock), which are always direct: locks are not data.
//
// # Concurrency
//
// Any number of goroutines and processes may use one store directory at once.
// Ref writers are serialised per ref by the lock file; op-log appenders are
// serialised by an exclusive flock(2) on oplog.lock, which the kernel
// releases if its holder dies, so no stale lock can block the log. Readers
// (Get, List, Ops, Check) take no lock.
//
// The op log is written after the refs it records have moved (design §4), so
// a crash between the two leaves a ref move with no record; the engine, not
// this package, decides what that means for undo.
package refs
