package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/merge"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Actors: who changed a path since a checkpoint, read from what the op log
// recorded, and the end of a move that changes only what its own session's
// actors changed (Kept).
//
// Every session captures the one working tree, so the order in which
// changes were first recorded, by any session, is the order in which they
// were made. A change's actor is the one its first recording names: a
// checkpoint of another session (whatever that checkpoint's actor), a
// checkpoint of this session marked ActorUser, or a move (rewind, undo,
// commit of staged edits, ...) of another session. What a safety capture
// found, and what no checkpoint recorded yet, nobody can vouch for: it
// counts as the moving session's own (unknown), as it did before actors.

// Kept is a path an actor-scoped move (a rewind, undo, redo or task revert
// without All) left as another actor made it since the move's target:
// unchanged, or Merged (only the session's own changes taken out, by
// lines), or unchanged because the two cannot be told apart (Conflict).
type Kept struct {
	Path string `json:"path"`
	// Session recorded the other actor's change first, in Checkpoint at
	// Time; Actor is who made it, as that record says: "user", "agent" (of
	// that other session) or "unknown".
	Session    string    `json:"session"`
	Actor      string    `json:"actor"`
	Checkpoint ID        `json:"checkpoint"`
	Seq        int       `json:"seq"` // the checkpoint's #N in its session (0: none)
	Time       time.Time `json:"time"`
	Deleted    bool      `json:"deleted,omitempty"` // the other actor's change removed it: it stays absent
	Merged     bool      `json:"merged,omitempty"`
	Conflict   bool      `json:"conflict,omitempty"`
}

// ActorUnknown is what Kept.Actor (and blame) say when no record names who
// made a change.
const ActorUnknown = "unknown"

// pathChange is one recorded change of a path: the entry it left (a zero
// Mode: the path absent), and who made it, as its first record says.
type pathChange struct {
	entry   objects.TreeEntry
	session string // "" when no session vouches for it (what a safety capture found)
	actor   string // the checkpoint's Actor ("" unknown)
	ck      objects.ID
	time    time.Time
	op      int // its record's index in the op log
}

// own reports whether a change counts as session's own: made by its agent
// or by nobody known, not by another session or by the user.
func (c pathChange) own(session string) bool {
	return c.session == "" || c.session == session && c.actor != ActorUser
}

// pathChanges returns the changes of each of paths that the op log
// recorded in its ops first..end-1 (end < 0: to its end; those of
// checkpoint skip aside), in the order they were recorded, base being the
// tree before them (records). Only the directories that lead to one of
// paths are read, each tree once while consecutive records share it: the
// cost follows the number of records and the depth of paths, not the size
// of the tree.
func (r *Repo) pathChanges(h *history, first, end int, skip, base objects.ID, paths map[string]bool) (map[string][]pathChange, error) {
	dirs := map[string]bool{} // every directory above one of paths
	for p := range paths {
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	trees := &objects.TreeMemo{R: r.objects}
	out := map[string][]pathChange{}
	err := r.records(h, first, end, base, func(from, to objects.ID, c pathChange, under []string, _ *objects.Checkpoint) error {
		if c.ck == skip {
			return nil
		}
		return objects.DiffTreesWithin(trees, from, to, func(d string) bool { return dirs[d] }, func(ch objects.Change) error {
			if paths[ch.Path] && pathMatch(ch.Path, under) {
				c.entry = ch.New
				out[ch.Path] = append(out[ch.Path], c)
			}
			return nil
		})
	})
	return out, err
}

// records calls fn for each record of the working tree in the op log's ops
// first..end-1 (end < 0: to its end), in order, with the tree before it
// and the tree it recorded (base: the tree before the first): each record
// is read against the last tree any session recorded (the working tree is
// one: a session's own previous checkpoint may be far behind, adversarial
// A1). A checkpoint is one record (ck: it); a move is two: its safety
// checkpoint, what it found (nobody's known doing: session ""), then its
// target within its paths (under), written by its session. fn's errors
// that say an object is missing or damaged are ignored: the change it
// held counts as unknown, as if never recorded.
func (r *Repo) records(h *history, first, end int, base objects.ID, fn func(from, to objects.ID, c pathChange, under []string, ck *objects.Checkpoint) error) error {
	if err := h.load(); err != nil {
		return err
	}
	if end < 0 || end > len(h.ops) {
		end = len(h.ops)
	}
	end = max(end, first)
	last := base // the tree the working tree last was, as recorded
	gone := func(err error) bool { return errors.Is(err, objects.ErrNotFound) || errors.Is(err, objects.ErrCorrupt) }
	// read reads a checkpoint the log names: one retention expired is
	// skipped (nil, nil); gc keeps every other, so one that cannot be read
	// is damage, never a reason to credit its change to another (ui's
	// adversarial pass).
	read := func(id objects.ID) (*objects.Checkpoint, error) {
		ck, err := r.objects.ReadCheckpoint(id)
		switch {
		case err == nil:
			return ck, nil
		case errors.Is(err, objects.ErrNotFound) && h.isExpired(id):
			return nil, nil
		case gone(err):
			return nil, fmt.Errorf("%w: checkpoint %s, which the op log names, cannot be read: %v", ErrCorrupt, id.Short(), err)
		}
		return nil, err
	}
	treeOf := func(id objects.ID) (objects.ID, bool, error) {
		ck, err := read(id)
		if ck == nil {
			return objects.ID{}, false, err
		}
		return ck.Tree, true, nil
	}
	for i, op := range h.ops[first:end] {
		i += first
		if len(op.Refs) == 0 || op.Refs[0].Name != refs.SessionHead(op.Session) {
			continue
		}
		switch OpKind(op.Kind) {
		case OpImport, OpMessage, OpLabel, OpSessionArchive, OpSessionRemove, OpGC:
			continue // the working tree did not change
		}
		if !op.Safety.IsZero() {
			safety, ok, err := treeOf(op.Safety)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := fn(last, safety, pathChange{ck: op.Safety, time: op.Time, op: i}, nil, nil); err != nil && !gone(err) {
				return err
			}
			last = safety
			var d moveDetail
			if op.Detail != nil && json.Unmarshal(op.Detail, &d) != nil || op.Detail != nil && !d.Files {
				continue
			}
			target, ok, err := treeOf(op.Target)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			c := pathChange{session: op.Session, ck: op.Target, time: op.Time, op: i}
			if err := fn(safety, target, c, d.Paths, nil); err != nil && !gone(err) {
				return err
			}
			if len(d.Paths) == 0 {
				last = target
			} // (else the next record's reading repeats the move's paths, which collapses)
			continue
		}
		if op.Checkpoint.IsZero() {
			continue
		}
		ck, err := read(op.Checkpoint)
		if err != nil {
			return err
		}
		if ck == nil {
			continue
		}
		c := pathChange{session: op.Session, actor: ck.Actor, ck: op.Checkpoint, time: op.Time, op: i}
		if ck.Kind == kindPreRewind {
			c.session = ""
		}
		if err := fn(last, ck.Tree, c, nil, ck); err != nil && !gone(err) {
			return err
		}
		last = ck.Tree
	}
	return nil
}

// scopeToActors returns the end of a move of session from the present
// (now) to tck, within paths, that changes only what the session's own
// actors changed since tck was recorded: tck's tree, with each path that
// another actor changed since as it is now, or with only the session's
// own changes taken out of it (a line merge). kept lists those paths;
// end is tck.Tree when there are none. idle reports that every path the
// move would change is kept as it is now: within paths, end is the present.
func (r *Repo) scopeToActors(w *objects.Writer, session string, now *captured, target objects.ID, tck *objects.Checkpoint, paths []string) (end objects.ID, kept []Kept, idle bool, err error) {
	// The paths the move would change: those it leaves alone anyway
	// (unreadable now or then, excluded) are not its to keep.
	leave := now.leftAlone(tck)
	type ends struct{ now, end objects.TreeEntry }
	cands := map[string]ends{}
	err = objects.DiffTrees(w, now.tree, tck.Tree, func(c objects.Change) error {
		if pathMatch(c.Path, paths) && !underAny(c.Path, leave) {
			cands[c.Path] = ends{c.Old, c.New}
		}
		return nil
	})
	if err != nil || len(cands) == 0 {
		return tck.Tree, nil, false, err
	}
	set := map[string]bool{}
	for p := range cands {
		set[p] = true
	}
	h := r.history()
	if err := h.load(); err != nil {
		return tck.Tree, nil, false, err
	}
	first := h.lastHeld(target, tck.When())
	all, err := r.pathChanges(h, first, -1, target, tck.Tree, set)
	if err != nil {
		return tck.Tree, nil, false, err
	}
	present := &Present{Tree: now.tree, r: r, w: w}
	edits := map[string]*objects.TreeEntry{}
	merged := false
	for _, p := range slices.Sorted(maps.Keys(all)) {
		e := cands[p]
		// The path's versions since tck: its content then, each change
		// that left a different content, and the present when no record
		// holds it yet (nobody's known doing).
		seq := []pathChange{{entry: e.end, session: session}}
		for _, c := range all[p] {
			if !sameEntry(c.entry, seq[len(seq)-1].entry) {
				seq = append(seq, c)
			}
		}
		if !sameEntry(seq[len(seq)-1].entry, e.now) {
			seq = append(seq, pathChange{entry: e.now})
		}
		var other *pathChange
		ownChange := false
		for i := 1; i < len(seq); i++ {
			if seq[i].own(session) {
				ownChange = true
			} else {
				other = &seq[i]
			}
		}
		if other == nil {
			continue // only the session's own changes since: they go
		}
		k := Kept{Path: p, Session: other.session, Actor: orUnknown(other.actor), Checkpoint: other.ck, Time: other.time, Deleted: e.now.Mode == 0}
		keep := e.now
		if ownChange {
			m, ok, err := unpick(present, p, seq, session)
			if err != nil {
				return tck.Tree, nil, false, err
			}
			switch {
			case !ok:
				k.Conflict = true
			case sameEntry(m, e.end) && seq[len(seq)-1].own(session):
				continue // the session's own last change undid what the others changed
			case sameEntry(m, e.end):
				// Another actor wrote the present, and taking the
				// session's changes out would give the target: the
				// lines cannot tell theirs from the session's (the
				// user wrote back what the agent had: M26). Kept.
				k.Conflict = true
			case !sameEntry(m, e.now):
				keep, k.Merged, merged = m, true, true
			}
		}
		kept = append(kept, k)
		if keep.Mode == 0 {
			edits[p] = nil
		} else {
			keep.Name = filepath.Base(p)
			edits[p] = &keep
		}
	}
	if len(kept) == 0 {
		return tck.Tree, nil, false, nil
	}
	// A path the move writes above or below a kept one (a file where a
	// kept directory is, or the reverse) is left as it is too.
	for _, q := range slices.Sorted(maps.Keys(cands)) { // (in order: the same answer every run)
		e := cands[q]
		if _, done := edits[q]; done {
			continue
		}
		for _, k := range kept {
			if strings.HasPrefix(q, k.Path+"/") || strings.HasPrefix(k.Path, q+"/") {
				if e.now.Mode == 0 {
					edits[q] = nil
				} else {
					n := e.now
					n.Name = filepath.Base(q)
					edits[q] = &n
				}
				k.Path = q
				kept = append(kept, k)
				break
			}
		}
	}
	slices.SortFunc(kept, func(a, b Kept) int { return strings.Compare(a.Path, b.Path) })
	r.numberKept(h, kept)
	end, err = r.editTree(w, tck.Tree, edits)
	return end, kept, len(kept) == len(cands) && !merged, err
}

// unpick takes the session's own changes out of path p's present content,
// latest first, each as a line merge (the inverse of the change applied
// to what came after it). It reports false when one cannot be: the lines
// overlap, or a version is not text in a file.
func unpick(present *Present, p string, seq []pathChange, session string) (objects.TreeEntry, bool, error) {
	cur := seq[len(seq)-1].entry
	at := len(seq) - 1 // the version cur is, while no merge made it another
	var data []byte
	read := func(e objects.TreeEntry, path string) ([]byte, bool, error) {
		if e.Mode != objects.ModeFile && e.Mode != objects.ModeExec {
			return nil, false, nil
		}
		b, err := present.Read(e, path)
		if err != nil {
			return nil, false, err
		}
		return b, merge.IsText(b), nil
	}
	for i := len(seq) - 1; i >= 1; i-- {
		if !seq[i].own(session) {
			continue
		}
		if data == nil && at == i {
			// Nothing came after the change (or only the session's own
			// changes, taken out already): its before is the content.
			cur, at = seq[i-1].entry, i-1
			continue
		}
		if data == nil {
			b, ok, err := read(cur, p)
			if err != nil || !ok {
				return cur, false, err
			}
			data = b
		}
		o, ok1, err := read(seq[i].entry, "")
		if err != nil {
			return cur, false, err
		}
		b, ok2, err := read(seq[i-1].entry, "")
		if err != nil || !ok1 || !ok2 {
			return cur, false, err
		}
		merged, hunks := merge.Lines(data, o, b)
		if len(hunks) > 0 {
			return cur, false, nil
		}
		data = merged
	}
	if data == nil {
		return cur, true, nil
	}
	id, n, err := present.Put(data)
	if err != nil {
		return cur, false, err
	}
	mode := cur.Mode
	if mode != objects.ModeExec {
		mode = objects.ModeFile
	}
	return objects.TreeEntry{Mode: mode, ID: id, Size: n}, true, nil
}

// sameEntry reports whether two entries hold the same content (both absent
// included).
func sameEntry(a, b objects.TreeEntry) bool { return a.Mode == b.Mode && a.ID == b.ID }

// underAny reports whether p is one of paths or lies beneath one (a
// directory's path may end in "/").
func underAny(p string, paths []string) bool {
	for _, q := range paths {
		q = strings.TrimSuffix(q, "/")
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func orUnknown(actor string) string {
	if actor == "" {
		return ActorUnknown
	}
	return actor
}

// ChangedByOthers reports, of paths the change from checkpoint from to
// checkpoint to made, those whose content in to another actor than
// session's own recorded first (another session, or the user): a revert
// of that change in session leaves them (Kept), as a rewind would.
func (r *Repo) ChangedByOthers(ctx context.Context, session string, from, to ID, paths []string) ([]Kept, error) {
	session, err := sessionName(session)
	if err != nil {
		return nil, err
	}
	tck, err := r.loadCheckpoint(to)
	if err != nil {
		return nil, err
	}
	h := r.history()
	if err := h.load(); err != nil {
		return nil, err
	}
	first := 0
	var base objects.ID
	if !from.IsZero() {
		fck, err := r.loadCheckpoint(from)
		if err != nil {
			return nil, err
		}
		first, base = h.recordedAt(from, fck.When()), fck.Tree
	}
	last := h.recordedAt(to, tck.When())
	set := map[string]bool{}
	for _, p := range paths {
		set[p] = true
	}
	all, err := r.pathChanges(h, first, last+1, from, base, set)
	if err != nil {
		return nil, err
	}
	var kept []Kept
	for _, p := range slices.Sorted(maps.Keys(set)) {
		e, _, err := objects.EntryAt(r.objects, tck.Tree, "/"+p)
		if err != nil {
			return nil, err
		}
		for _, c := range all[p] {
			if c.op > last {
				break
			}
			if sameEntry(c.entry, e) {
				if !c.own(session) {
					kept = append(kept, Kept{Path: p, Session: c.session, Actor: orUnknown(c.actor), Checkpoint: c.ck, Time: c.time})
				}
				break
			}
		}
	}
	r.numberKept(h, kept)
	return kept, nil
}

// Changer is who recorded a change of a path: Checkpoint (its #Seq in
// Session, at Time) by Actor ("agent", "user", "unknown"; Session "": a
// rewind's safety capture found it, nobody's known doing).
type Changer struct {
	Session    string    `json:"session"`
	Actor      string    `json:"actor"`
	Checkpoint ID        `json:"checkpoint"`
	Seq        int       `json:"seq"`
	Time       time.Time `json:"time"`
}

// changedBy sets each file's ChangedBy: who recorded its changes between
// checkpoints a and b (zero: the working tree now), in either order. The
// op log is read from the older one's record to the newer one's, only the
// directories above the files: a diff against the head reads what was
// recorded since it.
func (r *Repo) changedBy(a, b objects.ID, files []FileDiff) error {
	if len(files) == 0 {
		return nil
	}
	h := r.history()
	if err := h.load(); err != nil {
		return err
	}
	at := func(id objects.ID) (int, objects.ID, error) {
		if id.IsZero() {
			return len(h.ops), objects.ID{}, nil
		}
		ck, err := r.loadCheckpoint(id)
		if err != nil {
			return 0, objects.ID{}, err
		}
		return h.recordedAt(id, ck.When()), ck.Tree, nil
	}
	i, base, err := at(a)
	if err != nil {
		return err
	}
	j, bTree, err := at(b)
	if err != nil {
		return err
	}
	if j < i {
		i, j, base = j, i, bTree
	}
	first, end := i+1, j+1
	if first >= len(h.ops) {
		return nil
	}
	set := map[string]bool{}
	for _, f := range files {
		set[f.Path] = true
	}
	changes, err := r.pathChanges(h, first, end, objects.ID{}, base, set)
	if err != nil {
		return err
	}
	var all []Kept // (to number them as kept paths are)
	for fi := range files {
		seen := map[[2]string]int{}
		for _, c := range changes[files[fi].Path] {
			who := [2]string{c.session, orUnknown(c.actor)}
			if k, ok := seen[who]; ok {
				files[fi].ChangedBy[k] = Changer{Session: who[0], Actor: who[1], Checkpoint: c.ck, Time: c.time}
				continue
			}
			seen[who] = len(files[fi].ChangedBy)
			files[fi].ChangedBy = append(files[fi].ChangedBy, Changer{Session: who[0], Actor: who[1], Checkpoint: c.ck, Time: c.time})
		}
		for _, c := range files[fi].ChangedBy {
			all = append(all, Kept{Session: c.Session, Checkpoint: c.Checkpoint})
		}
	}
	r.numberKept(h, all)
	n := 0
	for fi := range files {
		for k := range files[fi].ChangedBy {
			files[fi].ChangedBy[k].Seq = all[n].Seq
			n++
		}
	}
	return nil
}

// numberKept sets each kept path's Seq: its checkpoint's #N in its session.
func (r *Repo) numberKept(h *history, kept []Kept) {
	lists := map[string]*sessionList{} // each session's, for #N
	for i, k := range kept {
		if k.Session == "" {
			continue
		}
		list, ok := lists[k.Session]
		if !ok {
			list, _ = r.sessionCheckpoints(h, k.Session) // (nil when it cannot be read: no numbers)
			lists[k.Session] = list
		}
		if list != nil {
			kept[i].Seq = list.Index(k.Checkpoint) + 1
		}
	}
}
