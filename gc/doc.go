// Package gc checks a store's integrity (Fsck), applies the retention
// policy, and removes what nothing can reach any more (Collect).
//
// # Retention
//
// With Options.Policy set, Collect first expires checkpoints (see Policy:
// the last N of each session, those younger than a window, those named by
// recent operations, labels and session heads are kept; archived sessions
// past their expiry are removed). Expired ids are appended durably to the
// store's expired list (refs.Store.AddExpired) before anything is swept;
// from then on they are not roots, and a kept checkpoint whose parent
// expired simply ends its history there: Fsck does not report such a
// parent as missing.
//
// # Reachability
//
// The roots are (Roots):
//
//   - every ref under refs/ (sessions/<s>/head, labels/<l>, and any other);
//   - every checkpoint id the op log names that has not expired:
//     Op.Checkpoint, Op.Target, Op.Safety and the Old and New of every
//     RefChange, so that every recorded operation stays undoable;
//   - the checkpoints the journal of a move in progress names
//     (refs.JournalName), so an interrupted rewind can still be completed.
//
// From a checkpoint, its parents (unless expired), its tree and its state
// tree are reachable; from a tree, every entry (subtrees, blobs, chunk
// lists); from a chunk list, its entries. A root of another type than
// checkpoint is walked by its type, so gc never deletes what a ref names.
// An object stored as a delta record reaches its base (and the base's
// base...): reading it needs them. objects.Store.Repack also keeps the
// bases of every delta it keeps or that lies in a pack gc does not
// rewrite (a young pack), whether reachable or not.
//
// # Concurrency
//
// Writers (checkpoint, rewind, undo, label, session changes) hold gc.lock
// shared from their first deduplication decision to their last ref update
// (storage.LockWriter, on the store's lock table refs.Store.Locks); Collect's sweep holds it exclusively, behind a turnstile
// that stops new writers from starving it. So gc never deletes an object a
// running writer has decided to reuse, and a writer never sees half a
// sweep (it reloads the pack index after taking the lock). The grace period
// additionally protects unreferenced data younger than it (a crashed
// writer's pack, temporary files).
//
// # Collect
//
// Collect computes the reachable set, then, among the packs whose file is
// older than the grace period (mtime): a pack holding at least one
// unreachable object is rewritten without them (objects.Store.Repack: all
// such packs become one new pack of their reachable objects), and a pack
// holding nothing reachable is deleted. Packs younger than the grace period
// are never touched, whatever they hold: a writer may have committed its pack
// and not yet moved the ref that makes it reachable. Files in tmp/ older than
// the grace period, or whose name carries the pid of a process that no
// longer runs (packs of writers that crashed), are removed. Packs that
// cannot be indexed are never touched: fsck reports them. A dry run
// computes the same counts and the bytes that would be freed and changes
// nothing.
//
// With Options.Consolidate (every gc the engine runs), packs holding no garbage are merged
// too, young ones included (moving reachable objects never loses them), so
// the store stays a few packs that open fast. Only the smallest are merged,
// as git repack --geometric=2 does: a pack at least twice the size of all
// smaller packs together is left alone, so a gc after 50 small checkpoints
// rewrites their few kilobytes, not the whole store.
//
// A second Collect fails at once with an error matching refs.ErrBusy (CLI
// exit 11). Fsck takes gc.lock shared, so it waits for a running gc
// instead of reporting packs vanishing under it.
//
// Collect deletes nothing when reachability is not known for certain: when a
// ref file or an op-log record is damaged (it may name a checkpoint), when
// an object that could name others (checkpoint, tree, chunk list) is
// reachable but cannot be read or decoded, or when an object is missing
// while some pack could not be indexed (it may be in that pack, with
// children elsewhere). It then fails with an error matching
// objects.ErrCorrupt (exit 12): run fsck. Reachable objects that are simply
// missing do not stop it; there is nothing more to lose.
//
// Crash safety comes from Repack: the new pack is durable before any old
// pack is removed, so a crash leaves at worst duplicate copies. A completed
// Collect that removed anything appends a "gc" op to the op log (its Detail
// is the Result); it is not undoable.
//
// # Fsck
//
// Fsck (connectivity, the default) reports, never stopping at the first:
//
//   - packs that cannot be indexed (truncated, trailing bytes, bad header,
//     footer or index): error;
//   - refs.Check findings: damaged ref files and op-log records are errors,
//     lock files and a torn op-log tail are warnings;
//   - each ref and each op-log id that names a missing object or one that is
//     not a checkpoint: error;
//   - from every root: checkpoints that are missing, not checkpoints, or do
//     not decode; parents likewise; tree and state that are missing, not
//     trees, or do not decode (DecodeTree checks names, order, duplicates,
//     modes); every tree entry: a directory must be a tree, a file or symlink
//     a blob or chunk list, and its recorded size must be the content's size
//     (error); a directory's recorded size must be the sum of its entries'
//     (warning: restores are unaffected); chunk lists must decode, level-0
//     entries must be blobs and level-n entries lists of level n-1, and every
//     recorded size must match the blob's size (from the pack index) or the
//     child list's total: error;
//   - every reachable object stored as a delta: its base, and the base's
//     base and so on, must be stored, with the object's type, in a chain of
//     at most objects.MaxDeltaDepth records; a missing base is an error like
//     a missing object (read from the first bytes of each delta record);
//   - files in tmp/ (a writer in progress, or one that crashed) and files in
//     packs/ that are not packs: warnings.
//
// Each object is visited once, so shared subtrees cost nothing more and a
// missing or corrupt object is reported once, not once per reference.
// Connectivity reads and re-hashes every reachable checkpoint, tree and
// chunk list, but not blobs: their existence, type and size come from the
// pack indexes (and, for delta records, the bases from their first bytes).
//
// Fsck full also reads, decompresses and re-hashes every record of every
// pack, reachable or not, including copies of objects stored twice, and
// reports each corrupt one with its pack.
//
// Exit semantics (for the CLI): Fsck returns an error only when it could not
// run (exit 1); otherwise the store is corrupt, exit 12, exactly when
// FsckReport.Corrupt reports an error-severity problem. Warnings alone exit 0.
package gc
