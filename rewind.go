package snap

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// RewindOptions describe a rewind.
type RewindOptions struct {
	Session          string
	Target           string   // REF
	FilesOnly        bool     // leave state documents alone
	ConversationOnly bool     // leave the working tree alone
	Paths            []string // restore only these paths (implies FilesOnly; the head stays; each must exist in the target or the tree: else ErrNoPath)
	DryRun           bool     // report what would change, change nothing
	StateOut         string   // write state documents into this directory instead of their source paths
	// State restores only these state documents (implies ConversationOnly;
	// the head stays, as with Paths). Each must be in the target or the
	// session's head: else ErrNoPath. The task stack travels with the head
	// and cannot be restored alone.
	State []string
	// All restores every path, whoever changed it since the target.
	// Without it, a path another actor changed since (another session, the
	// user) is kept as it is, or merged, and listed (RewindResult.Kept).
	All bool
}

// StateRestored is a state document a rewind wrote, or removed (Deleted:
// the target records it as absent, or an undo removes the copy the rewind
// it undoes created). Created: nothing was at Path, and the session keeps
// the document elsewhere (or not at all) until the rewind; its undo
// removes the file again while it holds what the rewind wrote.
type StateRestored struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Deleted bool   `json:"deleted,omitempty"`
	Created bool   `json:"created,omitempty"`
}

// RewindResult is what Rewind reports.
type RewindResult struct {
	Target           objects.ID           `json:"target"`
	SafetyCheckpoint *objects.ID          `json:"safety_checkpoint"` // checkpoint holding the state from before; null in a dry run
	SafetyCreated    bool                 `json:"safety_created"`    // false when the state from before was already checkpointed
	Restored         []string             `json:"restored"`
	Deleted          []string             `json:"deleted"`
	State            []StateRestored      `json:"state"`
	Skipped          []worktree.Skipped   `json:"skipped"`
	Errors           []worktree.PathError `json:"errors"`
	// Created: what the rewind created though the ignore rules in force
	// ignored it (see worktree.RestoreResult.Created); its undo removes
	// these again while they are as it wrote them.
	Created []string `json:"created,omitempty"`
	// Kept: the paths another actor changed since the target (another
	// session, the user), which the move left as they are, or merged;
	// none when the move was told to restore All.
	Kept   []Kept `json:"kept"`
	DryRun bool   `json:"dry_run"`
	// SafetyMonitored: the capture of the state from before read only
	// what the watch daemon said may have changed (as
	// CheckpointResult.Monitored).
	SafetyMonitored bool `json:"safety_monitored,omitempty"`
}

// Rewind moves the working tree and/or the state documents back (or
// forward) to a checkpoint. Before changing anything it records the current
// tree and state as a pre-rewind checkpoint (unless they equal the head's),
// so the rewind can be undone and no work is lost. Then only differing
// paths are written (see worktree.Restore), state documents go back to their
// recorded source paths, and the session head moves to the target. The
// result lists per-path errors; when there are any the error is ErrPartial.
func (r *Repo) Rewind(ctx context.Context, o RewindOptions) (*RewindResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	if o.FilesOnly && o.ConversationOnly {
		return nil, fmt.Errorf("%w: a rewind of the files only and one of the conversation only exclude each other", ErrUsage)
	}
	target, err := r.Resolve(ctx, session, o.Target)
	if err != nil {
		return nil, err
	}
	if len(o.State) > 0 && (o.FilesOnly || len(o.Paths) > 0) {
		return nil, fmt.Errorf("%w: restoring state documents by name restores state documents only; it cannot go with the files only or with paths", ErrUsage)
	}
	for _, n := range o.State {
		if n == TaskDoc {
			return nil, fmt.Errorf("%w: the task stack travels with the session head: rewind the head (or undo) to restore it", ErrUsage)
		}
	}
	scope := rewindScope{Files: !o.ConversationOnly && len(o.State) == 0, State: !o.FilesOnly && len(o.Paths) == 0, Paths: o.Paths,
		StateOut: o.StateOut, Docs: o.State, All: o.All}
	if o.StateOut != "" {
		if scope.StateOut, err = filepath.Abs(o.StateOut); err != nil {
			return nil, err
		}
	}
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	m := &move{Kind: string(OpRewind), Session: session, Target: target, NewHead: target, Scope: scope}
	l := writer
	if o.DryRun {
		l = dry
	}
	t, err := r.begin(ctx, l)
	if err != nil {
		return nil, err
	}
	defer t.end()
	return r.run(ctx, t, m, o.DryRun)
}

// safetySpec is how a move's safety capture is taken: under the target's
// ignore rules as well as today's (unless the target is made from the
// present), so that what either ignores is neither pulled into the store
// nor touched; with the documents at the target's sources when the state
// moves too.
//
// A move that kept what other actors changed ended on a checkpoint of its
// own; its redo reads the rules of the target it was asked for instead
// (scope.RulesFrom), those the move itself read, so that it protects
// exactly what the move did: more (M27) and no more (M30: a kept ignore
// file its end holds, merged, was not in force when the move ran).
func (r *Repo) safetySpec(head, tck *objects.Checkpoint, scope rewindScope, foreign bool) captureSpec {
	spec := captureSpec{parent: head, exclude: tck.StateSources, foreign: foreign}
	if !scope.FromPresent {
		spec.rules = []worktree.IgnoreTree{{Tree: tck.Tree, Excludes: scope.TargetExcludes, Skipped: tck.Skipped}}
		if scope.RulesFrom != nil {
			if rck, err := r.objects.ReadCheckpoint(*scope.RulesFrom); err == nil {
				spec.rules = []worktree.IgnoreTree{{Tree: rck.Tree, Excludes: scope.TargetExcludes, Skipped: rck.Skipped}}
			}
		}
	}
	if scope.State && scope.StateOut == "" && !scope.Foreign {
		spec.sources = tck.StateSources
	}
	return spec
}
