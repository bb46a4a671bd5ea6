package model

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
)

// maxFileSize is the capture.max-file-size of every store: files above
// it are skipped (the "big" operation makes some).
const maxFileSize = 8192

// doc is a state document as a checkpoint records it.
type doc struct {
	Data   string
	Source string
	Absent bool // the source is recorded, the file was gone (feat.absentDocs)
}

// ckRec is what the model knows a checkpoint holds.
type ckRec struct {
	id      objects.ID
	seq     int // creation order in the project, 1 = first
	origin  int // the ID of the op that made it (ops name checkpoints by it)
	session string
	parent  objects.ID
	files   tree // 'f', 'x', 'l' (and 'd' when the engine records directories)
	docs    map[string]doc
	labels  []string
	skipped []string // paths that could not be read (objects.Checkpoint.Skipped; a directory's ends in "/")
	kind    string   // checkpoint, safety
	expired bool
	// actor, call: who made the changes it records (a checkpoint op's
	// Actor and Call; "" unknown). logAt: the index in the project's log
	// (project.hist) of the first record that names it (logged: there is
	// one).
	actor, call string
	logAt       int
	logged      bool
	// firstAt: the index in project.hist of the first record that names
	// it (logAt may move on to a later move that found it: M28); msgID:
	// the message id a hook gave it (a pre-tool capture's tool call).
	firstAt int
	msgID   string
}

func (c *ckRec) String() string {
	return fmt.Sprintf("C@%d(%s %s %s)", c.origin, c.id.Short(), c.session, c.kind)
}

// labelChange is a label moved by an operation.
type labelChange struct {
	name     string
	old, new objects.ID
}

// scope is what a move (rewind, undo, redo) touches.
type scope struct {
	files, state bool
	paths        []string
	// movesHead: the move limited to paths moves the head all the same
	// (an edit commit, and so its undo and redo); no path of it is
	// refused as missing (a commit may create or delete its paths).
	movesHead bool
	// diskRules: the move's end is made from the present (an edit
	// commit): its safety capture honours the rules on disk only, not
	// the target's (M11). Never stored with an op: its undo and redo
	// move to older checkpoints, under their rules.
	diskRules bool
	// targetExclude, when set: the exclude rules the target's own are read
	// beneath (an undo's: those on disk when the move it undoes began,
	// which snap records with the move, A14); otherwise those on disk.
	targetExclude *string
	// rulesFrom: a redo's of a move that kept other actors' changes: the
	// target that move was asked for, whose ignore rules the redo honours
	// instead of its end's, as the move did (snap's scope.RulesFrom, M27,
	// M30).
	rulesFrom *ckRec
}

func (s scope) String() string {
	switch {
	case s.movesHead:
		return "edited paths " + strings.Join(s.paths, ",")
	case len(s.paths) > 0:
		return "paths " + strings.Join(s.paths, ",")
	case s.files && s.state:
		return "full"
	case s.files:
		return "files-only"
	default:
		return "conversation-only"
	}
}

// outState is the content of the state-document sources outside the
// project (nil: absent).
type outState map[string]*string

func (o outState) equal(p outState) bool {
	if len(o) != len(p) {
		return false
	}
	for k, v := range o {
		w, ok := p[k]
		if !ok || (v == nil) != (w == nil) || v != nil && *v != *w {
			return false
		}
	}
	return true
}

func (o outState) String() string {
	var keys []string
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if o[k] == nil {
			parts = append(parts, filepath.Base(k)+"=<absent>")
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d bytes", filepath.Base(k), len(*o[k])))
		}
	}
	return strings.Join(parts, " ")
}

// stackOp is an undoable operation on the model's undo/redo stacks.
type stackOp struct {
	kind    string // checkpoint, rewind, label
	step    int
	session string
	oldHead objects.ID
	newHead objects.ID
	labels  []labelChange
	// rewinds:
	target, safety objects.ID
	scope          scope
	before, after  tree // the disk around the rewind
	outBefore      outState
	outAfter       outState
	// created: what the last application of the rewind created though
	// the rules on disk ignored it (and the directories made for it), as
	// it wrote them: its undo removes what is still so. createdDocs: the
	// state-document files it wrote where nothing was (the head kept the
	// document elsewhere), source → content; likewise.
	created     tree
	createdDocs map[string]string
	// what: the operation a "rewind" entry records (rewind, edit-commit,
	// task-commit, task-revert); edits: the staged edits it committed or
	// dropped, which its undo stages again (when none are pending) and its
	// redo drops again (when they are still what is pending).
	what  string
	edits *pendingEdits
	// exclude: .git/info/exclude on disk when the last application of the
	// move began (what its undo reads the safety checkpoint's rules
	// beneath).
	exclude string
	// scopedFrom: an actor-scoped move that kept paths: the target it
	// was asked for (target is then the end it recorded). allApplied: its
	// last application (the move, or its redo) changed every path
	// (All, or a commit), not only its session's own.
	scopedFrom objects.ID
	allApplied bool
	// safetyReused: the move's safety checkpoint was one the store had
	// (the head, or the one a redo knew), recorded before the move.
	safetyReused bool
}

// project is one project directory with its own store, and the model of
// what its store holds.
type project struct {
	idx     int
	root    string
	store   string
	outside string // directory outside the project for transcripts and task files
	repo    *snap.Repo
	heads   map[string]objects.ID
	cks     []*ckRec
	byID    map[objects.ID]*ckRec
	labels  map[string]objects.ID
	undo    map[string][]*stackOp
	redo    map[string][]*stackOp
	order   map[string][]objects.ID // per session, in op-log order (retention's keep-last)
	inOrder map[objects.ID]bool
	convIn  bool // the transcript lives in the project (chat.jsonl), else outside (t.jsonl)
	curOp   int  // the ID of the op running
	// desynced: a failure left the model unable to predict the undo/redo
	// stacks (exploration runs only: a failing run stops at the failure).
	desynced bool
	// The agent workflow (agent_test.go): per session the staged edits
	// snap must hold, and one past every task id the session's operations
	// named (ids are never given out twice); ext is a directory outside
	// the project that linkdir symlinks lead to, which nothing may write.
	pending   map[string]*pendingEdits
	taskFloor map[string]int
	ext       string
	// maxDepth: tasks.max-depth as the max-depth ops set it (0: the
	// default, defaultTaskDepth).
	maxDepth int
	// git: the project is a real git repository (git_test.go): its .git
	// directory is git's (scanned for info/exclude only), and git-commit
	// and git-add ops run in it.
	git bool
	// hist: the model's own log of what the store's op log records of
	// each operation that changed the working tree (actors_test.go).
	hist []histRec
	// tag counts the lines the generator tagged (tagLines).
	tag int
}

// depth is the project's tasks.max-depth.
func (p *project) depth() int {
	if p.maxDepth == 0 {
		return defaultTaskDepth
	}
	return p.maxDepth
}

var sessions = []string{"default", "s2"}

func (p *project) convPath() string {
	if p.convIn {
		return filepath.Join(p.root, "chat.jsonl")
	}
	return filepath.Join(p.outside, "t.jsonl")
}

func (p *project) tasksPath() string { return filepath.Join(p.outside, "tasks.json") }

// outPaths are the state-document sources outside the project.
func (p *project) outPaths() []string {
	return []string{filepath.Join(p.outside, "t.jsonl"), p.tasksPath()}
}

func (p *project) scanOut() outState {
	o := outState{}
	for _, q := range p.outPaths() {
		if data, ok := readOutside(q); ok {
			o[q] = &data
		} else {
			o[q] = nil
		}
	}
	return o
}

func (p *project) scan() (tree, error) {
	t, err := scanDisk(p.root, ".snap", p.git)
	return t, err
}

func (p *project) head(session string) *ckRec {
	id, ok := p.heads[session]
	if !ok || id.IsZero() {
		return nil
	}
	return p.byID[id]
}

// add registers a checkpoint the store now holds.
func (p *project) add(c *ckRec) *ckRec {
	if old, ok := p.byID[c.id]; ok {
		return old
	}
	c.seq = len(p.cks) + 1
	c.origin = p.curOp
	p.cks = append(p.cks, c)
	p.byID[c.id] = c
	return c
}

// noteOrder records a checkpoint id the op log names for a session, in
// the order retention counts them.
func (p *project) noteOrder(session string, ids ...objects.ID) {
	for _, id := range ids {
		if id.IsZero() || p.inOrder[id] {
			continue
		}
		p.inOrder[id] = true
		p.order[session] = append(p.order[session], id)
	}
}

// relIn returns the path of abs relative to the project root, if inside.
func (p *project) relIn(abs string) (string, bool) {
	rel, err := filepath.Rel(p.root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// ---------------------------------------------------------------------------
// What a capture records.

func hasGit(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// diskRules are the ignore rules in force in a tree on disk.
func diskRules(d tree) *ruleSet {
	exclude := ""
	if e, ok := d[".git/info/exclude"]; ok && (e.K == 'f' || e.K == 'x') && readable(e) {
		exclude = e.Data
	}
	return newRuleSet(exclude, func(p string) (string, bool) {
		e, ok := d[p]
		if !ok || (e.K != 'f' && e.K != 'x') || !readable(e) || len(e.Data) > 1<<20 {
			return "", false
		}
		return e.Data, true
	}, d.isDir)
}

// recordRules are the ignore rules of a checkpoint as checked out on disk
// d: its own ignore files (.gitignore and .snapignore: .git/info/exclude is
// not recorded) beneath d's exclude file, as git would read them (M13).
func recordRules(rec, d tree) *ruleSet {
	return recordRulesUnder(rec, excludeOf(d), nil)
}

// excludeOf is d's .git/info/exclude as a capture reads it.
func excludeOf(d tree) string {
	if e, ok := d[".git/info/exclude"]; ok && (e.K == 'f' || e.K == 'x') && readable(e) {
		return e.Data
	}
	return ""
}

// recordRulesUnder: the rules of checkpoint rec beneath exclude rules;
// an ignore file among skipped (what its capture could not read: rec holds
// an older version) is not read (M18).
func recordRulesUnder(rec tree, exclude string, skipped []string) *ruleSet {
	return newRuleSet(exclude, func(p string) (string, bool) {
		e, ok := rec[p]
		if !ok || (e.K != 'f' && e.K != 'x') || underAny(p, skipped) {
			return "", false
		}
		return e.Data, true
	}, rec.isDir)
}

// underAny reports whether p is one of paths or lies beneath one (a
// directory's ends in "/").
func underAny(p string, paths []string) bool {
	for _, q := range paths {
		q = strings.TrimSuffix(q, "/")
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func readable(e ent) bool { return !e.NoRead || !canUnread }

// capExp is the model's expectation of one capture.
type capExp struct {
	files tree
	// skipped: path → why, reported as skipped; unreadable ones (not a
	// FIFO: a kind snap never stores) are also recorded in the checkpoint.
	skipped    map[string]string
	unreadable []string // sorted
	// ignoredDirs: directories on disk that are ignored.
	ignoredDirs map[string]bool
}

// capOpts are what a capture takes besides the disk.
type capOpts struct {
	parent  tree            // the head's files: what unreadable paths keep
	rules   []*ruleSet      // more rules (a rewind target's): what they ignore is not recorded
	exclude map[string]bool // project paths that are state-document sources, not files
	// parentSkipped: what the head could not read; an edit set carries
	// the marks of those it does not examine (G16).
	parentSkipped []string
}

// expectCapture computes what a capture of disk d records. A file that
// cannot be read (no permission, over the size limit) keeps the parent's
// entry: it is never recorded as deleted.
func expectCapture(d tree, o capOpts) capExp {
	rs := diskRules(d)
	ce := capExp{files: tree{}, skipped: map[string]string{},
		ignoredDirs: map[string]bool{}}
	carry := func(p string) {
		if e, ok := o.parent[p]; ok && e.K != 'd' {
			ce.files[p] = e
		}
	}
	ignored := func(p string, dir bool) bool {
		if rs.ignored(p, dir) {
			return true
		}
		for _, r := range o.rules {
			if r.ignored(p, dir) {
				return true
			}
		}
		return false
	}
	excluded := func(p string) bool {
		for q := range o.exclude {
			if p == q || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	var keptDirs []string
	underKept := func(p string) bool {
		for _, k := range keptDirs {
			if strings.HasPrefix(p, k+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range d.paths() {
		e := d[p]
		if hasGit(p) || excluded(p) || rs.ignored(p, e.K == 'd') || underKept(p) {
			if e.K == 'd' {
				ce.ignoredDirs[p] = true
			}
			continue
		}
		if ignored(p, e.K == 'd') {
			// Only the rewind target's rules ignore it: kept as it was
			// (the parent's entry, listed), never recorded as deleted.
			ce.skipped[p] = "kept: the target's rules ignore it"
			ce.unreadable = append(ce.unreadable, p)
			if e.K == 'd' {
				keptDirs = append(keptDirs, p)
			}
			// Whatever the parent had there, of any kind.
			for q, pe := range o.parent {
				if q == p || strings.HasPrefix(q, p+"/") {
					ce.files[q] = pe
				}
			}
			continue
		}
		switch e.K {
		case 'd':
			if feat.emptyDirs {
				ce.files[p] = ent{K: 'd'}
			}
		case 'f', 'x':
			switch {
			case !readable(e):
				ce.skipped[p] = "unreadable"
				ce.unreadable = append(ce.unreadable, p)
				carry(p)
			case len(e.Data) > maxFileSize:
				ce.skipped[p] = "larger than max-file-size"
				ce.unreadable = append(ce.unreadable, p)
				carry(p)
			default:
				ce.files[p] = ent{K: e.K, Data: e.Data}
			}
		case 'l':
			ce.files[p] = ent{K: 'l', Data: e.Data}
		case 'p':
			ce.skipped[p] = "not a regular file" // a kind snap never stores: not carried
		}
	}
	if feat.emptyDirs { // a carried entry needs its directories
		for p := range ce.files {
			for a := path.Dir(p); a != "."; a = path.Dir(a) {
				ce.files[a] = ent{K: 'd'}
			}
		}
	}
	sort.Strings(ce.unreadable)
	return ce
}

// expectEditSet computes what an edit-set capture (Paths) records: the
// parent's files with every given path (and what lies beneath it)
// replaced by what a full capture would record there.
func expectEditSet(d tree, o capOpts, paths []string) capExp {
	full := expectCapture(d, o)
	norm := normPaths(paths)
	if len(norm) == 0 || norm[0] == "" {
		return full
	}
	out := capExp{files: o.parent.clone(), skipped: map[string]string{}, ignoredDirs: full.ignoredDirs}
	under := func(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }
	for _, q := range norm {
		for p := range out.files {
			if under(p, q) {
				delete(out.files, p)
			}
		}
		added := false
		for p, e := range full.files {
			if under(p, q) {
				out.files[p] = e
				added = true
			}
		}
		for p, why := range full.skipped {
			if under(p, q) {
				out.skipped[p] = why
			}
		}
		if added { // a file where a directory now is gives way
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				if e, ok := out.files[a]; ok && e.K != 'd' {
					delete(out.files, a)
				}
			}
		}
	}
	for _, p := range full.unreadable {
		if _, ok := out.skipped[p]; ok {
			out.unreadable = append(out.unreadable, p)
		}
	}
	for _, p := range o.parentSkipped {
		if !slices.ContainsFunc(norm, func(q string) bool { return under(p, q) }) {
			out.skipped[p] = "unreadable at the last checkpoint"
			out.unreadable = append(out.unreadable, p)
		}
	}
	sort.Strings(out.unreadable)
	if feat.emptyDirs {
		// The directories above a given path: those gone (not
		// directories on disk any more) go when nothing is left in them;
		// none is made for what is not recorded (only the paths named
		// change: M4, seed 202).
		for _, q := range norm {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				if e, ok := out.files[a]; ok && e.K == 'd' && !d.isDir(a) && !out.files.isDirBelow(a) {
					delete(out.files, a)
				}
			}
		}
		for p := range out.files { // the directories of what is recorded
			for a := path.Dir(p); a != "."; a = path.Dir(a) {
				out.files[a] = ent{K: 'd'}
			}
		}
	}
	return out
}

// isDirBelow reports whether t has an entry beneath p.
func (t tree) isDirBelow(p string) bool {
	for q := range t {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// normPaths cleans edit-set and rewind paths as the engine does
// (relative to the root, slash-separated, nested ones dropped; "" is all).
func normPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = strings.Trim(path.Clean("/"+p), "/")
		out = append(out, p)
	}
	sort.Strings(out)
	var kept []string
	for _, p := range out {
		if n := len(kept); n > 0 && (kept[n-1] == p || kept[n-1] == "" || strings.HasPrefix(p, kept[n-1]+"/")) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// aboveScope reports whether directory p lies above one of paths.
func aboveScope(p string, paths []string) bool {
	for _, q := range normPaths(paths) {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

func inScope(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, q := range normPaths(paths) {
		if q == "" || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// expectDocs computes the state documents a capture records: those given,
// then every other document with a source path (the parent's, and extra
// ones: a rewind target's) read from it again — present, or absent when
// the file is gone (feat.absentDocs; before that, inherited as it was).
func expectDocs(parent *ckRec, given map[string]doc, extra map[string]string) map[string]doc {
	out := map[string]doc{}
	for n, d := range given {
		out[n] = d
	}
	if !feat.absentDocs {
		// The engine before absent documents: the target's sources the
		// head does not read are given (when they exist), then the
		// parent's are re-read, or inherited when gone.
		for n, src := range extra {
			if parent != nil && parent.docs[n].Source == src {
				continue
			}
			if data, ok := readOutside(src); ok {
				out[n] = doc{Data: data, Source: src}
			}
		}
		if parent == nil {
			return out
		}
		for n, d := range parent.docs {
			if _, ok := out[n]; ok {
				continue
			}
			if d.Source != "" {
				if data, ok := readOutside(d.Source); ok {
					out[n] = doc{Data: data, Source: d.Source}
					continue
				}
			}
			out[n] = d
		}
		return out
	}
	sources := map[string]string{}
	var pdocs map[string]doc
	if parent != nil {
		pdocs = parent.docs
	}
	for n, d := range pdocs {
		if d.Source != "" {
			sources[n] = d.Source
		}
	}
	for n, s := range extra {
		if _, head := sources[n]; !head {
			sources[n] = s // the head's source wins
		}
	}
	names := map[string]bool{}
	for n := range pdocs {
		names[n] = true
	}
	for n := range sources {
		names[n] = true
	}
	for n := range names {
		if _, ok := given[n]; ok {
			continue
		}
		src := sources[n]
		if src == "" { // read from stdin: kept as it was
			if d, ok := pdocs[n]; ok && !d.Absent {
				out[n] = d
			}
			continue
		}
		if data, ok := readOutside(src); ok {
			out[n] = doc{Data: data, Source: src}
		} else {
			out[n] = doc{Source: src, Absent: true}
		}
	}
	return out
}

// nowCapture is what status and diff compare with the head: a capture of
// disk d with the head's documents read again.
func (p *project) nowCapture(h *ckRec, d tree) (capExp, map[string]doc) {
	docs := expectDocs(h, nil, nil)
	co := capOpts{exclude: p.excludedSources(docs)}
	if h != nil {
		co.parent = h.files
	}
	return expectCapture(d, co), docs
}

// excludedSources: the state-document sources inside the project of the
// capture's own documents, which are not tree files (feat.docsExcluded).
// Another session's are files to it (N1: othersDocs).
func (p *project) excludedSources(docs map[string]doc) map[string]bool {
	ex := map[string]bool{}
	if !feat.docsExcluded {
		return ex
	}
	for _, d := range docs {
		if rel, in := p.relIn(d.Source); in && d.Source != "" {
			ex[rel] = true
		}
	}
	return ex
}

// othersDocs: the project paths where a session head keeps a state
// document that is not among own (the capture's excluded sources): a file
// to the capture, recorded as any other, which a move leaves as it is
// (N1).
func (p *project) othersDocs(own map[string]bool) map[string]bool {
	out := map[string]bool{}
	if !feat.docsExcluded {
		return out
	}
	for _, s := range sessions {
		h := p.head(s)
		if h == nil {
			continue
		}
		for _, d := range h.docs {
			if rel, in := p.relIn(d.Source); in && d.Source != "" && !own[rel] {
				out[rel] = true
			}
		}
	}
	return out
}

func docsEqual(a, b map[string]doc) bool {
	if len(a) != len(b) {
		return false
	}
	for n, d := range a {
		if e, ok := b[n]; !ok || e != d {
			return false
		}
	}
	return true
}

func docsString(m map[string]doc) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		if m[n].Absent {
			parts = append(parts, fmt.Sprintf("%s(absent from %s)", n, m[n].Source))
		} else {
			parts = append(parts, fmt.Sprintf("%s(%d bytes from %s)", n, len(m[n].Data), m[n].Source))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// ---------------------------------------------------------------------------
// What a move (rewind, undo, redo) leaves.

// moveExp is the model's expectation of a move.
type moveExp struct {
	disk      tree              // every path after (directories only when the engine records them)
	out       outState          // state-document sources outside the project
	mayFail   map[string]bool   // paths the move may report as failed (protected ones it cannot write)
	protected map[string]bool   // paths on disk before that were protected
	why       map[string]string // why a path is protected
	// optionalDirs: target directories holding nothing but kept paths,
	// which the move may create or not (the kept paths stay as they are).
	optionalDirs map[string]bool
	// created: for an undo, what the rewind it undoes created though the
	// rules ignored it (stackOp.created), which the undo removes.
	created   tree
	safety    capExp // the safety capture
	safetyDoc map[string]doc
	docWrites map[string]bool // document sources the move writes (paths relative to root when inside)
	exclude   map[string]bool // state-document sources in the project, this session's and the target's: left as they are
	others    map[string]bool // another session's state-document sources in the project: files, left as they are (N1)
}

// expectMove computes what a move to target T within sc leaves, from the
// disk d0 and outside state o0 before it, with session head h.
//
// Protected paths are left as they are: those ignored under the rules in
// force (on disk) or under T's own ignore files, those that cannot be read
// now or could not when T was recorded, .git, the store, and state
// documents kept in the project. Every other path ends as in T.
// created and createdDocs, for an undo, are what the rewind undone created
// (stackOp.created, stackOp.createdDocs).
func (p *project) expectMove(d0 tree, o0 outState, T *ckRec, h *ckRec, sc scope, created tree, createdDocs map[string]string) moveExp {
	return p.expectMoveEnd(d0, o0, T, T.files, h, sc, created, createdDocs)
}

// expectMoveEnd is expectMove to target T whose files are end instead of
// T's own: an actor-scoped move (actors_test.go), whose safety capture
// reads T's rules, and whose restore writes T with what another actor
// changed kept as it is.
func (p *project) expectMoveEnd(d0 tree, o0 outState, T *ckRec, end tree, h *ckRec, sc scope, created tree, createdDocs map[string]string) moveExp {
	var hfiles tree
	if h != nil {
		hfiles = h.files
	}
	me := moveExp{mayFail: map[string]bool{}, protected: map[string]bool{}, docWrites: map[string]bool{}, why: map[string]string{},
		optionalDirs: map[string]bool{}, created: created}
	ex := excludeOf(d0)
	if sc.targetExclude != nil {
		ex = *sc.targetExclude
	}
	rt := recordRulesUnder(T.files, ex, T.skipped)
	var rf *ruleSet // (M27)
	if sc.rulesFrom != nil {
		rf = recordRulesUnder(sc.rulesFrom.files, ex, sc.rulesFrom.skipped)
	}
	// The safety capture, under T's rules too: the head's documents read
	// again, and those at the target's sources.
	var extra map[string]string
	if sc.state {
		extra = map[string]string{}
		for n, d := range T.docs {
			if d.Source != "" {
				extra[n] = d.Source
			}
		}
	}
	me.safetyDoc = expectDocs(h, nil, extra)
	own := p.excludedSources(me.safetyDoc)
	// The target's sources are left alone by a move, whatever its scope
	// (model finding M1); the present records one that is a file now as
	// the file it is (seed 905).
	exclude := maps.Clone(own)
	for rel := range p.excludedSources(T.docs) {
		exclude[rel] = true
	}
	rules := []*ruleSet{rt}
	if rf != nil {
		rules, rt = []*ruleSet{rf}, rf // (M27, M30: the rules the move read)
	}
	if sc.diskRules {
		rules = nil
	}
	me.safety = expectCapture(d0, capOpts{parent: hfiles, rules: rules, exclude: own})
	me.exclude = exclude
	me.others = p.othersDocs(own)
	tf := end

	r0 := diskRules(d0)
	isDirAt := func(q string) bool {
		if e, ok := d0[q]; ok {
			return e.K == 'd'
		}
		return tf.isDir(q)
	}
	keep := map[string]bool{}
	for q, why := range me.safety.skipped {
		if why != "not a regular file" {
			keep[q] = true
		}
	}
	keepDirs := map[string]bool{} // kept directories cover what lies beneath
	for _, q := range T.skipped {
		if d, ok := strings.CutSuffix(q, "/"); ok {
			keepDirs[d] = true
		}
		keep[strings.TrimSuffix(q, "/")] = true
	}
	for q, why := range me.safety.skipped {
		if why != "not a regular file" && d0[q].K == 'd' {
			keepDirs[q] = true
		}
	}
	for q := range exclude {
		keep[q] = true
	}
	for q := range me.others { // another session's document: left as it is (N1)
		keep[q] = true
	}
	// A target directory holding nothing but kept paths is implied by
	// them: left as it is with them.
	keptOnly := func(q string) bool {
		if e, ok := tf[q]; !ok || e.K != 'd' {
			return false
		}
		if e, on := d0[q]; on && e.K != 'd' {
			me.optionalDirs[q] = true // a file in its way goes, as any other
			return false
		}
		isKept := func(r string) bool {
			if keep[r] {
				return true
			}
			for a := path.Dir(r); a != "."; a = path.Dir(a) {
				if keepDirs[a] {
					return true
				}
			}
			return false
		}
		for r, e := range tf {
			if e.K != 'd' && strings.HasPrefix(r, q+"/") && !isKept(r) {
				return false
			}
		}
		for r := range keep {
			if strings.HasPrefix(r, q+"/") {
				if _, on := d0[q]; !on {
					// Absent: made or not, with the target's empty
					// directories beneath (seed 203).
					me.optionalDirs[q] = true
					return false
				}
				return true
			}
		}
		return false
	}
	// undoable: q is as the rewind undone created it, and so is all it
	// holds: the undo removes it, though the rules protect it.
	var undoable func(q string) bool
	undoable = func(q string) bool {
		c, ok := created[q]
		if !ok || !c.same(d0[q]) {
			return false
		}
		if c.K == 'd' {
			for r := range d0 {
				if strings.HasPrefix(r, q+"/") && !undoable(r) {
					return false
				}
			}
		}
		return true
	}
	prot := func(q string) bool {
		if undoable(q) {
			return false
		}
		_, onDisk := d0[q]
		why := ""
		switch {
		case hasGit(q):
			why = "in .git"
		case keptOnly(q):
			why = "a target directory holding only kept paths"
		case me.safety.skipped[q] != "":
			why = "skipped now: " + me.safety.skipped[q]
		case onDisk && r0.ignored(q, isDirAt(q)):
			// (An absent one is written: its rewind lists it as created.)
			why = "ignored by the rules on disk"
		case onDisk && rt.ignored(q, isDirAt(q)):
			// (An absent one is the target's to write: its rules can
			// ignore what its tree has only when its ignore file could
			// not be read, and was carried: seed 301.)
			why = "ignored by the target's rules"
		}
		for a := q; a != "." && why == ""; a = path.Dir(a) {
			// A kept path covers what lies beneath it, whatever it is on
			// disk now (seed 302).
			if keep[a] {
				why = "kept (unreadable now or in the target, or a state document): " + a
			}
		}
		if why != "" {
			me.why[q] = why
		}
		return why != ""
	}
	exp := tree{}
	for q, e := range d0 {
		if e.K != 'd' || feat.emptyDirs {
			exp[q] = e
		}
	}
	if sc.files {
		all := map[string]bool{}
		for q, e := range d0 {
			if e.K != 'd' || feat.emptyDirs {
				all[q] = true
			}
		}
		for q := range tf {
			all[q] = true
		}
		for q := range all {
			if !inScope(q, sc.paths) {
				continue
			}
			if prot(q) {
				if _, on := d0[q]; on {
					me.protected[q] = true
				}
				if te, ok := tf[q]; ok && !te.same(d0[q]) {
					me.mayFail[q] = true // the target's entry cannot be written over it
				}
				continue
			}
			if te, ok := tf[q]; ok {
				exp[q] = te
			} else {
				delete(exp, q)
			}
		}
		// Protected entries win over target entries they conflict with: a
		// target file where a directory holds protected files, a target
		// path beneath a protected file.
		for changed := true; changed; {
			changed = false
			for q, e := range exp {
				if me.protected[q] {
					continue
				}
				te, fromT := tf[q]
				if !fromT || !te.same(e) || !inScope(q, sc.paths) {
					continue
				}
				conflict := false
				if e.K != 'd' {
					for r := range exp {
						if strings.HasPrefix(r, q+"/") {
							conflict = true
							break
						}
					}
				}
				for a := path.Dir(q); a != "." && !conflict; a = path.Dir(a) {
					if ae, ok := exp[a]; ok && ae.K != 'd' {
						conflict = true
					}
				}
				if conflict {
					me.mayFail[q] = true
					if e0, ok := d0[q]; ok && (e0.K != 'd' || feat.emptyDirs) {
						exp[q] = e0
					} else {
						delete(exp, q)
					}
					changed = true
				}
			}
		}
	}
	me.out = outState{}
	for k, v := range o0 {
		me.out[k] = v
	}
	if sc.state {
		for n, d := range T.docs {
			if d.Source == "" || d.Absent && !feat.absentDocs {
				continue
			}
			if hs := me.safetyDoc[n].Source; hs != "" && hs != d.Source {
				// The head keeps this document elsewhere (the safety holds
				// that copy): the target's is written where nothing, or
				// the same, is; a file that differs stays, and fails.
				if d.Absent {
					continue
				}
				if cur, there := p.docAt(d.Source, d0, o0); there && cur != d.Data {
					me.mayFail[d.Source] = true
					continue
				}
			}
			if rel, in := p.relIn(d.Source); in {
				me.docWrites[rel] = true
				if d.Absent {
					delete(exp, rel)
					continue
				}
				k := byte('f')
				if prev, ok := exp[rel]; ok && prev.K == 'x' {
					k = 'x'
				}
				exp[rel] = ent{K: k, Data: d.Data}
			} else {
				me.docWrites[d.Source] = true
				if d.Absent {
					me.out[d.Source] = nil
					continue
				}
				data := d.Data
				me.out[d.Source] = &data
			}
		}
		// An undo removes the documents its rewind created where the
		// target keeps none, while they are as written.
	created:
		for src, data := range createdDocs {
			for _, d := range T.docs {
				if d.Source == src {
					continue created
				}
			}
			if cur, there := p.docAt(src, d0, o0); !there || cur != data {
				continue
			}
			if rel, in := p.relIn(src); in {
				me.docWrites[rel] = true
				delete(exp, rel)
			} else {
				me.docWrites[src] = true
				me.out[src] = nil
			}
		}
	}
	// An undo removes the directories its move made above the paths it
	// restored (outside them) once nothing is left beneath (M12).
	if sc.files && len(sc.paths) > 0 {
		above := slices.DeleteFunc(slices.Collect(maps.Keys(created)), func(q string) bool {
			return created[q].K != 'd' || d0[q].K != 'd' || inScope(q, sc.paths) || !aboveScope(q, sc.paths)
		})
		sort.Slice(above, func(i, j int) bool { return len(above[i]) > len(above[j]) })
		for _, q := range above {
			empty := true
			for r := range exp {
				empty = empty && !strings.HasPrefix(r, q+"/")
			}
			if empty {
				delete(exp, q)
			}
		}
	}
	if feat.emptyDirs { // what stays keeps its directories
		for q := range exp {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				if _, ok := exp[a]; !ok {
					exp[a] = ent{K: 'd'}
				}
			}
		}
	}
	me.disk = exp
	return me
}

// docAt is the content of the state-document source src on disk d0 and
// outside o0, and whether there is one.
func (p *project) docAt(src string, d0 tree, o0 outState) (string, bool) {
	if rel, in := p.relIn(src); in {
		e, ok := d0[rel]
		return e.Data, ok
	}
	if v := o0[src]; v != nil {
		return *v, true
	}
	return "", false
}

// createdDocs is what a move within sc to T, from d0/o0 to d1/o1, wrote
// where nothing was at a source of T's the head kept elsewhere
// (stackOp.createdDocs).
func (p *project) createdDocs(me moveExp, T *ckRec, sc scope, d0 tree, o0 outState, d1 tree, o1 outState) map[string]string {
	out := map[string]string{}
	if !sc.state {
		return out
	}
	for n, d := range T.docs {
		hs := me.safetyDoc[n].Source
		if d.Source == "" || d.Absent || hs == "" || hs == d.Source {
			continue
		}
		if _, before := p.docAt(d.Source, d0, o0); before {
			continue
		}
		if cur, after := p.docAt(d.Source, d1, o1); after && cur == d.Data {
			out[d.Source] = cur
		}
	}
	return out
}

// missingPaths returns a path of sc that is neither in the target nor in
// the safety capture (a move refuses it: a typo), or "".
func (me moveExp) missingPaths(sc scope, T *ckRec) string {
	if sc.movesHead {
		return ""
	}
	for _, q := range sc.paths {
		n := strings.Trim(path.Clean("/"+q), "/")
		if n == "" {
			continue
		}
		if _, ok := T.files[n]; ok || T.files.isDir(n) {
			continue
		}
		if _, ok := me.safety.files[n]; ok || me.safety.files.isDir(n) {
			continue
		}
		return q
	}
	return ""
}

// ---------------------------------------------------------------------------
// What the store holds.

// readRecord reads a checkpoint back through the objects layer (the
// verified read path of `snap cat`).
func (p *project) readRecord(id objects.ID) (*objects.Checkpoint, tree, map[string]doc, error) {
	st := p.repo.Objects()
	ck, err := st.ReadCheckpoint(id)
	if err != nil {
		return nil, nil, nil, err
	}
	files := tree{}
	var walk func(dir string, tid objects.ID) error
	walk = func(dir string, tid objects.ID) error {
		t, err := st.ReadTree(tid)
		if err != nil {
			return fmt.Errorf("tree %s: %w", join(dir, ""), err)
		}
		for _, e := range t.Entries {
			q := join(dir, e.Name)
			switch e.Mode {
			case objects.ModeDir:
				if feat.emptyDirs {
					files[q] = ent{K: 'd'}
				}
				if err := walk(q, e.ID); err != nil {
					return err
				}
			case objects.ModeFile, objects.ModeExec, objects.ModeSymlink:
				data, err := st.ReadBlob(e.ID, 1<<30)
				if err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
				k := map[objects.Mode]byte{objects.ModeFile: 'f', objects.ModeExec: 'x', objects.ModeSymlink: 'l'}[e.Mode]
				if int64(len(data)) != e.Size {
					return fmt.Errorf("%s: size %d recorded, %d read", q, e.Size, len(data))
				}
				files[q] = ent{K: k, Data: string(data)}
			default:
				files[q] = ent{K: '?', Data: fmt.Sprintf("mode %d", e.Mode)}
			}
		}
		return nil
	}
	if err := walk("", ck.Tree); err != nil {
		return ck, nil, nil, err
	}
	docs := map[string]doc{}
	stt, err := st.ReadTree(ck.State)
	if err != nil {
		return ck, nil, nil, fmt.Errorf("state tree: %w", err)
	}
	for _, e := range stt.Entries {
		data, err := st.ReadBlob(e.ID, 1<<30)
		if err != nil {
			return ck, nil, nil, fmt.Errorf("state %s: %w", e.Name, err)
		}
		docs[e.Name] = doc{Data: string(data), Source: ck.StateSources[e.Name]}
	}
	for n, src := range ck.StateSources {
		if _, ok := docs[n]; !ok {
			docs[n] = doc{Source: src, Absent: true}
		}
	}
	return ck, files, docs, nil
}
