package gc

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Roots returns the ids gc must keep and fsck must check: every ref's value
// every checkpoint id the op log names (Op.Checkpoint, Op.Target,
// Op.Safety, Op.Checkpoints, and the Old and New of every RefChange), and those of the
// journal of a move in progress, without duplicates, refs first. When a ref file or an op-log record is damaged the ids that
// could be read are returned with an error matching refs.ErrCorrupt: the
// damaged one may have named anything, so the set is incomplete.
//
// Checkpoints that retention expired (refs.Store.Expired) are not roots even
// when the op log names them.
func Roots(rs *refs.Store) ([]objects.ID, error) {
	var ids []objects.ID
	expired, eerr := rs.Expired()
	seen := map[objects.ID]bool{}
	add := func(id objects.ID) {
		if !id.IsZero() && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	list, lerr := rs.List("")
	for _, r := range list {
		add(r.ID)
	}
	jids, jerr := journalIDs(rs)
	for _, id := range jids {
		add(id)
	}
	ops, oerr := rs.LogOps()
	for _, op := range ops {
		for _, id := range opIDs(op) {
			if !expired[id] {
				add(id)
			}
		}
	}
	return ids, errors.Join(lerr, oerr, eerr, jerr)
}

// journalIDs returns the checkpoints named by an interrupted rewind's
// journal (refs.JournalName): until the next command completes it, they
// are roots like the op log's.
func journalIDs(rs *refs.Store) ([]objects.ID, error) {
	_, j, err := rs.ReadJournal()
	if err != nil || j == nil {
		return nil, err
	}
	return j.IDs(), nil
}

// opIDs lists the checkpoint ids an op names, zero ones included.
func opIDs(op refs.Op) []objects.ID {
	ids := []objects.ID{op.Checkpoint, op.Target, op.Safety}
	for _, rc := range op.Refs {
		ids = append(ids, rc.Old, rc.New)
	}
	return append(ids, op.Checkpoints...)
}

// Reachable returns every object reachable from roots (not following
// parents that retention expired) that the store holds
// (roots are usually checkpoints; a root of another type is walked by its
// type), with the problems met on the way: the connectivity checks of Fsck,
// each missing or unreadable object reported once. Objects named but missing
// are not in the set. The error is non-nil only when ctx is done.
func Reachable(ctx context.Context, st *objects.Store, roots []objects.ID, expired map[objects.ID]bool) (map[objects.ID]struct{}, []Problem, error) {
	w := newWalker(ctx, st, expired)
	for _, id := range roots {
		w.root(id, "root "+id.Short())
	}
	if err := w.run(); err != nil {
		return nil, nil, err
	}
	return w.reach, w.probs, nil
}

// walker visits objects once each, records what it reaches and reports
// what is wrong.
type walker struct {
	ctx      context.Context
	st       *objects.Store
	expired  map[objects.ID]bool // checkpoints retention removed: parents not followed
	progress func(phase string, done, total int)

	reach map[objects.ID]struct{}        // reached and present
	delta map[objects.ID]bool            // delta records whose chain was checked: intact?
	trees map[objects.ID]treeResult      // visited trees
	lists map[objects.ID]listResult      // visited chunk lists
	ckpts map[objects.ID]bool            // visited (or queued) checkpoints
	gone  map[objects.ID]bool            // missing or unreadable: reported once
	typed map[objects.ID]map[string]bool // wrong-type reports, by expectation
	queue []pending                      // checkpoints to visit

	probs       []Problem
	checkpoints int       // checkpoints read and decoded
	corrupt     []badCopy // unreadable copies reported, for fsck --full
	steps       int

	// incomplete: some object that may name others could not be read, or
	// an object is missing while a pack could not be indexed, so objects
	// outside the reached set may still be needed.
	incomplete  bool
	packsBroken bool
	ioErr       error // the first read failure that was not damage
}

type badCopy struct {
	id   objects.ID
	pack string
}

type pending struct {
	id  objects.ID
	ref string
}

type treeResult struct {
	size int64
	ok   bool
}

type listResult struct {
	level uint8
	size  int64
	ok    bool
}

func newWalker(ctx context.Context, st *objects.Store, expired map[objects.ID]bool) *walker {
	return &walker{
		ctx: ctx, st: st, expired: expired,
		reach: map[objects.ID]struct{}{},
		delta: map[objects.ID]bool{},
		trees: map[objects.ID]treeResult{},
		lists: map[objects.ID]listResult{},
		ckpts: map[objects.ID]bool{},
		gone:  map[objects.ID]bool{},
		typed: map[objects.ID]map[string]bool{},

		packsBroken: len(st.LoadErrors()) > 0,
	}
}

func (w *walker) errorf(obj objects.ID, path, format string, args ...any) {
	w.add(SeverityError, obj, path, fmt.Sprintf(format, args...))
}

func (w *walker) add(sev Severity, obj objects.ID, path, msg string) {
	p := Problem{Severity: sev, Path: path, Message: msg}
	if !obj.IsZero() {
		p.Object = obj.String()
	}
	w.probs = append(w.probs, p)
}

// tick checks ctx every so many objects.
func (w *walker) tick() error {
	w.steps++
	if w.steps%256 == 0 {
		if w.progress != nil {
			w.progress("marking", len(w.reach), 0)
		}
		return w.ctx.Err()
	}
	return nil
}

// root queues a root, walking it by the type it has.
func (w *walker) root(id objects.ID, ref string) {
	t, ok := w.st.TypeOf(id)
	switch {
	case !ok || t == objects.TypeCheckpoint:
		w.checkpoint(id, ref)
	case t == objects.TypeTree:
		w.tree(id, ref, "")
	default:
		w.content(id, ref)
	}
}

// checkpoint queues a checkpoint (visited by run, so long parent chains do
// not recurse).
func (w *walker) checkpoint(id objects.ID, ref string) {
	if w.ckpts[id] {
		return
	}
	w.ckpts[id] = true
	w.queue = append(w.queue, pending{id, ref})
}

func (w *walker) run() error {
	for len(w.queue) > 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		n := len(w.queue) - 1
		p := w.queue[n]
		w.queue = w.queue[:n]
		w.visitCheckpoint(p.id, p.ref)
	}
	return w.ctx.Err()
}

// expect checks that id is stored with one of the wanted types, reporting a
// missing object (once per object) or a wrong type (once per object and
// expectation). ref says what names it, for the message.
func (w *walker) expect(id objects.ID, ref string, want ...objects.Type) (objects.ObjectInfo, bool) {
	info, ok := w.st.Info(id)
	if !ok {
		if !w.gone[id] {
			w.gone[id] = true
			what := want[0].String()
			if len(want) > 1 {
				what = "content (blob or chunk list)"
			}
			w.errorf(id, "", "missing %s, named by %s", what, ref)
		}
		if w.packsBroken {
			w.incomplete = true
		}
		return info, false
	}
	// Stored, so reachable (and kept by gc) whatever its type.
	w.reach[id] = struct{}{}
	if info.Delta && !w.deltaChain(id, info, ref) {
		return info, false
	}
	for _, t := range want {
		if info.Type == t {
			return info, true
		}
	}
	key := fmt.Sprint(want)
	if w.typed[id] == nil {
		w.typed[id] = map[string]bool{}
	}
	if !w.typed[id][key] {
		w.typed[id][key] = true
		names := want[0].String()
		if len(want) > 1 {
			names = "blob or chunk list"
		}
		w.errorf(id, "", "%s names a %s, expected a %s", ref, info.Type, names)
	}
	if info.Type != objects.TypeBlob {
		// Still walk it, so gc keeps what it names.
		w.root(id, ref)
	}
	return info, false
}

// unreadable reports an object that exists but cannot be read or decoded.
func (w *walker) unreadable(id objects.ID, info objects.ObjectInfo, ref string, err error) {
	w.incomplete = true
	if w.ioErr == nil && !errors.Is(err, objects.ErrCorrupt) {
		w.ioErr = err // an I/O error, not damage: kept for the caller
	}
	if w.gone[id] {
		return
	}
	w.gone[id] = true
	w.corrupt = append(w.corrupt, badCopy{id, info.Pack})
	w.errorf(id, "packs/"+info.Pack, "%s named by %s cannot be read: %v", info.Type, ref, err)
}

func (w *walker) visitCheckpoint(id objects.ID, ref string) {
	if w.tick() != nil {
		return
	}
	info, ok := w.expect(id, ref, objects.TypeCheckpoint)
	if !ok {
		return
	}
	ck, err := w.st.ReadCheckpoint(id)
	if err != nil {
		w.unreadable(id, info, ref, err)
		return
	}
	w.checkpoints++
	me := "checkpoint " + id.Short()
	for i, p := range ck.Parents {
		if p.IsZero() {
			w.errorf(id, "", "%s: parent %d is the zero id", me, i)
			continue
		}
		if w.expired[p] {
			continue // removed by retention: the history ends here on purpose
		}
		w.checkpoint(p, me+" (parent)")
	}
	w.tree(ck.Tree, me+" (tree)", "")
	w.tree(ck.State, me+" (state)", "")
}

// tree checks a tree and everything beneath it, once per tree, and returns
// the sum of its entries' recorded sizes (what the entry naming it as a
// directory must record).
func (w *walker) tree(id objects.ID, ref, dir string) (int64, bool) {
	if r, ok := w.trees[id]; ok {
		return r.size, r.ok
	}
	w.trees[id] = treeResult{} // objects cannot form cycles; this guards hand-made ones
	if w.tick() != nil {
		return 0, false
	}
	info, ok := w.expect(id, ref, objects.TypeTree)
	if !ok {
		return 0, false
	}
	t, err := w.st.ReadTree(id)
	if err != nil {
		w.unreadable(id, info, ref, err)
		return 0, false
	}
	var total int64
	for _, e := range t.Entries {
		total += e.Size
		p := path.Join(dir, e.Name)
		eref := fmt.Sprintf("entry %q of tree %s", p, id.Short())
		if e.Mode == objects.ModeDir {
			sub, ok := w.tree(e.ID, eref, p)
			if ok && sub != e.Size {
				w.add(SeverityWarning, id, "", fmt.Sprintf("directory %q records %d bytes, its entries total %d", p, e.Size, sub))
			}
			continue
		}
		size, ok := w.content(e.ID, eref)
		if ok && size != e.Size {
			w.errorf(id, "", "%s %q records %d bytes, its content %s has %d", e.Mode, p, e.Size, e.ID.Short(), size)
		}
	}
	w.trees[id] = treeResult{total, true}
	return total, true
}

// content checks a blob or chunk list and returns its content length.
func (w *walker) content(id objects.ID, ref string) (int64, bool) {
	info, ok := w.expect(id, ref, objects.TypeBlob, objects.TypeChunkList)
	if !ok {
		return 0, false
	}
	if info.Type == objects.TypeBlob {
		return info.Size, true
	}
	_, size, ok := w.chunkList(id, ref)
	return size, ok
}

// chunkList checks a chunk list and everything beneath it, once per list,
// and returns its level and total size.
func (w *walker) chunkList(id objects.ID, ref string) (uint8, int64, bool) {
	if r, ok := w.lists[id]; ok {
		return r.level, r.size, r.ok
	}
	w.lists[id] = listResult{}
	if w.tick() != nil {
		return 0, 0, false
	}
	info, ok := w.expect(id, ref, objects.TypeChunkList)
	if !ok {
		return 0, 0, false
	}
	l, err := w.st.ReadChunkList(id)
	if err != nil {
		w.unreadable(id, info, ref, err)
		return 0, 0, false
	}
	me := "chunk list " + id.Short()
	for i, e := range l.Entries {
		eref := fmt.Sprintf("entry %d of %s", i, me)
		if l.Level == 0 {
			ci, ok := w.expect(e.ID, eref, objects.TypeBlob)
			if ok && uint64(ci.Size) != e.Size {
				w.errorf(id, "", "%s: entry %d records %d bytes, blob %s has %d", me, i, e.Size, e.ID.Short(), ci.Size)
			}
			continue
		}
		level, size, ok := w.chunkList(e.ID, eref)
		if !ok {
			continue
		}
		if level != l.Level-1 {
			w.errorf(id, "", "%s (level %d): entry %d is chunk list %s of level %d, expected %d", me, l.Level, i, e.ID.Short(), level, l.Level-1)
		}
		if uint64(size) != e.Size {
			w.errorf(id, "", "%s: entry %d records %d bytes, chunk list %s totals %d", me, i, e.Size, e.ID.Short(), size)
		}
	}
	r := listResult{l.Level, int64(l.Size()), true}
	w.lists[id] = r
	return r.level, r.size, r.ok
}

// deltaChain follows the delta bases of id, a stored delta record: each
// must be stored, with id's type, and is reachable (reading id needs it, so
// gc keeps it). It reports the first broken link (a missing base is damage,
// like a missing object) and returns whether the chain is intact. Each
// record's first bytes are read once per walk.
func (w *walker) deltaChain(id objects.ID, info objects.ObjectInfo, ref string) bool {
	var chain []objects.ID
	inChain := map[objects.ID]bool{}
	ok := true
	cur, curInfo := id, info
	for curInfo.Delta {
		if known, seen := w.delta[cur]; seen {
			ok = known
			break
		}
		if inChain[cur] || len(chain) == objects.MaxDeltaDepth {
			w.errorf(cur, "packs/"+curInfo.Pack, "%s %s named by %s: delta chain longer than %d records, or a cycle", info.Type, id.Short(), ref, objects.MaxDeltaDepth)
			ok = false
			break
		}
		chain = append(chain, cur)
		inChain[cur] = true
		base, _, err := w.st.DeltaBase(cur)
		if err != nil {
			w.ioFailure(err)
			w.errorf(cur, "packs/"+curInfo.Pack, "%s named by %s: delta record cannot be read: %v", info.Type, ref, err)
			ok = false
			break
		}
		bi, found := w.st.Info(base)
		if !found || bi.Type != info.Type {
			what := "which is missing"
			if found {
				what = "which is a " + bi.Type.String()
			}
			via := ""
			if cur != id {
				via = fmt.Sprintf(" (delta chain of %s %s)", info.Type, id.Short())
			}
			w.errorf(cur, "packs/"+curInfo.Pack, "%s named by %s%s is stored as a delta on %s, %s", info.Type, ref, via, base, what)
			if w.packsBroken {
				w.incomplete = true // the base may be in the pack that cannot be indexed
			}
			ok = false
			break
		}
		w.reach[base] = struct{}{}
		cur, curInfo = base, bi
	}
	for _, c := range chain {
		w.delta[c] = ok
	}
	if !ok {
		if !w.gone[id] {
			w.gone[id] = true
			w.corrupt = append(w.corrupt, badCopy{id, info.Pack})
		}
		if cur != id {
			w.corrupt = append(w.corrupt, badCopy{cur, curInfo.Pack})
		}
		if info.Type != objects.TypeBlob {
			w.incomplete = true // it names objects that cannot be known
		}
	}
	return ok
}

// ioFailure notes a read failure: one that is not damage makes the walk
// incomplete, and the first is kept for the caller.
func (w *walker) ioFailure(err error) {
	if !errors.Is(err, objects.ErrCorrupt) {
		w.incomplete = true
		if w.ioErr == nil {
			w.ioErr = err
		}
	}
}
