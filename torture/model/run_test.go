package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// failure is one broken promise.
type failure struct {
	Cat  string `json:"cat"` // category: what kind of promise (see categories in doc.go)
	Msg  string `json:"msg"`
	Step int    `json:"step"`
}

// runner applies ops to real projects and checks each against the model.
type runner struct {
	dir      string
	projs    []*project
	step     int
	fails    []failure
	disabled map[string]bool
	logf     func(format string, args ...any) // nil: quiet
	ctx      context.Context
	stats    map[string]int
	lastCLI  []string // the last read-only command run
	times    map[string]time.Duration
	// unwatch stops the watch daemon of the first project and waits for it
	// (nil: none runs).
	unwatch func()
}

func newRunner(dir string, disabled map[string]bool, logf func(string, ...any)) (*runner, error) {
	r := &runner{dir: dir, disabled: disabled, logf: logf, ctx: context.Background(), stats: map[string]int{}, times: map[string]time.Duration{}}
	for i := 0; i < 2; i++ {
		p := &project{idx: i, root: filepath.Join(dir, fmt.Sprintf("p%d", i+1)), outside: filepath.Join(dir, fmt.Sprintf("p%d-out", i+1)),
			heads: map[string]objects.ID{}, byID: map[objects.ID]*ckRec{}, labels: map[string]objects.ID{},
			undo: map[string][]*stackOp{}, redo: map[string][]*stackOp{}, order: map[string][]objects.ID{}, inOrder: map[objects.ID]bool{},
			pending: map[string]*pendingEdits{}, taskFloor: map[string]int{}, ext: filepath.Join(dir, fmt.Sprintf("p%d-ext", i+1))}
		for _, d := range []string{p.root, p.outside, p.ext} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		// A small starting tree; the first project has a .git directory
		// (a fake one: its files are the harness's), the second is a
		// real git repository (git_test.go), when git runs here.
		start := map[string]string{"src/main.go": "package main\n", "x": "x1\n", "README": "hello\n"}
		if i == 0 {
			start[".git/HEAD"] = "ref: refs/heads/main\n"
			start[".gitignore"] = "*.log\n"
		}
		for f, c := range start {
			if err := writeFileAt(p.root, f, c, false); err != nil {
				return nil, err
			}
		}
		if i == 1 && haveGit {
			if err := gitInit(p.root); err != nil {
				return nil, err
			}
			p.git = true
		}
		repo, _, err := snap.Init(snap.Options{Dir: p.root})
		if err != nil {
			return nil, err
		}
		p.repo, p.store = repo, repo.StoreDir
		if err := repo.ConfigSet(r.ctx, "capture.max-file-size", fmt.Sprint(maxFileSize)); err != nil {
			return nil, err
		}
		r.projs = append(r.projs, p)
		if i == 0 && os.Getenv("SNAP_MODEL_NO_WATCH") == "" {
			// The first project's captures build on a watch daemon's
			// answers (snap watch): every check of the model then holds
			// of monitored checkpoints too (issue 24).
			if err := r.startWatch(p); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// startWatch runs project p's watch daemon until close.
func (r *runner) startWatch(p *project) error {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.repo.Watch(ctx, 0, nil)
	}()
	r.unwatch = func() { cancel(); <-done }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := p.repo.WatchStatus(time.Second); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the watch daemon of %s did not answer within 10s", p.root)
		}
	}
}

func (r *runner) close() {
	if r.unwatch != nil {
		r.unwatch()
	}
	for _, p := range r.projs {
		p.repo.Close()
	}
	for _, p := range r.projs {
		makeWritable(p.root)
	}
}

func (r *runner) failf(cat, format string, args ...any) {
	if r.disabled[cat] {
		r.stats["suppressed "+cat]++
		return
	}
	msg := fmt.Sprintf(format, args...)
	r.fails = append(r.fails, failure{Cat: cat, Msg: msg, Step: r.step})
	if r.logf != nil {
		r.logf("step %d: FAIL [%s] %s", r.step, cat, msg)
	}
}

func (r *runner) mustScan(p *project) tree {
	d, err := p.scan()
	if err != nil {
		r.failf("harness", "scanning %s: %v", p.root, err)
		return tree{}
	}
	return d
}

// apply runs one op and its checks.
func (r *runner) apply(op *Op) {
	r.step++
	p := r.projs[op.Proj%len(r.projs)]
	for _, q := range r.projs {
		q.curOp = op.ID
	}
	r.stats["op "+op.Kind]++
	if r.logf != nil && os.Getenv("SNAP_MODEL_TRACE") != "" {
		r.logf("step %d: %s", r.step, op)
	}
	start := time.Now()
	defer func() { r.times["op "+op.Kind] += time.Since(start) }()
	switch op.Kind {
	case "checkpoint":
		r.opCheckpoint(p, op)
	case "rewind":
		r.opRewind(p, op)
	case "undo":
		r.opUndo(p, op, true)
	case "redo":
		r.opUndo(p, op, false)
	case "label":
		r.opLabel(p, op)
	case "gc":
		r.opGC(p, op)
	case "fsck":
		r.fsck(p)
	case "blame":
		r.opBlame(p, op)
	case "hook-turn":
		r.opHookTurn(p, op)
	case "revert":
		r.opRevert(p, op)
	default:
		if !r.agentOp(p, op) {
			r.fsOp(p, op)
		}
	}
	r.checkHeads(p)
	if op.Then != "" {
		// Undo (and redo) at once: exact (opUndo's checks).
		r.checkAgent(p, op)
		for _, k := range strings.Split(op.Then, ",") {
			r.opUndo(p, &Op{Kind: k, Session: op.Session, Scoped: true}, k == "undo")
			r.checkHeads(p)
		}
	}
	t0 := time.Now()
	r.checkAgent(p, op)
	r.times["agent checks"] += time.Since(t0)
	if op.CLI != nil {
		t := time.Now()
		r.runCLI(p, op.CLI)
		r.times["cli"] += time.Since(t)
	}
}

// cmdOf is the CLI command line equivalent to a snap op (for the shell
// version of a failing sequence); ref is the REF the op used.
func (r *runner) cmdOf(p *project, op *Op, ref string) [][]string {
	cmds := r.cmdOf1(p, op, ref)
	if op.Then != "" && cmds != nil {
		for _, k := range strings.Split(op.Then, ",") {
			cmds = append(cmds, []string{k, "-s", op.Session, "--json"})
		}
	}
	return cmds
}

func (r *runner) cmdOf1(p *project, op *Op, ref string) [][]string {
	switch op.Kind {
	case "checkpoint":
		c := []string{"checkpoint", "-s", op.Session, "--json"}
		if op.Conv { // when the file exists, as the harness does
			c = append(c, "${CA[@]}")
		}
		if op.Tasks {
			c = append(c, "${TA[@]}")
		}
		if op.Label != "" {
			c = append(c, "--label", op.Label)
		}
		if op.AllowEmpty {
			c = append(c, "--allow-empty")
		}
		for _, q := range op.Paths {
			c = append(c, "--paths", q)
		}
		if op.Actor != "" {
			c = append(c, "--actor", op.Actor)
		}
		if op.Call != "" {
			c = append(c, "--call", op.Call)
		}
		return [][]string{c}
	case "rewind":
		c := []string{"rewind", "-s", op.Session, ref, "--json"}
		switch op.Scope {
		case "files":
			c = append(c, "--files-only")
		case "conv":
			c = append(c, "--conversation-only")
		case "paths":
			for _, q := range op.Paths {
				c = append(c, "--path="+q)
			}
		}
		if !op.Scoped {
			c = append(c, "--all")
		}
		if op.DryRun {
			return [][]string{append(append([]string{}, c...), "--dry-run"), c}
		}
		return [][]string{c}
	case "undo", "redo":
		if !op.Scoped {
			return [][]string{{op.Kind, "-s", op.Session, "--json", "--all"}}
		}
		return [][]string{{op.Kind, "-s", op.Session, "--json"}}
	case "label":
		return [][]string{{"label", "-s", op.Session, ref, op.Label}}
	case "gc":
		return [][]string{[][]string{{"gc"}, {"gc", "--keep-last", "3", "--keep-within", "0s", "--grace", "0s"}, {"gc", "--grace", "0s"}}[op.Policy]}
	case "fsck":
		return [][]string{{"fsck", "--full"}}
	case "blame":
		if op.Path == "" {
			return nil
		}
		return [][]string{{"blame", "-s", op.Session, op.Path, "--json"}}
	case "revert":
		c := []string{"revert", "-s", op.Session, ref, "--json"}
		if !op.Scoped {
			c = append(c, "--all")
		}
		if op.DryRun {
			return [][]string{append(append([]string{}, c...), "--dry-run"), c}
		}
		return [][]string{c}
	}
	return agentCmd(op)
}

// ---------------------------------------------------------------------------
// File-system operations: what a user or an agent does between snap
// commands. Errors (an op made meaningless by earlier ones) only make it do
// nothing.

func (r *runner) fsOp(p *project, op *Op) {
	root := p.root
	full := filepath.Join(root, op.Path)
	var err error
	switch op.Kind {
	case "write":
		err = writeFileAt(root, op.Path, op.Data, op.Exec)
	case "append":
		if fi, e := os.Lstat(full); e == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o600 == 0o600 {
			var f *os.File
			if f, err = os.OpenFile(full, os.O_APPEND|os.O_WRONLY, 0); err == nil {
				_, err = f.WriteString(op.Data)
				f.Close()
			}
		}
	case "rm":
		err = clearPath(root, op.Path)
	case "mv":
		if fi, e := os.Lstat(full); e == nil && op.Path2 != op.Path && !strings.HasPrefix(op.Path2, op.Path+"/") && !strings.HasPrefix(op.Path, op.Path2+"/") {
			dst := filepath.Join(root, op.Path2)
			if di, e := os.Lstat(dst); e == nil && di.IsDir() {
				if names, _ := os.ReadDir(dst); len(names) > 0 || !fi.IsDir() {
					break // rename(2) would fail: leave it
				}
			}
			if err = prepareParent(root, op.Path2); err == nil {
				err = os.Rename(full, dst)
			}
		}
	case "chmod":
		if fi, e := os.Lstat(full); e == nil && fi.Mode().IsRegular() {
			m := fi.Mode().Perm() &^ 0o111
			if op.Exec {
				m |= 0o111 & (m >> 2 & 0o111)
				m |= 0o100
			}
			err = os.Chmod(full, m)
		}
	case "symlink":
		err = symlinkAt(root, op.Path, op.Data)
	case "mkdir":
		err = mkdirAt(root, op.Path)
	case "swap":
		if fi, e := os.Lstat(full); e == nil {
			if fi.IsDir() {
				err = writeFileAt(root, op.Path, op.Data, false) // a directory becomes a file
			} else {
				err = writeFileAt(root, op.Path+"/"+fileNames[len(op.Data)%len(fileNames)], op.Data, false) // a file becomes a directory
			}
		}
	case "fifo":
		err = mkfifoAt(root, op.Path)
	case "big":
		err = writeFileAt(root, op.Path, op.Data, false)
	case "unreadable":
		if canUnread {
			if fi, e := os.Lstat(full); e == nil && fi.Mode().IsRegular() {
				err = os.Chmod(full, 0)
			}
		}
	case "readable":
		if fi, e := os.Lstat(full); e == nil && fi.Mode().IsRegular() {
			err = os.Chmod(full, 0o644|fi.Mode().Perm()&0o111)
		}
	case "ignore", "exclude", "gitfile":
		if op.Del {
			if fi, e := os.Lstat(full); e == nil && !fi.IsDir() {
				err = os.Remove(full)
			}
		} else {
			err = writeFileAt(root, op.Path, op.Data, false)
		}
	case "transcript":
		cp := p.convPath()
		switch op.Path {
		case "append":
			var f *os.File
			if f, err = os.OpenFile(cp, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
				_, err = f.WriteString(op.Data)
				f.Close()
			}
		case "replace":
			tmp := cp + ".new"
			if err = os.WriteFile(tmp, []byte(op.Data), 0o644); err == nil {
				err = os.Rename(tmp, cp)
			}
		case "delete":
			if fi, e := os.Lstat(cp); e == nil && !fi.IsDir() {
				err = os.Remove(cp)
			}
		case "move": // the agent's transcript moves into the project or out of it
			p.convIn = !p.convIn
			if fi, e := os.Lstat(cp); e == nil && fi.Mode().IsRegular() {
				os.Remove(p.convPath())
				err = os.Rename(cp, p.convPath())
			}
		}
	case "tasks":
		if op.Del {
			os.Remove(p.tasksPath())
		} else {
			err = os.WriteFile(p.tasksPath(), []byte(op.Data), 0o644)
		}
	default:
		r.failf("harness", "unknown op %q", op.Kind)
	}
	if err != nil {
		r.stats["fs op failed"]++
	}
}

// ---------------------------------------------------------------------------
// Snap operations.

func (r *runner) opCheckpoint(p *project, op *Op) {
	r.checkpointVia(p, op, nil)
}

// viaHook is a checkpoint a hook event records (hook_test.go): what the
// event's capture is (kind, message id), and the hook that records it,
// which returns the checkpoint's id and whether it was unchanged.
type viaHook struct {
	kind, msgID string
	record      func() (snap.ID, bool, error)
}

// checkpointVia runs a checkpoint op (with hook set: the checkpoint a
// hook event records, op holding the options the event amounts to) and
// checks it.
func (r *runner) checkpointVia(p *project, op *Op, hook *viaHook) {
	d0 := r.mustScan(p)
	o0 := p.scanOut()
	h := p.head(op.Session)
	given := map[string]doc{}
	var state []snap.StateDoc
	for _, g := range []struct {
		want       bool
		name, from string
	}{{op.Conv, "conversation", p.convPath()}, {op.Tasks, "todo", p.tasksPath()}} {
		if !g.want {
			continue
		}
		if d, err := snap.ReadStateDoc(g.name, g.from, nil); err == nil {
			state = append(state, d)
			data := string(d.Data)
			if d.Data == nil && d.Source != "" { // read when the checkpoint is taken
				data, _ = readOutside(d.Source)
			}
			given[g.name] = doc{Data: data, Source: d.Source}
		}
	}
	expDocs := expectDocs(h, given, nil)
	co := capOpts{exclude: p.excludedSources(expDocs)}
	if h != nil {
		co.parent = h.files
	}
	exp := expectCapture(d0, co)
	if len(op.Paths) > 0 && h != nil {
		for _, s := range h.skipped {
			co.parentSkipped = append(co.parentSkipped, strings.TrimSuffix(s, "/"))
		}
		exp = expectEditSet(d0, co, op.Paths)
	}
	var labels []string
	if op.Label != "" {
		labels = []string{op.Label}
	}
	opts := snap.CheckpointOptions{Session: op.Session, Labels: labels, State: state, Paths: op.Paths, Actor: op.Actor, Call: op.Call}
	allowEmpty := op.AllowEmpty && setBoolField(&opts, "AllowEmpty", true)
	var res *snap.CheckpointResult
	var err error
	if hook == nil {
		res, err = p.repo.Checkpoint(r.ctx, opts)
	} else {
		res = &snap.CheckpointResult{}
		res.ID, res.Unchanged, err = hook.record()
	}
	r.checkUnchanged(p, d0, o0, "checkpoint")
	if err != nil && hook != nil {
		r.failf("hook", "%s hook event: %v", hook.kind, err)
		r.resyncHead(p, op.Session)
		return
	}
	if err != nil {
		r.failf("api-error", "checkpoint: %v", err)
		r.resyncHead(p, op.Session)
		return
	}
	if res.Monitored {
		r.stats["checkpoint built on the watch daemon"]++
	}
	same := h != nil && len(labels) == 0 && recordMatches(exp, h.files) && docsEqual(expDocs, h.docs) &&
		fmt.Sprint(exp.unreadable) == fmt.Sprint(trimAll(h.skipped))
	if unchanged, ok := boolField(res, "Unchanged"); ok {
		switch {
		case unchanged && (!same || allowEmpty || res.ID != h.id):
			cat := "checkpoint-unchanged"
			if h != nil && !same && res.ID == h.id && !allowEmpty {
				if d := recordDiff(exp, h.files); len(d) > 0 {
					cat = recordDiffCat(exp, d)
				}
			}
			r.failf(cat, "checkpoint reported Unchanged (id %s) but the model expects a new checkpoint (head %v, labels %v, allow-empty %v)", res.ID.Short(), h, labels, allowEmpty)
		case !unchanged && same && !allowEmpty:
			cat := "checkpoint-unchanged"
			if _, files, _, err := p.readRecord(res.ID); err == nil {
				if d := diffTrees(h.files, files, 12); len(d) > 0 {
					cat = recordDiffCat(exp, d)
				}
			}
			r.failf(cat, "a checkpoint identical to its parent %s recorded a new checkpoint %s", h, res.ID.Short())
		}
		if unchanged {
			r.stats["checkpoint unchanged"]++
			return // nothing recorded, nothing to undo
		}
	}
	rec := &ckRec{id: res.ID, session: op.Session, files: exp.files, docs: expDocs, labels: labels, skipped: exp.unreadable, kind: "checkpoint",
		actor: op.Actor, call: op.Call}
	if h != nil {
		rec.parent = h.id
	}
	what := "checkpoint"
	if hook != nil {
		what = hook.kind + " checkpoint of a hook"
		rec.msgID = hook.msgID
	}
	r.verifyRecord(p, rec, exp, what)
	r.checkActor(p, rec)
	if hook != nil {
		r.checkKind(p, rec.id, hook.kind)
	}
	for _, d := range res.Files.Deleted {
		if why, ok := exp.skipped[d]; ok && why != "not a regular file" {
			r.failf("skipped-recorded-deleted", "checkpoint %s reports %s as deleted, but it was only skipped (%s)", res.ID.Short(), d, why)
		}
	}
	if len(op.Paths) == 0 && hook == nil {
		r.checkSkipped("checkpoint", res.Skipped, exp)
	}
	p.logCk(p.add(rec))
	so := &stackOp{kind: "checkpoint", step: r.step, session: op.Session, newHead: res.ID}
	if h != nil {
		so.oldHead = h.id
	}
	for _, l := range labels {
		so.labels = append(so.labels, labelChange{name: l, old: p.labels[l], new: res.ID})
		p.labels[l] = res.ID
	}
	r.push(p, op.Session, so)
	p.noteOrder(op.Session, res.ID)
	p.heads[op.Session] = res.ID
}

func (r *runner) push(p *project, session string, so *stackOp) {
	p.undo[session] = append(p.undo[session], so)
	p.redo[session] = nil
}

// boolField reads a bool field of a result struct by name, if it has one
// (the API grows while this harness runs against it).
func boolField(v any, name string) (bool, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	f := rv.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}

func trimAll(s []string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		out = append(out, strings.TrimSuffix(x, "/"))
	}
	sort.Strings(out)
	return out
}

// setBoolField sets a bool field of an options struct by name, if it has
// one, and reports whether it did.
func setBoolField(v any, name string, b bool) bool {
	f := reflect.ValueOf(v).Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false
	}
	f.SetBool(b)
	return true
}

// recordMatches: a recorded tree is what the capture expectation allows.
func recordMatches(exp capExp, got tree) bool { return len(recordDiff(exp, got)) == 0 }

func recordDiff(exp capExp, got tree) []string { return diffTrees(exp.files, got, 12) }

// recordDiffCat names the cause of a record difference: an ignored
// directory an edit-set records, or (any other) record-files.
func recordDiffCat(exp capExp, d []string) string {
	for _, line := range d {
		q := line[:strings.Index(line, ":")]
		if !exp.ignoredDirs[q] || !strings.HasSuffix(line, "unexpected (d)") {
			return "record-files"
		}
	}
	return "editset-ignored-dir"
}

// verifyRecord reads checkpoint rec.id back and compares it with the
// model; on a difference the model takes what the store holds, so later
// checks measure later operations.
func (r *runner) verifyRecord(p *project, rec *ckRec, exp capExp, what string) {
	ck, files, docs, err := p.readRecord(rec.id)
	if err != nil {
		r.failf("store-read", "%s %s cannot be read back: %v", what, rec.id.Short(), err)
		return
	}
	if d := recordDiff(exp, files); len(d) > 0 {
		cat := recordDiffCat(exp, d)
		r.failf(cat, "%s %s records a tree other than the model's:\n  %s", what, rec.id.Short(), strings.Join(d, "\n  "))
	}
	rec.files = files
	if !docsEqual(docs, rec.docs) {
		r.failf("record-state", "%s %s records state documents %s, the model expects %s", what, rec.id.Short(), docsString(docs), docsString(rec.docs))
		rec.docs = docs
	}
	var parent objects.ID
	if len(ck.Parents) > 0 {
		parent = ck.Parents[0]
	}
	var skipped []string
	for _, s := range ck.Skipped {
		skipped = append(skipped, strings.TrimSuffix(s, "/"))
	}
	sort.Strings(skipped)
	if fmt.Sprint(skipped) != fmt.Sprint(exp.unreadable) {
		r.failf("record-skipped", "%s %s records unreadable paths %v, the model expects %v", what, rec.id.Short(), skipped, exp.unreadable)
	}
	rec.skipped = append([]string(nil), ck.Skipped...)
	if parent != rec.parent {
		r.failf("record-parent", "%s %s has parent %s, the model expects %s", what, rec.id.Short(), parent.Short(), rec.parent.Short())
		rec.parent = parent
	}
	if ck.Session != rec.session {
		r.failf("record-parent", "%s %s has session %q, the model expects %q", what, rec.id.Short(), ck.Session, rec.session)
	}
}

// checkSkipped compares the skipped paths a capture reported with the
// model's.
func (r *runner) checkSkipped(what string, got []worktree.Skipped, exp capExp) {
	gs := map[string]bool{}
	for _, s := range got {
		gs[strings.TrimSuffix(s.Path, "/")] = true
	}
	var missing, extra []string
	for p := range exp.skipped {
		if !gs[p] {
			missing = append(missing, p)
		}
	}
	for p := range gs {
		if _, ok := exp.skipped[p]; !ok {
			extra = append(extra, p)
		}
	}
	if len(missing)+len(extra) > 0 {
		sort.Strings(missing)
		sort.Strings(extra)
		r.failf("skipped-report", "%s: skipped paths not reported: %v; reported but not expected: %v", what, missing, extra)
	}
}

// checkUnchanged: an operation that must not touch the working tree or
// the state-document sources did not.
func (r *runner) checkUnchanged(p *project, d0 tree, o0 outState, what string) {
	d1 := r.mustScan(p)
	if d := diffTrees(d0, d1, 10); len(d) > 0 {
		r.failf("changed-tree", "%s changed the working tree:\n  %s", what, strings.Join(d, "\n  "))
	}
	if o1 := p.scanOut(); !o1.equal(o0) {
		r.failf("changed-tree", "%s changed state-document sources: %s -> %s", what, o0, o1)
	}
}

// checkHeads compares every session head with the model.
func (r *runner) checkHeads(p *project) {
	for _, s := range sessions {
		// The newest checkpoint as log lists it: through the session's
		// index, which SNAP_TEST_CHECK_INDEX (TestMain) checks against
		// the whole log.
		if _, err := p.repo.Log(r.ctx, snap.LogOptions{Session: s, N: 1}); err != nil && !errors.Is(err, snap.ErrCorrupt) {
			r.failf("index", "session %s: log: %v", s, err)
		}
		id, err := p.repo.Resolve(r.ctx, s, "@")
		want := p.heads[s]
		switch {
		case errors.Is(err, snap.ErrNoCheckpoint) && want.IsZero():
		case err != nil:
			r.failf("head", "session %s: resolving @: %v (model head %s)", s, err, want.Short())
			r.resyncHead(p, s)
		case id != want:
			r.failf("head", "session %s: head is %s, the model expects %s", s, id.Short(), want.Short())
			r.resyncHead(p, s)
		}
	}
}

func (r *runner) resyncHead(p *project, s string) {
	p.logGap() // the store recorded what the model does not know
	id, err := p.repo.Refs().Get("sessions/" + s + "/head")
	if err != nil {
		delete(p.heads, s)
		return
	}
	p.heads[s] = id
	if _, ok := p.byID[id]; !ok {
		rec := &ckRec{id: id, session: s, kind: "unknown"}
		if _, files, docs, err := p.readRecord(id); err == nil {
			rec.files, rec.docs = files, docs
		}
		p.add(rec)
	}
}

// target resolves an op's checkpoint choice to a REF string and the
// model's checkpoint (nil when the REF must not resolve). maybe: the
// engine may resolve it or not (an expired checkpoint whose objects are
// still in the store, named by prefix or @~1).
func (p *project) target(origin int, form, session string) (rec *ckRec, ref string, maybe bool) {
	if len(p.cks) == 0 {
		return nil, "0123456789ab", false
	}
	c := p.cks[0]
	for _, k := range p.cks {
		if k.origin == origin {
			c = k
			break
		}
		if k.origin < origin {
			c = k
		}
	}
	switch form {
	case "@":
		h := p.head(session)
		return h, "@", false
	case "@~1":
		h := p.head(session)
		if h == nil || h.parent.IsZero() {
			return nil, "@~1", false
		}
		par := p.byID[h.parent]
		if par == nil {
			return nil, "@~1", true
		}
		return par, "@~1", par.expired
	case "label":
		for _, l := range labelNames {
			if p.labels[l] == c.id {
				return c, l, false
			}
		}
	case "prefix":
		return c, c.id.String()[:12], c.expired
	}
	if c.expired {
		return nil, c.id.String(), false
	}
	return c, c.id.String(), false
}

func scopeOf(op *Op) (scope, snap.RewindOptions) {
	// Scoped: only what the session's own actors changed since the
	// target moves back (actors_test.go); else every path (All).
	o := snap.RewindOptions{Session: op.Session, All: !op.Scoped}
	switch op.Scope {
	case "files":
		o.FilesOnly = true
		return scope{files: true}, o
	case "conv":
		o.ConversationOnly = true
		return scope{state: true}, o
	case "paths":
		o.Paths = op.Paths
		return scope{files: true, paths: op.Paths}, o
	}
	return scope{files: true, state: true}, o
}

func (r *runner) opRewind(p *project, op *Op) {
	sc, opts := scopeOf(op)
	tgt, ref, maybe := p.target(op.Target, op.Form, op.Session)
	opts.Target = ref
	d0 := r.mustScan(p)
	o0 := p.scanOut()
	h := p.head(op.Session)
	if tgt == nil || maybe {
		_, err := p.repo.Rewind(r.ctx, opts)
		if err == nil && maybe && tgt != nil {
			r.stats["rewind to an expired checkpoint resolved"]++
			r.resyncAfterUnmodelled(p, op.Session)
			return
		}
		if !errors.Is(err, snap.ErrNoCheckpoint) {
			r.failf("api-error", "rewind to %q (no such checkpoint in the model) gave %v, want a no-such-checkpoint error", ref, err)
		}
		r.checkUnchanged(p, d0, o0, "a refused rewind")
		return
	}
	me := p.expectMove(d0, o0, tgt, h, sc, nil, nil)
	if missing := me.missingPaths(sc, tgt); missing != "" {
		_, err := p.repo.Rewind(r.ctx, opts)
		if !errors.Is(err, snap.ErrNoPath) {
			r.failf("paths-missing", "rewind --path %s, which is neither in the target nor in the tree, gave %v, want a no-such-path error", missing, err)
		}
		r.checkUnchanged(p, d0, o0, "a refused rewind")
		r.checkHeads(p)
		return
	}
	// Actor-scoped: the model's own reading of what the move keeps.
	var se *scopedExp
	if op.Scoped && sc.files {
		se = p.predictScoped(op.Session, tgt, me, sc.paths, d0)
	}
	if op.DryRun {
		opts.DryRun = true
	}
	var dres *snap.RewindResult
	var derr error
	if op.DryRun {
		dres, derr = p.repo.Rewind(r.ctx, opts)
		r.checkUnchanged(p, d0, o0, "rewind --dry-run")
		r.checkHeads(p)
		if derr != nil && !errors.Is(derr, snap.ErrPartial) {
			r.failf("api-error", "rewind --dry-run to %s: %v", tgt, derr)
		}
		opts.DryRun = false
	}
	res, err := p.repo.Rewind(r.ctx, opts)
	what := "rewind to " + tgt.String() + " (" + sc.String() + ")"
	if op.Scoped {
		what = "scoped " + what
	}
	if op.DryRun && dres != nil {
		r.checkKept(what+" --dry-run", se, dres.Kept)
	}
	if se != nil && len(sc.paths) > 0 && err == nil && res != nil && len(res.Kept) > 0 && res.SafetyCheckpoint == nil {
		// A rewind of some paths that keeps every one of them does
		// nothing and records nothing (adversarial A4).
		if r.checkKept(what, se, res.Kept) && se.unsure == "" && !se.idle {
			r.failf("actor-end", "%s kept %v and did nothing; the model expects it to change some of its paths", what, keptNames(res.Kept))
		}
		r.checkUnchanged(p, d0, o0, what+", which kept every path")
		r.stats["scoped move: paths all kept, nothing done"]++
		return
	}
	if se != nil && se.unsure == "" && se.idle && len(sc.paths) > 0 && res != nil && res.SafetyCheckpoint != nil {
		r.failf("actor-end", "%s: the model expects every path kept (%s) and nothing done (A4); it moved", what, se.keptString())
	}
	var built objects.ID
	mtgt := tgt
	if err == nil || errors.Is(err, snap.ErrPartial) {
		var end tree
		built, end = r.scopedEnd(p, what, "rewind", se, tgt, res, objects.ID{})
		if se != nil {
			me = p.rescoped(me, d0, o0, tgt, end, h, sc, nil, nil)
			mtgt = withEnd(tgt, end)
		}
	}
	ok, d1, o1 := r.checkMove(p, what, d0, o0, me, mtgt, h, op.Session, res, err)
	if op.DryRun && res != nil && dres != nil {
		r.compareDry(dres, derr, res, err)
	}
	if !ok {
		r.resyncAfterUnmodelled(p, op.Session)
		return
	}
	r.checkOverwritten(what, se, d0, d1)
	brec := r.addBuilt(p, what, op.Session, "rewind", built, tgt, mtgt.files)
	so := &stackOp{kind: "rewind", step: r.step, session: op.Session, newHead: tgt.id, target: tgt.id, scope: sc,
		before: d0, after: d1, outBefore: o0, outAfter: o1, exclude: excludeOf(d0), allApplied: !op.Scoped}
	if h != nil {
		so.oldHead = h.id
	}
	if res.SafetyCheckpoint != nil {
		so.safety = *res.SafetyCheckpoint
	}
	so.safetyReused = !res.SafetyCreated
	so.newHead = newHeadOf(sc, tgt.id, h, res)
	if brec != nil {
		// The move ends on the end it built: the head goes there where
		// it would have gone to the target, and a redo goes there again.
		so.target, so.scopedFrom = brec.id, tgt.id
		if so.newHead == tgt.id {
			so.newHead = brec.id
		}
	}
	so.created = createdIgnored(d0, d1, recordRules(me.safety.files, d0), mtgt.files, sc.paths)
	so.createdDocs = p.createdDocs(me, tgt, sc, d0, o0, d1, o1)
	r.push(p, op.Session, so)
	p.noteOrder(op.Session, so.safety) // (retention counts no end a move built: never expired)
	srec := p.byID[so.safety]
	p.logMove(op.Session, srec, p.byID[so.target], sc.paths, sc.files, srec, brec)
	setHead(p, op.Session, so.newHead)
}

// filesOf is a checkpoint's files (none for a checkpoint not known).
func filesOf(rec *ckRec) tree {
	if rec == nil {
		return nil
	}
	return rec.files
}

// createdIgnored is what a rewind from disk d0 to d1 created that the
// rules on d0, those its safety checkpoint stores, or those of end, the
// tree it restored (once written, they are the rules on disk: M37), ignore, with the
// directories it made on the way to it; and, for a move limited to paths,
// the directories it made above them (M12).
func createdIgnored(d0, d1 tree, safety *ruleSet, end tree, paths []string) tree {
	r0, rEnd := diskRules(d0), recordRules(end, d0)
	out := tree{}
	for q, e := range d1 {
		if _, on := d0[q]; on {
			continue
		}
		if e.K == 'd' && len(paths) > 0 && !inScope(q, paths) && aboveScope(q, paths) {
			out[q] = e
			continue
		}
		if !r0.ignored(q, e.K == 'd') && !safety.ignored(q, e.K == 'd') && !rEnd.ignored(q, e.K == 'd') {
			continue
		}
		out[q] = e
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if e0, on := d0[a]; on && e0.K == 'd' {
				break
			}
			out[a] = d1[a] // made, or made in place of a file or link (M23)
		}
	}
	return out
}

// newHeadOf is where a rewind or redo leaves the head: at the target, or,
// restoring some paths only (like 'git checkout REF -- PATH'), where it
// was once the safety checkpoint is taken.
func newHeadOf(sc scope, target objects.ID, h *ckRec, res *snap.RewindResult) objects.ID {
	if len(sc.paths) == 0 || sc.movesHead {
		return target
	}
	if res.SafetyCreated && res.SafetyCheckpoint != nil {
		return *res.SafetyCheckpoint
	}
	if h != nil {
		return h.id
	}
	return objects.ID{}
}

func setHead(p *project, session string, id objects.ID) {
	if id.IsZero() {
		delete(p.heads, session)
	} else {
		p.heads[session] = id
	}
}

// resyncAfterUnmodelled follows the store after an operation the model
// could not predict: heads from the refs, stacks cleared.
func (r *runner) resyncAfterUnmodelled(p *project, session string) {
	p.logGap()
	r.resyncHead(p, session)
	p.undo[session], p.redo[session] = nil, nil
	p.desynced = true
}

// checkMove checks a rewind, undo or redo against the model's
// expectation; it registers the safety checkpoint. ok is false when the
// move failed as a whole (nothing to model).
func (r *runner) checkMove(p *project, what string, d0 tree, o0 outState, me moveExp, tgt, h *ckRec, session string, res *snap.RewindResult, err error) (ok bool, d1 tree, o1 outState) {
	d1, o1 = r.mustScan(p), p.scanOut()
	if err != nil && !errors.Is(err, snap.ErrPartial) {
		r.failf("api-error", "%s: %v", what, err)
		if diff := diffTrees(d0, d1, 5); len(diff) > 0 {
			r.failf("move-failed-changed", "%s failed (%v) but changed the tree:\n  %s", what, err, strings.Join(diff, "\n  "))
		}
		return false, d1, o1
	}
	if res == nil {
		r.failf("api-error", "%s: no result", what)
		return false, d1, o1
	}
	for _, e := range res.Errors {
		q := strings.TrimSuffix(e.Path, "/")
		switch {
		case me.mayFail[q]:
		case me.protected[q] && d0[q].same(tgt.files[q]):
			// Left alone as it must be, and already as in the target: an
			// error for it makes the move exit "partial" for nothing.
			r.failf("spurious-error", "%s reported %s failed (%s), but it is protected and already as in the target", what, e.Path, e.Error)
		default:
			r.failf("move-error", "%s reported %s failed (%s), which the model expects to be written", what, e.Path, e.Error)
		}
	}
	want := me.disk
	got := d1
	if !feat.emptyDirs {
		got = d1.nonDirs()
	}
	if len(me.optionalDirs) > 0 {
		want, got = want.clone(), got.clone()
		for q := range me.optionalDirs {
			if got[q].K == 'd' || got[q] == (ent{}) {
				delete(want, q)
				delete(got, q)
			}
		}
	}
	for _, line := range diffTrees(want, got, 20) {
		q := line[:strings.Index(line, ":")]
		cat := "move-content"
		switch {
		case me.created[q].K == 'd' && got[q].K == 'd' && want[q] == (ent{}):
			cat = "undo-created-dir-left" // snap's known bug M16
		case me.protected[q]:
			cat = "protected-changed"
			line += " [protected: " + me.why[q] + "]"
		case me.docWrites[q] && d0[q] == (ent{}):
			cat = "state-doc-missing" // a deleted transcript is not put back
		case me.docWrites[q]:
			cat = "state-doc"
		case d0[q] == (ent{}) && got[q] != (ent{}) && tgt.files[q] != (ent{}):
			cat = "protected-written" // the model kept it absent: protected now or by the target's rules
		}
		if cat == "move-content" || cat == "protected-written" {
			b0, ok0 := d0[q]
			t0, okT := tgt.files[q]
			line += fmt.Sprintf(" [before: %v %v; target: %v %v; target skipped %v]", ok0, b0, okT, t0, tgt.skipped)
		}
		r.failf(cat, "%s: %s", what, line)
	}
	if !o1.equal(me.out) {
		cat := "state-doc"
		for k, v := range me.out {
			if v != nil && o0[k] == nil && o1[k] == nil {
				cat = "state-doc-missing" // a deleted transcript is not put back
			}
		}
		r.failf(cat, "%s: state-document sources are %s, the model expects %s", what, o1, me.out)
	}
	// What it reports is what it did.
	reported := map[string]bool{}
	for _, q := range res.Restored {
		dir := strings.HasSuffix(q, "/")
		q = strings.TrimSuffix(q, "/") // a directory
		reported[q] = true
		if e, ok := d1[q]; !ok || !e.same(tgt.files[q]) || dir != (e.K == 'd') {
			r.failf("move-report", "%s reports %s restored, but it holds %v (target %v)", what, q, d1[q], tgt.files[q])
		}
	}
	for _, q := range res.Deleted {
		dir := strings.HasSuffix(q, "/")
		q = strings.TrimSuffix(q, "/")
		reported[q] = true
		if e, ok := d1[q]; ok && dir == (e.K == 'd') {
			r.failf("move-report", "%s reports %s deleted, but it is there (%v)", what, q, e)
		}
	}
	// A directory made or removed with what it holds shows as its files.
	covered := func(q string, e ent) bool {
		if reported[q] || me.docWrites[q] {
			return true
		}
		if e.K != 'd' {
			return false
		}
		if !feat.emptyDirs {
			return true
		}
		for p := range reported {
			if strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	for q, e := range d1 {
		if e0, ok := d0[q]; (!ok || !e0.same(e)) && !covered(q, e) {
			r.failf("move-report", "%s changed %s (%v -> %v) without reporting it", what, q, d0[q], e)
		}
	}
	for q, e := range d0 {
		if _, ok := d1[q]; !ok && !covered(q, e) {
			r.failf("move-report", "%s removed %s without reporting it", what, q)
		}
	}
	// The safety checkpoint holds the state from before.
	if res.SafetyCheckpoint == nil {
		r.failf("safety", "%s reports no safety checkpoint", what)
		return true, d1, o1
	}
	sid := *res.SafetyCheckpoint
	if known, ok := p.byID[sid]; ok {
		if d := recordDiff(me.safety, known.files); len(d) > 0 || !docsEqual(known.docs, me.safetyDoc) {
			r.failf("safety", "%s used %s as its safety checkpoint, but the model's record of it differs from the state before:\n  %s\n  docs %s vs %s",
				what, known, strings.Join(d, "\n  "), docsString(known.docs), docsString(me.safetyDoc))
		}
		if res.SafetyCreated {
			r.failf("safety", "%s reports safety checkpoint %s created, but the store already had it", what, sid.Short())
		}
		return true, d1, o1
	}
	rec := &ckRec{id: sid, session: session, files: me.safety.files, docs: me.safetyDoc, skipped: me.safety.unreadable, kind: "safety"}
	if h != nil {
		rec.parent = h.id
	}
	r.verifyRecord(p, rec, me.safety, what+": safety checkpoint")
	p.add(rec)
	return true, d1, o1
}

func (r *runner) compareDry(dres *snap.RewindResult, derr error, res *snap.RewindResult, err error) {
	errPaths := func(rr *snap.RewindResult) []string {
		var out []string
		for _, e := range rr.Errors {
			out = append(out, e.Path)
		}
		sort.Strings(out)
		return out
	}
	statePaths := func(rr *snap.RewindResult) []string {
		var out []string
		for _, s := range rr.State {
			out = append(out, s.Name+"="+s.Path)
		}
		return out
	}
	type pair struct {
		what      string
		dry, real []string
	}
	for _, c := range []pair{
		{"restored", dres.Restored, res.Restored}, {"deleted", dres.Deleted, res.Deleted},
		{"errors", errPaths(dres), errPaths(res)}, {"state", statePaths(dres), statePaths(res)},
	} {
		if !reflect.DeepEqual(sortedCopy(c.dry), sortedCopy(c.real)) {
			r.failf("dry-run", "--dry-run predicted %s %v, the rewind then did %v", c.what, c.dry, c.real)
		}
	}
	if (derr == nil) != (err == nil) {
		r.failf("dry-run", "--dry-run returned %v, the rewind %v", derr, err)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func (r *runner) opUndo(p *project, op *Op, undo bool) {
	kind := "undo"
	stack := p.undo[op.Session]
	if !undo {
		kind, stack = "redo", p.redo[op.Session]
	}
	d0 := r.mustScan(p)
	o0 := p.scanOut()
	call := func() (*snap.UndoResult, error) {
		if undo {
			return p.repo.Undo(r.ctx, op.Session, snap.UndoOptions{All: !op.Scoped})
		}
		return p.repo.Redo(r.ctx, op.Session, snap.UndoOptions{All: !op.Scoped})
	}
	if p.desynced && len(stack) == 0 {
		// The model lost track after a failure it could not predict:
		// follow whatever the store does.
		call()
		r.resyncHead(p, op.Session)
		return
	}
	if len(stack) == 0 {
		_, err := call()
		want := snap.ErrNothingToUndo
		if !undo {
			want = snap.ErrNothingToRedo
		}
		if !errors.Is(err, want) {
			r.failf("undo-stack", "%s with nothing to %s gave %v", kind, kind, err)
		}
		r.checkUnchanged(p, d0, o0, "a refused "+kind)
		return
	}
	top := stack[len(stack)-1]
	move := func() {
		if undo {
			p.undo[op.Session] = p.undo[op.Session][:len(p.undo[op.Session])-1]
			p.redo[op.Session] = append(p.redo[op.Session], top)
		} else {
			p.redo[op.Session] = p.redo[op.Session][:len(p.redo[op.Session])-1]
			p.undo[op.Session] = append(p.undo[op.Session], top)
		}
	}
	expired := func(id objects.ID) bool {
		c := p.byID[id]
		return !id.IsZero() && (c == nil || c.expired)
	}
	if top.kind != "rewind" {
		from, to := top.newHead, top.oldHead
		if !undo {
			from, to = to, from
		}
		gone := top.kind == "checkpoint" && (expired(from) || expired(to))
		conflict := top.kind == "checkpoint" && p.heads[op.Session] != from
		for _, lc := range top.labels {
			lf, lt := lc.new, lc.old
			if !undo {
				lf, lt = lt, lf
			}
			gone = gone || expired(lf) || expired(lt)
			conflict = conflict || p.labels[lc.name] != lf
		}
		_, err := call()
		r.checkUnchanged(p, d0, o0, kind+" of a "+top.kind)
		switch {
		case conflict || gone:
			if err == nil && conflict {
				r.failf("undo-stack", "%s of the %s of step %d succeeded although a ref it moves has moved since", kind, top.kind, top.step)
			}
			if err != nil {
				r.checkRefusedRefs(p, op.Session, kind, top) // refused: nothing changed
				return
			}
			r.stats[kind+" across expired checkpoints"]++
		case err != nil:
			r.failf("api-error", "%s of the %s of step %d: %v", kind, top.kind, top.step, err)
			return
		}
		if top.kind == "checkpoint" {
			if to.IsZero() {
				delete(p.heads, op.Session)
			} else {
				p.heads[op.Session] = to
			}
		}
		for _, lc := range top.labels {
			lt := lc.old
			if !undo {
				lt = lc.new
			}
			if lt.IsZero() {
				delete(p.labels, lc.name)
			} else {
				p.labels[lc.name] = lt
			}
		}
		move()
		return
	}
	target, newHead := top.safety, top.oldHead
	if !undo {
		target, newHead = top.target, top.target
	}
	tgt := p.byID[target]
	h := p.head(op.Session)
	// A redo of a move that kept paths reads the rules of the target it
	// was asked for (M27): refused once retention removed it (M36).
	rulesGone := !undo && expired(top.scopedFrom)
	if tgt == nil || expired(target) || expired(newHead) || rulesGone {
		res, err := call()
		if err == nil {
			r.failf("undo-expired", "%s of the rewind of step %d succeeded although the checkpoint it returns to (%s), the head it restores (%s) or the target whose rules it reads (%s, expired: %v) was expired by retention",
				kind, top.step, target.Short(), newHead.Short(), top.scopedFrom.Short(), rulesGone)
			r.resyncAfterUnmodelled(p, op.Session)
			_ = res
			return
		}
		r.checkUnchanged(p, d0, o0, "a refused "+kind)
		r.stats[kind+" of a rewind refused: a checkpoint it needs expired"]++
		if rulesGone {
			r.stats["redo refused: the rules' target expired (M36)"]++
		}
		return
	}
	var created tree
	var createdDocs map[string]string
	if undo {
		created, createdDocs = top.created, top.createdDocs
	}
	sc := top.scope
	if undo {
		sc.targetExclude = &top.exclude // A14
	} else if !top.scopedFrom.IsZero() {
		sc.rulesFrom = p.byID[top.scopedFrom] // M27
	}
	me := p.expectMove(d0, o0, tgt, h, sc, created, createdDocs)
	if missing := me.missingPaths(top.scope, tgt); missing != "" {
		_, err := call()
		if !errors.Is(err, snap.ErrNoPath) {
			r.failf("paths-missing", "%s of a rewind --path %s, which is neither in the target nor in the tree, gave %v, want a no-such-path error", kind, missing, err)
		}
		r.checkUnchanged(p, d0, o0, "a refused "+kind)
		return
	}
	var se *scopedExp
	if op.Scoped && top.scope.files {
		se = p.predictScoped(op.Session, tgt, me, top.scope.paths, d0)
	}
	ures, err := call()
	var res *snap.RewindResult
	if ures != nil {
		res = ures.Rewind
	}
	what := fmt.Sprintf("%s of the rewind of step %d (to %s, %s)", kind, top.step, tgt, top.scope)
	if op.Scoped {
		what = "scoped " + what
	}
	if top.what != "" {
		r.stats[kind+" of a "+top.what]++
	}
	var built objects.ID
	mtgt := tgt
	if err == nil || errors.Is(err, snap.ErrPartial) {
		var end tree
		built, end = r.scopedEnd(p, what, kind, se, tgt, res, objects.ID{})
		if se != nil {
			me = p.rescoped(me, d0, o0, tgt, end, h, sc, created, createdDocs)
			mtgt = withEnd(tgt, end)
		}
	}
	ok, d1, o1 := r.checkMove(p, what, d0, o0, me, mtgt, h, op.Session, res, err)
	if !ok {
		r.resyncAfterUnmodelled(p, op.Session)
		return
	}
	r.checkOverwritten(what, se, d0, d1)
	brec := r.addBuilt(p, what, op.Session, kind, built, tgt, mtgt.files)
	// Right after the move (nothing changed since), undo gives back
	// exactly the state before it, ignored files included, and redo the
	// state after it.
	strong := func(before, after tree, ob, oa outState, cat string) {
		if !exactEqual(d0, after) || !o0.equal(oa) {
			return
		}
		r.stats[cat+" checked"]++
		if d := diffTrees(before, d1, 12); len(d) > 0 {
			c := cat
			if len(diffTrees(before.nonDirs(), d1.nonDirs(), 1)) == 0 {
				c = cat + "-dirs"
				if top.what == "edit-commit" || top.what == "task-commit" {
					c = "edit-undo-dirs" // snap's known bug M12
				}
			} else if undo && deletesUnignored(before, d1, tgt) {
				c = "undo-deletes-unignored" // snap's known bug M13
			}
			if undo && c == cat+"-dirs" && createdDirsLeft(before, d1, top.created) {
				c = "undo-created-dir-left" // snap's known bug M16
			}
			if !undo && !top.scopedFrom.IsZero() && ignoreFilesDiffer(p.byID[top.scopedFrom], tgt) {
				c = "redo-scoped-rules" // M27: the end it built has other ignore files than its target
			}
			if undo && op.Scoped && top.safetyReused && res != nil && len(res.Kept) > 0 {
				c = "undo-scoped-reused-safety" // M28: its target is a checkpoint recorded before the move
			}
			r.failf(c, "%s does not give back the state from before exactly:\n  %s", what, strings.Join(d, "\n  "))
		}
		if !o1.equal(ob) {
			r.failf(cat, "%s does not give back the state documents: %s, before: %s", what, o1, ob)
		}
	}
	if undo && op.Scoped && res != nil && len(res.Kept) > 0 {
		// The tree is the one the move left, but not because nothing
		// happened since: another actor changed a path and changed it
		// back (M39: another session's rewind --all restored what the
		// move had written). Such a path is kept, as the model predicts
		// (scopedEnd checked it), so the undo is not the state before.
		r.stats["scoped undo keeping a path changed since and back: not the state before"]++
	} else if undo {
		strong(top.before, top.after, top.outBefore, top.outAfter, "undo-not-exact")
	} else if op.Scoped && top.allApplied && res != nil && len(res.Kept) > 0 {
		// The move was made with All, its redo without: what another
		// actor changed since its target stays now (actors_test.go).
		r.stats["redo without All of a move with All kept paths: not the state after"]++
	} else {
		strong(top.after, top.before, top.outAfter, top.outBefore, "redo-not-exact")
	}
	var srec *ckRec
	if res != nil && res.SafetyCheckpoint != nil {
		p.noteOrder(op.Session, *res.SafetyCheckpoint)
		srec = p.byID[*res.SafetyCheckpoint]
	}
	mt := tgt
	if brec != nil {
		mt = brec
	}
	p.logMove(op.Session, srec, mt, top.scope.paths, top.scope.files, srec, brec)
	if !undo && res != nil {
		newHead = newHeadOf(top.scope, top.target, h, res)
		// Undoing the redone rewind returns to the state before the redo:
		// its safety checkpoint, and the head it found.
		if res.SafetyCheckpoint != nil {
			top.safety = *res.SafetyCheckpoint
		}
		top.safetyReused = !res.SafetyCreated
		top.oldHead = objects.ID{}
		if h != nil {
			top.oldHead = h.id
		}
		top.created = createdIgnored(d0, d1, recordRules(me.safety.files, d0), mt.files, top.scope.paths)
		top.exclude = excludeOf(d0)
		top.createdDocs = p.createdDocs(me, tgt, top.scope, d0, o0, d1, o1)
	}
	if brec != nil && newHead == target {
		newHead = brec.id // where the head would have gone to the target
	}
	// The last application of the rewind, for the exact checks.
	if undo {
		if exactEqual(d0, top.after) && o0.equal(top.outAfter) {
			top.before, top.outBefore = d1, o1 // redo now gives back top.after
		} else {
			top.before, top.after = nil, nil // changed in between: no exact check
		}
	} else {
		top.before, top.outBefore, top.after, top.outAfter = d0, o0, d1, o1
		top.allApplied = !op.Scoped
	}
	setHead(p, op.Session, newHead)
	move()
	r.restage(p, op.Session, top, undo, err)
}

// checkRefusedRefs: an undo or redo of a ref move (a checkpoint, a
// label) that was refused moved none of its refs: the session head and
// the labels are where the model has them. A ref moved anyway is
// reported [undo-refused-moved] and taken as the model's (so the broader
// head check measures later operations only).
func (r *runner) checkRefusedRefs(p *project, session, kind string, top *stackOp) {
	id, err := p.repo.Refs().Get("sessions/" + session + "/head")
	if err != nil {
		id = objects.ID{}
	}
	if id != p.heads[session] {
		r.failf("undo-refused-moved", "the refused %s of the %s of step %d moved the head of session %s from %s to %s",
			kind, top.kind, top.step, session, p.heads[session].Short(), id.Short())
		r.resyncHead(p, session)
	}
	for _, lc := range top.labels {
		l, err := p.repo.Refs().Get("labels/" + lc.name)
		if err != nil {
			l = objects.ID{}
		}
		if l != p.labels[lc.name] {
			r.failf("undo-refused-moved", "the refused %s of the %s of step %d moved label %s from %s to %s",
				kind, top.kind, top.step, lc.name, p.labels[lc.name].Short(), l.Short())
			if l.IsZero() {
				delete(p.labels, lc.name)
			} else {
				p.labels[lc.name] = l
			}
		}
	}
}

// deletesUnignored: all an undo got wrong is removing files that were
// there before the rewind it undoes, ignored then by the rules on disk
// (so its safety checkpoint, tgt, does not hold them), and that the rules
// the rewind restored no longer ignore (snap's known bug M13).
func deletesUnignored(before, d1 tree, tgt *ckRec) bool {
	rs := diskRules(before)
	for _, q := range diffTrees(before.nonDirs(), d1.nonDirs(), 1000) {
		q = q[:strings.Index(q, ":")]
		if _, gone := d1[q]; gone || tgt.files[q] != (ent{}) || !rs.ignored(q, false) {
			return false
		}
	}
	return true
}

// createdDirsLeft: all an undo got wrong is leaving directories the
// rewind it undoes created (snap's known bug M16).
func createdDirsLeft(before, d1, created tree) bool {
	for _, line := range diffTrees(before, d1, 1000) {
		q := line[:strings.Index(line, ":")]
		if _, was := before[q]; was || created[q].K != 'd' || d1[q].K != 'd' {
			return false
		}
	}
	return true
}

// exactEqual compares two disks entry by entry, directories included.
func exactEqual(a, b tree) bool { return len(diffTrees(a, b, 1)) == 0 }

func (r *runner) opLabel(p *project, op *Op) {
	tgt, ref, maybe := p.target(op.Target, op.Form, op.Session)
	d0, o0 := r.mustScan(p), p.scanOut()
	id, err := p.repo.Label(r.ctx, op.Session, ref, op.Label)
	r.checkUnchanged(p, d0, o0, "label")
	switch {
	case tgt == nil && !maybe:
		if !errors.Is(err, snap.ErrNoCheckpoint) {
			r.failf("api-error", "label %s on %q (no such checkpoint) gave %v", op.Label, ref, err)
		}
		return
	case maybe && err != nil:
		return
	case err != nil:
		r.failf("api-error", "label %s %s: %v", ref, op.Label, err)
		return
	}
	if tgt != nil && id != tgt.id {
		r.failf("resolve", "label %s resolved %q to %s, the model expects %s", op.Label, ref, id.Short(), tgt)
	}
	old := p.labels[op.Label]
	if old == id {
		return // nothing moved, nothing recorded
	}
	p.labels[op.Label] = id
	r.push(p, op.Session, &stackOp{kind: "label", step: r.step, session: op.Session, labels: []labelChange{{name: op.Label, old: old, new: id}}})
}

func (r *runner) opGC(p *project, op *Op) {
	policy := p.repo.RetentionPolicy()
	grace := p.repo.GCGrace(gc.DefaultGrace)
	switch op.Policy {
	case 1:
		policy.KeepLast, policy.KeepWithin, grace = 3, 0, 0
	case 2:
		grace = 0
	}
	d0, o0 := r.mustScan(p), p.scanOut()
	_, err := gc.Collect(r.ctx, p.repo.Objects(), p.repo.Refs(), gc.Options{Grace: grace, Policy: &policy})
	if _, terr := p.repo.EmptyTrash(r.ctx); terr != nil && err == nil {
		err = terr
	}
	r.checkUnchanged(p, d0, o0, "gc")
	if err != nil {
		r.failf("api-error", "gc: %v", err)
		return
	}
	expired, err := p.repo.Refs().Expired()
	if err != nil {
		r.failf("api-error", "reading the expired list: %v", err)
		return
	}
	keep := map[objects.ID]bool{}
	for _, id := range p.heads {
		keep[id] = true
	}
	for _, id := range p.labels {
		keep[id] = true
	}
	for _, ids := range p.order {
		for i, id := range ids {
			if len(ids)-i <= policy.KeepLast || policy.KeepWithin > 0 {
				keep[id] = true
			}
		}
	}
	for _, c := range p.cks {
		if c.expired {
			continue
		}
		switch {
		case expired[c.id] && keep[c.id]:
			r.failf("gc-retention", "gc expired %s, which the policy keeps (head, label or among the last %d of its session)", c, policy.KeepLast)
		case !expired[c.id] && !keep[c.id] && p.inOrder[c.id]:
			r.failf("gc-retention", "gc kept %s, which the policy (keep-last %d, keep-within %v) expires", c, policy.KeepLast, policy.KeepWithin)
		}
		if expired[c.id] {
			c.expired = true
			continue
		}
		// Everything kept is still whole.
		_, files, docs, err := p.readRecord(c.id)
		if err != nil {
			r.failf("gc-lost", "after gc, kept checkpoint %s cannot be read: %v", c, err)
			continue
		}
		if d := diffTrees(c.files, files, 5); len(d) > 0 || !docsEqual(docs, c.docs) {
			r.failf("gc-lost", "after gc, kept checkpoint %s reads back differently:\n  %s", c, strings.Join(d, "\n  "))
		}
	}
}

// fsck runs `snap fsck --full --json`: it must pass with no error.
func (r *runner) fsck(p *project) {
	res := runSnap(p.root, "fsck", "--full", "--json")
	r.checkPanic(res)
	if res.code != 0 {
		r.failf("fsck", "fsck --full exited %d: %s\n%s", res.code, strings.TrimSpace(string(res.stderr)), clip(string(res.stdout), 2000))
		return
	}
	var rep struct {
		Problems []struct {
			Severity, Object, Path, Message string
		} `json:"problems"`
	}
	if err := jsonUnmarshal(res.stdout, &rep); err != nil {
		r.failf("fsck", "fsck --json output does not parse: %v", err)
		return
	}
	for _, pr := range rep.Problems {
		if pr.Severity != "warning" {
			r.failf("fsck", "fsck --full: %s %s %s: %s", pr.Severity, pr.Path, pr.Object, pr.Message)
		} else {
			r.stats["fsck warning: "+pr.Message]++
		}
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
