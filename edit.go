package snap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/internal/flock"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/worktree"
)

// Staged edits: an agent stages changes to files (lettered A-Z), previews
// them and commits them together; nothing touches the working tree before
// the commit. The pending changes of a session live in the store
// (edits/SESSION.json, replaced atomically under edits/SESSION.lock), so a
// crash or another process loses none. The commit is a move (see run): a
// safety checkpoint of the present, then the changed paths written through
// the move journal (all or, after a crash, completed by the next command),
// and an edit-commit checkpoint of the result; undo puts those paths back.

const kindEditCommit = "edit-commit"

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
	Advice []Advice `json:"-"`
	Next   []Advice `json:"-"`
}

// EditCommitResult reports a commit (or, with Checkpoint nil, a revert) of
// the pending changes.
type EditCommitResult struct {
	Checkpoint     *objects.ID   `json:"checkpoint"`
	AppliedChanges int           `json:"applied_changes"`
	DroppedChanges int           `json:"dropped_changes,omitempty"`
	CharsAdded     int           `json:"chars_added"`
	CharsRemoved   int           `json:"chars_removed"`
	Paths          []string      `json:"paths"`
	Rewind         *RewindResult `json:"rewind,omitempty"` // the move that wrote the files
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
func (r *Repo) notIgnored(paths []string) error {
	var ignored []string
	for _, p := range paths {
		if worktree.Ignored(r.Root, p, false) {
			ignored = append(ignored, p)
		}
	}
	if len(ignored) == 0 {
		return nil
	}
	return advise(fmt.Errorf("%w: %s: ignored by .gitignore, .snapignore or git's excludes; checkpoints do not record it, so an edit to it "+
		"could not be undone (edit it directly, or stop ignoring it)", ErrUsage, strings.Join(ignored, ", ")), Advice{Do: DoEditDrop})
}

// editPath is a request path relative to the project root, refused when
// it lies outside it, in .git or in the store.
func (r *Repo) editPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: no path given", ErrUsage)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.Root, filepath.FromSlash(p))
	}
	rel, err := filepath.Rel(r.Root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		// The root reached through a symlink: the same file by its real path.
		if real, rerr := filepath.EvalSymlinks(r.Root); rerr == nil {
			rel, err = filepath.Rel(real, abs)
		}
	}
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s is outside the project %s", ErrUsage, p, r.Root)
	}
	if s, err := filepath.Rel(r.StoreDir, abs); err == nil && filepath.IsLocal(s) || abs == r.StoreDir {
		return "", fmt.Errorf("%w: %s is inside the store", ErrUsage, p)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, c := range parts {
		if objects.IsReservedName(c) {
			return "", fmt.Errorf("%w: %s is inside a .git directory", ErrUsage, p)
		}
		if err := objects.ValidName(c); err != nil {
			return "", fmt.Errorf("%w: %s: %v (snap cannot record such a name)", ErrUsage, p, err)
		}
	}
	// No symlink on the way: an edit reads and writes the project's own
	// files, never what a link leads to (outside the project, perhaps).
	dir := r.Root
	for _, c := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, c)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return filepath.ToSlash(rel), nil // a new directory: nothing beneath exists
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			rd, _ := filepath.Rel(r.Root, dir)
			return "", fmt.Errorf("%w: %s goes through the symlink %s: edits follow no symlink (edit the file at its own path)", ErrUsage, p, filepath.ToSlash(rd))
		case !fi.IsDir():
			rd, _ := filepath.Rel(r.Root, dir)
			kind := "file"
			if !fi.Mode().IsRegular() {
				kind = fileKind(fi.Mode())
			}
			return "", fmt.Errorf("%w: %s: %s is a %s, not a directory", ErrUsage, p, filepath.ToSlash(rd), kind)
		}
	}
	return filepath.ToSlash(rel), nil
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
		return fmt.Errorf("%w: %s for %s is %d bytes: staged edits hold at most %d; write the file directly", ErrUsage, what, rel, len(text), MaxEditBytes)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: %s for %s is not valid UTF-8: staged edits hold text; write a binary file (or one in another encoding) directly", ErrUsage, what, rel)
	}
	return nil
}

// fileBase reads a project file as a change's base: its content and its
// content id ("" and nil when it does not exist). Only regular files are
// edited.
func (r *Repo) fileBase(rel string) ([]byte, string, error) {
	p := filepath.Join(r.Root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%w: %s is not a regular file (a %s)", ErrUsage, rel, fileKind(fi.Mode()))
	}
	if fi.Size() > r.MaxFileSize() {
		return nil, "", fmt.Errorf("%w: %s is larger than capture.max-file-size", ErrUsage, rel)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "", err
	}
	w := r.objects.NewDryWriter()
	defer w.Abort()
	id, _, err := w.PutBlob(bytes.NewReader(data))
	if err != nil {
		return nil, "", err
	}
	return data, id.String(), nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func (r *Repo) editsFile(session string) string {
	return filepath.Join(r.StoreDir, "edits", session+".json")
}

// lockEdits serialises the edit verbs of one session.
func (r *Repo) lockEdits(ctx context.Context, session string) (func(), error) {
	if err := os.MkdirAll(filepath.Join(r.StoreDir, "edits"), 0o755); err != nil {
		return nil, err
	}
	f, err := flock.Lock{Path: filepath.Join(r.StoreDir, "edits", session+".lock"), Timeout: r.lockTimeout,
		Busy: ErrBusy, Holder: "another edit of session " + session}.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// loadEdits reads the session's pending changes (the caller holds the
// edits lock) and settles a commit a killed process left: when the op log
// records its txn, it completed and the changes are gone; when its move is
// still journalled, it is completed first (the writer lock runs the
// recovery); otherwise it never moved a file and the changes stay.
func (r *Repo) loadEdits(session string) (*edits.Pending, error) {
	p, err := r.readEdits(session)
	if err != nil || p.Committing == "" {
		return p, err
	}
	ctx := context.Background()
	if r.refs.JournalPending() {
		release, err := r.writing(ctx) // completes the journalled move
		if err != nil {
			return nil, err
		}
		release()
	}
	done, err := r.history().recorded(p.Committing)
	if err != nil {
		return nil, err
	}
	if done {
		p = edits.New()
	} else {
		p.Committing = ""
	}
	return p, r.saveEdits(session, p)
}

func (r *Repo) readEdits(session string) (*edits.Pending, error) {
	data, err := os.ReadFile(r.editsFile(session))
	if errors.Is(err, fs.ErrNotExist) {
		return edits.New(), nil
	}
	if err != nil {
		return nil, err
	}
	p := edits.New()
	if err := json.Unmarshal(data, p); err != nil || p.Version != edits.Version {
		return nil, fmt.Errorf("%w: %s: not a pending-changes document of this snap (%v)", ErrCorrupt, r.editsFile(session), err)
	}
	return p, nil
}

// saveEdits replaces the session's pending changes durably (none: the file
// goes).
func (r *Repo) saveEdits(session string, p *edits.Pending) error {
	if len(p.Changes) == 0 {
		if err := os.Remove(r.editsFile(session)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return fsys.WriteFileAtomic(r.fs, r.editsFile(session), append(data, '\n'))
}

// EditStage stages one change. A replace whose text occurs more than once
// stages nothing and answers needs_match with lettered candidates; one that
// does not occur is ErrNoPath with the closest lines. A path whose content
// changed since its first change was staged is ErrConflict.
func (r *Repo) EditStage(ctx context.Context, q EditRequest) (*EditAnswer, error) {
	rel, err := r.editPath(q.Path)
	if err != nil {
		return nil, err
	}
	if err := r.notIgnored([]string{rel}); err != nil {
		return nil, err
	}
	session, p, unlock, err := r.openEdits(ctx, q.Session, "", "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	data, id, err := r.fileBase(rel)
	if err != nil {
		return nil, err
	}
	if base, ok := p.Base(rel); ok && base != id {
		return nil, advise(fmt.Errorf("%w: %s changed since its first change was staged", ErrConflict, rel), Advice{Do: DoEditRevert})
	}
	if err := checkEditText("the new text", rel, q.New); err != nil {
		return nil, err
	}
	if err := checkEditText("the old text", rel, q.Old); err != nil {
		return nil, err
	}
	if q.Kind != edits.Write && q.Kind != edits.Delete && !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8 text (binary, or another encoding): replace works on text; write the whole file directly", ErrUsage, rel)
	}
	c := edits.Change{Path: rel, Kind: q.Kind}
	switch q.Kind {
	case edits.Write:
		c.New, c.Line = q.New, 1
	case edits.Delete:
		if id == "" {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoPath, rel)
		}
		c.Line = 1
	case edits.Replace, "":
		c.Kind = edits.Replace
		if id == "" {
			return nil, advise(fmt.Errorf("%w: %s does not exist", ErrNoPath, rel), Advice{Do: DoEditWrite})
		}
		matches, err := edits.Find(data, q.Old, q.After)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUsage, rel, err)
		}
		if len(matches) == 0 {
			return nil, noMatch(rel, data, q.Old)
		}
		m := matches[0]
		switch {
		case q.Match != "":
			if m, err = edits.Pick(matches, q.Match); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrUsage, rel, err)
			}
		case len(matches) > 1:
			limit := 5
			if q.AllMatches {
				limit = edits.MaxChanges
			}
			cands, more := p.Candidates(data, rel, q.Old, matches, limit)
			ans := r.editAnswer(p, "needs_match")
			ans.Candidates, ans.NotShown = cands, more
			ans.Hint = fmt.Sprintf("the text occurs %d times in %s: nothing was staged", len(matches), rel)
			ans.Advice = []Advice{{Do: DoEditMatch, Arg: recommended(cands)}}
			if more > 0 {
				ans.Advice = append(ans.Advice, Advice{Do: DoEditMore, Arg: strconv.Itoa(more)})
			}
			return ans, nil
		}
		c.Offset, c.Line, c.Old, c.New = m.Offset, m.Line, q.Old, q.New
	default:
		return nil, fmt.Errorf("%w: unknown edit kind %q", ErrUsage, q.Kind)
	}
	staged, err := p.Stage(c, id)
	if err != nil {
		return nil, modelAdvice(fmt.Errorf("%w: %w", ErrUsage, err))
	}
	pc := pendingOf(*staged)
	if err := r.saveEdits(session, p); err != nil {
		return nil, err
	}
	ans := r.editAnswer(p, "")
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
	return fmt.Errorf("%w: %s", ErrNoPath, msg)
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
func (r *Repo) editAnswer(p *edits.Pending, status string) *EditAnswer {
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
		ans.Next = []Advice{{Do: DoEditMatch}}
	case len(p.Changes) > 0:
		ans.Next = []Advice{{Do: DoEditPreview}, {Do: DoEditCommit}, {Do: DoEditDrop}, {Do: DoEditRevert}}
	default:
		ans.Next = []Advice{{Do: DoEditReplace}, {Do: DoEditWrite}, {Do: DoEditDelete}}
	}
	return ans
}

// EditStatus lists the session's pending changes.
func (r *Repo) EditStatus(ctx context.Context, session string) (*EditAnswer, error) {
	_, p, unlock, err := r.openEdits(ctx, session, "", "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.editAnswer(p, ""), nil
}

// EditDrop removes pending change id; the later ones keep their letters.
func (r *Repo) EditDrop(ctx context.Context, session, id string) (*EditAnswer, error) {
	session, p, unlock, err := r.openEdits(ctx, session, "", "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := p.Drop(strings.ToUpper(id))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := r.saveEdits(session, p); err != nil {
		return nil, err
	}
	ans := r.editAnswer(p, "")
	pc := pendingOf(*c)
	ans.Dropped = &pc
	return ans, nil
}

// EditPreview renders the pending changes: mode edits.Compact (context
// lines around each change), edits.Full (each file's whole changed region)
// or edits.Stats (characters added and removed per change).
func (r *Repo) EditPreview(ctx context.Context, session, mode string, context int) (*EditPreview, error) {
	if mode == "" {
		mode = edits.Compact
	}
	if mode != edits.Compact && mode != edits.Full && mode != edits.Stats {
		return nil, fmt.Errorf("%w: preview mode %q (want compact, full or stats)", ErrUsage, mode)
	}
	if context < 0 {
		return nil, fmt.Errorf("%w: negative context", ErrUsage)
	}
	_, p, unlock, err := r.openEdits(ctx, session, "", "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := &EditPreview{Mode: mode, Files: []EditPreviewFile{}, Changes: []edits.ChangeStat{}}
	for _, rel := range p.Paths() {
		data, id, err := r.fileBase(rel)
		if err != nil {
			return nil, err
		}
		if base, _ := p.Base(rel); base != id {
			return nil, advise(fmt.Errorf("%w: %s changed since its first change was staged", ErrConflict, rel), Advice{Do: DoEditRevert})
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
func (r *Repo) EditRevert(ctx context.Context, session, reason string) (*EditCommitResult, error) {
	session, p, unlock, err := r.openEdits(ctx, session, "revert", reason)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &EditCommitResult{DroppedChanges: len(p.Changes), Paths: p.Paths()}
	if res.Paths == nil {
		res.Paths = []string{}
	}
	return res, r.saveEdits(session, edits.New())
}

// restageEdits, for the undo of an operation that committed or dropped
// staged edits (recorded), stages them again when none are pending; for
// its redo, drops them again when they are still exactly what is pending.
func (r *Repo) restageEdits(ctx context.Context, session string, recorded json.RawMessage, undo bool) error {
	unlock, err := r.lockEdits(ctx, session)
	if err != nil {
		return err
	}
	defer unlock()
	was := edits.New()
	if err := json.Unmarshal(recorded, was); err != nil {
		return fmt.Errorf("%w: staged edits in the op log: %v", ErrCorrupt, err)
	}
	was.Committing = ""
	now, err := r.loadEdits(session)
	if err != nil {
		return err
	}
	switch {
	case undo && len(now.Changes) == 0:
		return r.saveEdits(session, was)
	case !undo && slices.EqualFunc(now.Changes, was.Changes, func(a, b edits.Change) bool { return a == b }):
		return r.saveEdits(session, edits.New())
	}
	return nil
}

// openEdits returns the session's pending changes under its edits lock
// (the caller calls unlock); a commit's or revert's text (verb, text) must
// not be empty.
func (r *Repo) openEdits(ctx context.Context, session, verb, text string) (string, *edits.Pending, func(), error) {
	session, err := sessionName(session)
	if err != nil {
		return "", nil, nil, err
	}
	if verb != "" && strings.TrimSpace(text) == "" {
		what := map[string]string{"commit": "a summary", "revert": "a reason"}[verb]
		return "", nil, nil, fmt.Errorf("%w: a %s needs %s", ErrUsage, verb, what)
	}
	unlock, err := r.lockEdits(ctx, session)
	if err != nil {
		return "", nil, nil, err
	}
	p, err := r.loadEdits(session)
	if err != nil {
		unlock()
		return "", nil, nil, err
	}
	return session, p, unlock, nil
}

// EditCommit applies every pending change atomically and records an
// edit-commit checkpoint with summary. A path whose content changed since
// its first change was staged refuses the commit (ErrConflict, naming the
// paths): nothing is written and the changes stay pending.
func (r *Repo) EditCommit(ctx context.Context, session, summary string) (*EditCommitResult, error) {
	return r.editCommit(ctx, session, summary, nil)
}

// editCommit commits the pending changes; with step (a task commit), the
// checkpoint is the task's task-commit, its task document changed by step,
// and the operation is recorded as OpTaskCommit.
func (r *Repo) editCommit(ctx context.Context, session, summary string, step *taskStep) (*EditCommitResult, error) {
	session, p, unlock, err := r.openEdits(ctx, session, "commit", summary)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if len(p.Changes) == 0 {
		return nil, advise(fmt.Errorf("%w: no pending changes in session %q", ErrUsage, session), Advice{Do: DoEditReplace})
	}
	// New contents, from the bases as they are on disk now.
	res := &EditCommitResult{Paths: p.Paths(), AppliedChanges: len(p.Changes)}
	if err := r.notIgnored(res.Paths); err != nil {
		return nil, err
	}
	// The staging rules again: a directory on the way may have become a
	// symlink or a file since, and a commit writes nothing through one.
	for _, rel := range res.Paths {
		if _, err := r.editPath(rel); err != nil {
			return nil, advise(fmt.Errorf("%w; nothing was written and the changes stay pending", err), Advice{Do: DoEditRevert})
		}
	}
	next := map[string][]byte{} // nil: deleted
	var stale []string
	for _, rel := range res.Paths {
		data, id, err := r.fileBase(rel)
		if err != nil {
			return nil, err
		}
		if base, _ := p.Base(rel); base != id {
			stale = append(stale, rel)
			continue
		}
		out, exists, err := edits.Apply(data, p.Of(rel))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConflict, err)
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
		return nil, advise(fmt.Errorf("%w: %s changed since staged, so nothing was written and the changes stay pending",
			ErrConflict, strings.Join(stale, ", ")), Advice{Do: DoEditStatus}, Advice{Do: DoEditRevert})
	}
	release, err := r.writing(ctx)
	if err != nil {
		return nil, err
	}
	headID, head, err := r.head(session)
	release()
	if err != nil {
		return nil, err
	}
	if head == nil {
		// A move needs a checkpoint to start from: the present, first.
		c, err := r.Checkpoint(ctx, CheckpointOptions{Session: session, Kind: "manual", Summary: "before the first edit commit"})
		if err != nil {
			return nil, err
		}
		headID = c.ID
	}
	release, err = r.writing(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	kind := OpEditCommit
	if step != nil {
		kind = step.kind
	}
	committed, _ := json.Marshal(p) // its undo stages them again
	// The txn goes into the pending changes before any file moves, so a
	// commit killed at any point is settled by the next edit verb.
	p.Committing = newTxn()
	if err := r.saveEdits(session, p); err != nil {
		return nil, err
	}
	m := &move{Kind: string(kind), Session: session, Target: headID, NewHead: headID,
		Scope:   rewindScope{Files: true, Paths: res.Paths, MovesHead: true, FromPresent: true, Txn: p.Committing, Edits: committed},
		summary: summary,
		build: func(m *move, safety objects.ID, now *captured, _ *objects.Checkpoint) (objects.ID, error) {
			id, err := r.buildEditCommit(m, safety, now, p, next, step)
			if err == nil && step != nil {
				m.Scope.Task = step.done.ID // the op log names the task
			}
			return id, err
		}}
	rr, err := r.run(ctx, m, false)
	res.Rewind = rr
	if err != nil {
		if done, rerr := r.history().recorded(p.Committing); rerr == nil && !done && !r.refs.JournalPending() {
			p.Committing = "" // nothing moved: the changes stay pending
			err = errors.Join(err, r.saveEdits(session, p))
		}
		return res, err
	}
	id := m.NewHead
	res.Checkpoint = &id
	if err := r.saveEdits(session, edits.New()); err != nil {
		return res, err
	}
	return res, nil
}

// buildEditCommit records the checkpoint an edit commit ends on: the
// safety checkpoint's tree and state with the new contents at the edited
// paths; it refuses (ErrConflict) when a path differs from its base in the
// safety capture (changed between the check and the capture).
func (r *Repo) buildEditCommit(m *move, safety objects.ID, now *captured, p *edits.Pending, next map[string][]byte, step *taskStep) (objects.ID, error) {
	w := r.objects.NewWriter()
	defer w.Abort()
	treeEdits := map[string]*objects.TreeEntry{}
	for _, rel := range slices.Sorted(maps.Keys(next)) {
		e, ok, err := objects.EntryAt(w, now.tree, "/"+rel)
		if err != nil {
			return objects.ID{}, err
		}
		got := ""
		if ok {
			got = e.ID.String()
		}
		if base, _ := p.Base(rel); base != got {
			return objects.ID{}, fmt.Errorf("%w: %s changed while the commit began; nothing was written and the changes stay pending", ErrConflict, rel)
		}
		data := next[rel]
		if data == nil {
			treeEdits[rel] = nil
			continue
		}
		id, n, err := w.PutBlob(bytes.NewReader(data))
		if err != nil {
			return objects.ID{}, err
		}
		mode := objects.ModeFile
		if ok && e.Mode == objects.ModeExec {
			mode = objects.ModeExec
		}
		treeEdits[rel] = &objects.TreeEntry{Name: path.Base(rel), Mode: mode, ID: id, Size: n}
	}
	kind := kindEditCommit
	if step != nil {
		kind = kindTaskCommit
	}
	return r.recordEdited(w, m, safety, now, treeEdits, kind, step)
}

// recordEdited records the checkpoint a move that edits some paths ends on
// (an edit commit, a revert): the safety capture's tree with treeEdits
// applied (see recordMoveEnd). A directory left empty stays when it is
// there on disk.
func (r *Repo) recordEdited(w *objects.Writer, m *move, safety objects.ID, now *captured, treeEdits map[string]*objects.TreeEntry, kind string, step *taskStep) (objects.ID, error) {
	tree, err := worktree.EditTree(w, now.tree, treeEdits, func(dir string) bool {
		fi, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(dir)))
		return err == nil && fi.IsDir()
	})
	if err != nil {
		return objects.ID{}, err
	}
	snap := &worktree.Snapshot{Files: -1}
	for _, q := range now.unreadable() {
		snap.Skipped = append(snap.Skipped, worktree.Skipped{Path: q, Kept: true})
	}
	return r.recordMoveEnd(w, m, safety, tree, snap, kind, step)
}
