package model

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/workflow"
)

// Two more op kinds of the agent workflow: max-depth (tasks.max-depth set,
// reset or refused) and edit-preview (snap edit preview in each mode).
//
// The promises checked (categories in brackets):
//
//   - tasks.max-depth takes 1..100 and "" (the default, 3); anything
//     else is ErrUsage and changes nothing; a task-begin deeper than the
//     project's value is refused, one as deep is not [task-op];
//   - a preview changes nothing: the tree, the state-document sources, the
//     pending changes [changed-tree, edit-pending]; it is refused as a
//     commit would be for a path changed since staging (ErrConflict), no
//     regular file or over the size limit (ErrUsage), an unknown mode or a
//     negative context (ErrUsage); else it lists every pending change in
//     path then position order with its kind, line, position and the
//     characters it adds and removes as edits.Stat counts them (runes of
//     the new and old text; a write removes the whole base, a delete adds
//     nothing) [edit-preview];
//   - in compact and full mode each path's text has a hunk per group of
//     changes headed by their letters and the first change's line; its
//     "- " lines are base lines from there, its "+ " lines the lines of
//     the new content the model computes at the same place (shifted by
//     what the hunks before it added), its "  " lines the base lines
//     around (at most the context asked); a full preview with context
//     enough to cover the file gives back the whole base ("  " and "- ")
//     and the whole new content ("  " and "+ "); a write shows its new
//     lines (full), a delete its header [edit-preview]; in stats mode each
//     change has its line "ID path:LINE (position P) +A/-R chars";
//   - `snap edit preview --json` exits 0 (or the refusal's code) and its
//     output parses and lists the pending changes [cli-exit:edit-preview,
//     cli-output:edit-preview].

// ---------------------------------------------------------------------------
// max-depth

// genMaxDepth: mostly a depth from 1 to 5, now and then the default or a
// value snap refuses.
func genMaxDepth(rng *rand.Rand) string {
	switch rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return []string{"0", "x", "101", "-1"}[rng.IntN(4)]
	}
	return strconv.Itoa(1 + rng.IntN(5))
}

func maxDepthValid(v string) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= 100
}

func (r *runner) opMaxDepth(p *project, op *Op) {
	d0, o0 := r.mustScan(p), p.scanOut()
	err := p.repo.ConfigSet(r.ctx, "tasks.max-depth", op.Data)
	r.checkUnchanged(p, d0, o0, "config tasks.max-depth")
	n, valid := maxDepthValid(op.Data)
	switch {
	case valid && err != nil:
		r.failf("task-op", "config tasks.max-depth %q: %v; the model expects it set", op.Data, err)
		return
	case !valid && !errors.Is(err, snap.ErrUsage):
		r.failf("task-op", "config tasks.max-depth %q gave %v; the model expects a usage error (1..100)", op.Data, err)
		return
	case !valid:
		r.stats["max-depth refused"]++
	default:
		p.maxDepth = n
		r.stats["max-depth set"]++
	}
	got, err := p.repo.ConfigGet("tasks.max-depth")
	want := ""
	if p.maxDepth != 0 {
		want = strconv.Itoa(p.maxDepth)
	}
	if err != nil || got != want {
		r.failf("task-op", "config tasks.max-depth reads %q (%v); the model expects %q", got, err, want)
	}
}

// ---------------------------------------------------------------------------
// edit-preview

var previewModes = []string{edits.Compact, edits.Full, edits.Stats}

func genPreview(rng *rand.Rand, g *genState, op *Op) {
	op.Session = editSession(rng, g)
	op.Scope = previewModes[rng.IntN(3)]
	switch n := rng.IntN(30); {
	case n == 0:
		op.Scope = "bogus"
	case n == 1:
		op.Scope = "" // the default: compact
	}
	op.Context = []int{0, 1, 2, 3, 1000}[rng.IntN(5)]
	if rng.IntN(30) == 0 {
		op.Context = -1
	}
}

// previewRefusal is why a preview of pe on disk d is refused ("" when it
// is not) and the class of its error; beyond: a path lies beyond a
// symlink or a file on disk, which the preview reads through (or fails
// on): the model does not predict its answer.
func previewRefusal(d tree, pe *pendingEdits, mode string, context int) (class, why string, beyond bool) {
	if mode != "" && mode != edits.Compact && mode != edits.Full && mode != edits.Stats {
		return "usage", "an unknown mode", false
	}
	if context < 0 {
		return "usage", "a negative context", false
	}
	for _, q := range pe.paths() {
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if e, ok := d[a]; ok && e.K != 'd' {
				return "", "", true
			}
		}
		data, exists, class, why := fileBase(d, q)
		if class != "" {
			return class, why, false
		}
		if b, _ := pe.base(q); b.Exists != exists || b.Data != data {
			return "conflict", "changed since it was staged: " + q, false
		}
	}
	return "", "", false
}

func (r *runner) opEditPreview(p *project, op *Op) {
	d0, o0 := r.mustScan(p), p.scanOut()
	pe := p.edits(op.Session)
	class, why, beyond := previewRefusal(d0, pe, op.Scope, op.Context)
	pv, err := workflow.New(p.repo).EditPreview(r.ctx, op.Session, op.Scope, op.Context)
	r.checkUnchanged(p, d0, o0, "edit preview")
	what := fmt.Sprintf("edit preview -s %s --mode %q --context %d (pending %s)", op.Session, op.Scope, op.Context, pe)
	if beyond {
		r.stats["edit-preview beyond a non-directory"]++
		return
	}
	if msg := errClass(class, err); msg != "" {
		want := "the model expects a preview"
		if class != "" {
			want = fmt.Sprintf("the model expects a %s error (%s)", class, why)
		}
		r.failf("edit-preview", "%s: %s; %s", what, msg, want)
		return
	}
	if class != "" {
		r.stats["edit-preview refused: "+class+": "+reasonKey(why)]++
		return
	}
	r.stats["edit-preview "+op.Scope]++
	if msg := checkPreview(pe, pv, op.Scope, op.Context); msg != "" {
		r.failf("edit-preview", "%s: %s", what, msg)
	}
}

// statOf is edits.Stat as the model computes it: characters (runes) the
// change adds and removes.
func statOf(c editChange, base string) (line, pos, added, removed int) {
	switch c.Kind {
	case "write":
		return 1, 0, utf8.RuneCountInString(c.New), utf8.RuneCountInString(base)
	case "delete":
		return 1, 0, 0, utf8.RuneCountInString(base)
	}
	return c.Line, c.Offset, utf8.RuneCountInString(c.New), utf8.RuneCountInString(c.Old)
}

// checkPreview compares a preview with the model's pending changes (""
// when it agrees).
func checkPreview(pe *pendingEdits, pv *workflow.EditPreview, mode string, context int) string {
	if pv == nil {
		return "no answer"
	}
	if mode == "" {
		mode = edits.Compact
	}
	if pv.Mode != mode {
		return fmt.Sprintf("answers mode %q", pv.Mode)
	}
	// Every change, path by path, in position order, with its stats.
	var want, got []string
	for _, q := range pe.paths() {
		b, _ := pe.base(q)
		for _, c := range pe.of(q) {
			line, pos, a, rm := statOf(c, b.Data)
			want = append(want, fmt.Sprintf("%s:%s %s line %d @%d +%d/-%d", c.ID, c.Kind, q, line, pos, a, rm))
		}
	}
	for _, s := range pv.Changes {
		got = append(got, fmt.Sprintf("%s:%s %s line %d @%d +%d/-%d", s.ID, s.Kind, s.Path, s.Line, s.Position, s.Added, s.Removed))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("lists the changes %v; the model expects %v", got, want)
	}
	var paths []string
	for _, f := range pv.Files {
		paths = append(paths, f.Path)
	}
	if fmt.Sprint(paths) != fmt.Sprint(pe.paths()) {
		return fmt.Sprintf("renders the paths %v; the model expects %v", paths, pe.paths())
	}
	for _, f := range pv.Files {
		b, _ := pe.base(f.Path)
		cs := pe.of(f.Path)
		var msg string
		if mode == edits.Stats {
			msg = checkStatsText(f.Path, b.Data, cs, f.Text)
		} else {
			msg = checkRender(f.Path, b.Data, cs, mode, context, f.Text)
		}
		if msg != "" {
			return fmt.Sprintf("%s: %s; its text:\n%s", f.Path, msg, f.Text)
		}
	}
	return ""
}

func checkStatsText(q, base string, cs []editChange, text string) string {
	var want strings.Builder
	for _, c := range cs {
		line, pos, a, rm := statOf(c, base)
		fmt.Fprintf(&want, "%s %s:%d (position %d) +%d/-%d chars\n", c.ID, q, line, pos, a, rm)
	}
	if text != want.String() {
		return fmt.Sprintf("the stats text is not %q", want.String())
	}
	return ""
}

// splitText splits content into lines without their newlines (as the
// preview shows them: no line for a final newline).
func splitText(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// hunkText is one hunk of a rendering: its header's letters and line, and
// its lines by prefix, in order.
type hunkText struct {
	ids                  []string
	line                 int
	before, minus, plus  []string
	after                []string
	header, headerSuffix string
}

// parseRender splits a compact or full rendering into hunks (a header
// "A,B path:LINE" or "A path: ...", then "  ", "- ", "+ " lines).
func parseRender(q, text string) ([]hunkText, string) {
	var hs []hunkText
	for _, l := range splitText(text) {
		switch {
		case strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "+ "):
			if len(hs) == 0 {
				return nil, fmt.Sprintf("a line before any header: %q", l)
			}
			h := &hs[len(hs)-1]
			body := l[2:]
			switch l[0] {
			case ' ':
				if len(h.minus) == 0 && len(h.plus) == 0 {
					h.before = append(h.before, body)
				} else {
					h.after = append(h.after, body)
				}
			case '-':
				if len(h.plus) > 0 || len(h.after) > 0 {
					return nil, fmt.Sprintf("a removed line after added ones: %q", l)
				}
				h.minus = append(h.minus, body)
			case '+':
				if len(h.after) > 0 {
					return nil, fmt.Sprintf("an added line after context: %q", l)
				}
				h.plus = append(h.plus, body)
			}
		default:
			ids, rest, ok := strings.Cut(l, " ")
			if !ok || !strings.HasPrefix(rest, q+":") {
				return nil, fmt.Sprintf("a header that does not name the path: %q", l)
			}
			h := hunkText{ids: strings.Split(ids, ","), header: l, headerSuffix: strings.TrimPrefix(rest, q+":")}
			if n, err := strconv.Atoi(h.headerSuffix); err == nil {
				h.line = n
			}
			hs = append(hs, h)
		}
	}
	return hs, ""
}

// checkRender checks a compact or full rendering of the changes cs to q
// on base against the new content the model computes.
func checkRender(q, base string, cs []editChange, mode string, context int, text string) string {
	hs, msg := parseRender(q, text)
	if msg != "" {
		return msg
	}
	bl := splitText(base)
	if len(cs) == 1 && (cs[0].Kind == "write" || cs[0].Kind == "delete") {
		c := cs[0]
		if len(hs) != 1 || fmt.Sprint(hs[0].ids) != fmt.Sprint([]string{c.ID}) {
			return fmt.Sprintf("a %s renders as %d hunks", c.Kind, len(hs))
		}
		h := hs[0]
		want := fmt.Sprintf(" whole content (%d lines -> %d lines)", len(bl), len(splitText(c.New)))
		var plus []string
		if c.Kind == "delete" {
			want = fmt.Sprintf(" delete (%d lines)", len(bl))
		} else if mode == edits.Full {
			plus = splitText(c.New)
		}
		if h.headerSuffix != want || len(h.before)+len(h.minus)+len(h.after) > 0 || fmt.Sprint(h.plus) != fmt.Sprint(plus) {
			return fmt.Sprintf("a %s should render as %q with the added lines %q", c.Kind, c.ID+" "+q+":"+want, plus)
		}
		return ""
	}
	newData, _ := applyEdits(base, cs)
	nl := splitText(newData)
	// The letters, in order, each once.
	var ids, wantIDs []string
	for _, h := range hs {
		ids = append(ids, h.ids...)
	}
	for _, c := range cs {
		wantIDs = append(wantIDs, c.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
		return fmt.Sprintf("the hunks name the changes %v; the model expects %v", ids, wantIDs)
	}
	if mode == edits.Full && len(hs) != 1 {
		return fmt.Sprintf("a full preview has %d hunks, not one", len(hs))
	}
	lineOf := map[string]int{}
	for _, c := range cs {
		lineOf[c.ID] = c.Line
	}
	shift := 0
	for _, h := range hs {
		if h.line != lineOf[h.ids[0]] {
			return fmt.Sprintf("hunk %v starts at line %d; its first change is at line %d", h.ids, h.line, lineOf[h.ids[0]])
		}
		first := h.line - 1
		if end := min(first+len(h.minus), len(bl)); len(h.before) != min(context, first) || len(h.after) != min(context, len(bl)-end) {
			return fmt.Sprintf("hunk %v has %d lines of context before and %d after (context %d)", h.ids, len(h.before), len(h.after), context)
		}
		if !linesAt(bl, first-len(h.before), h.before) || !linesAt(bl, first, h.minus) || !linesAt(bl, first+len(h.minus), h.after) {
			return fmt.Sprintf("hunk %v: its context and removed lines are not the base's lines from line %d", h.ids, h.line)
		}
		if !linesAt(nl, first+shift, h.plus) {
			return fmt.Sprintf("hunk %v: its added lines %q are not the new content's lines from line %d (the new content: %q)", h.ids, h.plus, first+shift+1, newData)
		}
		shift += len(h.plus) - len(h.minus)
	}
	if mode == edits.Full && context >= len(bl) {
		h := hs[0]
		whole := append(append(append([]string{}, h.before...), h.plus...), h.after...)
		old := append(append(append([]string{}, h.before...), h.minus...), h.after...)
		if fmt.Sprint(old) != fmt.Sprint(bl) {
			return "the full preview does not give back the whole base"
		}
		if strings.Join(whole, "\n") != strings.Join(nl, "\n") || len(whole) != len(nl) {
			return fmt.Sprintf("the full preview does not give back the whole new content %q", newData)
		}
	}
	return ""
}

// linesAt: want are the lines of ls from index i on.
func linesAt(ls []string, i int, want []string) bool {
	if len(want) == 0 {
		return true
	}
	if i < 0 || i+len(want) > len(ls) {
		return false
	}
	for k, w := range want {
		if ls[i+k] != w {
			return false
		}
	}
	return true
}

// checkPreviewJSON checks `snap edit preview --json`.
func (r *runner) checkPreviewJSON(p *project, s string, out []byte) string {
	var pv workflow.EditPreview
	if err := jsonUnmarshal(out, &pv); err != nil {
		return "output does not parse: " + err.Error()
	}
	var got, want []string
	for _, c := range pv.Changes {
		got = append(got, c.ID+":"+c.Path)
	}
	pe := p.edits(s)
	for _, q := range pe.paths() {
		for _, c := range pe.of(q) {
			want = append(want, c.ID+":"+q)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("lists %v, the model %v", got, want)
	}
	return ""
}
