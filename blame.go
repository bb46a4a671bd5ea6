package snap

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/snapcore-dev/snap/merge"
	"github.com/snapcore-dev/snap/objects"
)

// BlameOptions select what Blame attributes.
type BlameOptions struct {
	Session string
	Path    string // a file of the project (slashes, relative to its root)
	Ref     string // the checkpoint whose content is attributed ("" = @)
}

// BlameLine is who wrote one line: the checkpoint that first recorded it
// (in any session), that checkpoint's session and actor, the agent's tool
// call or message id, the prompt the session was answering, and when.
type BlameLine struct {
	Line       int       `json:"line"` // from 1
	Checkpoint ID        `json:"checkpoint"`
	Session    string    `json:"session"`
	Actor      string    `json:"actor"` // "agent", "user", "import" (pulled from another store) or "unknown"
	MessageID  string    `json:"message_id,omitempty"`
	Prompt     string    `json:"prompt,omitempty"`
	Time       time.Time `json:"time"`
	Text       string    `json:"text"`
}

// BlameResult is Blame's answer.
type BlameResult struct {
	Path       string      `json:"path"`
	Checkpoint ID          `json:"checkpoint"` // the content attributed
	Lines      []BlameLine `json:"lines"`
}

// Blame attributes each line of a file, as checkpoint Ref holds it, to the
// checkpoint that introduced it. The lines come from line diffs of each
// version of the file along Ref's ancestry (a version is attributed to the
// checkpoint of any session that recorded it first, as Kept is); a line
// that no earlier version holds is the version's. Versions equal by
// content are read once, so the cost follows the file's changes, not the
// history's length.
func (r *Repo) Blame(ctx context.Context, o BlameOptions) (*BlameResult, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	ref := o.Ref
	if ref == "" {
		ref = "@"
	}
	id, err := r.Resolve(ctx, session, ref)
	if err != nil {
		return nil, err
	}
	p := strings.Trim(o.Path, "/")
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return nil, err
	}
	e, err := r.lookupPath(ck.Tree, p)
	if err != nil {
		return nil, fmt.Errorf("%w (in checkpoint %s)", err, id.Short())
	}
	if e.Mode != objects.ModeFile && e.Mode != objects.ModeExec {
		return nil, fmt.Errorf("%w: %s is not a file in checkpoint %s", ErrUsage, p, id.Short())
	}
	// The file's history: every version any session recorded, in the
	// order they were first recorded (the working tree is one, so this is
	// the order they were made), up to Ref's record.
	h := r.history()
	if err := h.load(); err != nil {
		return nil, err
	}
	changes, err := r.pathChanges(h, 0, -1, objects.ID{}, objects.ID{}, map[string]bool{p: true})
	if err != nil {
		return nil, err
	}
	upto := h.recordedAt(id, ck.When())
	var versions []pathChange // consecutive ones differ
	firstAt := map[objects.ID]int{}
	for _, c := range changes[p] {
		if c.op > upto {
			break
		}
		if c.entry.Mode != objects.ModeFile && c.entry.Mode != objects.ModeExec {
			c.entry = objects.TreeEntry{} // gone (or no file): what follows is new
		}
		if n := len(versions); n > 0 && sameEntry(versions[n-1].entry, c.entry) {
			continue
		}
		if _, seen := firstAt[c.entry.ID]; !seen && c.entry.Mode != 0 {
			firstAt[c.entry.ID] = len(versions)
		}
		versions = append(versions, c)
	}
	pos, ok := firstAt[e.ID]
	if !ok {
		// No record holds it (a checkpoint pulled from elsewhere): it is
		// its checkpoint's, with nothing before it.
		versions, pos = []pathChange{{entry: e, session: ck.Session, actor: ck.Actor, ck: id, time: ck.When()}}, 0
	}
	read := func(e objects.TreeEntry) ([]string, error) {
		ls, text, err := r.textLines(e)
		if err == nil && !text {
			err = fmt.Errorf("%w: %s is not text (in checkpoint %s)", ErrUsage, p, id.Short())
		}
		return ls, err
	}
	lines, err := read(e)
	if err != nil {
		return nil, err
	}
	res := &BlameResult{Path: p, Checkpoint: id, Lines: make([]BlameLine, len(lines))}
	prompts := map[string][]promptAt{}
	attribute := func(v pathChange, idx []int) error {
		who, err := r.blameOf(h, v, prompts)
		if err != nil {
			return err
		}
		for _, i := range idx {
			if i < 0 {
				continue // a line the newer versions do not hold
			}
			who.Line, who.Text = i+1, lines[i]
			res.Lines[i] = who
		}
		return nil
	}
	// Back through the versions, each from where its content first
	// appeared: at[j] is the line of Ref's content that line j of the
	// version is (-1: none).
	at := make([]int, len(lines))
	for i := range at {
		at[i] = i
	}
	cur := lines
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := versions[pos]
		if pos == 0 || versions[pos-1].entry.Mode == 0 {
			return res, attribute(v, at) // nothing before it: the rest is its
		}
		olderV := versions[pos-1]
		older, text, err := r.textLines(olderV.entry)
		if err != nil {
			return nil, err
		}
		if !text {
			// A version that is not text holds no lines: the rest is
			// this one's (model finding M29).
			return res, attribute(v, at)
		}
		// Lines of this version the older one lacks are this one's; the
		// others are followed into the older one.
		var mine []int
		next := make([]int, len(older))
		for i := range next {
			next[i] = -1
		}
		ai, bi := 0, 0
		keepUntil := func(aEnd int) {
			for ; ai < aEnd; ai, bi = ai+1, bi+1 {
				next[ai] = at[bi]
			}
		}
		for _, d := range lcs.DiffLines(older, cur) {
			keepUntil(d.Start)
			mine = append(mine, at[d.ReplStart:d.ReplEnd]...)
			ai, bi = d.End, d.ReplEnd
		}
		keepUntil(len(older))
		if err := attribute(v, mine); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(next, func(x int) bool { return x >= 0 }) {
			return res, nil
		}
		at, cur, pos = next, older, firstAt[olderV.entry.ID]
	}
}

// blameOf is who wrote a version: the checkpoint that first recorded it
// (what a safety capture found is its session's, by an unknown actor).
func (r *Repo) blameOf(h *history, v pathChange, prompts map[string][]promptAt) (BlameLine, error) {
	who := BlameLine{Checkpoint: v.ck, Session: v.session, Actor: orUnknown(v.actor), Time: v.time}
	if ck, err := r.objects.ReadCheckpoint(v.ck); err == nil {
		who.Time = ck.When()
		who.MessageID = ck.Call
		if who.MessageID == "" {
			who.MessageID = ck.MessageID
		}
		if who.Session == "" {
			who.Session = ck.Session
		}
	}
	if r.isForeign(who.Checkpoint) {
		who.Actor = "import"
	}
	if _, ok := prompts[who.Session]; !ok {
		prompts[who.Session] = r.promptsOf(h, who.Session)
	}
	for _, pa := range prompts[who.Session] {
		if pa.time.After(who.Time) {
			break
		}
		who.Prompt = pa.text
	}
	return who, nil
}

// promptAt is a prompt a session recorded (a checkpoint of kind "prompt",
// as the agent hooks take at each prompt), and when.
type promptAt struct {
	time time.Time
	text string
}

// promptsOf lists the prompts of session, oldest first.
func (r *Repo) promptsOf(h *history, session string) []promptAt {
	list, err := r.sessionCheckpoints(h, session)
	if err != nil {
		return nil
	}
	var out []promptAt
	for i := range list.Len() {
		if ck, err := r.load(list.At(i)); err == nil && ck != nil && ck.Kind == "prompt" {
			out = append(out, promptAt{ck.When(), ck.Summary})
		}
	}
	return out
}

// textLines reads the file of entry e as lines without their newlines (a
// line is itself with or without one: the last line gaining or losing it
// is no new line); text is false when it is not text. What is no file
// (absent, a symlink) has no lines.
func (r *Repo) textLines(e objects.TreeEntry) (lines []string, text bool, err error) {
	if e.Mode != objects.ModeFile && e.Mode != objects.ModeExec {
		return nil, true, nil
	}
	var b bytes.Buffer
	if _, err := r.objects.WriteBlob(e.ID, &b); err != nil {
		return nil, false, err
	}
	if !merge.IsText(b.Bytes()) {
		return nil, false, nil
	}
	lines = strings.SplitAfter(b.String(), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	return lines, true, nil
}

// Contribution is what one checkpoint first recorded: the lines it added
// to each text file (ranges in the file as it holds it), with who made
// them. Files whose content another checkpoint recorded first are not in
// it (they are that one's).
type Contribution struct {
	Checkpoint ID                 `json:"checkpoint"`
	Session    string             `json:"session"`
	Actor      string             `json:"actor"` // "agent", "user", "import" or "unknown"
	MessageID  string             `json:"message_id,omitempty"`
	Kind       string             `json:"kind"`
	Summary    string             `json:"summary,omitempty"`
	Time       time.Time          `json:"time"`
	Files      []FileContribution `json:"files"`
}

// FileContribution is the lines one checkpoint added to a file: line
// ranges (from 1, both ends included) of the file as it holds it; a file
// that is not text has none, and Binary set.
type FileContribution struct {
	Path   string   `json:"path"`
	Ranges [][2]int `json:"ranges"`
	Lines  int      `json:"lines"`
	Binary bool     `json:"binary,omitempty"`
}

// ContributionOptions select the checkpoints Contributions reads.
type ContributionOptions struct {
	Session string
	Since   string // REF: only checkpoints recorded after it ("" = all)
}

// Contributions lists, oldest first, the session's checkpoints that first
// recorded a change of the working tree (not a rewind's safety checkpoint,
// not a move's end), each with the lines it added: what Agent Trace and
// git-ai records are made of.
func (r *Repo) Contributions(ctx context.Context, o ContributionOptions) ([]Contribution, error) {
	session, err := sessionName(o.Session)
	if err != nil {
		return nil, err
	}
	h := r.history()
	if err := h.load(); err != nil {
		return nil, err
	}
	first := 0
	if o.Since != "" {
		id, err := r.Resolve(ctx, session, o.Since)
		if err != nil {
			return nil, err
		}
		ck, err := r.loadCheckpoint(id)
		if err != nil {
			return nil, err
		}
		first = h.recordedAt(id, ck.When()) + 1
	}
	recorded := map[string]map[objects.ID]bool{} // path → contents recorded before
	seen := func(p string, id objects.ID) bool {
		if recorded[p] == nil {
			recorded[p] = map[objects.ID]bool{}
		}
		s := recorded[p][id]
		recorded[p][id] = true
		return s
	}
	// Every record is read against the last tree any session recorded
	// (records), so a line another session recorded first is never this
	// one's; content recorded before the first op counts as seen.
	out := []Contribution{}
	err = r.records(h, 0, -1, objects.ID{}, func(from, to objects.ID, pc pathChange, under []string, ck *objects.Checkpoint) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		mine := ck != nil && pc.session == session && pc.op >= first
		var c Contribution
		if mine {
			c = Contribution{Checkpoint: pc.ck, Session: pc.session, Actor: orUnknown(ck.Actor), MessageID: ck.Call,
				Kind: ck.Kind, Summary: ck.Summary, Time: ck.When(), Files: []FileContribution{}}
			if c.MessageID == "" {
				c.MessageID = ck.MessageID
			}
		}
		err := objects.DiffTrees(r.objects, from, to, func(ch objects.Change) error {
			if ch.New.Mode != objects.ModeFile && ch.New.Mode != objects.ModeExec || !pathMatch(ch.Path, under) || seen(ch.Path, ch.New.ID) || !mine {
				return nil
			}
			f, err := r.addedLines(ch)
			if err == nil {
				f.Path = ch.Path
				c.Files = append(c.Files, f)
			}
			return err
		})
		if mine && len(c.Files) > 0 {
			out = append(out, c)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddedLines lists the lines each file of tree to adds to tree from's
// version of it (a zero ID: the empty tree), in path order: files that are
// no text are listed Binary, deleted ones not at all.
func (r *Repo) AddedLines(ctx context.Context, from, to ID) ([]FileContribution, error) {
	out := []FileContribution{}
	err := objects.DiffTrees(r.objects, from, to, func(ch objects.Change) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ch.New.Mode != objects.ModeFile && ch.New.Mode != objects.ModeExec {
			return nil
		}
		f, err := r.addedLines(ch)
		f.Path = ch.Path
		out = append(out, f)
		return err
	})
	return out, err
}

// addedLines is the lines change ch added to its file.
func (r *Repo) addedLines(ch objects.Change) (FileContribution, error) {
	old, ok1, err := r.textLines(ch.Old)
	if err != nil {
		return FileContribution{}, err
	}
	cur, ok2, err := r.textLines(ch.New)
	if err != nil || !ok1 || !ok2 {
		return FileContribution{Ranges: [][2]int{}, Binary: true}, err
	}
	f := FileContribution{Ranges: [][2]int{}}
	for _, d := range lcs.DiffLines(old, cur) {
		if d.ReplEnd > d.ReplStart {
			f.Ranges = append(f.Ranges, [2]int{d.ReplStart + 1, d.ReplEnd})
			f.Lines += d.ReplEnd - d.ReplStart
		}
	}
	return f, nil
}
