package faults

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/index"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// This file holds the harness's view of a project and its store through the
// seam: it builds the fixture's checkpoints from the layers and drives gc's
// sweep and ref updates (the engine's own Checkpoint and Rewind are in
// engine_root_test.go).

const (
	session = "s"
	headRef = "sessions/" + session + "/head"
)

// live is one process's view of a project and its store: the stores are
// opened once, through the seam, and keep their in-memory state across
// calls, as a long-running process (an MCP server, a library user) would.
type live struct {
	root, store string
	fs          fsys.FS  // nil: the real file system
	sys         fsys.Sys // nil: the real kernel
	st          *objects.Store
	rs          *refs.Store
	skipped     []worktree.Skipped // what the captures of this process skipped
}

// capture is the engine's capture of the working tree, single-threaded so
// that the order of operations, and so the fault points, are deterministic.
func (l *live) capture(ctx context.Context, w *objects.Writer, cache *index.Cache) (*worktree.Snapshot, error) {
	snap, err := worktree.Capture(ctx, w, worktree.Options{Root: l.root, StoreDir: l.store, Cache: cache, Workers: 1, Sys: l.sys})
	if err == nil {
		l.skipped = append(l.skipped, snap.Skipped...)
	}
	return snap, err
}

func openLive(root string, f *fsys.Faulty) (*live, error) {
	l := &live{root: root, store: filepath.Join(root, ".snap")}
	if f != nil {
		l.fs, l.sys = f, f
	}
	var err error
	if l.st, err = objects.OpenFS(l.store, l.fs); err != nil {
		return nil, err
	}
	if l.rs, err = refs.OpenFS(l.store, l.fs); err != nil {
		l.st.Close()
		return nil, err
	}
	return l, nil
}

func (l *live) close() { l.st.Close() }

func (l *live) cachePath() string { return filepath.Join(l.store, "cache", "stat") }

func (l *live) head() (objects.ID, error) {
	id, err := l.rs.Get(headRef)
	if errors.Is(err, refs.ErrNotFound) {
		return objects.ID{}, nil
	}
	return id, err
}

// putCheckpoint captures the working tree into w and puts a checkpoint of
// it (with a one-message conversation document) on parent.
func (l *live) putCheckpoint(ctx context.Context, w *objects.Writer, cache *index.Cache, parent objects.ID, kind string) (objects.ID, *worktree.Snapshot, error) {
	snap, err := l.capture(ctx, w, cache)
	if err != nil {
		return objects.ID{}, nil, err
	}
	return l.putCheckpointOf(w, snap, parent, kind)
}

func (l *live) putCheckpointOf(w *objects.Writer, snap *worktree.Snapshot, parent objects.ID, kind string) (objects.ID, *worktree.Snapshot, error) {
	conv := []byte(`[{"role":"user","content":"` + kind + `"}]`)
	doc, err := w.PutBytes(conv)
	if err != nil {
		return objects.ID{}, nil, err
	}
	state := objects.Tree{Entries: []objects.TreeEntry{{Name: "conversation", Mode: objects.ModeFile, ID: doc, Size: int64(len(conv))}}}
	sid, err := w.Put(objects.TypeTree, state.Encode())
	if err != nil {
		return objects.ID{}, nil, err
	}
	ck := &objects.Checkpoint{Tree: snap.Tree, State: sid, Session: session, Kind: kind,
		Time: time.Now().UnixNano(), Stats: objects.Stats{Files: snap.Files, Bytes: snap.Bytes, Messages: 1}}
	if !parent.IsZero() {
		ck.Parents = []objects.ID{parent}
	}
	id, err := w.Put(objects.TypeCheckpoint, ck.Encode())
	return id, snap, err
}

// checkpoint is snap.Repo.Checkpoint: capture, one pack committed, the
// head moved by compare-and-swap, the op appended, the stat cache saved
// (best effort: its failure is tolerated).
func (l *live) checkpoint(ctx context.Context) (objects.ID, error) {
	w := l.st.NewWriter()
	defer w.Abort()
	parent, err := l.head()
	if err != nil {
		return objects.ID{}, err
	}
	cache, _ := index.LoadFS(l.fs, l.cachePath())
	id, _, err := l.putCheckpoint(ctx, w, cache, parent, "manual")
	if err != nil {
		return objects.ID{}, err
	}
	if _, err := w.Commit(); err != nil {
		return objects.ID{}, err
	}
	if err := l.rs.Update(headRef, parent, id); err != nil {
		return objects.ID{}, err
	}
	op := &refs.Op{Kind: "checkpoint", Session: session, Checkpoint: id,
		Refs: []refs.RefChange{{Name: headRef, Old: parent, New: id}}}
	if err := l.rs.Append(op); err != nil {
		return objects.ID{}, err
	}
	cache.SaveFS(l.fs, l.cachePath()) // an unsaved cache costs re-hashing only
	return id, nil
}

func (l *live) collect(ctx context.Context) error {
	_, err := gc.Collect(ctx, l.st, l.rs, gc.Options{Grace: 0, Policy: &gc.Policy{KeepLast: 1}})
	return err
}

// refMove is one ref change of a labelling operation.
type refMove struct {
	name     string
	old, new objects.ID // zero new: delete
}

// moveRefs makes the ref changes and records them as one op, the way the
// engine finishes a move (finishMove): each step is skipped when already
// done, so repeating the whole call after a failure completes it. A ref
// found at its new value is re-asserted with Update(new, new), which makes a
// change that failed with refs.ErrNotDurable durable.
func (l *live) moveRefs(moves []refMove, marker string) error {
	op := &refs.Op{Kind: "label", Detail: []byte(`"` + marker + `"`)}
	for _, m := range moves {
		cur, err := l.rs.Get(m.name)
		if err != nil && !errors.Is(err, refs.ErrNotFound) {
			return err
		}
		err = nil
		switch {
		case m.new.IsZero() && cur.IsZero(): // deleted already
		case m.new.IsZero():
			err = l.rs.Delete(m.name, m.old)
		case cur == m.new:
			err = l.rs.Update(m.name, m.new, m.new)
		default:
			err = l.rs.Update(m.name, m.old, m.new)
		}
		if err != nil {
			return err
		}
		op.Refs = append(op.Refs, refs.RefChange{Name: m.name, Old: m.old, New: m.new})
	}
	ops, err := l.rs.Ops()
	if err != nil {
		return err
	}
	for _, o := range ops {
		if string(o.Detail) == string(op.Detail) {
			return nil // recorded by the failed attempt
		}
	}
	return l.rs.Append(op)
}
