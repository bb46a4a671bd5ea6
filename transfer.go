package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// This file is the engine's side of moving checkpoints between stores (the
// git bridge, gitbridge/): reading a checkpoint as stored, and importing
// checkpoints built elsewhere so that they get the same ids. It knows
// nothing of git.

// ReadNode returns checkpoint id as stored and its canonical encoding.
func (r *Repo) ReadNode(ctx context.Context, id ID) (*Node, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return nil, nil, err
	}
	return ck, ck.Encode(), nil
}

// ReadTree returns the entries of a stored tree (a checkpoint's Tree, a
// directory in it, or a checkpoint's State), sorted by name.
func (r *Repo) ReadTree(ctx context.Context, id ID) ([]TreeEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := r.objects.ReadTree(id)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

// WriteContent streams stored content (a file, a symlink's target, a state
// document) to w, verifying every object on the way, and returns its length.
func (r *Repo) WriteContent(ctx context.Context, id ID, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return r.objects.WriteBlob(id, w)
}

// An Importer writes checkpoints built elsewhere into the store: content,
// trees and checkpoint nodes, then (Commit) the session heads that name
// them. Ids are functions of content alone (objects.PutBytesAppend keeps
// it so), so a checkpoint rebuilt from the same files, documents and node
// has the id it had where it was taken; every Put returns the id, and the
// caller compares. An Importer holds the store's writer lock (gc waits)
// until Commit or Abort.
type Importer struct {
	r     *Repo
	t     *tx             // nil once committed or aborted
	w     *objects.Writer // t's
	nodes map[ID]*Node    // put in this batch
}

// NewImporter starts an import. Call Commit or Abort.
func (r *Repo) NewImporter(ctx context.Context) (*Importer, error) {
	t, err := r.begin(ctx, writer)
	if err != nil {
		return nil, err
	}
	return &Importer{r: r, t: t, w: t.objects(), nodes: map[ID]*Node{}}, nil
}

// ReadTree reads a tree stored or put in this import.
func (im *Importer) ReadTree(ctx context.Context, id ID) ([]TreeEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := im.w.ReadTree(id)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

// Has reports whether object id is stored or put in this import.
func (im *Importer) Has(id ID) bool { return im.w.Has(id) }

// PutContent stores content read from rd (a file, a symlink's target or a
// state document) and returns its id and length.
func (im *Importer) PutContent(rd io.Reader) (ID, int64, error) { return im.w.PutBlob(rd) }

// PutTree stores a directory of the given entries (any order) and returns
// its id. Names, modes and order are checked as a stored tree is (a name
// such as "..", ".git" or one with a slash is refused), and every entry's
// object must be stored or put already; a directory's Size must be the
// total of its files, as Tree.Encode records it.
func (im *Importer) PutTree(entries []TreeEntry) (ID, error) {
	t := objects.Tree{Entries: slices.Clone(entries)}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Name < t.Entries[j].Name })
	data := t.Encode()
	if _, err := objects.DecodeTree(data); err != nil {
		return ID{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	for _, e := range t.Entries {
		if !im.w.Has(e.ID) {
			return ID{}, fmt.Errorf("%w: tree entry %q names %s, which is not stored", ErrObjectMissing, e.Name, e.ID.Short())
		}
	}
	return im.w.Put(objects.TypeTree, data)
}

// PutNode stores a checkpoint given its canonical encoding (as ReadNode
// returns it) and returns its id. Its tree and state tree must be stored or
// put already; parents need not be (an import of one branch), see Commit.
func (im *Importer) PutNode(raw []byte) (ID, error) {
	ck, err := objects.DecodeCheckpoint(raw)
	if err != nil {
		return ID{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	for _, t := range []ID{ck.Tree, ck.State} {
		if !im.w.Has(t) {
			return ID{}, fmt.Errorf("%w: checkpoint names tree %s, which is not stored", ErrObjectMissing, t.Short())
		}
	}
	id, err := im.w.Put(objects.TypeCheckpoint, raw)
	if err != nil {
		return ID{}, err
	}
	im.nodes[id] = ck
	return id, nil
}

// SessionImport moves one session's head to a checkpoint of the import.
type SessionImport struct {
	Session string
	Head    ID
	// Checkpoints are the session's checkpoints this import brings,
	// abandoned branches included: the session's log lists them (by their
	// own times). Those already recorded in the session are left out.
	Checkpoints []ID
}

// ImportResult says what Commit did for one session.
type ImportResult struct {
	Session string `json:"session"`
	Old     *ID    `json:"old"` // the head before; null for a new session
	Head    ID     `json:"head"`
	// Moved: the head changed (false when it already was Head).
	Moved bool `json:"moved"`
	// Added: checkpoints the session's log did not list before.
	Added int `json:"added"`
}

// Commit makes the import durable (one pack, fsync'd) and moves each
// session's head: a new session gets Head; a session whose head is Head or
// an ancestor of it moves forward; a head that is neither (the session
// moved here since) is refused with ErrConflict and not moved — the objects
// stay, unreferenced, for gc. Each session that changes gets one "import"
// op (undo moves the head back). Checkpoints whose parents are neither in
// the store nor in the import (retention removed them where they were
// taken) are recorded as expired here too. Commit releases the writer lock
// whatever it returns.
func (im *Importer) Commit(ctx context.Context, sessions []SessionImport) ([]ImportResult, error) {
	defer im.Abort()
	var missing []ID
	for _, ck := range im.nodes {
		for _, p := range ck.Parents {
			if !im.w.Has(p) {
				missing = append(missing, p)
			}
		}
	}
	if err := im.t.write(ctx, nil, nil); err != nil {
		return nil, err
	}
	// What they say of the machine they were taken on (their documents'
	// paths) is not this machine's: readers and rewinds know it.
	if err := im.r.refs.AddForeign(slices.Collect(maps.Keys(im.nodes))); err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		if err := im.r.refs.AddExpired(missing); err != nil {
			return nil, err
		}
	}
	var out []ImportResult
	h := im.r.history()
	for _, s := range sessions {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		res, err := im.r.importSession(im.t, h, s)
		if err != nil {
			return out, err
		}
		out = append(out, *res)
	}
	return out, nil
}

// Abort drops what was put and releases the writer lock (after Commit, it
// does nothing).
func (im *Importer) Abort() {
	if im.t != nil {
		im.t.end()
		im.t = nil
	}
}

// importDetail is the detail of an OpImport record: the times of the
// checkpoints it brought into the session (Op.Checkpoints), in order, which
// order the session's log.
type importDetail struct {
	Times []int64 `json:"times"`
}

func (r *Repo) importSession(t *tx, h *history, s SessionImport) (*ImportResult, error) {
	session, err := sessionName(s.Session)
	if err != nil {
		return nil, err
	}
	if err := r.checkNotArchived(session); err != nil {
		return nil, err
	}
	old, err := r.refs.Get(refs.SessionHead(session))
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return nil, err
	}
	res := &ImportResult{Session: session, Head: s.Head}
	if !old.IsZero() {
		o := old
		res.Old = &o
		if old != s.Head {
			ok, err := r.isAncestor(old, s.Head)
			if err != nil {
				return nil, err
			}
			if !ok {
				// Ahead of the import (checkpoints not shared yet): the
				// head stays, nothing diverged.
				if ahead, err := r.isAncestor(s.Head, old); err == nil && ahead {
					s.Head = old
				}
			}
			res.Head = s.Head
			if !ok && s.Head != old {
				return nil, Advise(fmt.Errorf("%w: session %s moved here: its head %s is not in the imported history (like a non-fast-forward push): rewind this session to a checkpoint both have, then pull (an undo returns), or pull into another store",
					refs.ErrConflict, session, old.Short()), Advice{Do: DoRewind})
			}
		}
	}
	known, err := r.sessionCheckpoints(h, session)
	if err != nil {
		return nil, err
	}
	seen := map[ID]bool{}
	var added []ID
	var d importDetail
	for _, id := range s.Checkpoints {
		if seen[id] || known.Index(id) >= 0 {
			continue
		}
		seen[id] = true
		ck, err := r.objects.ReadCheckpoint(id)
		if err != nil {
			return nil, err
		}
		added = append(added, id)
		d.Times = append(d.Times, ck.Time)
	}
	res.Added = len(added)
	if old == s.Head && res.Added == 0 {
		return res, nil
	}
	res.Moved = old != s.Head
	detail, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	op := &refs.Op{Kind: string(OpImport), Session: session, Checkpoint: s.Head, Checkpoints: added, Detail: detail}
	if res.Moved {
		op.Refs = []refs.RefChange{{Name: refs.SessionHead(session), Old: old, New: s.Head}}
	}
	if err := t.commit(context.Background(), op); err != nil {
		return nil, err
	}
	return res, nil
}

// isAncestor reports whether a is b or one of b's ancestors (any parent).
func (r *Repo) isAncestor(a, b ID) (bool, error) {
	seen := map[ID]bool{}
	stack := []ID{b}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == a {
			return true, nil
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		ck, err := r.objects.ReadCheckpoint(id)
		if errors.Is(err, objects.ErrNotFound) {
			continue // expired
		}
		if err != nil {
			return false, err
		}
		stack = append(stack, ck.Parents...)
	}
	return false, nil
}

// isForeign reports whether checkpoint id was taken in another store (an
// Importer brought it): the paths it records are that machine's.
func (r *Repo) isForeign(id ID) bool {
	if id.IsZero() {
		return false
	}
	set, _ := r.refs.Foreign()
	return set[id]
}
