package model

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/merge"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/workflow"
)

// snap revert (workflow.Revert): the inverse of one checkpoint T's change
// (from its parent P) applied to the working tree as it is, in session S.
// The model's rule, from RevertOptions' and Revert's documents and issue
// 22's:
//
//   - The change is every path where P and T hold different files or
//     links (a directory on one side and not on the other, the model
//     cannot tell: not checked).
//   - Without All, a path whose content in T another actor recorded first
//     is left (Kept, naming that record): the path's recorded changes
//     from P's record (P's own aside, P's tree the start) up to T's, each
//     read against the last tree a record left (as the actors' scan:
//     actors_test.go); the first whose entry is T's names who; another
//     session's or S's user's is another actor's. All of them kept:
//     nothing to do (Nothing).
//   - Against the present (the move's safety capture, under the rules on
//     disk): a path already as in P is left; one as in T goes back to P's
//     (or is deleted); one absent now that T deleted but on disk (not
//     captured) is a conflict, as are one deleted since, one T deleted or
//     created and changed since, one whose kind or mode changed since; a
//     text file both changed is merged three ways by lines (T's the base,
//     the present's and P's the two sides), overlapping lines or content
//     that is not text a conflict, a merge giving the present back left.
//   - Nothing to write: nothing moves, the tree stays; conflicts are then
//     ErrPartial. Else a move: a safety checkpoint of the present, the
//     reverted paths written, a "revert" checkpoint (the safety's tree
//     with them, child of the safety checkpoint) where the head goes;
//     conflicts make it ErrPartial; every other path is as it was.
//   - Undo right after is exact, redo right after that undo gives the
//     state after (promise 3); a dry run answers the same and changes
//     nothing.
//
// Categories: revert (what it reverts, keeps, conflicts; Nothing), and
// those of any move and record (move-*, safety, record-*, head,
// undo-not-exact, redo-not-exact, changed-tree).

func genRevert(rng *rand.Rand, g *genState, op *Op) {
	op.Session = randSession(rng)
	op.Target, op.Form = randTarget(rng, g)
	if op.Form == "label" {
		op.Form = "id"
	}
	op.Scoped = rng.IntN(5) > 0
	op.DryRun = rng.IntN(10) < 3
	if rng.IntN(3) == 0 {
		op.Then = []string{"undo", "undo,redo"}[rng.IntN(2)]
	}
}

// revertExp is the model's expectation of a revert.
type revertExp struct {
	unsure    string
	changed   []string // the change's paths, the kept ones out
	kept      []keptExp
	reverted  []string
	conflicts []string
	edits     map[string]*ent
	// unreadable: what the present cannot read (unreadable, over
	// max-file-size): a path of the change there is left and reported as
	// a conflict (M32).
	unreadable []string
	// blocked: paths to restore under a file the capture leaves alone,
	// which the restore cannot replace: conflicts (M33).
	blocked []string
}

// changesSince is the recorded changes of paths from checkpoint P's record
// (P's own aside, its tree the start) to the record at index upto, read as
// the actors' scan reads them.
func (p *project) changesSince(P *ckRec, upto int, paths []string) (map[string][]pathChange, string) {
	changes := map[string][]pathChange{}
	add := func(from, to tree, c pathChange, within []string) {
		for _, q := range paths {
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
	gone := func(c *ckRec) (bool, string) {
		switch {
		case c == nil || c.kind == "unknown":
			return false, "a record names a checkpoint the model does not know"
		case c.expired:
			return !p.storeHas(c), ""
		}
		return false, ""
	}
	var last tree
	first := 0
	if P != nil {
		if !P.logged {
			return nil, "the change's parent is in no record the model knows"
		}
		last, first = P.files, P.firstAt
	} else {
		last = tree{}
	}
	skip := objects.ID{}
	if P != nil {
		skip = P.id
	}
	for i := first; i <= upto && i < len(p.hist); i++ {
		h := p.hist[i]
		switch {
		case h.gap:
			return nil, "the model's log has a gap"
		case h.move:
			if g, why := gone(h.safety); why != "" {
				return nil, why
			} else if g {
				continue
			}
			if h.safety.id != skip {
				add(last, h.safety.files, pathChange{ck: h.safety.id, by: fmt.Sprintf("%s's safety checkpoint %s (nobody)", h.session, h.safety)}, nil)
			}
			last = h.safety.files
			if !h.files {
				continue
			}
			if g, why := gone(h.target); why != "" {
				return nil, why
			} else if g {
				continue
			}
			if h.target.id != skip {
				add(h.safety.files, h.target.files, pathChange{session: h.session, ck: h.target.id,
					by: fmt.Sprintf("%s's move to %s", h.session, h.target)}, h.paths)
			}
			if len(h.paths) == 0 {
				last = h.target.files
			}
		default:
			c := h.ck
			if g, why := gone(c); why != "" {
				return nil, why
			} else if g {
				continue
			}
			if c.id != skip {
				add(last, c.files, pathChange{session: c.session, actor: c.actor, ck: c.id,
					by: fmt.Sprintf("%s (%s, actor %q)", c, c.session, c.actor)}, nil)
			}
			last = c.files
		}
	}
	return changes, ""
}

// predictRevert is the model's revert of T's change in session s, all
// paths or not, against the present now (the move's safety capture) and
// the disk d0.
func (p *project) predictRevert(s string, T, P *ckRec, all bool, now, d0 tree, leave, unreadable []string) *revertExp {
	re := &revertExp{edits: map[string]*ent{}, unreadable: unreadable}
	var pf tree
	if P != nil {
		pf = P.files
	}
	fileAt := func(t tree, q string) (ent, bool) {
		e, ok := t[q]
		return e, ok && e.K != 'd'
	}
	dirAbove := func(t tree, q string) bool {
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if e, ok := t[a]; ok && e.K != 'd' {
				return true
			}
		}
		return false
	}
	for _, q := range sortedKeys(unionKeys(pf, T.files)) {
		a, ha := pf[q]
		b, hb := T.files[q]
		aDir, bDir := ha && a.K == 'd', hb && b.K == 'd'
		if (aDir || !ha) && (bDir || !hb) || ha && hb && a.same(b) {
			continue // no file changed here
		}
		if aDir || bDir || dirAbove(pf, q) || dirAbove(T.files, q) {
			re.unsure = "the change makes a file a directory or back (" + q + ")"
			return re
		}
		if underAny(q, leave) {
			re.unsure = "a path of the change is one a move leaves alone (" + q + ")"
			return re
		}
		re.changed = append(re.changed, q)
	}
	if len(re.changed) > 0 && !all {
		if !T.logged {
			re.unsure = "the reverted checkpoint is in no record the model knows"
			return re
		}
		changes, unsure := p.changesSince(P, T.firstAt, re.changed)
		if unsure != "" {
			re.unsure = unsure
			return re
		}
		var left []string
		for _, q := range re.changed {
			e := T.files[q]
			keep := false
			for _, c := range changes[q] {
				if c.e.same(ent{K: e.K, Data: e.Data}) {
					if !c.own(s) {
						actor := c.actor
						if actor == "" {
							actor = snap.ActorUnknown
						}
						re.kept = append(re.kept, keptExp{path: q, session: c.session, actor: actor, ck: c.ck, by: c.by})
						keep = true
					}
					break
				}
			}
			if !keep {
				left = append(left, q)
			}
		}
		re.changed = left
	}
	for _, q := range re.changed {
		orig, hadOrig := fileAt(pf, q)
		base, hadBase := fileAt(T.files, q)
		cur, hasCur := now[q]
		same := func(x ent, hx bool, y ent, hy bool) bool { return hx == hy && (!hx || x.same(y)) }
		conflict := func() { re.conflicts = append(re.conflicts, q) }
		// A file or link on disk where a directory above q must go: a
		// captured one the revert would replace (not predicted); one the
		// capture leaves alone (ignored, unreadable) the restore cannot
		// replace, so, as A7 has it for q itself, a conflict (M33).
		blocked := false
		if hadOrig {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				if e, ok := d0[a]; ok && e.K != 'd' {
					if _, captured := now[a]; captured {
						re.unsure = "a file on disk stands above a path the revert restores (" + a + ")"
						return re
					}
					blocked = true
				}
			}
		}
		switch {
		case blocked:
			re.blocked = append(re.blocked, q)
			conflict()
			continue
		case slices.ContainsFunc(unreadable, func(u string) bool {
			return q == u || strings.HasPrefix(q, u+"/") && d0[u].K == 'd'
		}):
			// What it holds now cannot be known: it changed since in a
			// way that cannot be merged, as far as snap can tell (M32).
			// (Beneath an unreadable file nothing can be: seed 905's
			// second stop, the model's mistake.)
			conflict()
			continue
		case same(cur, hasCur, orig, hadOrig):
			continue
		case !hasCur && !hadBase && d0[q].K != 0:
			conflict()
			continue
		case same(cur, hasCur, base, hadBase):
			if hadOrig {
				e := orig
				re.edits[q] = &e
			} else {
				re.edits[q] = nil
			}
			re.reverted = append(re.reverted, q)
			continue
		case !hasCur, !hadBase, !hadOrig:
			conflict()
			continue
		case cur.K != 'f' && cur.K != 'x' || orig.K != base.K && cur.K != base.K:
			conflict()
			continue
		}
		if orig.K == 'l' || base.K == 'l' {
			re.unsure = "a merge with a symlink's target (" + q + ")"
			return re
		}
		if !isText(base.Data) || !isText(cur.Data) || !isText(orig.Data) {
			conflict()
			continue
		}
		m, hunks := merge.Lines([]byte(cur.Data), []byte(base.Data), []byte(orig.Data))
		if len(hunks) > 0 {
			conflict()
			continue
		}
		if string(m) == cur.Data && (orig.K == base.K || cur.K == orig.K) {
			continue
		}
		k := cur.K
		if orig.K != base.K {
			k = orig.K
		}
		re.edits[q] = &ent{K: k, Data: string(m)}
		re.reverted = append(re.reverted, q)
	}
	slices.Sort(re.reverted)
	return re
}

func unionKeys(a, b tree) map[string]bool {
	out := map[string]bool{}
	for q := range a {
		out[q] = true
	}
	for q := range b {
		out[q] = true
	}
	return out
}

func conflictPaths(cs []workflow.RevertConflict) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Path)
	}
	slices.Sort(out)
	return out
}

// checkRevertAnswer compares what a revert (or its dry run) says with the
// model.
func (r *runner) checkRevertAnswer(what string, re *revertExp, res *workflow.RevertResult) {
	if re.unsure != "" || res == nil {
		return
	}
	want := func(s []string) string {
		if s == nil {
			s = []string{}
		}
		return fmt.Sprint(s)
	}
	var got []string
	for _, k := range res.Kept {
		got = append(got, k.Path)
	}
	var wantKept []string
	for _, k := range re.kept {
		wantKept = append(wantKept, k.path)
	}
	if want(got) != want(wantKept) {
		r.failf("revert", "%s kept %v; the model expects %v kept (another actor recorded their content first)", what, got, wantKept)
		return
	}
	for i, k := range re.kept {
		g := res.Kept[i]
		if g.Session != k.session || g.Actor != k.actor || g.Checkpoint != k.ck {
			r.failf("revert", "%s kept %s as session %q's, actor %q, checkpoint %s; the model finds %s first: session %q, actor %q, checkpoint %s",
				what, g.Path, g.Session, g.Actor, g.Checkpoint.Short(), k.by, k.session, k.actor, k.ck.Short())
			return
		}
	}
	cs := conflictPaths(res.Conflicts)
	if want(res.Reverted) != want(re.reverted) || want(cs) != want(slices.Sorted(slices.Values(re.conflicts))) {
		cat := "revert"
		for _, q := range res.Reverted {
			if underAny(q, re.unreadable) {
				cat = "revert-unreadable" // M32
			}
			if slices.Contains(re.blocked, q) {
				cat = "revert-blocked" // M33
			}
		}
		r.failf(cat, "%s reverted %v with conflicts %v; the model expects %v reverted, conflicts %v (the change: %v; unreadable now: %v)",
			what, res.Reverted, cs, re.reverted, re.conflicts, re.changed, re.unreadable)
		return
	}
	nothing := len(re.edits) == 0 && len(re.conflicts) == 0
	if res.Nothing != nothing {
		r.failf("revert", "%s says nothing to revert: %v; the model: %v", what, res.Nothing, nothing)
	}
}

// opRevert reverts a checkpoint's change in a session.
func (r *runner) opRevert(p *project, op *Op) {
	s := op.Session
	T, ref, maybe := p.target(op.Target, op.Form, s)
	h := p.head(s)
	if T == nil || maybe || h == nil || T.kind == "unknown" || T.expired {
		r.stats["revert: no target or head the model knows"]++
		return
	}
	var P *ckRec
	if !T.parent.IsZero() {
		if P = p.byID[T.parent]; P == nil || P.kind == "unknown" || P.expired {
			r.stats["revert: parent unknown or expired"]++
			return
		}
	}
	d0, o0 := r.mustScan(p), p.scanOut()
	if len(p.edits(s).Changes) > 0 {
		r.stats["revert: edits pending"]++
	}
	// The present, as the move's safety capture reads it: the rules on
	// disk only (M11).
	probe := scope{files: true, movesHead: true, diskRules: true}
	m0 := p.expectMove(d0, o0, h, h, probe, nil, nil)
	// What a move leaves alone: unreadable then, state documents (what
	// cannot be read now is a conflict).
	leave := slices.Clone(T.skipped)
	if P != nil {
		leave = append(leave, P.skipped...)
	}
	for q := range m0.exclude {
		leave = append(leave, q)
	}
	for q := range m0.others {
		leave = append(leave, q)
	}
	re := p.predictRevert(s, T, P, !op.Scoped, m0.safety.files, d0, leave, m0.safety.unreadable)
	what := fmt.Sprintf("revert -s %s of %s's change", s, T)
	if !op.Scoped {
		what += " --all"
	}
	flow := workflow.New(p.repo)
	ro := workflow.RevertOptions{Session: s, Ref: ref, All: !op.Scoped}
	if re.unsure == "" && r.disabled["revert-unreadable"] && slices.ContainsFunc(re.changed, func(q string) bool { return underAny(q, re.unreadable) }) {
		// M32 is open: the engine reverts what it cannot read; the
		// model does not follow it there (a dry run only).
		re.unsure = "a path of the change cannot be read now (M32 open)"
	}
	if re.unsure == "" && r.disabled["revert-blocked"] && len(re.blocked) > 0 {
		re.unsure = "a path of the change lies under a file the restore cannot replace (M33 open)"
	}
	if re.unsure != "" {
		// What the model cannot predict it does not do: a dry run only.
		r.stats["revert: not predicted (dry run only): "+re.unsure]++
		ro.DryRun = true
		if _, err := flow.Revert(r.ctx, ro); err != nil && !errors.Is(err, snap.ErrPartial) {
			r.failf("revert", "%s --dry-run: %v", what, err)
		}
		r.checkUnchanged(p, d0, o0, what+" --dry-run")
		return
	}
	if op.DryRun {
		ro.DryRun = true
		dres, derr := flow.Revert(r.ctx, ro)
		r.checkUnchanged(p, d0, o0, what+" --dry-run")
		r.checkHeads(p)
		if derr != nil && !errors.Is(derr, snap.ErrPartial) {
			r.failf("revert", "%s --dry-run: %v", what, derr)
		}
		r.checkRevertAnswer(what+" --dry-run", re, dres)
		ro.DryRun = false
	}
	res, err := flow.Revert(r.ctx, ro)
	if err != nil && !errors.Is(err, snap.ErrPartial) {
		r.failf("revert", "%s: %v", what, err)
		r.resyncAfterUnmodelled(p, s)
		return
	}
	r.checkRevertAnswer(what, re, res)
	if len(r.fails) > 0 {
		r.resyncAfterUnmodelled(p, s)
		return
	}
	if (len(re.conflicts) > 0) != errors.Is(err, snap.ErrPartial) {
		r.failf("revert", "%s: %v; the model expects conflicts %v", what, err, re.conflicts)
	}
	if len(re.edits) == 0 {
		r.checkUnchanged(p, d0, o0, what+" (nothing to write)")
		if res.Checkpoint != nil {
			r.failf("revert", "%s wrote nothing, yet recorded %s", what, res.Checkpoint.Short())
			r.resyncAfterUnmodelled(p, s)
		}
		r.stats["revert: nothing written"]++
		return
	}
	rr := res.Rewind
	if rr == nil || rr.SafetyCheckpoint == nil || res.Checkpoint == nil {
		r.failf("revert", "%s: reports no move, safety checkpoint or checkpoint (%+v)", what, res)
		r.resyncAfterUnmodelled(p, s)
		return
	}
	paths := re.reverted
	sc := scope{files: true, paths: paths, movesHead: true}
	msc := sc
	msc.diskRules = true
	m0 = p.expectMove(d0, o0, h, h, msc, nil, nil)
	expDisk := tree{}
	for q, e := range d0 {
		if e.K != 'd' || feat.emptyDirs {
			expDisk[q] = e
		}
	}
	expFiles := m0.safety.files.clone()
	for _, q := range paths {
		if e := re.edits[q]; e != nil {
			expFiles[q] = *e
		} else {
			delete(expFiles, q)
		}
	}
	// A file the revert takes out of the record stays on disk when the
	// end's own rules ignore it, as a move to the end would leave it (M40);
	// an ignore file the present could not read (over the size limit)
	// holds an older version in the end, not rules (M18).
	endRules := recordRulesUnder(expFiles, excludeOf(d0), m0.safety.unreadable)
	for _, q := range paths {
		e := re.edits[q]
		if e == nil {
			if !endRules.ignored(q, false) {
				delete(expDisk, q)
			}
			continue
		}
		expDisk[q], expFiles[q] = *e, *e
		if feat.emptyDirs {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				expDisk[a], expFiles[a] = ent{K: 'd'}, ent{K: 'd'}
			}
		}
	}
	me := moveExp{disk: expDisk, out: o0, mayFail: map[string]bool{}, protected: map[string]bool{}, why: map[string]string{},
		optionalDirs: map[string]bool{}, safety: m0.safety, safetyDoc: m0.safetyDoc, docWrites: map[string]bool{}}
	tgt := &ckRec{session: s, files: expFiles, kind: "revert"}
	merr := err
	if errors.Is(err, snap.ErrPartial) && len(rr.Errors) == 0 {
		merr = nil // (the conflicts, not the restore)
	}
	ok, d1, o1 := r.checkMove(p, what, d0, o0, me, tgt, h, s, rr, merr)
	if !ok {
		r.resyncAfterUnmodelled(p, s)
		return
	}
	sid := *rr.SafetyCheckpoint
	docs := map[string]doc{}
	for n, d := range m0.safetyDoc {
		docs[n] = d
	}
	if sr := p.byID[sid]; sr != nil {
		docs = map[string]doc{}
		for n, d := range sr.docs {
			docs[n] = d
		}
	}
	rec := &ckRec{id: *res.Checkpoint, session: s, files: expFiles, docs: docs, kind: "revert", parent: sid}
	r.verifyRecord(p, rec, capExp{files: expFiles, unreadable: m0.safety.unreadable}, "revert checkpoint")
	r.checkKind(p, rec.id, "revert")
	rec = p.add(rec)
	p.logMove(s, p.byID[sid], rec, paths, true, p.byID[sid], rec)
	so := &stackOp{kind: "rewind", what: "revert", step: r.step, session: s, oldHead: h.id, newHead: rec.id, target: rec.id, safety: sid,
		scope: sc, before: d0, after: d1, outBefore: o0, outAfter: o1, exclude: excludeOf(d0),
		created: createdIgnored(d0, d1, recordRules(m0.safety.files, d0), rec.files, sc.paths), createdDocs: map[string]string{}, allApplied: true}
	so.safetyReused = !rr.SafetyCreated
	r.push(p, s, so)
	p.noteOrder(s, sid)
	setHead(p, s, rec.id)
	r.stats["revert: written"]++
	if len(re.kept) > 0 {
		r.stats["revert: kept another actor's path"]++
	}
	if len(re.conflicts) > 0 {
		r.stats["revert: conflicts"]++
	}
}
