// Package snap is the engine of snap, a content-addressed snapshot store for
// AI coding agents: checkpoints of a project's working tree and of the
// agent's state documents (conversation transcript, context, task state),
// bound in one node and chained per session, rewound in milliseconds, and
// every rewind undoable.
//
// Open or Init a Repo, then Checkpoint, Rewind, Undo and Redo; Log, Show,
// Status, Diff, Cat, CatState and Conversation inspect what was recorded.
//
// # For agent builders
//
// An agent loop on the library (Example_agentLoop): Checkpoint before each
// tool call with the call's id as MessageID (and the transcript as the
// conversation StateDoc); when the call breaks something, Rewind to
// "msg:<id>"; Undo brings the attempt back. Call EmptyTrash after rewinds.
//
// An agent that works through snap uses package workflow, built on this
// package: a task stack, staged edits with letter ids, the revert of one
// checkpoint's change, conversation compaction. It calls the engine API
// made for it (Repo.Steps: Record, Move, Plan, OpenEdits, TaskMarks), which records
// what the workflow decides on the engine's one write path. Front-ends
// (the CLI, the MCP server in package mcp, the hook adapters under agent/,
// the git bridge in gitbridge) are built on this package and workflow only.
//
// The layers below are objects (content-addressed packs), refs (session
// heads, labels, the operation log), index (the stat cache), worktree
// (capture and safe restore), conversation (transcript views) and gc
// (fsck, collection).
//
// The package's files, by concept:
//
//	the store        repo.go (Open, Init, Options), config.go, tx.go (the one
//	                 write path), locks.go (every lock, in one order),
//	                 errors.go (sentinels and advice), names.go (what a
//	                 session, label or document may be called), aliases.go
//	                 (the layers' types front-ends see)
//	checkpoints      checkpoint.go (Checkpoint), capture.go (the working tree
//	                 and documents captured), node.go (the head read, a node
//	                 built on it), monitor.go (what the watch daemon says
//	                 changed, which a capture reads alone)
//	state documents  statedocs.go (read from their sources, written back by a
//	                 move, previewed by Show)
//	moves            rewind.go (Rewind), move.go (the core every move shares),
//	                 journal.go (the move journal, recovery), undo.go,
//	                 opkinds.go (what undo and redo do with each operation)
//	actors           actors.go (who changed a path since a checkpoint, from
//	                 the op log; what a session's move keeps of the others')
//	history views    history.go (the op log as one value), sessionindex.go
//	                 (a session's checkpoints without the whole log), log.go, resolve.go
//	                 (REFs), diff.go, convdiff.go, cat.go, ls.go, blame.go
//	                 (who wrote each line)
//	sessions         sessions.go (archive, remove, labels)
//	import, export   transfer.go (checkpoints read as stored, Importer)
//	the workflow's   steps.go (Repo.Steps: Record, Move, Plan), taskdoc.go,
//	API              staged.go (package workflow is built on these)
//	maintenance      maintenance.go (GC, Fsck, automatic gc)
//
// Store layout (the .snap directory at the project root):
//
//	config            settings (JSON)
//	packs/*.pack      objects (package objects)
//	tmp/              packs being written
//	refs/sessions/<s>/head, refs/labels/<l>, refs/archive/<s>/head
//	oplog             the operation log (package refs)
//	expired           checkpoints retention expired (package refs)
//	move-journal      the rewind, undo or redo in progress (see recoverMove)
//	trash/            files a restore replaced or deleted, emptied by gc
//	cache/stat        the stat cache (package index)
//	cache/sessions/   per session, its checkpoints as the op log lists them
//	                  up to a mark in it (sessionindex.go)
//	cache/monitor     per set of capture options, the watch daemon's token
//	                  and the checkpoint captured at it (monitor.go)
//	watch.sock        the watch daemon's socket, watch.lock its lock (package watch)
//	*.lock            gc.lock, move.lock, oplog.lock, refs.lock (flock);
//	gc.turnstile      lets gc take gc.lock ahead of new writers
//	edits/<s>.json    a session's staged edits (and edits/<s>.lock)
//	foreign           checkpoints pulled from another machine (package refs)
//	hook.log          what the agent hooks did (package agent)
//	mcp-token         the bearer token of 'snap mcp --http' (mode 0600)
//
// Contracts: a checkpoint is committed when Checkpoint returns nil — its
// objects, then its head ref, then its op-log record are durable, in that
// order. A rewind first records a pre-rewind checkpoint of whatever differs
// from the head, so nothing is lost, and undo puts the tree and the state
// documents back. Any number of processes may use one store at once.
package snap
