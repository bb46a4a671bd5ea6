package model

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
)

// Blame (issue 22): every line's blame equals the model's author. The
// model's rule, written from the issue's and README's words ("the
// checkpoint that first recorded it"), not from blame.go:
//
//   - A path's versions are read from the model's log (project.hist), as
//     the actors' scan reads it (actors_test.go): each record against the
//     last tree a record left, from nothing; consecutive equal versions
//     collapsed; a version that is no file (absent, a link, a directory)
//     has no lines, nor has one that is not text.
//   - A version (a content) is its first recorder's: a checkpoint's is its
//     session's and actor's (a capture marked user is the user's, one
//     marked agent the agent's, none unknown); what a safety capture
//     found is its session's, actor unknown; what a move wrote (its end
//     within its paths: a rewind's target, an edit commit's, a revert's
//     or a scoped move's end) is the move's session's, actor unknown. A
//     change first recorded by session B is B's, whichever session holds
//     it later.
//   - A line of a version is the version's when the version it was made
//     from (the one before its first recording) does not hold it, else
//     that version's line's (by a line diff): so what a move restored,
//     where the content it wrote is new, is the move's session's; what it
//     restored as a version recorded before is that version's.
//   - Only the records up to the first that names the checkpoint blamed
//     count (its own record included).
//
// The generator tags most lines it writes with a counter (tagLines), so
// that a line diff between versions is unambiguous; where it is not (a
// version holding a line twice, common lines in another order), the model
// cannot tell and does not check that path (stats). The check [blame]:
// Repo.Blame of a text file at a session's head gives, line by line, the
// text, and the checkpoint, session and actor the model expects (and the
// tool call or message id of a checkpoint that has one); a file that is
// not text is ErrUsage.

// blameWho is who wrote a line.
type blameWho struct {
	session, actor string
	ck             objects.ID
	msg            string // the message id blame gives ("" unchecked)
	by             string // for messages
}

func (w blameWho) String() string {
	return fmt.Sprintf("%s (session %q, actor %q, checkpoint %s)", w.by, w.session, w.actor, w.ck.Short())
}

// blameLines splits a text file into lines as blame counts them: without
// their newlines, a last line with or without one.
func blameLines(data string) []string {
	if data == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(data, "\n"), "\n")
}

func isText(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

// matchLines matches the lines of cur with those of old (the index in old
// of each line of cur, -1: new); false when the match is ambiguous (a line
// twice in one of them, or common lines in another order).
func matchLines(old, cur []string) ([]int, bool) {
	at := map[string]int{}
	for i, l := range old {
		if _, dup := at[l]; dup {
			return nil, false
		}
		at[l] = i
	}
	seen := map[string]bool{}
	out := make([]int, len(cur))
	last := -1
	for i, l := range cur {
		if seen[l] {
			return nil, false
		}
		seen[l] = true
		j, ok := at[l]
		if !ok {
			out[i] = -1
			continue
		}
		if j < last {
			return nil, false
		}
		out[i], last = j, j
	}
	return out, true
}

// storeHas: checkpoint c can still be read from the store (an expired one
// may be, until the sweep removes it).
func (p *project) storeHas(c *ckRec) bool {
	_, err := p.repo.Objects().ReadCheckpoint(c.id)
	return err == nil
}

// expectBlame is the model's author of each line of path q as checkpoint
// c holds it; unsure says why the model cannot tell.
func (p *project) expectBlame(q string, c *ckRec) (lines []string, who []blameWho, unsure string) {
	if !c.logged {
		return nil, nil, "the checkpoint is in no record the model knows"
	}
	type version struct {
		e   ent // K 0: no lines
		who blameWho
	}
	var versions []version
	fileAt := func(e ent) ent {
		if e.K != 'f' && e.K != 'x' {
			return ent{}
		}
		return e
	}
	add := func(from, to tree, w blameWho) {
		_, news := diffAt(from, to, q)
		if len(news) == 0 {
			return
		}
		e := fileAt(news[len(news)-1])
		if n := len(versions); n > 0 && versions[n-1].e.same(e) || n == 0 && e.K == 0 {
			return
		}
		versions = append(versions, version{e, w})
	}
	// usable: the record's checkpoint is one the scan reads (an expired
	// one the store no longer has records nothing).
	usable := func(r *ckRec) (ok bool, why string) {
		switch {
		case r == nil || r.kind == "unknown":
			return false, "a record names a checkpoint the model does not know"
		case r.expired:
			return p.storeHas(r), ""
		}
		return true, ""
	}
	last := tree{}
	for i := 0; i <= c.firstAt && i < len(p.hist); i++ {
		h := p.hist[i]
		switch {
		case h.gap:
			return nil, nil, "the model's log has a gap"
		case h.move:
			ok, why := usable(h.safety)
			if why != "" {
				return nil, nil, why
			}
			if !ok {
				continue
			}
			add(last, h.safety.files, blameWho{session: h.safety.session, actor: snap.ActorUnknown, ck: h.safety.id,
				by: fmt.Sprintf("%s's safety checkpoint %s", h.session, h.safety)})
			last = h.safety.files
			if !h.files {
				continue
			}
			ok, why = usable(h.target)
			if why != "" {
				return nil, nil, why
			}
			if !ok {
				continue
			}
			if inScope(q, h.paths) {
				add(h.safety.files, h.target.files, blameWho{session: h.session, actor: snap.ActorUnknown, ck: h.target.id,
					by: fmt.Sprintf("%s's move to %s", h.session, h.target)})
			}
			if len(h.paths) == 0 {
				last = h.target.files
			}
		default:
			ok, why := usable(h.ck)
			if why != "" {
				return nil, nil, why
			}
			if !ok {
				continue
			}
			actor := h.ck.actor
			if actor == "" {
				actor = snap.ActorUnknown
			}
			msg := h.ck.call
			if msg == "" {
				msg = h.ck.msgID
			}
			add(last, h.ck.files, blameWho{session: h.ck.session, actor: actor, ck: h.ck.id, msg: msg, by: h.ck.String()})
			last = h.ck.files
		}
	}
	// Each content's authors, at its first recording, from the version
	// before it.
	authors := map[string][]blameWho{}
	ambiguous := map[string]bool{}
	var prev ent
	for _, v := range versions {
		e := v.e
		if e.K == 0 || !isText(e.Data) {
			prev = e
			continue
		}
		if _, seen := authors[e.Data]; seen {
			prev = e
			continue
		}
		ls := blameLines(e.Data)
		ws := make([]blameWho, len(ls))
		for i := range ws {
			ws[i] = v.who
		}
		if prev.K != 0 && isText(prev.Data) && prev.Data != e.Data {
			m, ok := matchLines(blameLines(prev.Data), ls)
			if !ok || ambiguous[prev.Data] {
				ambiguous[e.Data] = true
			} else {
				for i, j := range m {
					if j >= 0 {
						ws[i] = authors[prev.Data][j]
					}
				}
			}
		}
		authors[e.Data] = ws
		prev = e
	}
	e := c.files[q]
	lines = blameLines(e.Data)
	ws, ok := authors[e.Data]
	switch {
	case !ok:
		// No record holds it: its checkpoint's, as a whole.
		ws = make([]blameWho, len(lines))
		for i := range ws {
			ws[i] = blameWho{session: c.session, actor: snap.ActorUnknown, ck: c.id, by: c.String() + " (no record holds it)"}
		}
	case ambiguous[e.Data]:
		return nil, nil, "a line diff between its versions is ambiguous"
	}
	if _, ok := matchLines(nil, lines); !ok {
		return nil, nil, "a line occurs twice"
	}
	return lines, ws, ""
}

// opBlame blames a text file at the session's head.
func (r *runner) opBlame(p *project, op *Op) {
	h := p.head(op.Session)
	if h == nil {
		r.stats["blame: no head"]++
		return
	}
	e, ok := h.files[op.Path]
	if !ok || e.K != 'f' && e.K != 'x' {
		r.stats["blame: not a file of the head"]++
		return
	}
	d0, o0 := r.mustScan(p), p.scanOut()
	res, err := p.repo.Blame(r.ctx, snap.BlameOptions{Session: op.Session, Path: op.Path})
	r.checkUnchanged(p, d0, o0, "blame")
	what := fmt.Sprintf("blame -s %s %s at %s", op.Session, op.Path, h)
	if !isText(e.Data) {
		if !errors.Is(err, snap.ErrUsage) {
			r.failf("blame", "%s, which is not text: %v, want a usage error", what, err)
		}
		r.stats["blame: not text"]++
		return
	}
	lines, who, unsure := p.expectBlame(op.Path, h)
	if err != nil {
		cat := "blame"
		if errors.Is(err, snap.ErrUsage) {
			cat = "blame-binary-version" // M29: a version before it was not text
		}
		r.failf(cat, "%s: %v", what, err)
		return
	}
	if res.Checkpoint != h.id || res.Path != op.Path {
		r.failf("blame", "%s: blames %s of %s", what, res.Path, res.Checkpoint.Short())
	}
	if unsure != "" {
		r.stats["blame: not predicted: "+unsure]++
		return
	}
	if len(res.Lines) != len(lines) {
		r.failf("blame", "%s: %d lines, the file has %d", what, len(res.Lines), len(lines))
		return
	}
	r.stats["blame: checked"]++
	r.stats["blame: lines checked"] += len(lines)
	for i, l := range res.Lines {
		w := who[i]
		switch {
		case l.Line != i+1 || l.Text != lines[i]:
			r.failf("blame", "%s: line %d is %d %q, want %q", what, i+1, l.Line, l.Text, lines[i])
		case l.Session != w.session || l.Actor != w.actor || l.Checkpoint != w.ck:
			r.failf("blame", "%s: line %d %q is blamed on session %q, actor %q, checkpoint %s; the model's author is %s",
				what, i+1, l.Text, l.Session, l.Actor, l.Checkpoint.Short(), w)
		case w.msg != "" && l.MessageID != w.msg:
			r.failf("blame", "%s: line %d %q has message id %q; %s was given %q", what, i+1, l.Text, l.MessageID, w.by, w.msg)
		default:
			continue
		}
		return
	}
}

// genBlame picks a session and a text file of its head.
func genBlame(rng *rand.Rand, g *genState, op *Op) {
	op.Session = randSession(rng)
	h := g.p.head(op.Session)
	if h == nil {
		return
	}
	var files []string
	for _, q := range h.files.paths() {
		if e := h.files[q]; e.K == 'f' || e.K == 'x' {
			files = append(files, q)
		}
	}
	if len(files) > 0 {
		op.Path = files[rng.IntN(len(files))]
	}
}

// tagLines makes most text the generator writes blameable: each line
// tagged with a counter, so that no line is written twice.
func tagLines(rng *rand.Rand, g *genState, data string) string {
	if data == "" || !isText(data) || rng.IntN(4) == 0 {
		return data
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(data, "\n") {
		if l == "" {
			continue
		}
		g.p.tag++
		body, nl := strings.CutSuffix(l, "\n")
		fmt.Fprintf(&b, "%s #%d", body, g.p.tag)
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
