package workflow

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
)

// Staged edits: an agent stages changes to files (lettered A-Z), previews
// them and commits them together; nothing touches the working tree before
// the commit. The pending changes of a session live in the store
// (edits/SESSION.json, replaced atomically under edits/SESSION.lock), so a
// crash or another process loses none. The commit is a move (snap.Steps.Move): a
// safety checkpoint of the present, then the changed paths written through
// the move journal (all or, after a crash, completed by the next command),
// and an edit-commit checkpoint of the result; undo puts those paths back.

// EditRequest stages one change.
type EditRequest struct {
	Session string
	Path    string     // project-relative (slashes) or absolute inside the project
	Kind    edits.Kind // edits.Replace (default), edits.Write, edits.Delete
	Old     string     // replace: the text to find in the file's base
	New     string     // replace: its replacement; write: the whole content
	Match   string     // replace: the candidate letter of a needs_match answer
	After   string     // replace: only matches after the first occurrence of this text
	// AllMatches offers up to 26 candidates instead of 5.
	AllMatches bool
}

// PendingChange is one pending change as answers list it.
type PendingChange struct {
	ChangeID string     `json:"change_id"`
	Path     string     `json:"path"`
	Kind     edits.Kind `json:"kind"`
	Line     int        `json:"line"`
	Position int        `json:"position"`
	Preview  string     `json:"preview"`
}

// EditAnswer is the answer of an edit verb: status "editing" (changes are
// pending), "idle" (none), or "needs_match" (the text occurs more than once:
// nothing was staged; repeat with Match set to a candidate's letter).
type EditAnswer struct {
	Status      string            `json:"status"`
	Staged      *PendingChange    `json:"staged,omitempty"`
	Dropped     *PendingChange    `json:"dropped,omitempty"`
	Candidates  []edits.Candidate `json:"candidates,omitempty"`
	NotShown    int               `json:"not_shown,omitempty"` // candidates beyond those listed (AllMatches shows up to 26)
	Hint        string            `json:"hint,omitempty"`
	Pending     []PendingChange   `json:"pending_changes"`
	NextActions []string          `json:"next_actions"`
	// Advice completes Hint (what resolves it) and Next lists what may
	// follow: each front-end words them, in Hint and NextActions.
	Advice []snap.Advice `json:"-"`
	Next   []snap.Advice `json:"-"`
}

// EditCommitResult reports a commit (or, with Checkpoint nil, a revert) of
// the pending changes.
type EditCommitResult struct {
	Checkpoint     *snap.ID           `json:"checkpoint"`
	AppliedChanges int                `json:"applied_changes"`
	DroppedChanges int                `json:"dropped_changes,omitempty"`
	CharsAdded     int                `json:"chars_added"`
	CharsRemoved   int                `json:"chars_removed"`
	Paths          []string           `json:"paths"`
	Rewind         *snap.RewindResult `json:"rewind,omitempty"` // the move that wrote the files
}

// EditPreview renders the pending changes.
type EditPreview struct {
	Mode    string             `json:"mode"`
	Files   []EditPreviewFile  `json:"files"`
	Changes []edits.ChangeStat `json:"changes"`
}

// EditPreviewFile is one path's rendering.
type EditPreviewFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// notIgnored refuses paths the ignore rules in force ignore: checkpoints
// do not record them, so an edit-commit could neither show nor undo the
// change (the rules may change between staging and commit: both check).
func (f *Flow) notIgnored(paths []string) error {
	var ignored []string
	for _, p := range paths {
		if f.s.Ignored(p) {
			ignored = append(ignored, p)
		}
	}
	if len(ignored) == 0 {
		return nil
	}
	return snap.Advise(fmt.Errorf("%w: %s: ignored by .gitignore, .snapignore or git's excludes; checkpoints do not record it, so an edit to it "+
		"could not be undone (edit it directly, or stop ignoring it)", snap.ErrUsage, strings.Join(ignored, ", ")), snap.Advice{Do: snap.DoEditDrop})
}

// MaxEditBytes bounds the text of one staged change (--old, --new, a whole
// file written): pending changes are held as text in the store. Larger
// files are written directly.
const MaxEditBytes = 64 << 20

// checkEditText refuses text a staged change cannot hold: over
// MaxEditBytes, or not valid UTF-8 (staged edits are text; a binary file or
// one in another encoding is written directly, never through an edit,
// which would have to re-encode it).
func checkEditText(what, rel, text string) error {
	if len(text) > MaxEditBytes {
		return fmt.Errorf("%w: %s for %s is %d bytes: staged edits hold at most %d; write the file directly", snap.ErrUsage, what, rel, len(text), MaxEditBytes)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: %s for %s is not valid UTF-8: staged edits hold text; write a binary file (or one in another encoding) directly", snap.ErrUsage, what, rel)
	}
	return nil
}

// EditStage stages one change. A replace whose text occurs more than once
// stages nothing and answers needs_match with lettered candidates; one that
// does not occur is snap.ErrNoPath with the closest lines. A path whose content
// changed since its first change was staged is snap.ErrConflict.
func (f *Flow) EditStage(ctx context.Context, q EditRequest) (*EditAnswer, error) {
	rel, err := f.s.ProjectPath(q.Path)
	if err != nil {
		return nil, err
	}
	if err := f.notIgnored([]string{rel}); err != nil {
		return nil, err
	}
	e, err := f.s.OpenEdits(ctx, q.Session)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	p := e.Pending
	data, id, err := f.s.ProjectFile(rel)
	if err != nil {
		return nil, err
	}
	if base, ok := p.Base(rel); ok && base != id {
		return nil, snap.Advise(fmt.Errorf("%w: %s changed since its first change was staged", snap.ErrConflict, rel), snap.Advice{Do: snap.DoEditRevert})
	}
	if err := checkEditText("the new text", rel, q.New); err != nil {
		return nil, err
	}
	if err := checkEditText("the old text", rel, q.Old); err != nil {
		return nil, err
	}
	if q.Kind != edits.Write && q.Kind != edits.Delete && !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8 text (binary, or another encoding): replace works on text; write the whole file directly", snap.ErrUsage, rel)
	}
	c := edits.Change{Path: rel, Kind: q.Kind}
	switch q.Kind {
	case edits.Write:
		c.New, c.Line = q.New, 1
	case edits.Delete:
		if id == "" {
			return nil, fmt.Errorf("%w: %s does not exist", snap.ErrNoPath, rel)
		}
		c.Line = 1
	case edits.Replace, "":
		c.Kind = edits.Replace
		if id == "" {
			return nil, snap.Advise(fmt.Errorf("%w: %s does not exist", snap.ErrNoPath, rel), snap.Advice{Do: snap.DoEditWrite})
		}
		matches, err := edits.Find(data, q.Old, q.After)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", snap.ErrUsage, rel, err)
		}
		if len(matches) == 0 {
			return nil, noMatch(rel, data, q.Old)
		}
		m := matches[0]
		switch {
		case q.Match != "":
			if m, err = edits.Pick(matches, q.Match); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", snap.ErrUsage, rel, err)
			}
		case len(matches) > 1:
			limit := 5
			if q.AllMatches {
				limit = edits.MaxChanges
			}
			cands, more := p.Candidates(data, rel, q.Old, matches, limit)
			ans := editAnswer(p, "needs_match")
			ans.Candidates, ans.NotShown = cands, more
			ans.Hint = fmt.Sprintf("the text occurs %d times in %s: nothing was staged", len(matches), rel)
			ans.Advice = []snap.Advice{{Do: snap.DoEditMatch, Arg: recommended(cands)}}
			if more > 0 {
				ans.Advice = append(ans.Advice, snap.Advice{Do: snap.DoEditMore, Arg: strconv.Itoa(more)})
			}
			return ans, nil
		}
		c.Offset, c.Line, c.Old, c.New = m.Offset, m.Line, q.Old, q.New
	default:
		return nil, fmt.Errorf("%w: unknown edit kind %q", snap.ErrUsage, q.Kind)
	}
	staged, err := p.Stage(c, id)
	if err != nil {
		return nil, modelAdvice(fmt.Errorf("%w: %w", snap.ErrUsage, err))
	}
	pc := pendingOf(*staged)
	if err := e.Save(); err != nil {
		return nil, err
	}
	ans := editAnswer(p, "")
	ans.Staged = &pc
	return ans, nil
}

func recommended(cands []edits.Candidate) string {
	for _, c := range cands {
		if c.Recommended {
			return c.MatchID
		}
	}
	return "A"
}

// noMatch is the error of a text that does not occur, with the closest
// lines.
func noMatch(rel string, data []byte, old string) error {
	msg := fmt.Sprintf("%q does not occur in %s", shortText(old), rel)
	if near := edits.Closest(data, old, 3); len(near) > 0 {
		var lines []string
		for _, l := range near {
			lines = append(lines, fmt.Sprintf("%d: %s", l.Line, l.Text))
		}
		msg += "; the closest lines are " + strings.Join(lines, " | ")
	}
	return fmt.Errorf("%w: %s", snap.ErrNoPath, msg)
}

func shortText(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func pendingOf(c edits.Change) PendingChange {
	pc := PendingChange{ChangeID: c.ID, Path: c.Path, Kind: c.Kind, Line: c.Line, Position: c.Offset}
	switch c.Kind {
	case edits.Replace:
		pc.Preview = fmt.Sprintf("%s -> %s", shortText(c.Old), shortText(c.New))
	case edits.Write:
		pc.Preview = fmt.Sprintf("whole content, %d bytes", len(c.New))
	case edits.Delete:
		pc.Preview = "delete the file"
	}
	return pc
}

// editAnswer lists p's pending changes and what can be done next.
func editAnswer(p *edits.Pending, status string) *EditAnswer {
	ans := &EditAnswer{Status: status, Pending: []PendingChange{}}
	for _, c := range p.Changes {
		ans.Pending = append(ans.Pending, pendingOf(c))
	}
	if ans.Status == "" {
		ans.Status = "idle"
		if len(p.Changes) > 0 {
			ans.Status = "editing"
		}
	}
	switch {
	case ans.Status == "needs_match":
		ans.Next = []snap.Advice{{Do: snap.DoEditMatch}}
	case len(p.Changes) > 0:
		ans.Next = []snap.Advice{{Do: snap.DoEditPreview}, {Do: snap.DoEditCommit}, {Do: snap.DoEditDrop}, {Do: snap.DoEditRevert}}
	default:
		ans.Next = []snap.Advice{{Do: snap.DoEditReplace}, {Do: snap.DoEditWrite}, {Do: snap.DoEditDelete}}
	}
	return ans
}

// EditStatus lists the session's pending changes.
func (f *Flow) EditStatus(ctx context.Context, session string) (*EditAnswer, error) {
	e, err := f.s.OpenEdits(ctx, session)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return editAnswer(e.Pending, ""), nil
}

// EditDrop removes pending change id; the later ones keep their letters.
func (f *Flow) EditDrop(ctx context.Context, session, id string) (*EditAnswer, error) {
	e, err := f.s.OpenEdits(ctx, session)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	p := e.Pending
	c, err := p.Drop(strings.ToUpper(id))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", snap.ErrUsage, err)
	}
	if err := e.Save(); err != nil {
		return nil, err
	}
	ans := editAnswer(p, "")
	pc := pendingOf(*c)
	ans.Dropped = &pc
	return ans, nil
}

// EditPreview renders the pending changes: mode edits.Compact (context
// lines around each change), edits.Full (each file's whole changed region)
// or edits.Stats (characters added and removed per change).
func (f *Flow) EditPreview(ctx context.Context, session, mode string, context int) (*EditPreview, error) {
	if mode == "" {
		mode = edits.Compact
	}
	if mode != edits.Compact && mode != edits.Full && mode != edits.Stats {
		return nil, fmt.Errorf("%w: preview mode %q (want compact, full or stats)", snap.ErrUsage, mode)
	}
	if context < 0 {
		return nil, fmt.Errorf("%w: negative context", snap.ErrUsage)
	}
	e, err := f.s.OpenEdits(ctx, session)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	p := e.Pending
	out := &EditPreview{Mode: mode, Files: []EditPreviewFile{}, Changes: []edits.ChangeStat{}}
	for _, rel := range p.Paths() {
		data, id, err := f.s.ProjectFile(rel)
		if err != nil {
			return nil, err
		}
		if base, _ := p.Base(rel); base != id {
			return nil, snap.Advise(fmt.Errorf("%w: %s changed since its first change was staged", snap.ErrConflict, rel), snap.Advice{Do: snap.DoEditRevert})
		}
		changes := p.Of(rel)
		out.Files = append(out.Files, EditPreviewFile{Path: rel, Text: edits.Render(rel, data, changes, mode, context)})
		for _, c := range changes {
			out.Changes = append(out.Changes, edits.Stat(c, data))
		}
	}
	return out, nil
}

// EditRevert drops every pending change of the session; nothing on disk
// changes.
func (f *Flow) EditRevert(ctx context.Context, session, reason string) (*EditCommitResult, error) {
	e, err := f.openEdits(ctx, session, "revert", reason)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	res := &EditCommitResult{DroppedChanges: len(e.Pending.Changes), Paths: e.Pending.Paths()}
	if res.Paths == nil {
		res.Paths = []string{}
	}
	e.Pending = edits.New()
	return res, e.Save()
}

// EditCommit applies every pending change atomically and records an
// edit-commit checkpoint with summary. A path whose content changed since
// its first change was staged refuses the commit (snap.ErrConflict, naming the
// paths): nothing is written and the changes stay pending.
func (f *Flow) EditCommit(ctx context.Context, session, summary string) (*EditCommitResult, error) {
	return f.editCommit(ctx, session, summary, nil)
}

// openEdits opens the session's staged edits for a commit or a revert,
// whose text (verb, text) must not be empty.
func (f *Flow) openEdits(ctx context.Context, session, verb, text string) (*snap.Edits, error) {
	if strings.TrimSpace(text) == "" {
		what := map[string]string{"commit": "a summary", "revert": "a reason"}[verb]
		if _, err := f.s.TaskMarks(ctx, session); err != nil {
			return nil, err // a bad session name first
		}
		return nil, fmt.Errorf("%w: a %s needs %s", snap.ErrUsage, verb, what)
	}
	return f.s.OpenEdits(ctx, session)
}

// editCommit commits the pending changes; with st (a task commit), the
// checkpoint is the task's task-commit, its task document changed by st,
// and the operation is recorded as OpTaskCommit.
func (f *Flow) editCommit(ctx context.Context, session, summary string, st *step) (*EditCommitResult, error) {
	e, err := f.openEdits(ctx, session, "commit", summary)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	p := e.Pending
	if len(p.Changes) == 0 {
		return nil, snap.Advise(fmt.Errorf("%w: no pending changes in session %q", snap.ErrUsage, e.Session), snap.Advice{Do: snap.DoEditReplace})
	}
	// New contents, from the bases as they are on disk now.
	res := &EditCommitResult{Paths: p.Paths(), AppliedChanges: len(p.Changes)}
	if err := f.notIgnored(res.Paths); err != nil {
		return nil, err
	}
	// The staging rules again: a directory on the way may have become a
	// symlink or a file since, and a commit writes nothing through one.
	for _, rel := range res.Paths {
		if _, err := f.s.ProjectPath(rel); err != nil {
			return nil, snap.Advise(fmt.Errorf("%w; nothing was written and the changes stay pending", err), snap.Advice{Do: snap.DoEditRevert})
		}
	}
	next := map[string][]byte{} // nil: deleted
	var stale []string
	for _, rel := range res.Paths {
		data, id, err := f.s.ProjectFile(rel)
		if err != nil {
			return nil, err
		}
		if base, _ := p.Base(rel); base != id {
			stale = append(stale, rel)
			continue
		}
		out, exists, err := edits.Apply(data, p.Of(rel))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", snap.ErrConflict, err)
		}
		if exists {
			next[rel] = append([]byte{}, out...) // never nil: an empty file is not a deleted one
		} else {
			next[rel] = nil
		}
		for _, c := range p.Of(rel) {
			s := edits.Stat(c, data)
			res.CharsAdded += s.Added
			res.CharsRemoved += s.Removed
		}
	}
	if len(stale) > 0 {
		return nil, snap.Advise(fmt.Errorf("%w: %s changed since staged, so nothing was written and the changes stay pending",
			snap.ErrConflict, strings.Join(stale, ", ")), snap.Advice{Do: snap.DoEditStatus}, snap.Advice{Do: snap.DoEditRevert})
	}
	if _, head, err := f.r.Head(ctx, e.Session); err != nil {
		return nil, err
	} else if head == nil {
		// A move needs a checkpoint to start from: the present, first.
		if _, err := f.r.Checkpoint(ctx, snap.CheckpointOptions{Session: e.Session, Kind: "manual", Summary: "before the first edit commit"}); err != nil {
			return nil, err
		}
	}
	s := &snap.Step{Op: snap.OpEditCommit, Kind: snap.KindEditCommit}
	if st != nil {
		s = &st.Step
	}
	rr, end, err := f.s.Move(ctx, snap.MoveSpec{Session: e.Session, Summary: summary, Step: s, Paths: res.Paths, Edits: e, Commit: true,
		End: func(pr *snap.Present) (snap.ID, []string, error) {
			changes, err := editedEntries(pr, p, next)
			if err != nil {
				return snap.ID{}, nil, err
			}
			tree, err := pr.Edit(changes)
			return tree, nil, err
		}})
	res.Rewind = rr
	if err != nil {
		return res, err
	}
	res.Checkpoint = &end
	return res, nil
}

// editedEntries is the tree entries an edit commit ends with: the new
// contents at the edited paths of the present (the safety capture); it
// refuses (snap.ErrConflict) when a path differs from its base there (changed
// between the check and the capture).
func editedEntries(pr *snap.Present, p *edits.Pending, next map[string][]byte) (map[string]*snap.TreeEntry, error) {
	changes := map[string]*snap.TreeEntry{}
	for _, rel := range slices.Sorted(maps.Keys(next)) {
		e, ok, err := pr.Entry(pr.Tree, rel)
		if err != nil {
			return nil, err
		}
		got := ""
		if ok {
			got = e.ID.String()
		}
		if base, _ := p.Base(rel); base != got {
			return nil, fmt.Errorf("%w: %s changed while the commit began; nothing was written and the changes stay pending", snap.ErrConflict, rel)
		}
		data := next[rel]
		if data == nil {
			changes[rel] = nil
			continue
		}
		id, n, err := pr.Put(data)
		if err != nil {
			return nil, err
		}
		mode := snap.ModeFile
		if ok && e.Mode == snap.ModeExec {
			mode = snap.ModeExec
		}
		changes[rel] = &snap.TreeEntry{Name: path.Base(rel), Mode: mode, ID: id, Size: n}
	}
	return changes, nil
}
