package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	snap "github.com/snapcore-dev/snap"
)

// Op is one step of a run. Ops are plain data (JSON in a replay file):
// everything random is decided when the op is generated, so a sequence
// replays the same way, and an op whose precondition no longer holds
// (after the shrinker removed earlier ops) does nothing.
type Op struct {
	ID   int    `json:"id"` // its step in the generated run: kept when the shrinker removes others
	Kind string `json:"kind"`
	Proj int    `json:"proj,omitempty"` // 0: the main project, 1: the second one

	Path  string `json:"path,omitempty"`
	Path2 string `json:"path2,omitempty"`
	Data  string `json:"data,omitempty"`
	Exec  bool   `json:"exec,omitempty"`
	Del   bool   `json:"del,omitempty"` // ignore/exclude/tasks: remove the file

	Session string `json:"session,omitempty"`
	Conv    bool   `json:"conv,omitempty"`  // checkpoint: pass the transcript
	Tasks   bool   `json:"tasks,omitempty"` // checkpoint: pass the tasks document
	Label   string `json:"label,omitempty"`
	// AllowEmpty: record even an unchanged checkpoint (when the API has
	// CheckpointOptions.AllowEmpty).
	AllowEmpty bool     `json:"allow_empty,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	// Target names a checkpoint by the op that made it (its ID; C@17 in
	// listings): a checkpoint, or a rewind's, undo's or redo's safety
	// checkpoint. When that op is gone (shrinking), the newest checkpoint
	// made before it is taken.
	Target int    `json:"target,omitempty"`
	Form   string `json:"form,omitempty"`  // how the REF is written: id, prefix, label, @, @~1
	Scope  string `json:"scope,omitempty"` // rewind: full, files, conv, paths
	DryRun bool   `json:"dry_run,omitempty"`
	Policy int    `json:"policy,omitempty"` // gc: 0 store policy, 1 keep-last 3 keep-within 0 grace 0, 2 grace 0

	// Staged edits and tasks (agent_test.go). Data is the new text of a
	// replace or the whole content of a write.
	Edit       string `json:"edit,omitempty"`        // edit-stage: replace, write, delete
	Old        string `json:"old,omitempty"`         // edit-stage replace: the text to find
	Match      string `json:"match,omitempty"`       // edit-stage: the candidate letter; edit-drop: the change
	After      string `json:"after,omitempty"`       // edit-stage replace: the anchor
	AllMatches bool   `json:"all_matches,omitempty"` // edit-stage replace: up to 26 candidates
	Text       string `json:"text,omitempty"`        // a commit's summary, a revert's reason, a task's goal
	Parent     int    `json:"parent,omitempty"`      // task-begin: 0 the current task, -1 top level, N task N
	KeepOpen   bool   `json:"keep_open,omitempty"`   // task-commit
	// Task: git-commit, commit-kill: a task commit (else an edit commit).
	Task bool `json:"task,omitempty"`
	// Context: edit-preview: the context lines (Scope is the mode).
	Context int `json:"context,omitempty"`
	// Kill: commit-kill: the commit is killed at its Kill-th write to the
	// working tree (Path, Data: what is written meanwhile; Form: the
	// command that completes it).
	Kill int `json:"kill,omitempty"`
	// Actors (issue 22; actors_test.go). Actor: checkpoint: who made the
	// changes it records ("", "agent", "user"); Call: the agent's tool
	// call. Scoped: rewind, undo, redo, task-revert: the move changes
	// only what the session's own actors changed (All unset); without it
	// every path (All, as every op did before actors).
	Actor  string `json:"actor,omitempty"`
	Call   string `json:"call,omitempty"`
	Scoped bool   `json:"scoped,omitempty"`
	// Then: rewind, undo, redo, task-revert: undo and redo ops of the
	// session run at once after it ("undo", "undo,redo", "redo"), so
	// that undo right after a move, and redo right after that undo, are
	// checked exact (actors_test.go).
	Then string `json:"then,omitempty"`
	// Hooks: hook-turn: the files written and the hook events sent, in
	// order (hook_test.go).
	Hooks []HookEv `json:"hooks,omitempty"`

	CLI *CLIOp `json:"cli,omitempty"` // read-only CLI command run after the op
}

// CLIOp is a read-only command of the real binary.
type CLIOp struct {
	Cmd     string `json:"cmd"`
	Session string `json:"session,omitempty"`
	Target  int    `json:"target,omitempty"`
	Target2 int    `json:"target2,omitempty"`
	Form    string `json:"form,omitempty"`
	Pick    int    `json:"pick,omitempty"`    // cat: which path of the checkpoint (modulo), -1: one it does not have
	Variant int    `json:"variant,omitempty"` // text or --json
}

func (o Op) String() string {
	var b strings.Builder
	if o.Proj != 0 {
		fmt.Fprintf(&b, "[p%d] ", o.Proj+1)
	}
	b.WriteString(o.Kind)
	q := func(s string) string {
		if len(s) > 40 {
			return fmt.Sprintf("%q...(%d bytes)", s[:40], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	switch o.Kind {
	case "write":
		fmt.Fprintf(&b, " %s %s", o.Path, q(o.Data))
		if o.Exec {
			b.WriteString(" +x")
		}
	case "append":
		fmt.Fprintf(&b, " %s %s", o.Path, q(o.Data))
	case "rm", "mkdir", "fifo", "unreadable", "readable", "swap":
		fmt.Fprintf(&b, " %s", o.Path)
	case "mv":
		fmt.Fprintf(&b, " %s -> %s", o.Path, o.Path2)
	case "chmod":
		if o.Exec {
			fmt.Fprintf(&b, " +x %s", o.Path)
		} else {
			fmt.Fprintf(&b, " -x %s", o.Path)
		}
	case "symlink":
		fmt.Fprintf(&b, " %s -> %q", o.Path, o.Data)
	case "big":
		fmt.Fprintf(&b, " %s (%d bytes)", o.Path, len(o.Data))
	case "ignore", "exclude", "gitfile":
		fmt.Fprintf(&b, " %s", o.Path)
		if o.Del {
			b.WriteString(" (removed)")
		} else {
			fmt.Fprintf(&b, " = %s", q(o.Data))
		}
	case "transcript":
		fmt.Fprintf(&b, " %s", o.Path)
		if o.Data != "" {
			fmt.Fprintf(&b, " %s", q(o.Data))
		}
	case "tasks":
		if o.Del {
			b.WriteString(" (removed)")
		} else {
			fmt.Fprintf(&b, " = %s", q(o.Data))
		}
	case "checkpoint":
		fmt.Fprintf(&b, " -s %s", o.Session)
		if o.Conv {
			b.WriteString(" --conversation")
		}
		if o.Tasks {
			b.WriteString(" --state todo")
		}
		if o.Label != "" {
			fmt.Fprintf(&b, " --label %s", o.Label)
		}
		if o.AllowEmpty {
			b.WriteString(" --allow-empty")
		}
		for _, p := range o.Paths {
			fmt.Fprintf(&b, " --paths %q", p)
		}
		if o.Actor != "" {
			fmt.Fprintf(&b, " --actor %s", o.Actor)
		}
		if o.Call != "" {
			fmt.Fprintf(&b, " --call %s", o.Call)
		}
	case "rewind":
		fmt.Fprintf(&b, " -s %s C@%d (as %s) %s", o.Session, o.Target, o.Form, o.Scope)
		for _, p := range o.Paths {
			fmt.Fprintf(&b, " --path %q", p)
		}
		if o.DryRun {
			b.WriteString(" (dry run first)")
		}
		if !o.Scoped {
			b.WriteString(" --all")
		}
	case "undo", "redo":
		fmt.Fprintf(&b, " -s %s", o.Session)
		if !o.Scoped {
			b.WriteString(" --all")
		}
	case "label":
		fmt.Fprintf(&b, " -s %s C@%d (as %s) %s", o.Session, o.Target, o.Form, o.Label)
	case "gc":
		fmt.Fprintf(&b, " %s", []string{"store policy", "keep-last 3 keep-within 0 grace 0", "grace 0"}[o.Policy])
	case "blame":
		fmt.Fprintf(&b, " -s %s %s", o.Session, o.Path)
	case "revert":
		fmt.Fprintf(&b, " -s %s C@%d (as %s)", o.Session, o.Target, o.Form)
		if o.DryRun {
			b.WriteString(" (dry run first)")
		}
		if !o.Scoped {
			b.WriteString(" --all")
		}
	case "hook-turn":
		fmt.Fprintf(&b, " -s %s:", o.Session)
		for i, e := range o.Hooks {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" " + e.String())
		}
	default:
		o.agentString(&b, q)
	}
	if o.Then != "" {
		fmt.Fprintf(&b, ", then at once %s", o.Then)
	}
	if o.CLI != nil {
		fmt.Fprintf(&b, "; then cli %s", o.CLI)
	}
	return b.String()
}

func (c *CLIOp) String() string {
	s := c.Cmd
	if c.Session != "" && c.Session != "default" {
		s += " -s " + c.Session
	}
	switch c.Cmd {
	case "show", "conversation", "cat-state":
		s += fmt.Sprintf(" C@%d(as %s)", c.Target, c.Form)
	case "cat":
		s += fmt.Sprintf(" C@%d(as %s):path#%d", c.Target, c.Form, c.Pick)
	case "diff2":
		s += fmt.Sprintf(" C@%d C@%d", c.Target, c.Target2)
	}
	if c.Variant == 1 {
		s += " --json"
	}
	return s
}

// ---------------------------------------------------------------------------
// Generation.

var (
	dirNames  = []string{"a", "b", "src", "node_modules", "build"}
	fileNames = []string{"x", "y", "z.txt", "main.go", "app.log", "keep.log", ".env", "run.sh"}
	// rulePool: ignore rules, many of them matching names of the alphabet.
	rulePool = []string{
		".env", "node_modules/", "*.log", "!keep.log", "build/", "/x", "a/y", "**/z.txt", "*.sh",
		"b", "!.env", "src/", "main.go", "# comment", "x*", "!main.go", "/a/", "a/**", "**/build",
		"*.jsonl", "y", "!y", "z.*", "src/*.go", "!src/", "?",
	}
	symlinkTargets = []string{"x", "../x", "a", "nowhere", "/etc/hostname", "../../outside", "src/main.go", "."}
	labelNames     = []string{"l1", "l2", "l3"}
)

func randPath(rng *rand.Rand, maxDepth int) string {
	var comps []string
	for i := rng.IntN(maxDepth + 1); i > 0; i-- {
		comps = append(comps, dirNames[rng.IntN(len(dirNames))])
	}
	comps = append(comps, fileNames[rng.IntN(len(fileNames))])
	return strings.Join(comps, "/")
}

func randDir(rng *rand.Rand, maxDepth int) string {
	var comps []string
	for i := 1 + rng.IntN(maxDepth); i > 0; i-- {
		comps = append(comps, dirNames[rng.IntN(len(dirNames))])
	}
	return strings.Join(comps, "/")
}

var words = []string{"alpha", "beta", "gamma", "delta", "func main() {}", "package main", "TODO", "x = 1", "secret=42", ""}

func randContent(rng *rand.Rand) string {
	switch rng.IntN(10) {
	case 0:
		return ""
	case 1:
		return string([]byte{0, 1, 2, byte(rng.IntN(256))}) // binary
	case 2:
		return fmt.Sprintf("v%d\n", rng.IntN(10)) // same size as other versions
	}
	var b strings.Builder
	for i := 1 + rng.IntN(4); i > 0; i-- {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte('\n')
	}
	return b.String()
}

func convLine(rng *rand.Rand, n int) string {
	switch rng.IntN(12) {
	case 0:
		return "not json at all\n"
	case 1:
		return fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"Edit","input":{"file":"x"}}]},"n":%d}`+"\n", n)
	}
	role := []string{"user", "assistant"}[rng.IntN(2)]
	return fmt.Sprintf(`{"type":%q,"message":{"role":%q,"content":"message %d"}}`+"\n", role, role, n)
}

// genState is what the generator looks at: the disk and the model.
type genState struct {
	disk tree
	p    *project
}

// existing picks an existing path of the given kinds ("" any), or "".
func (g *genState) existing(rng *rand.Rand, kinds string) string {
	var c []string
	for p, e := range g.disk {
		if hasGit(p) || p == "chat.jsonl" {
			continue
		}
		if kinds == "" || strings.IndexByte(kinds, e.K) >= 0 {
			c = append(c, p)
		}
	}
	if len(c) == 0 {
		return ""
	}
	sort.Strings(c)
	return c[rng.IntN(len(c))]
}

func (g *genState) pathFor(rng *rand.Rand, kinds string) string {
	if rng.IntN(10) < 6 {
		if p := g.existing(rng, kinds); p != "" {
			return p
		}
	}
	return randPath(rng, 3)
}

type weighted struct {
	kind string
	w    int
}

var opWeights = []weighted{
	{"write", 16}, {"append", 4}, {"rm", 5}, {"mv", 4}, {"chmod", 3}, {"symlink", 3}, {"mkdir", 2},
	{"swap", 2}, {"fifo", 1}, {"big", 2}, {"unreadable", 2}, {"readable", 1}, {"ignore", 9},
	{"exclude", 1}, {"gitfile", 1}, {"transcript", 7}, {"tasks", 1},
	{"checkpoint", 16}, {"rewind", 11}, {"undo", 5}, {"redo", 3}, {"label", 1}, {"gc", 2},
	// blame_test.go, hook_test.go.
	{"blame", 3}, {"hook-turn", 3}, {"revert", 3},
	// The agent workflow (agent_test.go): about a sixth of the ops; the
	// default run has as many more steps, so the ops above keep their
	// counts.
	{"edit-stage", 9}, {"edit-commit", 3}, {"edit-revert", 1}, {"edit-drop", 1},
	{"task-begin", 4}, {"task-commit", 2}, {"task-revert", 2}, {"reopen", 1}, {"linkdir", 1},
	// preview_test.go, killed_test.go.
	{"max-depth", 1}, {"edit-preview", 3}, {"commit-kill", 2},
}

// gitWeights are the ops of a git project only (git_test.go), drawn with
// the others there.
var gitWeights = []weighted{{"git-commit", 8}, {"git-add", 4}}

func pick(rng *rand.Rand, ws []weighted) string {
	total := 0
	for _, w := range ws {
		total += w.w
	}
	n := rng.IntN(total)
	for _, w := range ws {
		if n < w.w {
			return w.kind
		}
		n -= w.w
	}
	return ws[0].kind
}

// gen makes the next op.
func gen(rng *rand.Rand, g *genState) Op {
	ws := opWeights
	if g.p.git {
		ws = slices.Concat(opWeights, gitWeights)
	}
	op := Op{Kind: pick(rng, ws), Proj: g.p.idx}
	switch op.Kind {
	case "write":
		op.Path = g.pathFor(rng, "fx")
		op.Data = tagLines(rng, g, randContent(rng))
		op.Exec = rng.IntN(6) == 0
	case "append":
		op.Path = g.pathFor(rng, "fx")
		op.Data = tagLines(rng, g, randContent(rng))
	case "rm":
		op.Path = g.pathFor(rng, "")
	case "mv":
		op.Path = g.pathFor(rng, "")
		if rng.IntN(2) == 0 {
			op.Path2 = randDir(rng, 2)
		} else {
			op.Path2 = randPath(rng, 2)
		}
	case "chmod":
		op.Path = g.pathFor(rng, "fx")
		op.Exec = rng.IntN(2) == 0
	case "symlink":
		op.Path = g.pathFor(rng, "fxl")
		op.Data = symlinkTargets[rng.IntN(len(symlinkTargets))]
	case "mkdir":
		op.Path = randDir(rng, 3)
	case "swap":
		op.Path = g.pathFor(rng, "fxld")
		op.Data = tagLines(rng, g, randContent(rng))
	case "fifo":
		op.Path = randPath(rng, 2)
	case "big":
		op.Path = g.pathFor(rng, "fx")
		op.Data = strings.Repeat(fmt.Sprintf("big %d\n", rng.IntN(100)), maxFileSize/6+1+rng.IntN(50))
	case "unreadable", "readable":
		op.Path = g.pathFor(rng, "fx")
	case "ignore":
		dir := ""
		if rng.IntN(3) > 0 {
			if d := g.existing(rng, "d"); d != "" {
				dir = d
			}
		}
		name := ".gitignore"
		if rng.IntN(4) == 0 {
			name = ".snapignore"
		}
		op.Path = join(dir, name)
		old := ""
		if e, ok := g.disk[op.Path]; ok && (e.K == 'f' || e.K == 'x') {
			old = e.Data
		}
		op.Data, op.Del = editRules(rng, old)
	case "exclude":
		op.Path = ".git/info/exclude"
		old := ""
		if e, ok := g.disk[op.Path]; ok {
			old = e.Data
		}
		op.Data, op.Del = editRules(rng, old)
	case "gitfile":
		dir := ""
		if rng.IntN(2) == 0 {
			dir = randDir(rng, 2)
		}
		if dir == "" && g.p.git {
			dir = randDir(rng, 2) // not the real repository's own files
		}
		op.Path = join(dir, ".git/"+[]string{"HEAD", "config", "objects/ab"}[rng.IntN(3)])
		op.Data = randContent(rng)
	case "transcript":
		size := -1
		if data, ok := readOutside(g.p.convPath()); ok {
			size = len(data)
		}
		switch n := rng.IntN(20); {
		case size < 0 || n < 13 && size < maxFileSize*3/4:
			op.Path = "append"
			for i := 1 + rng.IntN(3); i > 0; i-- {
				op.Data += convLine(rng, rng.IntN(1000))
			}
		case n < 16:
			op.Path = "replace"
			op.Data = convLine(rng, rng.IntN(1000)) + convLine(rng, rng.IntN(1000))
		case n < 18:
			op.Path = "delete"
		default:
			op.Path = "move"
		}
	case "tasks":
		if rng.IntN(5) == 0 {
			op.Del = true
		} else {
			op.Data = fmt.Sprintf(`{"tasks":[{"id":%d,"done":%v}]}`, rng.IntN(10), rng.IntN(2) == 0)
		}
	case "checkpoint":
		op.Session = randSession(rng)
		op.Conv = rng.IntN(10) < 7
		op.Tasks = rng.IntN(5) == 0
		if rng.IntN(7) == 0 {
			op.Label = labelNames[rng.IntN(len(labelNames))]
		}
		op.AllowEmpty = rng.IntN(8) == 0
		op.Actor = []string{"", snap.ActorAgent, snap.ActorAgent, snap.ActorUser}[rng.IntN(4)]
		if op.Actor == snap.ActorAgent && rng.IntN(2) == 0 {
			op.Call = fmt.Sprintf("toolu_%d", rng.IntN(100))
		}
		if rng.IntN(7) == 0 {
			for i := 1 + rng.IntN(2); i > 0; i-- {
				if rng.IntN(3) == 0 {
					op.Paths = append(op.Paths, randPath(rng, 2))
				} else {
					p := g.existing(rng, "")
					if p == "" {
						p = randPath(rng, 1)
					}
					op.Paths = append(op.Paths, p)
				}
			}
		}
	case "rewind":
		op.Session = randSession(rng)
		op.Target, op.Form = randTarget(rng, g)
		switch n := rng.IntN(20); {
		case n < 11:
			op.Scope = "full"
		case n < 14:
			op.Scope = "files"
		case n < 16:
			op.Scope = "conv"
		default:
			op.Scope = "paths"
			for i := 1 + rng.IntN(2); i > 0; i-- {
				if rng.IntN(2) == 0 {
					op.Paths = append(op.Paths, randDir(rng, 1))
				} else if p := g.existing(rng, ""); p != "" {
					op.Paths = append(op.Paths, p)
				} else {
					op.Paths = append(op.Paths, randPath(rng, 2))
				}
			}
		}
		op.DryRun = rng.IntN(10) < 3
		op.Scoped = rng.IntN(5) > 0
		op.Then = genThen(rng, &op)
	case "undo", "redo":
		op.Session = randSession(rng)
		op.Scoped = rng.IntN(5) > 0
		op.Then = genThen(rng, &op)
	case "label":
		op.Session = randSession(rng)
		op.Target, op.Form = randTarget(rng, g)
		op.Label = labelNames[rng.IntN(len(labelNames))]
	case "gc":
		op.Policy = rng.IntN(3)
	case "blame":
		genBlame(rng, g, &op)
	case "hook-turn":
		genHookTurn(rng, g, &op)
	case "revert":
		genRevert(rng, g, &op)
	default:
		genAgent(rng, g, &op)
	}
	op.CLI = genCLI(rng, g)
	if agentKinds[op.Kind] && rng.IntN(3) > 0 {
		// Two thirds of the agent-workflow ops run no read-only command:
		// the run has as many more steps as they take (TestModel), not
		// as many more commands, which cost most of a step.
		op.CLI = nil
	}
	return op
}

// genThen: a scoped move is followed at once by its undo (and redo) one
// time in four.
func genThen(rng *rand.Rand, op *Op) string {
	if !op.Scoped || rng.IntN(4) > 0 {
		return ""
	}
	switch op.Kind {
	case "undo":
		return "redo"
	case "redo":
		return "undo"
	}
	return []string{"undo", "undo,redo"}[rng.IntN(2)]
}

func randSession(rng *rand.Rand) string {
	if rng.IntN(5) == 0 {
		return "s2"
	}
	return "default"
}

// randTarget picks a checkpoint (mostly recent ones) by the op that made
// it, and a REF form.
func randTarget(rng *rand.Rand, g *genState) (int, string) {
	n := len(g.p.cks)
	t := 0
	if n > 0 {
		i := rng.IntN(n)
		if rng.IntN(2) == 0 {
			i = n - 1 - rng.IntN(min(n, 4))
		}
		t = g.p.cks[i].origin
	}
	forms := []string{"id", "id", "id", "prefix", "prefix", "label", "@", "@~1"}
	return t, forms[rng.IntN(len(forms))]
}

// editRules returns new content for an ignore file: a rule added or
// removed, a new set, or the file removed.
func editRules(rng *rand.Rand, old string) (string, bool) {
	lines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	if old == "" {
		lines = nil
	}
	switch n := rng.IntN(10); {
	case n < 5 || len(lines) == 0:
		lines = append(lines, rulePool[rng.IntN(len(rulePool))])
	case n < 7:
		i := rng.IntN(len(lines))
		lines = append(lines[:i], lines[i+1:]...)
	case n < 9:
		lines = nil
		for i := 1 + rng.IntN(3); i > 0; i-- {
			lines = append(lines, rulePool[rng.IntN(len(rulePool))])
		}
	default:
		return "", true
	}
	if len(lines) == 0 {
		return "", false
	}
	return strings.Join(lines, "\n") + "\n", false
}

var cliWeights = []weighted{
	{"log", 3}, {"log-all", 2}, {"show", 4}, {"status", 6}, {"diff", 4}, {"diff2", 3}, {"diff-stat", 2},
	{"diff-json", 4}, {"cat", 6}, {"cat-state", 3}, {"conversation", 3}, {"sessions", 2}, {"op-log", 2}, {"fsck", 1},
	{"edit-status", 2}, {"task", 2}, {"edit-preview", 2},
}

func genCLI(rng *rand.Rand, g *genState) *CLIOp {
	c := &CLIOp{Cmd: pick(rng, cliWeights), Session: randSession(rng), Variant: rng.IntN(2)}
	c.Target, c.Form = randTarget(rng, g)
	c.Target2, _ = randTarget(rng, g)
	c.Pick = rng.IntN(1000)
	if rng.IntN(6) == 0 {
		c.Pick = -1
	}
	return c
}
