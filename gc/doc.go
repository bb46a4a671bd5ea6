// Package gc checks a store's integrity (Fsck) and removes what nothing can
// reach any more (Collect).
//
// # Reachability
//
// The roots are (Roots):
//
//   - every ref under refs/ (sessions/<s>/head, labels/<l>, and any other);
//   - every checkpoint id the op log names: Op.Checkpoint, Op.Target,
//     Op.Safety and the Old and New of every RefChange, so that every
//     recorded operation stays undoable and redoable.
//
// From a checkpoint, its parents (all ancestors), its tree and its state tree
// are reachable; from a tree, every entry (subtrees, blobs, chunk lists);
// from a chunk list, its entries. A root of another type than checkpoint is
// walked by its type, so gc never deletes what a ref names.
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
// the grace period (packs of writers that crashed) are removed. Packs that
// cannot be indexed are never touched: fsck reports them. A dry run
// computes the same counts and the bytes that would be freed and changes
// nothing.
//
// Collect holds an exclusive flock(2) on <store>/gc.lock for its whole run;
// a second Collect fails at once with an error matching refs.ErrBusy (CLI
// exit 11). Fsck takes the same lock shared, so it waits for a running gc
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
//   - files in tmp/ (a writer in progress, or one that crashed) and files in
//     packs/ that are not packs: warnings.
//
// Each object is visited once, so shared subtrees cost nothing more and a
// missing or corrupt object is reported once, not once per reference.
// Connectivity reads and re-hashes every reachable checkpoint, tree and
// chunk list, but not blobs: their existence, type and size come from the
// pack indexes.
//
// Fsck full also reads, decompresses and re-hashes every record of every
// pack, reachable or not, including copies of objects stored twice, and
// reports each corrupt one with its pack.
//
// Exit semantics (for the CLI): Fsck returns an error only when it could not
// run (exit 1); otherwise the store is corrupt, exit 12, exactly when
// FsckReport.Corrupt reports an error-severity problem. Warnings alone exit 0.
package gc
