package model

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/workflow"
	"github.com/snapcore-dev/snap/worktree"
)

// commit-kill: an edit commit (or a task commit with staged edits)
// killed part way through writing its files, as kill -9 leaves it. The
// store is opened (for that one commit) on an fsys.Faulty file system and
// system-call layer: at the op.Kill-th call that changes the working tree
// the context is cancelled and that call, and every later one that
// changes anything (the tree, the store: refs, op log, journal, the
// pending changes), fails, as if the process were gone. So the journal is
// written, some of the files are (a temporary file of the one being
// written may be left), and the operation is not recorded. The store is
// then closed and opened again (a new process); when the commit has fewer
// writes than op.Kill it completes and is checked as any commit.
//
// Then, as an agent would go on: perhaps a file is written (op.Path,
// op.Data: one of the commit's paths or another file), and a command that
// changes the store runs (op.Form: "status", the next edit verb, which
// settles a commit the pending changes still name; "label", a label on
// @), and perhaps undo at once (op.AllowEmpty).
//
// The promises checked [commit-killed]:
//
//   - killed, the store reports the interrupted move (Repo.Interrupted:
//     the commit's kind and session, its safety checkpoint and the
//     checkpoint it ends on), the pending changes are still there, naming
//     the commit (committing), and the tree differs from before only at
//     the commit's paths (each as before or as committed), the directories
//     made for them and snap's temporary files;
//   - the next command completes it: every path of the commit holds what
//     the commit's checkpoint records (the new content, or gone), every
//     other path is as it was just before that command (what was written
//     in between stays; snap's temporary files are gone); the head is the
//     commit's checkpoint (the journal's); nothing stays pending; the op
//     log records the commit (its safety checkpoint, the head before it)
//     and, when the tree just before differed from both the safety
//     checkpoint and the commit's, a checkpoint of it first ("found"),
//     which holds exactly what was there: nothing is lost;
//   - undo then (a random later op, or at once with op.AllowEmpty) puts the
//     commit's paths back as in its safety checkpoint and stages the
//     changes again, as for any commit (the model's ordinary undo checks).

func genKill(rng *rand.Rand, g *genState, op *Op) {
	op.Task = rng.IntN(4) == 0
	op.Session = editSession(rng, g)
	op.Text = randText(rng, "summary")
	op.KeepOpen = op.Task && rng.IntN(6) == 0
	op.Kill = 1 + rng.IntN(10)
	op.Form = []string{"status", "status", "label"}[rng.IntN(3)]
	op.Label = labelNames[rng.IntN(len(labelNames))]
	op.AllowEmpty = rng.IntN(3) == 0 // undo at once
	pe := g.p.pending[op.Session]
	switch n := rng.IntN(3); {
	case n == 0:
	case n == 1 && pe != nil && len(pe.Changes) > 0:
		ps := pe.paths()
		op.Path = ps[rng.IntN(len(ps))]
		op.Data = randContent(rng)
	default:
		op.Path = g.editable(rng, false)
		op.Data = randContent(rng)
	}
	if pe == nil || len(pe.Changes) == 0 {
		if rng.IntN(4) > 0 { // nothing to commit: stage first
			op.Kind = "edit-stage"
			genStage(rng, g, op)
		}
	}
}

// withKill runs call on the store opened on a file system that dies at
// the k-th change to the working tree (see above); killed: it did (else
// the commit made n changes, fewer than k). p.repo is opened again after.
func (r *runner) withKill(p *project, k int, call func(*snap.Repo, context.Context)) (n int, killed bool) {
	p.repo.Close()
	defer func() {
		repo, err := snap.Open(snap.Options{Dir: p.root})
		if err != nil {
			r.failf("api-error", "opening the store again after a killed commit: %v", err)
			repo, _, _ = snap.Init(snap.Options{Dir: p.root})
		}
		p.repo = repo
	}()
	root, store := p.root, p.store
	if rr, err := filepath.EvalSymlinks(root); err == nil {
		root = rr
	}
	if rs, err := filepath.EvalSymlinks(store); err == nil {
		store = rs
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	f := fsys.NewFaulty(nil, nil)
	f.Set(fsys.Fault{At: k, Err: syscall.EIO, Persistent: true, Count: fsys.Write, Match: func(o fsys.Op) bool {
		if killed {
			return true // dead: nothing changes any more
		}
		if !strings.HasPrefix(o.Path, root+"/") || strings.HasPrefix(o.Path, store+"/") || o.Path == store {
			return false
		}
		n++
		if n == k {
			killed = true
			cancel()
		}
		return true
	}})
	repo, err := snap.Open(snap.Options{Dir: p.root, FS: f, Sys: f})
	if err != nil {
		r.failf("api-error", "opening the store on a faulty file system: %v", err)
		return 0, false
	}
	call(repo, ctx)
	repo.Close()
	return n, killed
}

// killedCommit is what commitEdits knew of a commit that was killed.
type killedCommit struct {
	kind              string
	task              bool
	want              *taskDoc
	t                 *taskEnt
	h                 *ckRec
	d0                tree
	o0                outState
	pe                *pendingEdits
	paths             []string
	sc                scope
	m0                moveExp
	expDisk, expFiles tree
}

// stripTemp removes snap's temporary files from d (and reports whether
// there were any).
func stripTemp(d tree) (tree, bool) {
	out, any := tree{}, false
	for q, e := range d {
		if strings.HasPrefix(path.Base(q), worktree.TempPrefix) {
			any = true
			continue
		}
		out[q] = e
	}
	return out, any
}

func (r *runner) afterKill(p *project, op *Op, kc killedCommit) {
	s := op.Session
	what := fmt.Sprintf("%s of %s (%s) killed at its write %d", kc.kind, strings.Join(kc.paths, ","), kc.pe, op.Kill)
	r.stats["commit-kill: killed"]++
	// Killed: the move is interrupted.
	im, err := p.repo.Interrupted(r.ctx)
	if err != nil || im == nil {
		r.failf("commit-killed", "%s: the store reports no interrupted move (%v)", what, err)
		r.resyncAfterUnmodelled(p, s)
		r.resyncPending(p, s)
		return
	}
	if im.Kind != kc.kind || im.Session != s {
		r.failf("commit-killed", "%s: the interrupted move is a %s of session %s", what, im.Kind, im.Session)
	}
	sid, cid := im.Safety, im.Target
	var ed struct {
		Committing string            `json:"committing"`
		Changes    []json.RawMessage `json:"changes"`
	}
	if data, err := os.ReadFile(filepath.Join(p.store, "edits", s+".json")); err != nil || json.Unmarshal(data, &ed) != nil ||
		ed.Committing == "" || len(ed.Changes) != len(kc.pe.Changes) {
		r.failf("commit-killed", "%s: the pending changes do not name the commit under way (committing %q, %d changes; %v)", what, ed.Committing, len(ed.Changes), err)
	}
	dMid, temps := stripTemp(r.mustScan(p))
	if temps {
		r.stats["commit-kill: temporary file left"]++
	}
	for _, line := range diffTrees(kc.d0, dMid, 20) {
		q := line[:strings.Index(line, ":")]
		switch {
		case slicesContains(kc.paths, q) && (dMid[q] == kc.expDisk[q] || dMid[q] == kc.d0[q]):
		case dMid[q].K == 'd' && kc.d0[q] == (ent{}) && aboveAny(q, kc.paths):
		default:
			r.failf("commit-killed", "%s: the killed commit left %s", what, line)
		}
	}
	headAtKill, _ := p.repo.Refs().Get("sessions/" + s + "/head")
	// What an agent does next: perhaps a write, then a command that
	// changes the store.
	if op.Path != "" {
		if err := writeFileAt(p.root, op.Path, op.Data, false); err != nil {
			r.stats["fs op failed"]++
		}
	}
	dBetween, oBetween := r.mustScan(p), p.scanOut()
	dB, _ := stripTemp(dBetween)
	switch op.Form {
	case "label":
		_, err = p.repo.Label(r.ctx, s, "@", op.Label)
	default:
		var ans *workflow.EditAnswer
		ans, err = workflow.New(p.repo).EditStatus(r.ctx, s)
		if err == nil && (len(ans.Pending) > 0 || ans.Status != "idle") {
			r.failf("commit-killed", "%s: after the next edit verb the changes are still pending (%s, %d)", what, ans.Status, len(ans.Pending))
		}
	}
	if err != nil {
		r.failf("commit-killed", "%s: the next command (%s) failed: %v", what, op.Form, err)
		r.resyncAfterUnmodelled(p, s)
		r.resyncPending(p, s)
		return
	}
	d2 := r.mustScan(p)
	// Complete: the commit's paths as committed, the rest as just before.
	want := dB.clone()
	for _, q := range kc.paths {
		if e, ok := kc.expDisk[q]; ok {
			want[q] = e
			for a := path.Dir(q); a != "." && feat.emptyDirs; a = path.Dir(a) {
				want[a] = ent{K: 'd'}
			}
		} else {
			delete(want, q)
		}
	}
	got := d2
	if !feat.emptyDirs {
		want, got = want.nonDirs(), d2.nonDirs()
	}
	if d := diffTrees(want, got, 20); len(d) > 0 {
		r.failf("commit-killed", "%s: completed by %s, the tree is not the commit's at its paths and as before elsewhere:\n  %s", what, op.Form, strings.Join(d, "\n  "))
	}
	if id, err := p.repo.Refs().Get("sessions/" + s + "/head"); err != nil || id != cid {
		r.failf("commit-killed", "%s: completed, the head is %s (%v), not the commit's checkpoint %s", what, id.Short(), err, cid.Short())
	}
	// The op log: the commit, with what was found first.
	var rop *snapOp
	if ops, err := p.repo.Ops(r.ctx, 4); err == nil { // newest first
		for i := range ops {
			if ops[i].Kind == kc.kind && ops[i].Session == s {
				o := ops[i]
				rop = &snapOp{target: o.Target, safety: o.Safety, found: o.Checkpoint}
				if len(o.Refs) > 0 {
					rop.old, rop.new = o.Refs[0].Old, o.Refs[0].New
				}
				break
			}
		}
	}
	if rop == nil {
		r.failf("commit-killed", "%s: completed, the op log does not record it", what)
		r.resyncAfterUnmodelled(p, s)
		r.resyncPending(p, s)
		return
	}
	if rop.target != cid || rop.safety != sid || rop.old != kc.h.id || rop.new != cid {
		r.failf("commit-killed", "%s: the op log records target %s, safety %s, head %s -> %s; the journal said %s, %s, from %s",
			what, rop.target.Short(), rop.safety.Short(), rop.old.Short(), rop.new.Short(), cid.Short(), sid.Short(), kc.h.id.Short())
	}
	// The model takes the checkpoints: safety, commit, and found.
	if _, ok := p.byID[sid]; !ok {
		srec := &ckRec{id: sid, session: s, files: kc.m0.safety.files, docs: kc.m0.safetyDoc, skipped: kc.m0.safety.unreadable, kind: "safety", parent: kc.h.id}
		r.verifyRecord(p, srec, kc.m0.safety, what+": safety checkpoint")
		p.add(srec)
	}
	srec := p.byID[sid]
	docs := map[string]doc{}
	for n, d := range srec.docs {
		docs[n] = d
	}
	rec := &ckRec{id: cid, session: s, files: kc.expFiles, docs: docs, kind: kc.kind, parent: sid}
	if kc.task {
		r.adoptTaskDoc(p, rec, kc.want, kc.kind+" checkpoint")
	}
	r.verifyRecord(p, rec, capExp{files: kc.expFiles, unreadable: kc.m0.safety.unreadable}, kc.kind+" checkpoint")
	r.checkKind(p, rec.id, kc.kind)
	p.add(rec)
	// What the completion found: the tree just before, under the rules on
	// disk only, as the commit's own capture (M11; journal.go).
	fe := p.expectMove(dB, oBetween, rec, srec, scope{files: true, paths: kc.paths, movesHead: true, diskRules: true}, nil, nil)
	// The same state is the same files and the same unreadable paths (as
	// for an unchanged checkpoint): a path the rules on disk no longer
	// ignore, unreadable now, makes a state no checkpoint holds (M24).
	sameAs := func(files tree, unreadable []string) bool {
		return recordMatches(fe.safety, files) && fmt.Sprint(trimAll(fe.safety.unreadable)) == fmt.Sprint(trimAll(unreadable))
	}
	wantFound := !sameAs(srec.files, srec.skipped) && (kc.task || !sameAs(rec.files, kc.m0.safety.unreadable))
	switch {
	case wantFound && rop.found.IsZero():
		r.failf("commit-killed", "%s: the tree just before the completion (neither the safety checkpoint's nor the commit's) is in no checkpoint: %s",
			what, strings.Join(diffTrees(srec.files, fe.safety.files, 8), "; "))
	case !wantFound && !rop.found.IsZero():
		r.failf("commit-killed", "%s: the completion recorded %s as found, though the tree was the safety checkpoint's or the commit's", what, rop.found.Short())
	}
	if !rop.found.IsZero() {
		r.stats["commit-kill: found recorded"]++
		frec := &ckRec{id: rop.found, session: s, files: fe.safety.files, docs: fe.safetyDoc, skipped: fe.safety.unreadable, kind: "found", parent: headAtKill}
		r.verifyRecord(p, frec, fe.safety, what+": the checkpoint of what was found")
		if _, known := p.byID[frec.id]; !known {
			p.add(frec)
		}
	}
	p.logMove(s, srec, p.byID[cid], kc.paths, true, p.byID[rop.found], srec, p.byID[cid])
	so := &stackOp{kind: "rewind", what: kc.kind, step: r.step, session: s, oldHead: kc.h.id, newHead: cid, target: cid, safety: sid,
		scope: kc.sc, edits: kc.pe.clone(), exclude: excludeOf(dB), allApplied: true, created: createdIgnored(dB, d2, recordRules(kc.m0.safety.files, dB), filesOf(p.byID[cid]), kc.paths), createdDocs: map[string]string{}}
	r.push(p, s, so)
	p.noteOrder(s, rop.found, sid)
	setHead(p, s, cid)
	p.pending[s] = &pendingEdits{}
	if kc.t != nil {
		p.taskFloor[s] = max(p.taskFloor[s], kc.t.ID+1)
	}
	if op.Form == "label" {
		old := p.labels[op.Label]
		if old != cid {
			p.labels[op.Label] = cid
			r.push(p, s, &stackOp{kind: "label", step: r.step, session: s, labels: []labelChange{{name: op.Label, old: old, new: cid}}})
		}
	}
	r.stats["commit-kill: completed by "+op.Form]++
	if op.AllowEmpty {
		r.checkHeads(p)
		r.opUndo(p, &Op{Kind: "undo", Session: s}, true)
	}
}

type snapOp struct{ target, safety, found, old, new objects.ID }

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// aboveAny: q is a directory above one of paths.
func aboveAny(q string, paths []string) bool {
	for _, p := range paths {
		if strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// The ops of git_test.go and this file: their text, generation, CLI form
// and application.

func (o Op) moreString(b *strings.Builder, q func(string) string) {
	switch o.Kind {
	case "git-commit", "commit-kill":
		fmt.Fprintf(b, " -s %s %s", o.Session, q(o.Text))
		if o.Task {
			b.WriteString(" (task commit)")
		}
		if o.KeepOpen {
			b.WriteString(" --keep-open")
		}
		if o.Kind == "commit-kill" {
			fmt.Fprintf(b, " killed at write %d", o.Kill)
			if o.Path != "" {
				fmt.Fprintf(b, ", then write %s %s", o.Path, q(o.Data))
			}
			fmt.Fprintf(b, ", then %s", o.Form)
			if o.Form == "label" {
				fmt.Fprintf(b, " %s", o.Label)
			}
			if o.AllowEmpty {
				b.WriteString(", then undo")
			}
		}
	case "git-add":
		fmt.Fprintf(b, " %s %s", o.Edit, o.Path)
	}
}

func genMore(rng *rand.Rand, g *genState, op *Op) {
	switch op.Kind {
	case "git-commit":
		genGitCommit(rng, g, op)
	case "git-add":
		genGitAdd(rng, g, op)
	case "commit-kill":
		genKill(rng, g, op)
	}
}

func moreCmd(op *Op) [][]string {
	s := op.Session
	switch op.Kind {
	case "git-commit":
		if op.Task {
			c := []string{"task", "commit", "-s", s, "--json", "--git-commit"}
			if op.KeepOpen {
				c = append(c, "--keep-open")
			}
			return [][]string{append(c, op.Text)}
		}
		return [][]string{{"edit", "commit", "-s", s, "--json", "--git-commit", op.Text}}
	case "commit-kill": // (not killed: the shell cannot stop it at a write)
		if op.Task {
			return [][]string{{"task", "commit", "-s", s, "--json", op.Text}}
		}
		return [][]string{{"edit", "commit", "-s", s, "--json", op.Text}}
	}
	return nil
}

func (r *runner) moreOp(p *project, op *Op) bool {
	switch op.Kind {
	case "git-commit":
		r.opGitCommit(p, op)
	case "git-add":
		r.opGitAdd(p, op)
	case "commit-kill":
		if op.Task && len(p.edits(op.Session).Changes) == 0 {
			tc := *op
			tc.Kind = "task-commit" // no file to write: nothing to kill
			r.opTaskCheckpoint(p, &tc)
		} else {
			r.commitEdits(p, op, op.Task)
		}
	default:
		return false
	}
	return true
}
