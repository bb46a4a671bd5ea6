package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/workflow"
)

// The agent workflow: staged edits (edit.go) and tasks (task.go), as new
// op kinds beside the others.
//
// The model keeps, per session, the staged edits snap must hold (the base
// of every path, as content, and the changes in the order staged, with
// their letters and their positions in the base), and reads each
// checkpoint's task stack from its "tasks" state document (snap's own,
// with no source: it travels with the head), so that whatever moves the
// head (rewind, undo, redo, the task operations) moves the model's stack
// with it. A task operation's document is checked against the model's own
// application of begin, commit and revert (ids, stack, statuses, parents),
// then taken as the model's.
//
// The promises checked (categories in brackets):
//
//   - staging never touches the working tree [changed-tree]; a replace
//     whose text occurs once is staged at that position, several times
//     answers needs_match with the lettered candidates and stages nothing,
//     with a candidate's letter stages that one, none is ErrNoPath;
//     overlapping changes, a 27th letter, ignored paths (the rules on
//     disk), paths in .git or the store or through a symlink or a file,
//     what is not a regular file or is over the size limit, and text that
//     is not UTF-8 are ErrUsage; a path changed since its first change was
//     staged is ErrConflict [edit-stage];
//   - the pending changes of each session are what the model says after
//     every snap operation, and after the store is reopened [edit-pending];
//   - a commit applies every pending change: each edited path holds its
//     base with the changes applied, every other path of the disk is
//     exactly as it was, what it reports is what it did, its safety
//     checkpoint holds the state before, and an edit-commit (task-commit)
//     checkpoint records the safety checkpoint's tree with the new
//     contents; the head moves to it and nothing stays pending
//     [move-content, move-report, safety, record-*, edit-commit];
//   - a commit is refused, writing nothing and keeping the changes
//     pending, when a path changed since it was staged (ErrConflict), is
//     ignored now (ErrUsage), is no regular file now, or lies beyond a
//     symlink or a file now [edit-commit, edit-through-symlink];
//   - undo of a commit puts the edited paths back as they were just
//     before it and stages the changes again; redo applies them again
//     [undo-not-exact, redo-not-exact, move-*, edit-pending];
//   - task ids count 1, 2, 3... per session and are never given out twice
//     [task-id]; a begin deeper than the project's tasks.max-depth (set per
//     run and changed by the max-depth op: preview_test.go), with a parent
//     that is not open, a
//     commit or revert with no open task, an empty text are ErrUsage
//     [task-op]; each task checkpoint records the stack the model expects
//     [task-doc]; a task commit applies the pending edits as an edit commit
//     does; a task revert drops them and moves the files back to the task's
//     task-begin checkpoint (a safety checkpoint first; undo brings the
//     attempt and the staged edits back) [move-*, task-op];
//   - each session's stack (snap.Tasks) is the one its head records
//     [task-stack];
//   - nothing is ever written outside the project through a symlink
//     (linkdir makes directories symlinks to one) [outside-write].

// agentKinds are the op kinds of this file.
var agentKinds = map[string]bool{
	"edit-stage": true, "edit-commit": true, "edit-revert": true, "edit-drop": true,
	"task-begin": true, "task-commit": true, "task-revert": true, "reopen": true, "linkdir": true,
	"max-depth": true, "edit-preview": true, "git-commit": true, "git-add": true, "commit-kill": true,
}

// ---------------------------------------------------------------------------
// Ops: their text and their generation.

func (o Op) agentString(b *strings.Builder, q func(string) string) {
	switch o.Kind {
	case "edit-stage":
		fmt.Fprintf(b, " -s %s %s %s", o.Session, o.Edit, o.Path)
		switch o.Edit {
		case "replace":
			fmt.Fprintf(b, " --old %s --new %s", q(o.Old), q(o.Data))
			if o.Match != "" {
				fmt.Fprintf(b, " --match %s", o.Match)
			}
			if o.After != "" {
				fmt.Fprintf(b, " --after %s", q(o.After))
			}
			if o.AllMatches {
				b.WriteString(" --all-matches")
			}
		case "write":
			fmt.Fprintf(b, " %s", q(o.Data))
		}
	case "edit-commit", "edit-revert", "task-begin", "task-revert":
		fmt.Fprintf(b, " -s %s %s", o.Session, q(o.Text))
		if o.Kind == "task-begin" && o.Parent != 0 {
			fmt.Fprintf(b, " --parent %d", o.Parent)
		}
		if o.Kind == "task-revert" && !o.Scoped {
			b.WriteString(" --all")
		}
	case "task-commit":
		fmt.Fprintf(b, " -s %s %s", o.Session, q(o.Text))
		if o.KeepOpen {
			b.WriteString(" --keep-open")
		}
	case "edit-drop":
		fmt.Fprintf(b, " -s %s %s", o.Session, o.Match)
	case "linkdir":
		fmt.Fprintf(b, " %s -> %q", o.Path, o.Data)
	case "max-depth":
		fmt.Fprintf(b, " = %q", o.Data)
	case "edit-preview":
		fmt.Fprintf(b, " -s %s --mode %q --context %d", o.Session, o.Scope, o.Context)
	default:
		o.moreString(b, q)
	}
}

// extTarget stands for the directory outside the project in a linkdir
// op's target (the runner's own, so a replay runs anywhere).
const extTarget = "$EXT"

func genAgent(rng *rand.Rand, g *genState, op *Op) {
	// With nothing to commit, revert or drop, mostly stage (or begin)
	// first: a few of these refusals are enough.
	switch op.Kind {
	case "edit-commit", "edit-revert", "edit-drop":
		if !slices.ContainsFunc(sessions, func(s string) bool { return g.p.pending[s] != nil && len(g.p.pending[s].Changes) > 0 }) && rng.IntN(5) > 0 {
			op.Kind = "edit-stage"
		}
	case "task-commit", "task-revert":
		if !slices.ContainsFunc(sessions, func(s string) bool { td, err := taskDocOf(g.p.head(s)); return err == nil && len(td.Stack) > 0 }) && rng.IntN(5) > 0 {
			op.Kind = "task-begin"
		}
	}
	switch op.Kind {
	case "edit-stage":
		genStage(rng, g, op)
	case "edit-commit", "edit-revert":
		op.Session = editSession(rng, g)
		op.Text = randText(rng, "summary")
		if pe := g.p.pending[op.Session]; op.Kind == "edit-commit" && pe != nil && len(pe.Changes) > 0 {
			// An agent whose commit is refused (a file changed, grew
			// over the limit, became a directory...) mostly gives up.
			if class, _ := commitRefusal(g.disk, pe, op.Text); class != "" && rng.IntN(5) < 3 {
				op.Kind = "edit-revert"
			}
		}
	case "edit-drop":
		op.Session = editSession(rng, g)
		if pe := g.p.pending[op.Session]; pe != nil && len(pe.Changes) > 0 && rng.IntN(5) > 0 {
			op.Match = pe.Changes[rng.IntN(len(pe.Changes))].ID
		} else {
			op.Match = edits.Letter(rng.IntN(4))
		}
	case "task-begin":
		op.Session = randSession(rng)
		op.Text = randText(rng, "goal")
		switch n := rng.IntN(10); {
		case n < 7:
		case n < 8:
			op.Parent = -1
		default:
			if td, err := taskDocOf(g.p.head(op.Session)); err == nil && len(td.Stack) > 0 && rng.IntN(3) > 0 {
				op.Parent = td.Stack[rng.IntN(len(td.Stack))]
			} else {
				op.Parent = 1 + rng.IntN(max(g.p.taskFloor[op.Session], 1)+1)
			}
		}
	case "task-commit", "task-revert":
		op.Session = randSession(rng)
		if rng.IntN(5) > 0 { // mostly a session with an open task
			for _, s := range sessions {
				if td, err := taskDocOf(g.p.head(s)); err == nil && len(td.Stack) > 0 {
					op.Session = s
					break
				}
			}
		}
		op.Text = randText(rng, "why")
		op.KeepOpen = op.Kind == "task-commit" && rng.IntN(6) == 0
		op.Scoped = op.Kind == "task-revert" && rng.IntN(5) > 0
		if op.Kind == "task-revert" {
			op.Then = genThen(rng, op)
		}
	case "linkdir":
		op.Path = g.existing(rng, "d")
		if op.Path == "" || rng.IntN(3) == 0 {
			op.Path = randDir(rng, 2)
		}
		op.Data = []string{extTarget, extTarget, "src", "b", ".", "nowhere"}[rng.IntN(6)]
	case "max-depth":
		op.Data = genMaxDepth(rng)
	case "edit-preview":
		genPreview(rng, g, op)
	default:
		genMore(rng, g, op)
	}
}

// randText is a goal, summary or reason; now and then a blank one (a
// usage error).
func randText(rng *rand.Rand, what string) string {
	if rng.IntN(30) == 0 {
		return " "
	}
	return fmt.Sprintf("%s %d", what, rng.IntN(100))
}

// editSession is mostly a session with pending changes.
func editSession(rng *rand.Rand, g *genState) string {
	if rng.IntN(5) > 0 {
		for _, s := range []string{"default", "s2"}[rng.IntN(2):] {
			if pe := g.p.pending[s]; pe != nil && len(pe.Changes) > 0 {
				return s
			}
		}
		for _, s := range sessions {
			if pe := g.p.pending[s]; pe != nil && len(pe.Changes) > 0 {
				return s
			}
		}
	}
	return randSession(rng)
}

func genStage(rng *rand.Rand, g *genState, op *Op) {
	op.Session = randSession(rng)
	switch n := rng.IntN(100); {
	case n < 62:
		op.Edit = "replace"
	case n < 88:
		op.Edit = "write"
	default:
		op.Edit = "delete"
	}
	pe := g.p.pending[op.Session]
	switch m := rng.IntN(100); {
	case m < 25 && pe != nil && len(pe.Bases) > 0:
		op.Path = pe.Bases[rng.IntN(len(pe.Bases))].Path
	case m < 80:
		op.Path = g.editable(rng, op.Edit == "replace" && rng.IntN(2) == 0)
	case m < 90:
		op.Path = randPath(rng, 2)
	default: // paths an edit refuses, or reaches in odd ways
		switch rng.IntN(5) {
		case 0:
			op.Path = g.existing(rng, "ldp")
		case 1:
			op.Path = g.existing(rng, "fxlp")
			if op.Path != "" {
				op.Path += "/" + fileNames[rng.IntN(len(fileNames))]
			}
		case 2:
			op.Path = []string{".git/HEAD", ".snap/config", ".snap", "a/.git/x"}[rng.IntN(4)]
		case 3:
			op.Path = g.existing(rng, "d")
			if op.Path != "" {
				op.Path += "/" + fileNames[rng.IntN(len(fileNames))]
			}
		}
		if op.Path == "" {
			op.Path = randPath(rng, 1)
		}
	}
	base := ""
	if b, ok := pe.base(op.Path); ok {
		base = b.Data
	} else if e, ok := g.disk[op.Path]; ok && (e.K == 'f' || e.K == 'x') {
		base = e.Data
	}
	switch op.Edit {
	case "write":
		switch n := rng.IntN(10); {
		case n < 5:
			op.Data = configText(rng)
		case n < 6 && base != "":
			op.Data = base + "more\n"
		default:
			op.Data = randContent(rng)
		}
	case "replace":
		op.Old = randOld(rng, base)
		switch n := rng.IntN(20); {
		case n < 2:
			op.Data = ""
		case n < 3:
			op.Data = "\xc3(" // not UTF-8
		case n < 12:
			op.Data = words[rng.IntN(len(words))]
		default:
			op.Data = fmt.Sprintf("new %d\n", rng.IntN(100))
		}
		if rng.IntN(10) == 0 {
			op.After = words[rng.IntN(len(words)-1)]
		}
		op.AllMatches = rng.IntN(5) == 0
		if offs, why := findAll(base, op.Old, op.After); why == "" {
			switch {
			case len(offs) > 1 && rng.IntN(2) == 0:
				op.Match = edits.Letter(min(rng.IntN(len(offs)+1), edits.MaxChanges-1)) // now and then one past the last
			case len(offs) == 1 && rng.IntN(10) == 0:
				op.Match = "A"
			}
		}
	}
}

// editable picks a file an edit may change: a regular file the rules
// on disk do not ignore, mostly (else any path).
// With repeats, one holding the repeated line when there is one.
func (g *genState) editable(rng *rand.Rand, repeats bool) string {
	rs := diskRules(g.disk)
	var c, rc []string
	for p, e := range g.disk {
		if (e.K == 'f' || e.K == 'x') && !hasGit(p) && p != "chat.jsonl" && len(e.Data) <= maxFileSize && !rs.ignored(p, false) {
			c = append(c, p)
			if strings.Count(e.Data, repeated) > 1 {
				rc = append(rc, p)
			}
		}
	}
	if repeats && len(rc) > 0 {
		c = rc
	}
	if len(c) == 0 {
		return g.pathFor(rng, "fx")
	}
	sort.Strings(c)
	return c[rng.IntN(len(c))]
}

// repeated is a line config files repeat: the text of the README's
// example of a replace that needs a match.
const repeated = "timeout: 30"

// configText is a file where one line occurs several times (up to 8, so
// a needs_match answer may list 5 of them and leave the others out).
func configText(rng *rand.Rand) string {
	var b strings.Builder
	for i := 2 + rng.IntN(7); i > 0; i-- {
		b.WriteString(repeated + "\n")
		if rng.IntN(3) == 0 {
			b.WriteString(words[rng.IntN(len(words))] + "\n")
		}
	}
	return b.String()
}

// randOld is the text a replace looks for: mostly a piece of the base,
// often a short one that occurs several times.
func randOld(rng *rand.Rand, base string) string {
	if strings.Contains(base, repeated) && rng.IntN(2) == 0 {
		return repeated
	}
	switch k := rng.IntN(100); {
	case k < 65 && base != "":
		if rng.IntN(2) == 0 { // a byte or two anywhere (several matches, perhaps not UTF-8)
			i := rng.IntN(len(base))
			return base[i:min(len(base), i+1+rng.IntN(2))]
		}
		lines := strings.SplitAfter(base, "\n")
		l := lines[rng.IntN(len(lines))]
		if l == "" {
			l = base
		}
		if rng.IntN(2) == 0 && len(l) > 1 {
			l = strings.TrimSuffix(l, "\n")
		}
		return l
	case k < 85:
		return words[rng.IntN(len(words)-1)]
	case k < 93:
		return []string{"a", "\n", "v", "e"}[rng.IntN(4)]
	case k < 96:
		return "nothing like this"
	case k < 98:
		return ""
	}
	return "\xff\xfe"
}

// agentCmd is the CLI command line of an op of this file.
func agentCmd(op *Op) [][]string {
	s := op.Session
	switch op.Kind {
	case "edit-stage":
		c := []string{"edit", op.Edit, "-s", s, "--json"}
		switch op.Edit {
		case "replace":
			c = append(c, "--old", op.Old, "--new", op.Data)
			if op.Match != "" {
				c = append(c, "--match", op.Match)
			}
			if op.After != "" {
				c = append(c, "--after", op.After)
			}
			if op.AllMatches {
				c = append(c, "--all-matches")
			}
		case "write":
			c = append(c, "--content", op.Data)
		}
		return [][]string{append(c, op.Path)}
	case "edit-commit", "edit-revert":
		return [][]string{{"edit", strings.TrimPrefix(op.Kind, "edit-"), "-s", s, "--json", op.Text}}
	case "edit-drop":
		return [][]string{{"edit", "drop", "-s", s, "--json", op.Match}}
	case "task-begin":
		c := []string{"task", "begin", "-s", s, "--json"}
		switch {
		case op.Parent < 0:
			c = append(c, "--parent", "0")
		case op.Parent > 0:
			c = append(c, "--parent", fmt.Sprint(op.Parent))
		}
		return [][]string{append(c, op.Text)}
	case "task-commit":
		c := []string{"task", "commit", "-s", s, "--json"}
		if op.KeepOpen {
			c = append(c, "--keep-open")
		}
		return [][]string{append(c, op.Text)}
	case "task-revert":
		c := []string{"task", "revert", "-s", s, "--json"}
		if !op.Scoped {
			c = append(c, "--all")
		}
		return [][]string{append(c, op.Text)}
	case "max-depth":
		if op.Data == "" {
			return [][]string{{"config", "--unset", "tasks.max-depth"}}
		}
		return [][]string{{"config", "tasks.max-depth", op.Data}}
	case "edit-preview":
		return [][]string{{"edit", "preview", "-s", s, "--json", "--mode", op.Scope, "--context", fmt.Sprint(op.Context)}}
	}
	return moreCmd(op)
}

// agentScript is the shell form of the ops of this file that are no snap
// command.
func agentScript(op *Op) string {
	switch op.Kind {
	case "reopen":
		return ": # the Go API reopens the store here\n"
	case "linkdir":
		t := shQuote(op.Data)
		if op.Data == extTarget {
			t = `"$W/ext"`
		}
		return fmt.Sprintf("mkdir -p \"$W/ext\"; mkparent %s; clear %s; ln -s %s %s\n", shQuote(op.Path), shQuote(op.Path), t, shQuote(op.Path))
	case "git-add":
		return map[string]string{"add": "git add -- ", "add-n": "git add -N -- ", "rm-cached": "git rm -q --cached -- ", "reset": "git reset -q # "}[op.Edit] + shQuote(op.Path) + "\n"
	}
	return "# (not translated)\n"
}

// agentField is the field of an op's --json answer naming a checkpoint
// of kind the model gave it.
func agentField(kind string) string {
	if kind == "checkpoint" { // the one before the first edit commit
		return ".rewind.safety_checkpoint"
	}
	return ".checkpoint"
}

// ---------------------------------------------------------------------------
// The model of staged edits.

// editChange is one pending change (edits.Change).
type editChange struct {
	ID       string
	Path     string
	Kind     string // replace, write, delete
	Offset   int
	Line     int
	Old, New string
}

func (c editChange) end() int { return c.Offset + len(c.Old) }

// editBase is a path's base: its content when its first change was
// staged.
type editBase struct {
	Path   string
	Exists bool
	Data   string
}

// pendingEdits is one session's staged edits.
type pendingEdits struct {
	Next    int // the next letter (0: A)
	Bases   []editBase
	Changes []editChange // in the order staged
}

func (pe *pendingEdits) clone() *pendingEdits {
	return &pendingEdits{Next: pe.Next, Bases: slices.Clone(pe.Bases), Changes: slices.Clone(pe.Changes)}
}

func (pe *pendingEdits) base(p string) (editBase, bool) {
	if pe == nil {
		return editBase{}, false
	}
	for _, b := range pe.Bases {
		if b.Path == p {
			return b, true
		}
	}
	return editBase{}, false
}

// of returns the changes to p in position order.
func (pe *pendingEdits) of(p string) []editChange {
	var out []editChange
	for _, c := range pe.Changes {
		if c.Path == p {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b editChange) int { return a.Offset - b.Offset })
	return out
}

func (pe *pendingEdits) paths() []string {
	var out []string
	for _, c := range pe.Changes {
		if !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	sort.Strings(out)
	return out
}

func (pe *pendingEdits) String() string {
	var parts []string
	for _, c := range pe.Changes {
		parts = append(parts, fmt.Sprintf("%s:%s %s@%d", c.ID, c.Kind, c.Path, c.Offset))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// edits returns the model's staged edits of a session.
func (p *project) edits(session string) *pendingEdits {
	pe := p.pending[session]
	if pe == nil {
		pe = &pendingEdits{}
		p.pending[session] = pe
	}
	return pe
}

// findAll returns the offsets where old occurs in data, in order, not
// overlapping, after the end of the first occurrence of anchor; why says
// why the search itself is refused.
func findAll(data, old, anchor string) (offs []int, why string) {
	if old == "" {
		return nil, "the text to replace is empty"
	}
	from := 0
	if anchor != "" {
		i := strings.Index(data, anchor)
		if i < 0 {
			return nil, "the anchor does not occur"
		}
		from = i + len(anchor)
	}
	for from <= len(data) {
		i := strings.Index(data[from:], old)
		if i < 0 {
			break
		}
		offs = append(offs, from+i)
		from += i + len(old)
	}
	return offs, ""
}

func lineOf(data string, off int) int { return strings.Count(data[:off], "\n") + 1 }

// applyEdits is a path's base with its changes: the new content and
// whether the file exists.
func applyEdits(base string, cs []editChange) (string, bool) {
	for _, c := range cs {
		switch c.Kind {
		case "write":
			return c.New, true
		case "delete":
			return "", false
		}
	}
	out := base
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		out = out[:c.Offset] + c.New + out[c.end():]
	}
	return out, true
}

// editPathRefusal: why snap refuses p as an edit's path on disk d (""
// when it does not): in .git or the store, beyond a symlink or a file.
func editPathRefusal(d tree, p string) string {
	comps := strings.Split(p, "/")
	for _, c := range comps {
		if strings.EqualFold(c, ".git") {
			return "in a .git directory"
		}
	}
	if comps[0] == ".snap" {
		return "in the store"
	}
	for i := 1; i < len(comps); i++ {
		a := strings.Join(comps[:i], "/")
		e, ok := d[a]
		switch {
		case !ok:
			return ""
		case e.K == 'l':
			return "goes through a symlink: " + a
		case e.K != 'd':
			return "goes through a non-directory: " + a
		}
	}
	return ""
}

// fileBase is what snap reads as p's base on disk d: the content, whether
// it exists, or the class of the refusal (usage, any) and why.
func fileBase(d tree, p string) (data string, exists bool, class, why string) {
	e, ok := d[p]
	if !ok {
		return "", false, "", ""
	}
	switch {
	case e.K != 'f' && e.K != 'x':
		return "", false, "usage", fmt.Sprintf("no regular file (%c): %s", e.K, p)
	case len(e.Data) > maxFileSize:
		return "", false, "usage", "over the size limit: " + p
	case !readable(e):
		return "", false, "any", "cannot be read: " + p
	}
	return e.Data, true, "", ""
}

// stageExp is the model's expectation of one staging.
type stageExp struct {
	class, why string // the refusal: usage, conflict, nopath, any ("" none)
	matches    []int  // needs_match: every occurrence
	data       string // the base the candidates are in
	change     editChange
	base       editBase
}

func (pe *pendingEdits) expectStage(d tree, op *Op) stageExp {
	refuse := func(class, why string) stageExp { return stageExp{class: class, why: why} }
	rel := op.Path
	if why := editPathRefusal(d, rel); why != "" {
		return refuse("usage", why)
	}
	if diskRules(d).ignored(rel, false) {
		return refuse("usage", "ignored by the rules on disk")
	}
	data, exists, class, why := fileBase(d, rel)
	if class != "" {
		return refuse(class, why)
	}
	if b, ok := pe.base(rel); ok && (b.Exists != exists || b.Data != data) {
		return refuse("conflict", "changed since its first change was staged")
	}
	if !utf8.ValidString(op.Data) || !utf8.ValidString(op.Old) {
		return refuse("usage", "the text is not UTF-8")
	}
	if op.Edit == "replace" && !utf8.ValidString(data) {
		return refuse("usage", "the file is not UTF-8 text")
	}
	c := editChange{Path: rel, Kind: op.Edit, Line: 1}
	switch op.Edit {
	case "write":
		c.New = op.Data
	case "delete":
		if !exists {
			return refuse("nopath", "no such file")
		}
	case "replace":
		if !exists {
			return refuse("nopath", "no such file")
		}
		offs, why := findAll(data, op.Old, op.After)
		if why != "" {
			return refuse("usage", why)
		}
		if len(offs) == 0 {
			return refuse("nopath", "the text does not occur")
		}
		off := offs[0]
		switch {
		case op.Match != "":
			i := -1
			if len(op.Match) == 1 && op.Match[0] >= 'A' && op.Match[0] <= 'Z' {
				i = int(op.Match[0] - 'A')
			}
			if i < 0 || i >= len(offs) {
				return refuse("usage", "no such candidate")
			}
			off = offs[i]
		case len(offs) > 1:
			return stageExp{matches: offs, data: data}
		}
		c.Offset, c.Line, c.Old, c.New = off, lineOf(data, off), op.Old, op.Data
	default:
		return refuse("usage", "unknown kind")
	}
	if pe.Next >= edits.MaxChanges {
		return refuse("usage", "the letters A-Z are used up")
	}
	for _, o := range pe.Changes {
		if o.Path != c.Path {
			continue
		}
		if o.Kind != "replace" || c.Kind != "replace" || c.Offset < o.end() && o.Offset < c.end() || c.Offset == o.Offset {
			return refuse("usage", "overlaps pending change "+o.ID)
		}
	}
	c.ID = edits.Letter(pe.Next)
	return stageExp{change: c, base: editBase{Path: rel, Exists: exists, Data: data}}
}

// reasonKey is a refusal's reason without the path it names (a stats
// key).
func reasonKey(why string) string {
	k, _, _ := strings.Cut(why, ":")
	return k
}

// errClass checks err against a refusal class; "" when it matches.
func errClass(class string, err error) string {
	want := map[string]error{"usage": snap.ErrUsage, "conflict": snap.ErrConflict, "nopath": snap.ErrNoPath}[class]
	switch {
	case class == "" && err != nil:
		return fmt.Sprintf("refused (%v)", err)
	case class == "":
		return ""
	case err == nil:
		return "accepted"
	case errors.Is(err, snap.ErrPartial):
		return fmt.Sprintf("carried out part way (%v)", err)
	case want != nil && !errors.Is(err, want):
		return fmt.Sprintf("refused with %v, not a %s error", err, class)
	}
	return ""
}

// ---------------------------------------------------------------------------
// Applying the ops.

// agentOp runs an op of this file; false when op is not one.
func (r *runner) agentOp(p *project, op *Op) bool {
	switch op.Kind {
	case "edit-stage":
		r.opEditStage(p, op)
	case "edit-commit":
		r.commitEdits(p, op, false)
	case "edit-revert":
		r.opEditRevert(p, op)
	case "edit-drop":
		r.opEditDrop(p, op)
	case "task-begin", "task-commit":
		if op.Kind == "task-commit" && len(p.edits(op.Session).Changes) > 0 {
			r.commitEdits(p, op, true)
		} else {
			r.opTaskCheckpoint(p, op)
		}
	case "task-revert":
		r.opTaskRevert(p, op)
	case "reopen":
		p.repo.Close()
		repo, err := snap.Open(snap.Options{Dir: p.root})
		if err != nil {
			r.failf("api-error", "reopening the store: %v", err)
			repo, _, _ = snap.Init(snap.Options{Dir: p.root})
		}
		p.repo = repo
	case "linkdir":
		target := op.Data
		if target == extTarget {
			target = p.ext
		}
		if err := symlinkAt(p.root, op.Path, target); err != nil {
			r.stats["fs op failed"]++
		}
	case "max-depth":
		r.opMaxDepth(p, op)
	case "edit-preview":
		r.opEditPreview(p, op)
	default:
		return r.moreOp(p, op)
	}
	return true
}

func (r *runner) opEditStage(p *project, op *Op) {
	d0, o0 := r.mustScan(p), p.scanOut()
	pe := p.edits(op.Session)
	exp := pe.expectStage(d0, op)
	ans, err := workflow.New(p.repo).EditStage(r.ctx, workflow.EditRequest{Session: op.Session, Path: op.Path, Kind: edits.Kind(op.Edit),
		Old: op.Old, New: op.Data, Match: op.Match, After: op.After, AllMatches: op.AllMatches})
	r.checkUnchanged(p, d0, o0, "edit stage")
	what := fmt.Sprintf("edit %s %s", op.Edit, op.Path)
	if msg := errClass(exp.class, err); msg != "" {
		want := "the model expects it staged"
		if exp.class != "" {
			want = fmt.Sprintf("the model expects a %s error (%s)", exp.class, exp.why)
		} else if len(exp.matches) > 0 {
			want = fmt.Sprintf("the model expects needs_match (%d occurrences)", len(exp.matches))
		}
		r.failf("edit-stage", "%s: %s; %s", what, msg, want)
		return
	}
	if exp.class != "" {
		r.stats["edit stage refused: "+exp.class+": "+reasonKey(exp.why)]++
		return
	}
	if ans == nil {
		r.failf("edit-stage", "%s: no answer", what)
		return
	}
	if len(exp.matches) > 0 {
		r.stats["edit stage needs_match"]++
		limit := 5
		if op.AllMatches {
			limit = edits.MaxChanges
		}
		var want, got []string
		for i, off := range exp.matches[:min(len(exp.matches), limit)] {
			staged := ""
			for _, c := range pe.Changes {
				if c.Path == op.Path && c.Kind == "replace" && c.Offset == off && c.Old == op.Old {
					staged = c.ID
				}
			}
			want = append(want, fmt.Sprintf("%s:line %d:staged %q", edits.Letter(i), lineOf(exp.data, off), staged))
		}
		for _, c := range ans.Candidates {
			got = append(got, fmt.Sprintf("%s:line %d:staged %q", c.MatchID, c.Line, c.Staged))
		}
		notShown := max(len(exp.matches)-limit, 0)
		if ans.Status != "needs_match" || ans.Staged != nil || fmt.Sprint(got) != fmt.Sprint(want) || ans.NotShown != notShown {
			r.failf("edit-stage", "%s: answered %s (staged %v) with candidates %v (%d not shown); the model expects needs_match with %v (%d not shown)",
				what, ans.Status, ans.Staged, got, ans.NotShown, want, notShown)
		}
		return
	}
	r.stats["edit stage staged "+op.Edit]++
	c := exp.change
	if ans.Status != "editing" || ans.Staged == nil || ans.Staged.ChangeID != c.ID || ans.Staged.Path != c.Path ||
		string(ans.Staged.Kind) != c.Kind || ans.Staged.Position != c.Offset || ans.Staged.Line != c.Line {
		r.failf("edit-stage", "%s: answered %s, staged %+v; the model expects change %s at %d (line %d)", what, ans.Status, ans.Staged, c.ID, c.Offset, c.Line)
	}
	if _, ok := pe.base(c.Path); !ok {
		pe.Bases = append(pe.Bases, exp.base)
	}
	pe.Changes = append(pe.Changes, c)
	pe.Next++
}

func (r *runner) opEditDrop(p *project, op *Op) {
	d0, o0 := r.mustScan(p), p.scanOut()
	pe := p.edits(op.Session)
	i := slices.IndexFunc(pe.Changes, func(c editChange) bool { return c.ID == op.Match })
	ans, err := workflow.New(p.repo).EditDrop(r.ctx, op.Session, op.Match)
	r.checkUnchanged(p, d0, o0, "edit drop")
	class := ""
	if i < 0 {
		class = "usage"
	}
	if msg := errClass(class, err); msg != "" {
		r.failf("edit-stage", "edit drop %s: %s; pending: %s", op.Match, msg, pe)
		return
	}
	if i < 0 {
		return
	}
	if ans == nil || ans.Dropped == nil || ans.Dropped.ChangeID != op.Match {
		r.failf("edit-stage", "edit drop %s: answered %+v", op.Match, ans)
	}
	c := pe.Changes[i]
	pe.Changes = slices.Delete(pe.Changes, i, i+1)
	if len(pe.of(c.Path)) == 0 {
		pe.Bases = slices.DeleteFunc(pe.Bases, func(b editBase) bool { return b.Path == c.Path })
	}
	if len(pe.Changes) == 0 { // no pending change: the edit session ends
		p.pending[op.Session] = &pendingEdits{}
	}
}

func (r *runner) opEditRevert(p *project, op *Op) {
	d0, o0 := r.mustScan(p), p.scanOut()
	pe := p.edits(op.Session)
	res, err := workflow.New(p.repo).EditRevert(r.ctx, op.Session, op.Text)
	r.checkUnchanged(p, d0, o0, "edit revert")
	class := ""
	if strings.TrimSpace(op.Text) == "" {
		class = "usage"
	}
	if msg := errClass(class, err); msg != "" {
		r.failf("edit-commit", "edit revert %q: %s", op.Text, msg)
		return
	}
	if class != "" {
		return
	}
	if res == nil || res.DroppedChanges != len(pe.Changes) || fmt.Sprint(res.Paths) != fmt.Sprint(orEmpty(pe.paths())) {
		r.failf("edit-commit", "edit revert reports %+v; the model drops %d changes to %v", res, len(pe.Changes), pe.paths())
	}
	p.pending[op.Session] = &pendingEdits{}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// commitRefusal is why an edit commit of pe on disk d is refused, and the
// class of the error ("" when it is not).
func commitRefusal(d tree, pe *pendingEdits, text string) (class, why string) {
	if strings.TrimSpace(text) == "" {
		return "usage", "an empty summary"
	}
	if len(pe.Changes) == 0 {
		return "usage", "no pending changes"
	}
	paths := pe.paths()
	rs := diskRules(d)
	for _, q := range paths {
		if rs.ignored(q, false) {
			return "usage", "ignored by the rules on disk now: " + q
		}
	}
	var stale []string
	for _, q := range paths {
		// An edit follows no symlink (the path is refused at staging): a
		// commit must not write beyond one, nor beyond a file.
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if e, ok := d[a]; ok && e.K != 'd' {
				return "any", fmt.Sprintf("beyond a non-directory now: %s lies beyond %s (%c)", q, a, e.K)
			}
		}
		data, exists, class, why := fileBase(d, q)
		if class != "" {
			return class, why
		}
		if b, _ := pe.base(q); b.Exists != exists || b.Data != data {
			stale = append(stale, q)
		}
	}
	if len(stale) > 0 {
		return "conflict", "changed since it was staged: " + strings.Join(stale, ", ")
	}
	return "", ""
}

// commitEdits runs an edit commit, or a task commit with staged edits
// (task), and checks it; it returns the checkpoint the commit recorded
// (nil: refused or failed).
func (r *runner) commitEdits(p *project, op *Op, task bool) *ckRec {
	s := op.Session
	d0, o0 := r.mustScan(p), p.scanOut()
	pe := p.edits(s)
	h := p.head(s)
	kind := "edit-commit"
	var want *taskDoc
	var t *taskEnt
	class, why := "", ""
	if task {
		kind = "task-commit"
		td, err := taskDocOf(h)
		if err != nil {
			r.failf("task-doc", "%v", err)
			return nil
		}
		want = td.clone()
		if t, why = want.commit(op.Text, op.KeepOpen); why != "" {
			class = "usage"
		}
	}
	if class == "" {
		class, why = commitRefusal(d0, pe, op.Text)
	}
	paths := pe.paths()
	sc := scope{files: true, paths: paths, movesHead: true}
	// The move's safety capture: the present, under the rules on disk
	// only (the commit's end is made from it).
	msc := sc
	msc.diskRules = true
	var m0 moveExp
	if h != nil {
		m0 = p.expectMove(d0, o0, h, h, msc, nil, nil)
	}
	var rr *snap.RewindResult
	var ckID *objects.ID
	var ecr *workflow.EditCommitResult
	var err error
	call := func(repo *snap.Repo, ctx context.Context) {
		if task {
			var tres *workflow.TaskResult
			tres, err = workflow.New(repo).TaskCommit(ctx, workflow.TaskOptions{Session: s, Text: op.Text, KeepOpen: op.KeepOpen})
			if tres != nil {
				rr, ecr = tres.Rewind, tres.Edits
				id := tres.Checkpoint
				ckID = &id
			}
		} else {
			ecr, err = workflow.New(repo).EditCommit(ctx, s, op.Text)
			if ecr != nil {
				rr, ckID = ecr.Rewind, ecr.Checkpoint
			}
		}
	}
	if op.Kind == "commit-kill" && class == "" && h != nil {
		// Killed at its op.Kill-th write to the working tree (killed_test.go).
		if n, killed := r.withKill(p, op.Kill, call); killed {
			expDisk, expFiles := commitExpect(d0, pe, paths, m0)
			r.afterKill(p, op, killedCommit{kind: kind, task: task, want: want, t: t, h: h, d0: d0, o0: o0, pe: pe.clone(), paths: paths,
				sc: sc, m0: m0, expDisk: expDisk, expFiles: expFiles})
			return nil
		} else {
			r.stats[fmt.Sprintf("commit-kill: not killed (%d writes)", n)]++
		}
	} else {
		call(p.repo, r.ctx)
	}
	what := fmt.Sprintf("%s of %s (%s)", kind, strings.Join(pe.paths(), ","), pe)
	if class != "" {
		if msg := errClass(class, err); msg != "" {
			cat := "edit-commit"
			if strings.Contains(why, "beyond") {
				cat = "edit-through-symlink" // snap's known bug M15
			}
			r.failf(cat, "%s: %s; the model expects a %s error: %s", what, msg, class, why)
			if err == nil || errors.Is(err, snap.ErrPartial) {
				// Carried out: the model follows the store (head, pending
				// changes; the session's undo stack is lost to it).
				r.resyncAfterUnmodelled(p, s)
				r.resyncPending(p, s)
				if t != nil { // a task commit recorded names its task
					p.taskFloor[s] = max(p.taskFloor[s], t.ID+1)
				}
			}
		}
		if class == "conflict" && errors.Is(err, snap.ErrConflict) {
			_, stale, _ := strings.Cut(why, ": ")
			for _, q := range strings.Split(stale, ", ") {
				if !strings.Contains(err.Error(), q) {
					r.failf("edit-commit", "%s: the conflict (%v) does not name %s, which changed since it was staged", what, err, q)
				}
			}
		}
		r.stats["edit commit refused: "+class+": "+reasonKey(why)]++
		r.checkUnchanged(p, d0, o0, "a refused "+kind)
		return nil
	}
	if err != nil && !errors.Is(err, snap.ErrPartial) {
		r.failf("edit-commit", "%s: %v; the model expects it to apply", what, err)
		r.checkUnchanged(p, d0, o0, "a failed "+kind)
		r.resyncAfterUnmodelled(p, s)
		return nil
	}
	if rr == nil || rr.SafetyCheckpoint == nil || ckID == nil {
		r.failf("edit-commit", "%s: reports no move, safety checkpoint or checkpoint (%+v)", what, ecr)
		r.resyncAfterUnmodelled(p, s)
		return nil
	}
	r.stats[kind+" applied"]++
	if h == nil {
		// A move starts from a checkpoint: one of the present first,
		// which the move then takes as its safety checkpoint.
		mid := *rr.SafetyCheckpoint
		docs := expectDocs(nil, nil, nil)
		exp := expectCapture(d0, capOpts{exclude: p.excludedSources(docs)})
		mrec := &ckRec{id: mid, session: s, files: exp.files, docs: docs, skipped: exp.unreadable, kind: "checkpoint"}
		r.verifyRecord(p, mrec, exp, "the checkpoint before the first edit commit")
		if rr.SafetyCreated {
			r.failf("safety", "%s: the session had no checkpoint, yet the safety checkpoint is not the one taken first", what)
		}
		mrec = p.add(mrec)
		p.logCk(mrec)
		r.push(p, s, &stackOp{kind: "checkpoint", step: r.step, session: s, newHead: mid})
		p.noteOrder(s, mid)
		p.heads[s] = mid
		h = mrec
		m0 = p.expectMove(d0, o0, h, h, msc, nil, nil)
	}
	expDisk, expFiles := commitExpect(d0, pe, paths, m0)
	me := moveExp{disk: expDisk, out: o0, mayFail: map[string]bool{}, protected: map[string]bool{}, why: map[string]string{},
		optionalDirs: map[string]bool{}, safety: m0.safety, safetyDoc: m0.safetyDoc, docWrites: map[string]bool{}}
	tgt := &ckRec{session: s, files: expFiles, kind: kind}
	ok, d1, o1 := r.checkMove(p, what, d0, o0, me, tgt, h, s, rr, err)
	if !ok {
		r.resyncAfterUnmodelled(p, s)
		return nil
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
	rec := &ckRec{id: *ckID, session: s, files: expFiles, docs: docs, kind: kind, parent: sid}
	if task {
		r.adoptTaskDoc(p, rec, want, kind+" checkpoint")
	}
	r.verifyRecord(p, rec, capExp{files: expFiles, unreadable: m0.safety.unreadable}, kind+" checkpoint")
	r.checkKind(p, rec.id, kind)
	if ecr != nil && (ecr.AppliedChanges != len(pe.Changes) || fmt.Sprint(ecr.Paths) != fmt.Sprint(paths)) {
		r.failf("edit-commit", "%s reports %d changes applied to %v", what, ecr.AppliedChanges, ecr.Paths)
	}
	rec = p.add(rec)
	p.logMove(s, p.byID[sid], rec, paths, true, p.byID[sid], rec)
	so := &stackOp{kind: "rewind", what: kind, step: r.step, session: s, oldHead: h.id, newHead: rec.id, target: rec.id, safety: sid,
		scope: sc, before: d0, after: d1, outBefore: o0, outAfter: o1, edits: pe.clone(), exclude: excludeOf(d0),
		created: createdIgnored(d0, d1, recordRules(m0.safety.files, d0), rec.files, sc.paths), createdDocs: map[string]string{}, allApplied: true}
	so.safetyReused = !rr.SafetyCreated
	r.push(p, s, so)
	p.noteOrder(s, sid)
	setHead(p, s, rec.id)
	p.pending[s] = &pendingEdits{}
	if task {
		p.taskFloor[s] = max(p.taskFloor[s], t.ID+1)
	}
	return rec
}

// commitExpect is what a commit of pe's paths leaves on disk d0 (whose
// move's safety expectation is m0), and what its checkpoint records.
func commitExpect(d0 tree, pe *pendingEdits, paths []string, m0 moveExp) (expDisk, expFiles tree) {
	expDisk = tree{}
	for q, e := range d0 {
		if e.K != 'd' || feat.emptyDirs {
			expDisk[q] = e
		}
	}
	expFiles = m0.safety.files.clone()
	for _, q := range paths {
		b, _ := pe.base(q)
		data, exists := applyEdits(b.Data, pe.of(q))
		if !exists {
			delete(expDisk, q)
			delete(expFiles, q)
			continue
		}
		k := byte('f')
		if d0[q].K == 'x' {
			k = 'x'
		}
		expDisk[q] = ent{K: k, Data: data}
		expFiles[q] = ent{K: k, Data: data}
		if feat.emptyDirs {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				expDisk[a] = ent{K: 'd'}
				expFiles[a] = ent{K: 'd'}
			}
		}
	}
	return expDisk, expFiles
}

// restage follows what an undo or redo does to the staged edits of the
// operation it reverses: the undo stages them again when none are
// pending, the redo drops them when they are still what is pending.
func (r *runner) restage(p *project, session string, top *stackOp, undo bool, err error) {
	if top.edits == nil || err != nil {
		return
	}
	pe := p.edits(session)
	switch {
	case undo && len(pe.Changes) == 0:
		p.pending[session] = top.edits.clone()
	case !undo && slices.Equal(pe.Changes, top.edits.Changes):
		p.pending[session] = &pendingEdits{}
	}
}

// checkKind: checkpoint id records kind.
func (r *runner) checkKind(p *project, id objects.ID, kind string) {
	ck, err := p.repo.Objects().ReadCheckpoint(id)
	if err != nil {
		r.failf("store-read", "checkpoint %s: %v", id.Short(), err)
		return
	}
	if ck.Kind != kind {
		r.failf("record-parent", "checkpoint %s is of kind %q, the model expects %q", id.Short(), ck.Kind, kind)
	}
}

// ---------------------------------------------------------------------------
// The model of tasks: the stack a checkpoint's "tasks" document records.

type taskEnt struct {
	ID     int    `json:"id"`
	Status string `json:"status"`
	Parent int    `json:"parent"`
}

type taskDoc struct {
	NextID int       `json:"next_id"`
	Stack  []int     `json:"stack"`
	Tasks  []taskEnt `json:"tasks"`
}

// defaultTaskDepth is tasks.max-depth when it is not set (each run sets
// its own, 1..5, per project: the max-depth op).
const defaultTaskDepth = 3

// taskDocOf reads the task stack checkpoint c records (empty when c is
// nil or has none).
func taskDocOf(c *ckRec) (*taskDoc, error) {
	td := &taskDoc{}
	if c == nil {
		return td, nil
	}
	d, ok := c.docs[snap.TaskDoc]
	if !ok || d.Absent {
		return td, nil
	}
	if err := json.Unmarshal([]byte(d.Data), td); err != nil {
		return nil, fmt.Errorf("%s: the task document does not parse: %v", c, err)
	}
	return td, nil
}

func (t *taskDoc) clone() *taskDoc {
	return &taskDoc{NextID: t.NextID, Stack: slices.Clone(t.Stack), Tasks: slices.Clone(t.Tasks)}
}

func (t *taskDoc) get(id int) *taskEnt {
	for i := range t.Tasks {
		if t.Tasks[i].ID == id {
			return &t.Tasks[i]
		}
	}
	return nil
}

func (t *taskDoc) current() *taskEnt {
	if len(t.Stack) == 0 {
		return nil
	}
	return t.get(t.Stack[len(t.Stack)-1])
}

func (t *taskDoc) depth(id int) int {
	d := 0
	for e := t.get(id); e != nil; e = t.get(e.Parent) {
		d++
	}
	return d
}

// next is the least id the document itself allows.
func (t *taskDoc) next() int {
	n := max(t.NextID, 1)
	for _, e := range t.Tasks {
		n = max(n, e.ID+1)
	}
	return n
}

func (t *taskDoc) String() string {
	var parts []string
	for _, e := range t.Tasks {
		parts = append(parts, fmt.Sprintf("%d:%s^%d", e.ID, e.Status, e.Parent))
	}
	return fmt.Sprintf("stack %v, tasks [%s], next %d", t.Stack, strings.Join(parts, " "), t.next())
}

// begin pushes a task (why: the refusal).
func (t *taskDoc) begin(goal string, parent, floor, maxDepth int) (*taskEnt, string) {
	if strings.TrimSpace(goal) == "" {
		return nil, "an empty goal"
	}
	switch {
	case parent == 0:
		if cur := t.current(); cur != nil {
			parent = cur.ID
		}
	case parent < 0:
		parent = 0
	default:
		if !slices.Contains(t.Stack, parent) {
			return nil, fmt.Sprintf("task %d is not open", parent)
		}
	}
	if t.depth(parent)+1 > maxDepth {
		return nil, "deeper than tasks.max-depth"
	}
	id := max(t.next(), floor, 1)
	t.Tasks = append(t.Tasks, taskEnt{ID: id, Status: "open", Parent: parent})
	t.Stack = append(t.Stack, id)
	t.NextID = id + 1
	return t.get(id), ""
}

func (t *taskDoc) commit(summary string, keepOpen bool) (*taskEnt, string) {
	if strings.TrimSpace(summary) == "" {
		return nil, "an empty summary"
	}
	cur := t.current()
	if cur == nil {
		return nil, "no open task"
	}
	if !keepOpen {
		cur.Status = "committed"
		t.Stack = t.Stack[:len(t.Stack)-1]
	}
	return cur, ""
}

func (t *taskDoc) revert(reason string) (*taskEnt, string) {
	cur := t.current()
	if cur == nil {
		return nil, "no open task"
	}
	if strings.TrimSpace(reason) == "" {
		return nil, "an empty reason"
	}
	cur.Status = "reverted"
	t.Stack = t.Stack[:len(t.Stack)-1]
	for i := range t.Tasks {
		if e := &t.Tasks[i]; e.ID > cur.ID && e.Status == "committed" {
			e.Status = "reverted" // its files went back too
		}
	}
	return cur, ""
}

// adoptTaskDoc checks the task document checkpoint rec records against
// the model's and takes it as rec's.
func (r *runner) adoptTaskDoc(p *project, rec *ckRec, want *taskDoc, what string) {
	st := p.repo.Objects()
	ck, err := st.ReadCheckpoint(rec.id)
	if err != nil {
		r.failf("store-read", "%s %s: %v", what, rec.id.Short(), err)
		return
	}
	stt, err := st.ReadTree(ck.State)
	if err != nil {
		r.failf("store-read", "%s %s: state tree: %v", what, rec.id.Short(), err)
		return
	}
	e, ok := stt.Find(snap.TaskDoc)
	if !ok {
		r.failf("task-doc", "%s %s records no task stack (the model expects %s)", what, rec.id.Short(), want)
		return
	}
	data, err := st.ReadBlob(e.ID, 1<<30)
	if err != nil {
		r.failf("store-read", "%s %s: task document: %v", what, rec.id.Short(), err)
		return
	}
	got := &taskDoc{}
	if err := json.Unmarshal(data, got); err != nil {
		r.failf("task-doc", "%s %s: the task document does not parse: %v", what, rec.id.Short(), err)
	} else if got.String() != want.String() {
		r.failf("task-doc", "%s %s records tasks %s, the model expects %s", what, rec.id.Short(), got, want)
	}
	docs := map[string]doc{}
	for n, d := range rec.docs {
		docs[n] = d
	}
	docs[snap.TaskDoc] = doc{Data: string(data)}
	rec.docs = docs
}

// opTaskCheckpoint runs a task begin, or a task commit with no staged
// edits: each records a checkpoint of the present with the task document
// changed; it returns that checkpoint (nil: refused or failed).
func (r *runner) opTaskCheckpoint(p *project, op *Op) *ckRec {
	s := op.Session
	d0, o0 := r.mustScan(p), p.scanOut()
	h := p.head(s)
	td, err := taskDocOf(h)
	if err != nil {
		r.failf("task-doc", "%v", err)
		return nil
	}
	want := td.clone()
	var t *taskEnt
	var why string
	var res *workflow.TaskResult
	if op.Kind == "task-begin" {
		t, why = want.begin(op.Text, op.Parent, p.taskFloor[s], p.depth())
		res, err = workflow.New(p.repo).TaskBegin(r.ctx, workflow.TaskOptions{Session: s, Text: op.Text, Parent: parentArg(op.Parent)})
	} else {
		t, why = want.commit(op.Text, op.KeepOpen)
		res, err = workflow.New(p.repo).TaskCommit(r.ctx, workflow.TaskOptions{Session: s, Text: op.Text, KeepOpen: op.KeepOpen})
	}
	r.checkUnchanged(p, d0, o0, op.Kind)
	what := fmt.Sprintf("%s in session %s (tasks %s)", op.Kind, s, td)
	if why != "" {
		if msg := errClass("usage", err); msg != "" {
			r.failf("task-op", "%s: %s; the model expects a usage error: %s", what, msg, why)
			if err == nil {
				r.resyncAfterUnmodelled(p, s)
			}
		}
		r.stats[op.Kind+" refused: "+why]++
		return nil
	}
	if err != nil {
		r.failf("task-op", "%s: %v", what, err)
		r.resyncHead(p, s)
		return nil
	}
	r.stats[op.Kind]++
	if res.Task.ID != t.ID || fmt.Sprint(res.Stack) != fmt.Sprint(orEmptyInts(want.Stack)) {
		cat := "task-op"
		if op.Kind == "task-begin" && res.Task.ID != t.ID {
			cat = "task-id"
		}
		r.failf(cat, "%s: answered task %d, stack %v; the model expects task %d, stack %v", what, res.Task.ID, res.Stack, t.ID, want.Stack)
	}
	docs := expectDocs(h, nil, nil)
	co := capOpts{exclude: p.excludedSources(docs)}
	rec := &ckRec{id: res.Checkpoint, session: s, docs: docs, kind: op.Kind}
	if h != nil {
		co.parent, rec.parent = h.files, h.id
	}
	exp := expectCapture(d0, co)
	rec.files, rec.skipped = exp.files, exp.unreadable
	r.adoptTaskDoc(p, rec, want, op.Kind+" checkpoint")
	r.verifyRecord(p, rec, exp, op.Kind+" checkpoint")
	r.checkKind(p, rec.id, op.Kind)
	p.logCk(p.add(rec))
	so := &stackOp{kind: "checkpoint", step: r.step, session: s, newHead: rec.id}
	if h != nil {
		so.oldHead = h.id
	}
	r.push(p, s, so)
	p.noteOrder(s, rec.id)
	p.heads[s] = rec.id
	p.taskFloor[s] = max(p.taskFloor[s], t.ID+1)
	return rec
}

func orEmptyInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// findBegin finds the task-begin checkpoint of task id from head h: the
// nearest ancestor of kind task-begin whose stack has id current. maybe:
// the way there passes a checkpoint retention expired (or one the model
// does not know), so snap may fail to walk it.
func (p *project) findBegin(h *ckRec, id int) (begin *ckRec, maybe bool) {
	for c := h; c != nil; {
		if c.expired || c.kind == "unknown" {
			maybe = true
		}
		if c.kind == "task-begin" {
			if td, err := taskDocOf(c); err == nil && td.current() != nil && td.current().ID == id {
				return c, maybe
			}
		}
		if c.parent.IsZero() {
			break
		}
		next := p.byID[c.parent]
		if next == nil {
			return nil, true
		}
		c = next
	}
	return nil, maybe
}

func (r *runner) opTaskRevert(p *project, op *Op) {
	s := op.Session
	d0, o0 := r.mustScan(p), p.scanOut()
	h := p.head(s)
	pe := p.edits(s)
	td, err := taskDocOf(h)
	if err != nil {
		r.failf("task-doc", "%v", err)
		return
	}
	want := td.clone()
	t, why := want.revert(op.Text)
	what := fmt.Sprintf("task-revert in session %s (tasks %s)", s, td)
	var begin *ckRec
	maybe := false
	if why == "" {
		if begin, maybe = p.findBegin(h, t.ID); begin == nil && !maybe {
			why = "the model finds no task-begin checkpoint"
		}
	}
	if why != "" || begin == nil {
		_, err := workflow.New(p.repo).TaskRevert(r.ctx, workflow.TaskOptions{Session: s, Text: op.Text, All: !op.Scoped})
		r.checkUnchanged(p, d0, o0, "a refused task revert")
		if err == nil {
			r.failf("task-op", "%s succeeded; the model expects a usage error: %s", what, why)
			r.resyncAfterUnmodelled(p, s)
		} else if why != "" && why != "an empty reason" && !errors.Is(err, snap.ErrUsage) {
			// (An empty reason is checked after the task's begin is
			// looked for: a begin retention expired is refused first.)
			r.failf("task-op", "%s: %v; the model expects a usage error: %s", what, err, why)
		}
		r.stats["task-revert refused: "+why]++
		return
	}
	sc := scope{files: true}
	me := p.expectMove(d0, o0, begin, h, sc, nil, nil)
	var se *scopedExp
	if op.Scoped {
		se = p.predictScoped(s, begin, me, nil, d0)
	}
	res, err := workflow.New(p.repo).TaskRevert(r.ctx, workflow.TaskOptions{Session: s, Text: op.Text, All: !op.Scoped})
	if maybe && err != nil && !errors.Is(err, snap.ErrPartial) {
		if !errors.Is(err, snap.ErrNoCheckpoint) {
			r.failf("task-op", "%s: %v; across checkpoints retention expired the model expects a no-such-checkpoint error (ErrExpired)", what, err)
		}
		r.checkUnchanged(p, d0, o0, "a refused task revert")
		r.stats["task-revert across expired checkpoints refused"]++
		return
	}
	var rr *snap.RewindResult
	if res != nil {
		rr = res.Rewind
	}
	what += fmt.Sprintf(" to %s", begin)
	if op.Scoped {
		what = "scoped " + what
	}
	mbegin := begin
	if err == nil || errors.Is(err, snap.ErrPartial) {
		var taskEnd objects.ID
		if res != nil {
			taskEnd = res.Checkpoint
		}
		_, end := r.scopedEnd(p, what, "task-revert", se, begin, rr, taskEnd)
		if se != nil {
			me = p.rescoped(me, d0, o0, begin, end, h, sc, nil, nil)
			mbegin = withEnd(begin, end)
		}
	}
	ok, d1, o1 := r.checkMove(p, what, d0, o0, me, mbegin, h, s, rr, err)
	if !ok || rr.SafetyCheckpoint == nil {
		r.resyncAfterUnmodelled(p, s)
		return
	}
	r.checkOverwritten(what, se, d0, d1)
	r.stats["task-revert"]++
	if res.Task.ID != t.ID || fmt.Sprint(res.Stack) != fmt.Sprint(orEmptyInts(want.Stack)) {
		r.failf("task-op", "%s: answered task %d, stack %v; the model expects task %d, stack %v", what, res.Task.ID, res.Stack, t.ID, want.Stack)
	}
	sid := *rr.SafetyCheckpoint
	docs := map[string]doc{}
	if sr := p.byID[sid]; sr != nil {
		for n, d := range sr.docs {
			docs[n] = d
		}
	}
	endFiles := carryTargetDocs(p, mbegin.files, begin, me)
	rec := &ckRec{id: res.Checkpoint, session: s, files: endFiles, docs: docs, kind: "task-revert", parent: sid}
	r.adoptTaskDoc(p, rec, want, "task-revert checkpoint")
	r.verifyRecord(p, rec, capExp{files: endFiles, unreadable: trimAll(begin.skipped)}, "task-revert checkpoint")
	r.checkKind(p, rec.id, "task-revert")
	rec = p.add(rec)
	p.logMove(s, p.byID[sid], rec, nil, true, p.byID[sid], rec)
	so := &stackOp{kind: "rewind", what: "task-revert", step: r.step, session: s, newHead: rec.id, target: rec.id, safety: sid,
		scope: sc, before: d0, after: d1, outBefore: o0, outAfter: o1, exclude: excludeOf(d0),
		created: createdIgnored(d0, d1, recordRules(me.safety.files, d0), rec.files, nil), createdDocs: map[string]string{}, allApplied: !op.Scoped}
	if h != nil {
		so.oldHead = h.id
	}
	if len(pe.Changes) > 0 {
		so.edits = pe.clone()
	}
	if len(rr.Kept) > 0 {
		so.scopedFrom = begin.id
	}
	so.safetyReused = !rr.SafetyCreated
	r.push(p, s, so)
	p.noteOrder(s, sid)
	setHead(p, s, rec.id)
	p.pending[s] = &pendingEdits{}
	p.taskFloor[s] = max(p.taskFloor[s], t.ID+1)
}

// carryTargetDocs returns the files of a move's end that keeps the
// session's documents (a task revert): the target's files, but a path
// where the target kept a document of its own, not the session's now, is
// left alone by the move and held as it is in the present (seed 905).
func carryTargetDocs(p *project, files tree, T *ckRec, me moveExp) tree {
	own := p.excludedSources(me.safetyDoc)
	out, cloned := files, false
	for q := range p.excludedSources(T.docs) {
		if own[q] {
			continue
		}
		if !cloned {
			out, cloned = files.clone(), true
		}
		under := func(k string) bool { return k == q || strings.HasPrefix(k, q+"/") }
		maps.DeleteFunc(out, func(k string, _ ent) bool { return under(k) })
		for k, e := range me.safety.files {
			if under(k) {
				out[k] = e
			}
		}
		if _, on := me.safety.files[q]; on {
			for a := path.Dir(q); a != "."; a = path.Dir(a) {
				if _, ok := out[a]; !ok {
					out[a] = ent{K: 'd'}
				}
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// After every snap operation.

// checkAgent compares each session's staged edits and task stack with
// the model, and checks that nothing was written outside the project.
//
// Each is checked after the ops that may change it, in the op's session
// (both after a reopen): the staged edits after the edit and task ops,
// undo and redo; the stack after whatever moves the head.
func (r *runner) checkAgent(p *project, op *Op) {
	var edits, stacks bool
	switch op.Kind {
	case "edit-stage", "edit-commit", "edit-revert", "edit-drop", "task-commit", "task-revert", "undo", "redo", "reopen",
		"edit-preview", "git-commit", "commit-kill":
		edits, stacks = true, true
	case "task-begin", "checkpoint", "rewind":
		stacks = true
	case "gc", "label":
	default:
		return // a file-system op touches neither, nor the store
	}
	for _, s := range sessions {
		if s != op.Session && op.Kind != "reopen" {
			continue
		}
		if edits {
			if msg := r.pendingDiff(p, s); msg != "" {
				r.failf("edit-pending", "after %s: %s", op.Kind, msg)
				r.resyncPending(p, s)
			}
		}
		if !stacks {
			continue
		}
		td, err := taskDocOf(p.head(s))
		if err != nil {
			r.failf("task-doc", "%v", err)
			continue
		}
		tt, err := workflow.New(p.repo).Tasks(r.ctx, s, nil)
		if err != nil {
			r.failf("task-stack", "after %s: the tasks of session %s: %v", op.Kind, s, err)
			continue
		}
		cur := 0
		if tt.Current != nil {
			cur = *tt.Current
		}
		wantCur := 0
		if c := td.current(); c != nil {
			wantCur = c.ID
		}
		if fmt.Sprint(tt.Stack) != fmt.Sprint(orEmptyInts(td.Stack)) || cur != wantCur {
			r.failf("task-stack", "after %s: session %s has the task stack %v (current %d); its head %s records %v",
				op.Kind, s, tt.Stack, cur, p.head(s), td.Stack)
		}
	}
	if names, err := os.ReadDir(p.ext); err != nil || len(names) > 0 {
		var ns []string
		for _, n := range names {
			ns = append(ns, n.Name())
		}
		r.failf("outside-write", "after %s: the directory outside the project that symlinks lead to holds %v (%v)", op, ns, err)
		os.RemoveAll(p.ext)
		os.MkdirAll(p.ext, 0o755)
	}
}

// pendingDiff compares snap's pending changes of a session with the
// model's ("" when they agree).
func (r *runner) pendingDiff(p *project, s string) string {
	ans, err := workflow.New(p.repo).EditStatus(r.ctx, s)
	if err != nil {
		return fmt.Sprintf("the staged edits of session %s: %v", s, err)
	}
	pe := p.edits(s)
	var got, want []string
	for _, c := range ans.Pending {
		got = append(got, fmt.Sprintf("%s:%s %s@%d", c.ChangeID, c.Kind, c.Path, c.Position))
	}
	for _, c := range pe.Changes {
		want = append(want, fmt.Sprintf("%s:%s %s@%d", c.ID, c.Kind, c.Path, c.Offset))
	}
	wantStatus := "idle"
	if len(want) > 0 {
		wantStatus = "editing"
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || ans.Status != wantStatus {
		return fmt.Sprintf("session %s has the pending changes %v (%s); the model expects %v", s, got, ans.Status, want)
	}
	return ""
}

// resyncPending takes snap's pending changes as the model's after a
// difference (their bases read from the store's document).
func (r *runner) resyncPending(p *project, s string) {
	pe := &pendingEdits{}
	workflow.New(p.repo).EditStatus(r.ctx, s) // settles a commit the document still names
	data, err := os.ReadFile(filepath.Join(p.store, "edits", s+".json"))
	if err == nil {
		var doc struct {
			Next  int `json:"next"`
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
			Changes []struct {
				ID     string `json:"change_id"`
				Path   string `json:"path"`
				Kind   string `json:"kind"`
				Offset int    `json:"position"`
				Line   int    `json:"line"`
				Old    string `json:"old"`
				New    string `json:"new"`
			} `json:"changes"`
		}
		if json.Unmarshal(data, &doc) == nil {
			pe.Next = doc.Next
			d := r.mustScan(p)
			for _, f := range doc.Files {
				e, ok := d[f.Path]
				pe.Bases = append(pe.Bases, editBase{Path: f.Path, Exists: ok, Data: e.Data})
			}
			for _, c := range doc.Changes {
				pe.Changes = append(pe.Changes, editChange{ID: c.ID, Path: c.Path, Kind: c.Kind, Offset: c.Offset, Line: c.Line, Old: c.Old, New: c.New})
			}
		}
	}
	p.pending[s] = pe
}

// ---------------------------------------------------------------------------
// Read-only commands: snap edit status --json, snap task [--json].

func (r *runner) checkEditStatusJSON(p *project, s string, out []byte) string {
	var ans struct {
		Status  string `json:"status"`
		Pending []struct {
			ID   string `json:"change_id"`
			Path string `json:"path"`
		} `json:"pending_changes"`
	}
	if err := json.Unmarshal(out, &ans); err != nil {
		return "output does not parse: " + err.Error()
	}
	var got, want []string
	for _, c := range ans.Pending {
		got = append(got, c.ID+":"+c.Path)
	}
	for _, c := range p.edits(s).Changes {
		want = append(want, c.ID+":"+c.Path)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("lists %v, the model %v", got, want)
	}
	return ""
}

func (r *runner) checkTaskJSON(p *project, s string, out []byte) string {
	var tt struct {
		Stack []int `json:"stack"`
	}
	if err := json.Unmarshal(out, &tt); err != nil {
		return "output does not parse: " + err.Error()
	}
	td, err := taskDocOf(p.head(s))
	if err != nil {
		return err.Error()
	}
	if fmt.Sprint(orEmptyInts(tt.Stack)) != fmt.Sprint(orEmptyInts(td.Stack)) {
		return fmt.Sprintf("the stack is %v, the model %v", tt.Stack, td.Stack)
	}
	return ""
}

// parentArg is the model's parent (0: the current task, -1: the top
// level, N: task N) as a front-end gives it (nil, 0, N).
func parentArg(parent int) *int {
	switch {
	case parent == 0:
		return nil
	case parent < 0:
		parent = 0
	}
	return &parent
}
