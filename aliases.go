package snap

import (
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// The storage layers' types and constants that front-ends see, under the
// engine's names: one definition each (the JSON contract), so that a
// front-end imports this package only.

type (
	ID          = objects.ID
	Op          = refs.Op
	RefChange   = refs.RefChange
	Policy      = gc.Policy
	GCResult    = gc.Result
	FsckReport  = gc.FsckReport
	FsckProblem = gc.Problem
)

// LabelOf parses a ref name of the op log (Op.Refs): the label's name,
// and whether it names a label.
func LabelOf(ref string) (string, bool) { return refs.LabelOf(ref) }

// FsckError is the severity of a problem that is damage (exit 12).
const FsckError = gc.SeverityError

// DefaultGCGrace is how young unreferenced data gc never removes, unless
// gc.grace is set.
const DefaultGCGrace = gc.DefaultGrace

// Node is a checkpoint as stored: its files (Tree), state documents
// (State), parents and metadata. Its canonical encoding (Encode) is what
// its id hashes.
type Node = objects.Checkpoint

// TreeEntry is one name of a stored directory (or state-document tree).
type TreeEntry = objects.TreeEntry

// Mode is a tree entry's kind: ModeFile, ModeExec, ModeSymlink or ModeDir.
type Mode = objects.Mode

// The four modes a tree entry can have.
const (
	ModeFile    = objects.ModeFile
	ModeExec    = objects.ModeExec
	ModeSymlink = objects.ModeSymlink
	ModeDir     = objects.ModeDir
)

// The actors a checkpoint names (CheckpointOptions.Actor, Node.Actor); ""
// is unknown.
const (
	ActorAgent = objects.ActorAgent
	ActorUser  = objects.ActorUser
)

// ParseID parses a checkpoint or object id written in full (64 hex digits).
func ParseID(s string) (ID, error) { return objects.ParseID(s) }

// DecodeNode decodes a checkpoint's canonical encoding (as ReadNode returns
// it); any other encoding of the same fields is refused.
func DecodeNode(raw []byte) (*Node, error) { return objects.DecodeCheckpoint(raw) }

// Skipped is a path (or "state:NAME" for a state document) that a capture
// did not record, and why.
type Skipped = worktree.Skipped

// PathError is one path's failure in a result's list of them.
type PathError = worktree.PathError
