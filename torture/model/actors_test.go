package model

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/merge"
	"github.com/snapcore-dev/snap/objects"
)

// Actors (issue 22): a rewind, undo, redo or task revert of session S
// without All changes only what S's own actors changed since its target
// T; what another session, or S's user, changed since is kept (or merged
// by lines). The model decides this from its own records, written here
// from the rule, not from the engine's code:
//
//   - project.hist is the model's log of what the store's op log records
//     of each operation that changed the working tree, in order: a
//     checkpoint (what the working tree was, as its session and actor
//     recorded it) or a move (what the working tree was, its safety
//     checkpoint, nobody's known doing; then its target within its
//     paths, made by its session; a move of no files writes nothing).
//     Each record's change is read against the last tree a record left
//     (the working tree is one: adversarial A1), from the target's. Each
//     checkpoint knows the record from which on a move to it reads
//     (ckRec.logAt): the first that names it (its own, or the move whose
//     safety checkpoint, built end or commit it is), or the last move
//     whose safety checkpoint it was since (M28).
//   - For each path where the present (the move's safety capture) differs
//     from T (within the move's paths; not a path it leaves alone anyway),
//     the recorded changes of the path since T's record (T's own
//     aside), consecutive equal contents collapsed, starting from T's
//     content, with the present appended when no record holds it
//     (nobody's). A change is S's own when nobody (or a safety capture)
//     made it, or S made it and not as its user.
//   - No change is another's: the path goes to T's content. All are
//     others': it is kept as it is. Mixed: S's own changes are taken out
//     one by one, latest first, each by a three-way line merge (the
//     present is the own version, no other came after it but own ones
//     taken out already: the version before it, no merge); a version that
//     is no text file, or overlapping lines: kept as it is (Conflict). A
//     result equal to T's content: not kept when the last version is S's
//     own, else kept as it is (Conflict: M26). A path above or below a
//     kept one (a file where the other has a directory) is kept too, as
//     it is.
//   - Anything kept: the move records its end (T's tree with the kept
//     paths, a checkpoint of the move's kind, child of T, listed by the
//     op's Checkpoints); the head goes there when it would have gone to T;
//     a task revert's own end checkpoint holds that tree instead.
//
// The promises checked (categories in brackets): the kept paths, with
// merged and conflict marks, are the model's [actor-kept], and each names
// the other actor's record the model finds last (session, actor,
// checkpoint) [actor-kept-who]; the end is recorded as said, and the disk
// is T's with the kept paths as the model has them (every other promise
// of a move, protected paths included, holds as for any move: move-*,
// record-*, head) [actor-end]; a path whose present content another actor
// wrote, as the last record of it says, never ends with T's content
// [actor-overwritten]; a dry run predicts the same kept paths
// [dry-run]; undo right after the move is exact and redo right after
// that undo gives the state after it (undo-not-exact, redo-not-exact, as
// for every move). Where the model cannot tell (its log has a gap: an
// operation it could not predict; a checkpoint the scan reads was
// expired by retention, so the store may no longer read it), it follows
// the store's end and checks the rest.

// histRec is one record of the model's log.
type histRec struct {
	session string
	ck      *ckRec // a checkpoint: its change is from its parent to it
	// a move: its change is from safety to target within paths (none
	// when it moved no files)
	move           bool
	safety, target *ckRec
	paths          []string
	files          bool
	// gap: the store recorded what the model could not follow here.
	gap bool
}

// logCk records a checkpoint's record.
func (p *project) logCk(c *ckRec) {
	p.hist = append(p.hist, histRec{session: c.session, ck: c})
	p.named(c)
}

// logMove records a move's record, which names the checkpoints named
// (its safety checkpoint, the end it built or committed, what it found).
func (p *project) logMove(session string, safety, target *ckRec, paths []string, files bool, named ...*ckRec) {
	p.hist = append(p.hist, histRec{session: session, move: true, safety: safety, target: target, paths: paths, files: files})
	p.named(named...)
	if safety != nil {
		// The working tree held it here, however long ago it was first
		// recorded: a move to it reads what changed since from here (M28).
		safety.logged, safety.logAt = true, len(p.hist)-1
	}
}

// logGap marks that the store recorded something the model does not know.
func (p *project) logGap() {
	if n := len(p.hist); n == 0 || !p.hist[n-1].gap {
		p.hist = append(p.hist, histRec{gap: true})
	}
}

// named: the last record names cs (the first record naming each counts).
func (p *project) named(cs ...*ckRec) {
	for _, c := range cs {
		if c != nil && !c.logged {
			c.logged, c.logAt, c.firstAt = true, len(p.hist)-1, len(p.hist)-1
		}
	}
}

// pathChange is one recorded change of a path: the entry it left (zero:
// absent; K 'd': an empty directory) and who made it.
type pathChange struct {
	e       ent
	session string // "" nobody
	actor   string
	ck      objects.ID
	by      string // for messages
}

func (c pathChange) own(s string) bool {
	return c.session == "" || c.session == s && c.actor != snap.ActorUser
}

// diffAt is what a comparison of stored trees a and b reports at path q,
// in order: a file, link or empty directory that differs (an absent side,
// or a directory with something in it, is the zero entry). A path that
// is an empty directory on one side and a file on the other is reported
// twice: the directory gone, then the file (or the file gone, then the
// directory).
func diffAt(a, b tree, q string) (olds, news []ent) {
	ea, oka := a[q]
	eb, okb := b[q]
	aDir, bDir := oka && ea.K == 'd', okb && eb.K == 'd'
	if aDir && bDir || !oka && !okb {
		return nil, nil
	}
	var fa, fb ent
	if oka && !aDir {
		fa = ent{K: ea.K, Data: ea.Data}
	}
	if okb && !bDir {
		fb = ent{K: eb.K, Data: eb.Data}
	}
	if aDir && !a.isDirBelow(q) && !bDir {
		olds, news = append(olds, ent{K: 'd'}), append(news, ent{})
	}
	if (fa.K != 0 || fb.K != 0) && !fa.same(fb) {
		olds, news = append(olds, fa), append(news, fb)
	}
	if bDir && !b.isDirBelow(q) && !aDir {
		olds, news = append(olds, ent{}), append(news, ent{K: 'd'})
	}
	return olds, news
}

// keptExp is a path the model expects a scoped move to keep.
type keptExp struct {
	path             string
	session, actor   string
	ck               objects.ID
	merged, conflict bool
	deleted          bool // the present has no entry: it stays absent
	by               string
	// related: for a path kept because it lies above or below kept ones,
	// those (the engine names one of them); maybe: only through another
	// such path (the engine may list it or not).
	related []string
	maybe   bool
}

func (k keptExp) String() string {
	s := k.path
	if k.merged {
		s += "(merged)"
	}
	if k.conflict {
		s += "(conflict)"
	}
	return s
}

// scopedExp is the model's expectation of a scoped move.
type scopedExp struct {
	unsure string // why the model cannot tell ("" when it can)
	kept   []keptExp
	end    tree // the target's files with the kept paths as they are
	// othersNow: paths whose present content another actor wrote (the
	// last record of it is theirs), with the target's entry, which they
	// must not end with.
	othersNow map[string]ent
	// ownVersion: those of othersNow whose present content one of the
	// session's own changes had made before (the shape of M26).
	ownVersion map[string]bool
	story      map[string]string // path → its versions since the target, for messages
	// idle: every path the move would change is kept as it is (none
	// merged): a rewind of some paths then does nothing and records
	// nothing (adversarial A4).
	idle bool
}

func (se *scopedExp) keptString() string {
	var out []string
	for _, k := range se.kept {
		out = append(out, k.String())
	}
	return "[" + strings.Join(out, " ") + "]"
}

// usable: a checkpoint the scan can read (the model knows it, retention
// did not expire it).
func usable(c *ckRec) bool { return c != nil && !c.expired && c.kind != "unknown" }

// predictScoped computes what a move of session s to T within paths keeps,
// from the model's records; me is the move's expectation (its safety
// capture is the present), d0 the disk before it.
func (p *project) predictScoped(s string, T *ckRec, me moveExp, paths []string, d0 tree) *scopedExp {
	se := &scopedExp{end: T.files, othersNow: map[string]ent{}, ownVersion: map[string]bool{}, story: map[string]string{}}
	now := me.safety.files
	leave := slices.Concat(me.safety.unreadable, T.skipped)
	for q := range me.exclude {
		leave = append(leave, q)
	}
	for q := range me.others {
		leave = append(leave, q)
	}
	type ends struct{ now, end ent }
	cands := map[string]ends{}
	for _, set := range []tree{now, T.files} {
		for q := range set {
			if _, done := cands[q]; done || !inScope(q, paths) || underAny(q, leave) {
				continue
			}
			if olds, news := diffAt(now, T.files, q); len(news) > 0 {
				cands[q] = ends{olds[len(olds)-1], news[len(news)-1]}
			}
		}
	}
	if len(cands) == 0 {
		return se
	}
	if !T.logged {
		se.unsure = "the target is in no record the model knows"
		return se
	}
	changes := map[string][]pathChange{}
	add := func(from, to tree, c pathChange, within []string) {
		for q := range cands {
			if !inScope(q, within) {
				continue
			}
			_, news := diffAt(from, to, q)
			for _, e := range news {
				c.e = e
				changes[q] = append(changes[q], c)
			}
		}
	}
	// Each record is read against the last tree any record left (the
	// working tree is one), from T's.
	last := T.files
	for i := T.logAt; i < len(p.hist); i++ {
		h := p.hist[i]
		switch {
		case h.gap:
			se.unsure = "the model's log has a gap since the target"
			return se
		case h.move:
			// What the working tree was (its safety checkpoint: what it
			// found is nobody's known doing), then what the move wrote
			// within its paths, its session's.
			if !usable(h.safety) {
				se.unsure = "a move since the target names a safety checkpoint the model cannot read"
				return se
			}
			if h.safety.id != T.id {
				add(last, h.safety.files, pathChange{ck: h.safety.id, by: fmt.Sprintf("%s's safety checkpoint %s (nobody)", h.session, h.safety)}, nil)
			}
			last = h.safety.files
			if !h.files {
				continue
			}
			if !usable(h.target) {
				se.unsure = "a move since the target names an end the model cannot read"
				return se
			}
			if h.target.id != T.id {
				add(h.safety.files, h.target.files, pathChange{session: h.session, ck: h.target.id,
					by: fmt.Sprintf("%s's move to %s", h.session, h.target)}, h.paths)
			}
			if len(h.paths) == 0 {
				last = h.target.files
			}
		default:
			c := h.ck
			if !usable(c) {
				se.unsure = "a checkpoint since the target was expired"
				return se
			}
			if c.id != T.id {
				add(last, c.files, pathChange{session: c.session, actor: c.actor, ck: c.id,
					by: fmt.Sprintf("%s (%s, actor %q)", c, c.session, c.actor)}, nil)
			}
			last = c.files
		}
	}
	edits := map[string]*ent{}
	var kept []keptExp
	for _, q := range sortedKeys(cands) {
		e := cands[q]
		seq := []pathChange{{e: e.end, session: s, by: "the target"}}
		for _, c := range changes[q] {
			if !c.e.same(seq[len(seq)-1].e) {
				seq = append(seq, c)
			}
		}
		if !seq[len(seq)-1].e.same(e.now) {
			seq = append(seq, pathChange{e: e.now, by: "the present (no record)"})
		}
		var story []string
		for _, c := range seq {
			story = append(story, fmt.Sprintf("%v by %s", c.e, c.by))
		}
		se.story[q] = strings.Join(story, " -> ")
		var other *pathChange
		ownChange := false
		for i := 1; i < len(seq); i++ {
			if seq[i].own(s) {
				ownChange = true
			} else {
				other = &seq[i]
			}
		}
		if last := seq[len(seq)-1]; len(seq) > 1 && !last.own(s) {
			se.othersNow[q] = e.end
			for _, c := range seq[1 : len(seq)-1] {
				se.ownVersion[q] = se.ownVersion[q] || c.own(s) && c.e.same(last.e)
			}
		}
		if other == nil {
			continue
		}
		k := keptExp{path: q, session: other.session, actor: other.actor, ck: other.ck, by: other.by, deleted: e.now.K == 0}
		if k.actor == "" {
			k.actor = snap.ActorUnknown
		}
		keep := e.now
		if ownChange {
			merged, ok := unpickModel(seq, s)
			switch {
			case !ok:
				k.conflict = true
			case merged.same(e.end) && seq[len(seq)-1].own(s):
				continue // the session's own last change undid what the others changed
			case merged.same(e.end):
				// Another actor wrote the present: taking the session's
				// changes out would give the target, the lines cannot tell
				// theirs from the session's (M26): kept.
				k.conflict = true
			case !merged.same(e.now):
				keep, k.merged = merged, true
			}
		}
		kept = append(kept, k)
		if keep.K == 0 {
			edits[q] = nil
		} else {
			edits[q] = &keep
		}
	}
	if len(kept) == 0 {
		return se
	}
	// A path above or below a kept one stays as it is too: those related
	// to a kept path for certain, then those related only to such a path
	// (the engine goes through them in no fixed order).
	// (Named after the first kept path, in path order, it is related to:
	// the copy the engine makes.)
	direct := slices.Clone(kept)
	var more []keptExp
	for _, q := range sortedKeys(cands) {
		if _, done := edits[q]; done {
			continue
		}
		var k keptExp
		for _, d := range direct {
			if related(q, d.path) {
				if k.path == "" {
					k = d
					k.path, k.by = q, "lies above or below "+d.path
				}
				k.related = append(k.related, d.path)
			}
		}
		if k.path != "" {
			more = append(more, k)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, q := range sortedKeys(cands) {
			if _, done := edits[q]; done || slices.ContainsFunc(more, func(k keptExp) bool { return k.path == q }) {
				continue
			}
			for _, m := range more {
				if related(q, m.path) {
					k := m
					k.path, k.maybe, k.by = q, true, "lies above or below "+m.path
					more = append(more, k)
					changed = true
					break
				}
			}
		}
	}
	for _, k := range more {
		e := cands[k.path].now
		if e.K == 0 {
			edits[k.path] = nil
		} else {
			edits[k.path] = &e
		}
	}
	kept = append(kept, more...)
	sort.Slice(kept, func(i, j int) bool { return kept[i].path < kept[j].path })
	se.kept = kept
	se.idle = len(kept) == len(cands) && !slices.ContainsFunc(kept, func(k keptExp) bool { return k.merged || k.maybe })
	se.end = editTree(T.files, edits, d0.isDir)
	return se
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// unpickModel takes session s's own changes out of a path's present
// content (the last of seq), latest first; false when one cannot be.
func unpickModel(seq []pathChange, s string) (ent, bool) {
	cur := seq[len(seq)-1].e
	at := len(seq) - 1 // the version cur is, while no merge made another of it
	text := func(e ent) (string, bool) {
		if e.K != 'f' && e.K != 'x' {
			return "", false
		}
		return e.Data, merge.IsText([]byte(e.Data))
	}
	var data *string
	for i := len(seq) - 1; i >= 1; i-- {
		if !seq[i].own(s) {
			continue
		}
		if data == nil && at == i {
			// Nothing came after the change (or only own changes, taken
			// out already): its before is the content.
			cur, at = seq[i-1].e, i-1
			continue
		}
		if data == nil {
			b, ok := text(cur)
			if !ok {
				return cur, false
			}
			data = &b
		}
		o, ok1 := text(seq[i].e)
		b, ok2 := text(seq[i-1].e)
		if !ok1 || !ok2 {
			return cur, false
		}
		m, hunks := merge.Lines([]byte(*data), []byte(o), []byte(b))
		if len(hunks) > 0 {
			return cur, false
		}
		ms := string(m)
		data = &ms
	}
	if data == nil {
		return cur, true
	}
	k := byte('f')
	if cur.K == 'x' {
		k = 'x'
	}
	return ent{K: k, Data: *data}, true
}

// editTree is t with each path of edits set to its entry or removed (nil),
// as a stored tree is edited: a file in the way of a directory made for
// an entry goes, and a directory the removals empty stays (empty) only
// where isDir says one is on disk.
func editTree(t tree, edits map[string]*ent, isDir func(string) bool) tree {
	out := t.clone()
	for _, q := range sortedKeys(edits) {
		e := edits[q]
		for r := range out {
			if r == q || strings.HasPrefix(r, q+"/") {
				delete(out, r)
			}
		}
		if e == nil {
			continue
		}
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if x, ok := out[a]; ok && x.K != 'd' {
				delete(out, a)
			}
			if feat.emptyDirs {
				out[a] = ent{K: 'd'}
			}
		}
		out[q] = *e
	}
	for q := range edits {
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if x, ok := out[a]; ok && x.K == 'd' && !out.isDirBelow(a) && !isDir(a) {
				delete(out, a)
			}
		}
	}
	return out
}

// checkKept compares the paths a scoped move kept with the model's.
// It reports whether they agree (then the model's end is the move's).
func (r *runner) checkKept(what string, se *scopedExp, got []snap.Kept) bool {
	if se == nil {
		if len(got) > 0 {
			r.failf("actor-kept", "%s (with All) kept %v, the model expects every path moved", what, keptNames(got))
			return false
		}
		return true
	}
	if se.unsure != "" {
		r.stats["scoped move: not predicted: "+se.unsure]++
		return false
	}
	byPath := map[string]snap.Kept{}
	for _, k := range got {
		byPath[k.Path] = k
	}
	ok := true
	story := func(q string) string {
		if s := se.story[q]; s != "" {
			return "\n  " + q + ": " + s
		}
		return ""
	}
	want := map[string]bool{}
	for _, k := range se.kept {
		want[k.path] = true
		g, there := byPath[k.path]
		switch {
		case !there && k.maybe:
			continue
		case !there:
			r.failf("actor-kept", "%s kept %v; the model expects %s kept too (%s)%s", what, keptNames(got), k, k.by, story(k.path))
			ok = false
			continue
		}
		match := func(w keptExp) bool {
			return g.Session == w.session && g.Actor == w.actor && g.Checkpoint == w.ck && g.Merged == w.merged && g.Conflict == w.conflict && g.Deleted == w.deleted
		}
		if !k.maybe {
			if g.Merged != k.merged || g.Conflict != k.conflict || g.Deleted != k.deleted {
				r.failf("actor-kept", "%s kept %s (merged %v, conflict %v, deleted %v); the model expects %s (deleted %v)%s", what, g.Path, g.Merged, g.Conflict, g.Deleted, k, k.deleted, story(k.path))
				ok = false
			} else if g.Session != k.session || g.Actor != k.actor || g.Checkpoint != k.ck {
				r.failf("actor-kept-who", "%s kept %s as session %q's, actor %q, checkpoint %s; the model finds %s last: session %q, actor %q, checkpoint %s%s",
					what, g.Path, g.Session, g.Actor, g.Checkpoint.Short(), k.by, k.session, k.actor, k.ck.Short(), story(k.path))
				ok = false
			}
			continue
		}
		// Kept only through another path kept with one: named after one
		// of those it lies above or below.
		found := false
		for _, w := range se.kept {
			if related(k.path, w.path) {
				found = found || match(w)
			}
		}
		if !found {
			r.failf("actor-kept-who", "%s kept %s as session %q's, actor %q, checkpoint %s (merged %v, conflict %v): none of the kept paths it lies above or below (%v) is",
				what, g.Path, g.Session, g.Actor, g.Checkpoint.Short(), g.Merged, g.Conflict, k.related)
			ok = false
		}
	}
	for _, g := range got {
		if !want[g.Path] {
			r.failf("actor-kept", "%s kept %s (merged %v, conflict %v; session %q, actor %q); the model expects it moved (kept: %s)%s",
				what, g.Path, g.Merged, g.Conflict, g.Session, g.Actor, se.keptString(), story(g.Path))
			ok = false
		}
	}
	if len(se.kept) > 0 {
		r.stats["scoped move: kept paths"]++
		for _, k := range se.kept {
			switch {
			case k.merged:
				r.stats["scoped move: kept merged"]++
			case k.conflict:
				r.stats["scoped move: kept conflict"]++
			case len(k.related) > 0:
				r.stats["scoped move: kept above or below"]++
			default:
				r.stats["scoped move: kept as is"]++
			}
		}
	} else {
		r.stats["scoped move: nothing kept"]++
	}
	return ok
}

func related(a, b string) bool { return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") }

func keptNames(ks []snap.Kept) []string {
	out := []string{}
	for _, k := range ks {
		s := k.Path
		if k.Merged {
			s += "(merged)"
		}
		if k.Conflict {
			s += "(conflict)"
		}
		out = append(out, s)
	}
	return out
}

// scopedEnd checks what a finished move of kind (rewind, undo, redo: the
// move records its end; task-revert: its own end holds it) to T kept
// against the model's expectation se (nil: a move with All), and returns
// the checkpoint the move recorded as its end (zero: none) and the files
// the move restored: the model's end when it could tell, else the
// store's.
func (r *runner) scopedEnd(p *project, what, kind string, se *scopedExp, T *ckRec, res *snap.RewindResult, taskEnd objects.ID) (built objects.ID, end tree) {
	end = T.files
	if res == nil {
		return built, end
	}
	agree := r.checkKept(what, se, res.Kept)
	if kind != "task-revert" && res.Target != T.id {
		r.failf("actor-end", "%s reports target %s, not the one asked for, %s", what, res.Target.Short(), T)
	}
	if kind != "task-revert" {
		var last []objects.ID
		if ops, err := p.repo.Ops(r.ctx, 1); err == nil && len(ops) == 1 && ops[0].Kind == kind {
			last = ops[0].Checkpoints
			if len(last) == 1 && ops[0].Target != last[0] {
				r.failf("actor-end", "%s: the op log records target %s, not the end it built %s", what, ops[0].Target.Short(), last[0].Short())
			}
		} else {
			got := "none"
			if len(ops) == 1 {
				got = fmt.Sprintf("op %d %q of session %q", ops[0].Seq, ops[0].Kind, ops[0].Session)
			}
			r.failf("actor-end", "%s: the last op of the log is not the %s but %s (%v)", what, kind, got, err)
		}
		switch {
		case len(res.Kept) > 0 && len(last) != 1:
			r.failf("actor-end", "%s kept %v but its op-log record lists %d checkpoints it built, not one", what, keptNames(res.Kept), len(last))
		case len(res.Kept) == 0 && len(last) > 0:
			r.failf("actor-end", "%s kept nothing but its op-log record lists checkpoints it built: %v", what, last)
		case len(res.Kept) > 0:
			built = last[0]
		}
	}
	switch {
	case se != nil && agree && se.unsure == "":
		end = se.end
	case len(res.Kept) == 0:
	default:
		from := built
		if kind == "task-revert" {
			from = taskEnd
		}
		if from.IsZero() {
			break
		}
		if _, files, _, err := p.readRecord(from); err == nil {
			end = files
		} else {
			r.failf("store-read", "%s: its end %s cannot be read: %v", what, from.Short(), err)
		}
	}
	return built, end
}

// addBuilt registers the end a scoped move of kind recorded: session s's,
// a child of T, T's tree with the kept paths (end), T's documents.
func (r *runner) addBuilt(p *project, what, s, kind string, id objects.ID, T *ckRec, end tree) *ckRec {
	if id.IsZero() {
		return nil
	}
	if c, ok := p.byID[id]; ok {
		r.failf("actor-end", "%s: the end it built, %s, is a checkpoint the store already had (%s)", what, id.Short(), c)
		return c
	}
	docs := map[string]doc{}
	for n, d := range T.docs {
		docs[n] = d
	}
	rec := &ckRec{id: id, session: s, parent: T.id, files: end, docs: docs, skipped: T.skipped, kind: kind}
	r.verifyRecord(p, rec, capExp{files: end, unreadable: trimAll(T.skipped)}, what+": the end it built")
	r.checkKind(p, id, kind)
	return p.add(rec)
}

// checkOverwritten: no path whose present content another actor wrote
// is overwritten with the target's content (from d0, the disk before the
// move, to d1, after it; a path the move leaves alone, ignored say, may
// hold it all along).
func (r *runner) checkOverwritten(what string, se *scopedExp, d0, d1 tree) {
	if se == nil || se.unsure != "" {
		return
	}
	isT := func(d tree, q string, t ent) bool {
		e, on := d[q]
		return on && e.K != 'd' && e.same(t) || !on && t.K == 0
	}
	for _, q := range sortedKeys(se.othersNow) {
		t := se.othersNow[q]
		if t.K == 'd' || d1[q].K == 'd' {
			continue
		}
		if !isT(d0, q, t) && isT(d1, q, t) {
			cat := "actor-overwritten"
			if se.ownVersion[q] {
				cat = "actor-overwritten-own-version" // M26
			}
			r.failf(cat, "%s: %s, which another actor wrote as it was before the move (%v), now holds the target's content (%v)\n  %s: %s",
				what, q, d0[q], t, q, se.story[q])
		}
	}
}

// withEnd is T with files end (what a scoped move restores).
func withEnd(T *ckRec, end tree) *ckRec {
	c := *T
	c.files = end
	return &c
}

// checkActor: a checkpoint records the actor and tool call it was given
// [record-actor].
func (r *runner) checkActor(p *project, rec *ckRec) {
	ck, err := p.repo.Objects().ReadCheckpoint(rec.id)
	if err != nil {
		return // (verifyRecord reports it)
	}
	if ck.Actor != rec.actor || ck.Call != rec.call {
		r.failf("record-actor", "checkpoint %s records actor %q, call %q; it was given actor %q, call %q", rec.id.Short(), ck.Actor, ck.Call, rec.actor, rec.call)
		rec.actor, rec.call = ck.Actor, ck.Call
	}
}

// rescoped is me, the expectation of a move to T computed before it ran,
// for the move to T with files end: computed again after the move (its
// end known), with the state documents its safety capture read before.
func (p *project) rescoped(me moveExp, d0 tree, o0 outState, T *ckRec, end tree, h *ckRec, sc scope, created tree, createdDocs map[string]string) moveExp {
	m := p.expectMoveEnd(d0, o0, T, end, h, sc, created, createdDocs)
	m.safetyDoc = me.safetyDoc
	return m
}

// ignoreFilesDiffer: a and b hold different ignore files (.gitignore,
// .snapignore at any depth).
func ignoreFilesDiffer(a, b *ckRec) bool {
	if a == nil || b == nil {
		return false
	}
	isIgnoreFile := func(q string) bool { n := path.Base(q); return n == ".gitignore" || n == ".snapignore" }
	for _, t := range []tree{a.files, b.files} {
		for q := range t {
			if isIgnoreFile(q) && !a.files[q].same(b.files[q]) {
				return true
			}
		}
	}
	return false
}
