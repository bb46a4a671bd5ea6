package model

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
	"github.com/snapcore-dev/snap/merge"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/workflow"
)

// The git project: the second project is a real git repository (git init,
// user.name and user.email in its local config, an initial commit of the
// starting tree), where the agent's commits also go on the current git
// branch, as `snap edit commit --git-commit` and `snap task commit
// --git-commit` make them: the harness calls the gitbridge API the CLI
// calls (cmd/snap/cmd_git.go: gitbridge.Open, CheckCommit before snap
// records anything, Commit after), and reads the result with the real git
// binary. Its ops (drawn only there, gitWeights): git-commit and git-add
// (git add, git add -N, git rm --cached, git reset: the user's index, which
// the commit must respect).
//
// The promises checked (categories in brackets):
//
//   - the commit is refused before snap records anything (nothing on disk,
//     no checkpoint, the changes still pending; HEAD and the index as they
//     were) exactly when the index differs from HEAD at one of the paths
//     it would commit (an edit commit: the pending paths; a task commit:
//     what changed since the task's task-begin checkpoint, and the pending
//     paths) [git-commit-refused];
//   - otherwise snap's commit is checked as without git, and then the git
//     commit: HEAD moves by one commit whose only parent is the old HEAD,
//     whose tree is the old HEAD's with each path that changed between the
//     two checkpoints (the edit commit's safety checkpoint and its
//     checkpoint; the task's task-begin and task-commit checkpoints) as the
//     second has it (gone when it does not, unless it is still on disk:
//     not the commit's to delete; a file or link that replaced a
//     directory drops every file HEAD has beneath it, those snap does not
//     record too, since git keeps nothing beneath a file: M19) and every
//     other path as it was; no commit, and HEAD where it was, when that
//     tree is the old one; the index entries of the committed paths (those
//     dropped beneath a file too) are the new HEAD's, every other
//     entry is as it was; what it reports committed is what changed
//     [git-commit];
//   - only the task's own change goes on the branch (N3): where HEAD holds
//     a regular file that differs from both the begin's and the end's,
//     and the begin's is a regular file, what is committed is the begin to
//     end change applied to HEAD's content by lines; when that cannot be
//     (not text, overlapping lines) the git commit is refused, naming the
//     path, and HEAD and the index stay as they were [git-commit-refused].

// gitEnv is the environment of every git command: no user or system
// configuration (the repository's own holds user.name and user.email).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
}

// gitIn runs git in dir and returns its output.
func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// gitInit makes dir a git repository with one commit of what it holds.
func gitInit(dir string) error {
	for _, args := range [][]string{
		{"init", "-q", "--template=", "-b", "main"},
		{"config", "user.name", "Model Harness"},
		{"config", "user.email", "model@example.invalid"},
		{"add", "-A"},
		{"commit", "-q", "--no-verify", "-m", "the starting tree"},
	} {
		if _, err := gitIn(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// haveGit: the git binary runs (else no project is a git repository).
var haveGit = func() bool { _, err := exec.LookPath("git"); return err == nil }()

// gitState is what the harness reads of a git repository: HEAD, HEAD's
// tree (path → "mode hash"; directories "040000 tree") and the index
// (path → "mode hash stage", stages joined by ";").
type gitState struct {
	head  string
	tree  map[string]string
	index map[string]string
}

func readGitState(dir string) (gitState, error) {
	g := gitState{tree: map[string]string{}, index: map[string]string{}}
	out, err := gitIn(dir, "rev-parse", "-q", "--verify", "HEAD")
	if err != nil {
		return g, err
	}
	g.head = strings.TrimSpace(out)
	if out, err = gitIn(dir, "ls-tree", "-r", "-t", "-z", "HEAD"); err != nil {
		return g, err
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		meta, p, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type hash
		if len(f) == 3 {
			g.tree[p] = f[0] + " " + f[2]
			if f[1] == "tree" {
				g.tree[p] = "040000 tree"
			}
		}
	}
	if out, err = gitIn(dir, "ls-files", "-s", "-z"); err != nil {
		return g, err
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		meta, p, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		if g.index[p] != "" {
			g.index[p] += ";"
		}
		g.index[p] += meta
	}
	return g, nil
}

// blobs is HEAD's tree without its directories.
func (g gitState) blobs() map[string]string {
	out := map[string]string{}
	for p, e := range g.tree {
		if e != "040000 tree" {
			out[p] = e
		}
	}
	return out
}

// gitEntry is the "mode hash" git records for a model entry ("" for none
// git holds: a directory, a FIFO).
func gitEntry(e ent) string {
	mode := map[byte]string{'f': "100644", 'x': "100755", 'l': "120000"}[e.K]
	if mode == "" {
		return ""
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(e.Data))
	h.Write([]byte(e.Data))
	return mode + " " + hex.EncodeToString(h.Sum(nil))
}

// stagedAt lists the paths among ps where the index differs from HEAD (a
// directory: at some path beneath it), or holds a conflict.
func (g gitState) stagedAt(ps []string) []string {
	var out []string
	for _, p := range ps {
		p = strings.TrimSuffix(p, "/")
		if g.tree[p] == "040000 tree" {
			for q, e := range g.index {
				if strings.HasPrefix(q, p+"/") && indexDiffers(e, g.tree[q]) {
					out = append(out, p)
					break
				}
			}
			for q, e := range g.tree {
				if strings.HasPrefix(q, p+"/") && e != "040000 tree" && g.index[q] == "" {
					out = append(out, p)
					break
				}
			}
			continue
		}
		if indexDiffers(g.index[p], g.tree[p]) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return slicesCompact(out)
}

func slicesCompact(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// indexDiffers: an index entry ("mode hash stage", "" none) differs from
// HEAD's ("mode hash", "" none).
func indexDiffers(idx, head string) bool {
	if idx == "" {
		return head != ""
	}
	f := strings.Fields(idx)
	if strings.Contains(idx, ";") || len(f) != 3 || f[2] != "0" {
		return true // a conflict
	}
	return f[0]+" "+f[1] != head
}

// ---------------------------------------------------------------------------
// Ops.

func genGitAdd(rng *rand.Rand, g *genState, op *Op) {
	switch n := rng.IntN(10); {
	case n < 6:
		op.Edit = "add"
	case n < 7:
		op.Edit = "add-n"
	case n < 9:
		op.Edit = "rm-cached"
	default:
		op.Edit = "reset"
		return
	}
	// Mostly a path a commit would touch: one with pending changes.
	var c []string
	for _, s := range sessions {
		if pe := g.p.pending[s]; pe != nil {
			c = append(c, pe.paths()...)
		}
	}
	sort.Strings(c)
	if len(c) > 0 && rng.IntN(3) > 0 {
		op.Path = c[rng.IntN(len(c))]
	} else {
		op.Path = g.editable(rng, false)
	}
}

func genGitCommit(rng *rand.Rand, g *genState, op *Op) {
	op.Task = rng.IntN(3) == 0
	open := func(s string) bool { td, err := taskDocOf(g.p.head(s)); return err == nil && len(td.Stack) > 0 }
	pending := func(s string) bool { pe := g.p.pending[s]; return pe != nil && len(pe.Changes) > 0 }
	if op.Task {
		op.Session = randSession(rng)
		for _, s := range sessions {
			if open(s) && rng.IntN(5) > 0 {
				op.Session = s
				break
			}
		}
		op.KeepOpen = rng.IntN(6) == 0
	} else {
		op.Session = editSession(rng, g)
	}
	op.Text = randText(rng, "summary")
	if !slices.ContainsFunc(sessions, pending) && !op.Task && rng.IntN(4) > 0 {
		op.Kind = "edit-stage" // nothing to commit: stage first
		genStage(rng, g, op)
	}
}

func (r *runner) opGitAdd(p *project, op *Op) {
	if !p.git {
		return
	}
	d0, o0 := r.mustScan(p), p.scanOut()
	var err error
	switch op.Edit {
	case "add":
		_, err = gitIn(p.root, "add", "--", op.Path)
	case "add-n":
		_, err = gitIn(p.root, "add", "-N", "--", op.Path)
	case "rm-cached":
		_, err = gitIn(p.root, "rm", "-q", "--cached", "--", op.Path)
	case "reset":
		_, err = gitIn(p.root, "reset", "-q")
	}
	r.checkUnchanged(p, d0, o0, "git "+op.Edit)
	if err != nil {
		r.stats["git "+op.Edit+" failed"]++
	} else {
		r.stats["git "+op.Edit]++
	}
}

// opGitCommit is `snap edit commit --git-commit` or `snap task commit
// --git-commit`, as the CLI runs them.
func (r *runner) opGitCommit(p *project, op *Op) {
	if !p.git {
		return
	}
	s := op.Session
	g0, err := readGitState(p.root)
	if err != nil {
		r.failf("harness", "reading the git repository: %v", err)
		return
	}
	d0, o0 := r.mustScan(p), p.scanOut()
	b, err := gitbridge.Open(p.repo, "")
	if err != nil {
		r.failf("git-commit", "gitbridge.Open: %v", err)
		return
	}
	pe := p.edits(s)
	kind := "edit commit"
	var begin *objects.ID
	var paths []string
	st, err := workflow.New(p.repo).EditStatus(r.ctx, s)
	if err != nil {
		r.failf("api-error", "edit status: %v", err)
		return
	}
	if op.Task {
		kind = "task commit"
		tt, err := workflow.New(p.repo).Tasks(r.ctx, s, nil)
		if err != nil {
			tt = &workflow.TaskTree{}
		}
		if tt.Current != nil {
			for _, t := range tt.Tasks {
				if t.ID == *tt.Current {
					begin = t.Begin
				}
			}
			if begin == nil {
				// The CLI refuses: the files the task changed are unknown.
				r.stats["git task commit: begin gone"]++
				return
			}
		}
		if begin != nil {
			cps, err := b.ChangedPaths(r.ctx, *begin, nil)
			if err != nil {
				r.failf("git-commit", "ChangedPaths from the task's begin %s: %v", begin.Short(), err)
				return
			}
			// What the model says changed since the task began.
			if br := p.byID[*begin]; br != nil && !br.expired {
				// (The working tree captured as a child of the begin: a
				// file it cannot read keeps the begin's entry.)
				exp := expectCapture(d0, capOpts{parent: br.files, exclude: p.excludedSources(expectDocs(p.head(s), nil, nil))})
				if msg := sameChangedPaths(cps, br.files, exp.files); msg != "" {
					r.failf("git-commit", "ChangedPaths(task %d's begin, the working tree): %s", *tt.Current, msg)
				}
			}
			paths = cps
		}
	}
	for _, c := range st.Pending {
		paths = append(paths, c.Path)
	}
	checked := !op.Task || begin != nil
	what := fmt.Sprintf("%s --git-commit in session %s (pending %s; git paths %v)", kind, s, pe, paths)
	if checked {
		cerr := b.CheckCommit(r.ctx, paths)
		staged := g0.stagedAt(paths)
		switch {
		case cerr != nil && len(staged) == 0:
			r.failf("git-commit-refused", "%s: refused (%v); the index differs from HEAD at none of them", what, cerr)
		case cerr == nil && len(staged) > 0:
			r.failf("git-commit-refused", "%s: not refused, though the index differs from HEAD at %v", what, staged)
		case cerr != nil && !errors.Is(cerr, snap.ErrConflict):
			// The git repository's state refuses it: a conflict (N10).
			r.failf("git-commit-refused", "%s: refused with %v, not a conflict", what, cerr)
		}
		if cerr != nil {
			r.stats["git commit refused: staged"]++
			r.checkUnchanged(p, d0, o0, "a refused git commit")
			r.checkGitUnchanged(p, g0, "a refused "+kind)
			return
		}
	}
	var rec *ckRec
	switch {
	case !op.Task:
		rec = r.commitEdits(p, op, false)
	case len(pe.Changes) > 0:
		rec = r.commitEdits(p, op, true)
	default:
		tc := *op
		tc.Kind = "task-commit"
		rec = r.opTaskCheckpoint(p, &tc)
	}
	if rec == nil || !checked {
		r.checkGitUnchanged(p, g0, "a "+kind+" that made no git commit")
		return
	}
	from := begin
	if !op.Task {
		node, _, err := p.repo.ReadNode(r.ctx, rec.id)
		if err != nil || len(node.Parents) == 0 {
			r.failf("git-commit", "%s: the commit's checkpoint %s: %v (no parent)", what, rec.id.Short(), err)
			return
		}
		f := node.Parents[0]
		from = &f
	}
	d1 := r.mustScan(p)
	res, cerr := b.Commit(r.ctx, *from, rec.id, strings.TrimSpace(op.Text))
	g1, err := readGitState(p.root)
	if err != nil {
		r.failf("harness", "reading the git repository: %v", err)
		return
	}
	fr := p.byID[*from]
	if fr == nil || fr.expired {
		r.stats["git commit from an unknown checkpoint"]++
		return
	}
	// The model: what changed between the two checkpoints.
	var changed []string
	for q, e := range rec.files {
		if e.K != 'd' && !e.same(fr.files[q]) {
			changed = append(changed, q)
		}
	}
	for q, e := range fr.files {
		if r, ok := rec.files[q]; (!ok || r.K == 'd') && e.K != 'd' {
			changed = append(changed, q) // gone, or a directory now
		}
	}
	sort.Strings(changed)
	staged := g0.stagedAt(changed)
	if len(staged) > 0 {
		if cerr == nil {
			r.failf("git-commit-refused", "%s: committed, though the index differs from HEAD at %v", what, staged)
		}
		r.stats["git commit refused after snap's commit"]++
		r.checkGitUnchanged(p, g0, "a refused git commit")
		return
	}
	want := g0.blobs()
	touched := append([]string(nil), changed...)
	// N3: only the task's own change goes on the branch; where it cannot
	// be applied to HEAD's content alone, nothing is committed.
	var refused []string
	own := map[string]string{}
	for _, q := range changed {
		if e, ok := rec.files[q]; ok && e.K != 'd' {
			if entry, why := ownChangeEntry(p.root, g0, fr.files, q, e); why != "" {
				refused = append(refused, q+": "+why)
			} else if entry != "" {
				own[q] = entry
			}
		}
	}
	if len(refused) > 0 {
		if cerr == nil || !errors.Is(cerr, snap.ErrConflict) || !strings.Contains(cerr.Error(), strings.SplitN(refused[0], ":", 2)[0]) {
			r.failf("git-commit-refused", "%s: committed or refused otherwise (%v); the model expects the commit refused, naming %s", what, cerr, refused[0])
		}
		r.stats["git commit refused: the task's change cannot be applied alone"]++
		r.checkGitUnchanged(p, g0, "a refused git commit")
		return
	}
	if len(own) > 0 {
		r.stats["git commit: the task's own change applied to HEAD's"]++
	}
	if cerr != nil {
		r.failf("git-commit", "%s: snap recorded %s, but the git commit failed: %v", what, rec.id.Short(), cerr)
		return
	}
	for _, q := range changed {
		if e, ok := rec.files[q]; ok && e.K == 'd' {
			// A file or link that became a directory: it goes, what HEAD
			// has beneath it (nothing but its own files) stays (M22).
			delete(want, q)
		} else if ok {
			want[q] = gitEntry(e)
			if o := own[q]; o != "" {
				want[q] = o
			}
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				delete(want, a) // a file there becomes the directory
			}
			// A directory there becomes the file: git keeps nothing
			// beneath it, not even what snap did not record (M19).
			for b := range g0.blobs() {
				if strings.HasPrefix(b, q+"/") {
					delete(want, b)
					touched = append(touched, b)
				}
			}
		} else if e, on := d1[q]; on && e.K != 'd' {
			// Absent from the checkpoint but on disk (ignored,
			// unreadable): not the commit's to delete.
		} else {
			delete(want, q)
		}
	}
	var wantPaths []string
	sort.Strings(touched)
	for _, q := range slicesCompact(touched) {
		if want[q] != g0.blobs()[q] {
			wantPaths = append(wantPaths, q)
		}
	}
	if res == nil {
		r.failf("git-commit", "%s: no result", what)
		return
	}
	if fmt.Sprint(orEmpty(res.Paths)) != fmt.Sprint(orEmpty(wantPaths)) {
		r.failf("git-commit", "%s: reports the paths %v committed; the model expects %v", what, res.Paths, wantPaths)
	}
	if len(wantPaths) == 0 {
		if res.Commit != "" || g1.head != g0.head {
			r.failf("git-commit", "%s: made commit %q (HEAD %s -> %s), though nothing differs from HEAD", what, res.Commit, g0.head, g1.head)
		}
		r.stats["git commit: nothing to commit"]++
		return
	}
	r.stats["git commit made"]++
	if res.Commit == "" || g1.head != res.Commit {
		r.failf("git-commit", "%s: reports commit %q, HEAD is %s (was %s)", what, res.Commit, g1.head, g0.head)
		return
	}
	if out, err := gitIn(p.root, "rev-list", "--parents", "-n", "1", "HEAD"); err != nil || strings.TrimSpace(out) != g1.head+" "+g0.head {
		r.failf("git-commit", "%s: the new HEAD's parents are %q (%v); the model expects the old HEAD %s only", what, strings.TrimSpace(out), err, g0.head)
	}
	if d := diffMaps(want, g1.blobs()); len(d) > 0 {
		r.failf("git-commit", "%s: the new HEAD's tree is not the old one with the changed paths as the checkpoint has them:\n  %s", what, strings.Join(d, "\n  "))
	}
	for q := range mergeKeys(g0.index, g1.index) {
		wantIdx := g0.index[q]
		if contains(res.Paths, q) {
			wantIdx = ""
			if e := g1.tree[q]; e != "" && e != "040000 tree" {
				wantIdx = e + " 0"
			}
		}
		if g1.index[q] != wantIdx {
			r.failf("git-commit", "%s: the index entry of %s is %q, the model expects %q (before: %q)", what, q, g1.index[q], wantIdx, g0.index[q])
		}
	}
}

// ownChangeEntry is what a --git-commit commits at q, which the task's
// end holds as e (N3): "" for e itself, unless HEAD holds a regular file
// there that differs from both the task's begin (begin) and e, and the
// begin a regular file too: then the begin-to-end change applied to
// HEAD's content by lines, or why it cannot be (not text, overlapping).
func ownChangeEntry(dir string, g0 gitState, begin tree, q string, e ent) (entry, refuse string) {
	if e.K != 'f' && e.K != 'x' {
		return "", ""
	}
	mode, hh, _ := strings.Cut(g0.tree[q], " ")
	if mode != "100644" && mode != "100755" {
		return "", ""
	}
	b, ok := begin[q]
	if !ok || b.K != 'f' && b.K != 'x' {
		return "", ""
	}
	hash := func(x ent) string { _, h, _ := strings.Cut(gitEntry(ent{K: 'f', Data: x.Data}), " "); return h }
	if hash(b) == hh || hash(e) == hh {
		return "", ""
	}
	head, err := gitIn(dir, "cat-file", "blob", hh)
	if err != nil {
		return "", "HEAD's content unreadable: " + err.Error()
	}
	if !merge.IsText([]byte(head)) || !merge.IsText([]byte(b.Data)) || !merge.IsText([]byte(e.Data)) {
		return "", "not text"
	}
	m, hunks := merge.Lines([]byte(head), []byte(b.Data), []byte(e.Data))
	if len(hunks) > 0 {
		return "", "overlaps HEAD's content"
	}
	return gitEntry(ent{K: e.K, Data: string(m)}), ""
}

// sameChangedPaths compares the paths snap says changed from a to b with
// the model's (files, symlinks; directories left out).
func sameChangedPaths(got []string, a, b tree) string {
	var g, w []string
	for _, q := range got {
		dirOrNone := func(t tree) bool { e, ok := t[q]; return !ok || e.K == 'd' }
		if !strings.HasSuffix(q, "/") && !(dirOrNone(a) && dirOrNone(b)) {
			g = append(g, q)
		}
	}
	for _, c := range modelChanges(a, b) {
		w = append(w, c.path)
	}
	sort.Strings(g)
	g = slicesCompact(g) // a directory that became a file (or back) is listed twice
	if fmt.Sprint(g) != fmt.Sprint(w) {
		return fmt.Sprintf("lists %v, the model %v", g, w)
	}
	return ""
}

// checkGitUnchanged: HEAD and the index are as in g0.
func (r *runner) checkGitUnchanged(p *project, g0 gitState, what string) {
	g1, err := readGitState(p.root)
	if err != nil {
		r.failf("harness", "reading the git repository: %v", err)
		return
	}
	if g1.head != g0.head {
		r.failf("git-commit-refused", "%s moved HEAD from %s to %s", what, g0.head, g1.head)
	}
	if d := diffMaps(g0.index, g1.index); len(d) > 0 {
		r.failf("git-commit-refused", "%s changed the index:\n  %s", what, strings.Join(d, "\n  "))
	}
}

func diffMaps(want, got map[string]string) []string {
	var out []string
	for q := range mergeKeys(want, got) {
		if want[q] != got[q] {
			out = append(out, fmt.Sprintf("%s: %q, the model expects %q", q, got[q], want[q]))
		}
	}
	sort.Strings(out)
	if len(out) > 12 {
		out = append(out[:12], "...")
	}
	return out
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
