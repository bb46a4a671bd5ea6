package ui

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapcore-dev/snap"
)

// The JSON API the page calls: one handler per view, each a few engine
// calls.

func (s *Server) info(r *http.Request) (any, error) {
	return map[string]any{"version": s.o.Version, "root": s.repo.Root, "session": snap.SessionFromEnv(s.o.Session)}, nil
}

// sessions lists the sessions (active first, then archived).
func (s *Server) sessions(r *http.Request) (any, error) {
	list, err := s.repo.Sessions(r.Context())
	if err != nil {
		return nil, err
	}
	return map[string]any{"sessions": list}, nil
}

// usage is what the store takes: its bytes on disk, what each session's
// checkpoints added (new_bytes: content no earlier checkpoint held), and
// what a gc would free now (a dry run, which reads every reachable object:
// asked for separately).
func (s *Server) usage(r *http.Request) (any, error) {
	size, err := s.repo.StoreSize(r.Context())
	if err != nil {
		return nil, err
	}
	entries, err := s.repo.Log(r.Context(), snap.LogOptions{All: true})
	if err != nil {
		return nil, err
	}
	added := map[string]int64{}
	for _, e := range entries {
		added[e.Session] += e.Stats.NewBytes
	}
	out := map[string]any{"store_bytes": size, "session_bytes": added}
	if r.URL.Query().Get("gc") != "" {
		res, err := s.repo.GC(r.Context(), snap.GCOptions{DryRun: true, Grace: s.repo.GCGrace(snap.DefaultGCGrace)})
		if err != nil {
			return nil, err
		}
		out["gc"] = res
	}
	return out, nil
}

// logPage is one page of a session's timeline, newest first.
type logPage struct {
	Session string          `json:"session"`
	Total   int             `json:"total"`
	Offset  int             `json:"offset"`
	Entries []snap.LogEntry `json:"entries"`
}

func (s *Server) log(r *http.Request) (any, error) {
	offset, limit, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	session := s.session(r)
	entries, err := s.repo.Log(r.Context(), snap.LogOptions{Session: session})
	if err != nil {
		return nil, err
	}
	page := logPage{Session: session, Total: len(entries), Offset: offset, Entries: []snap.LogEntry{}}
	if offset < len(entries) {
		page.Entries = entries[offset : offset+min(len(entries)-offset, max(limit, 1))] // (no offset+limit: it may overflow, U5)
	}
	return page, nil
}

// pageParams reads a page's offset (default 0) and limit (default 50).
func pageParams(r *http.Request) (offset, limit int, err error) {
	if offset, err = intParam(r, "offset", 0); err == nil {
		limit, err = intParam(r, "limit", 50)
	}
	return offset, limit, err
}

// ops lists the last operations of the store (every session), newest first.
func (s *Server) ops(r *http.Request) (any, error) {
	n, err := intParam(r, "n", 50)
	if err != nil {
		return nil, err
	}
	ops, err := s.repo.Ops(r.Context(), n)
	if err != nil {
		return nil, err
	}
	if q := r.URL.Query().Get("session"); q != "" {
		ops = slices.DeleteFunc(ops, func(o snap.Op) bool { return o.Session != q })
	}
	return map[string]any{"ops": ops}, nil
}

// showPage is a checkpoint with one page of its changed files: files
// [files_offset, files_offset+limit) of files_total, added first, then
// modified, then deleted (each list sorted), so that a checkpoint that
// changed 20,000 files is not sent, nor drawn, whole.
type showPage struct {
	*snap.ShowResult
	FilesTotal  int `json:"files_total"`
	FilesOffset int `json:"files_offset"`
}

func (s *Server) show(r *http.Request) (any, error) {
	id, err := s.resolve(r, "ref", "@")
	if err != nil {
		return nil, err
	}
	offset, limit, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	res, err := s.repo.Show(r.Context(), id, snap.ShowOptions{NoPreview: true}) // (the page reads the conversation by pages)
	if err != nil {
		return nil, err
	}
	f := res.Files
	out := showPage{ShowResult: res, FilesTotal: len(f.Added) + len(f.Modified) + len(f.Deleted), FilesOffset: offset}
	page := snap.FileChanges{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	skip, room := offset, max(limit, 1)
	for _, l := range []struct{ from, to *[]string }{{&f.Added, &page.Added}, {&f.Modified, &page.Modified}, {&f.Deleted, &page.Deleted}} {
		list := *l.from
		n := min(skip, len(list))
		list, skip = list[n:], skip-n
		n = min(room, len(list))
		*l.to, room = append(*l.to, list[:n]...), room-n
	}
	out.Files = page
	return out, nil
}

// diff compares from (default the session's head) with to (default the
// working tree), optionally within paths (path=, repeated).
func (s *Server) diff(r *http.Request) (any, error) {
	from, err := s.resolve(r, "from", "@")
	if err != nil {
		return nil, err
	}
	var to *snap.ID
	if r.URL.Query().Get("to") != "" {
		id, err := s.resolve(r, "to", "")
		if err != nil {
			return nil, err
		}
		to = &id
	}
	d, err := s.repo.Diff(r.Context(), from, to, r.URL.Query()["path"])
	if err != nil || r.URL.Query().Get("stat") == "" {
		return d, err
	}
	// The files' names and counts only (the state documents whole), one
	// page of them: the page fetches patches per file and draws a page of
	// files at a time, so a change of thousands of files is neither sent
	// nor drawn whole (U4).
	offset, limit, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	out := diffPage{DiffResult: d, FilesTotal: len(d.Files), FilesOffset: offset}
	d.Files = d.Files[min(offset, len(d.Files)):]
	d.Files = d.Files[:min(max(limit, 1), len(d.Files))]
	for i := range d.Files {
		d.Files[i].Patch = ""
	}
	return out, nil
}

// diffPage is a compare's files [files_offset, files_offset+limit) of
// files_total, without their patches.
type diffPage struct {
	*snap.DiffResult
	FilesTotal  int `json:"files_total"`
	FilesOffset int `json:"files_offset"`
}

// conversation is one page of the conversation a checkpoint recorded.
func (s *Server) conversation(r *http.Request) (any, error) {
	id, err := s.resolve(r, "ref", "@")
	if err != nil {
		return nil, err
	}
	offset, limit, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	return s.repo.Conversation(r.Context(), id, offset, max(limit, 1))
}

// searchHit is a checkpoint search found, and what matched.
type searchHit struct {
	snap.LogEntry
	Match string `json:"match"` // summary, message_id, call, kind, label or path
	Path  string `json:"path,omitempty"`
}

// search finds checkpoints of every session by their prompt or summary,
// tool call or message id, label, kind, or the path of a file they
// recorded a change of (case-insensitive substring), newest first, at most
// limit; then prompts by their whole text (promptHits).
func (s *Server) search(r *http.Request) (any, error) {
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	if q == "" {
		return nil, fmt.Errorf("%w: q (what to search for) is empty", snap.ErrUsage)
	}
	limit, err := intParam(r, "limit", 50)
	if err != nil {
		return nil, err
	}
	entries, err := s.repo.Log(r.Context(), snap.LogOptions{All: true})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(entries, func(a, b snap.LogEntry) int { return b.Time.Compare(a.Time) })
	hits := []searchHit{}
	has := func(v string) bool { return v != "" && strings.Contains(strings.ToLower(v), q) }
	deadline := time.Now().Add(5 * time.Second) // path matches read each checkpoint's changes
	cut := false
	trees := map[snap.ID]snap.ID{}
	tree := func(id snap.ID) (snap.ID, error) {
		if t, ok := trees[id]; ok {
			return t, nil
		}
		n, _, err := s.repo.ReadNode(r.Context(), id)
		if err != nil {
			return snap.ID{}, err
		}
		trees[id] = n.Tree
		return n.Tree, nil
	}
	for i, e := range entries {
		if len(hits) >= limit {
			break
		}
		h := searchHit{LogEntry: e}
		switch {
		case has(e.Summary):
			h.Match = "summary"
		case has(e.MessageID):
			h.Match = "message_id"
		case has(e.Call):
			h.Match = "call"
		case has(e.Kind):
			h.Match = "kind"
		case slices.ContainsFunc(e.Labels, has):
			h.Match = "label"
		case time.Now().Before(deadline):
			// What it recorded: its tree against the one recorded just
			// before it, in any session (a change another session
			// recorded first is that one's, as for blame).
			var from snap.ID
			var err1 error
			if i+1 < len(entries) {
				from, err1 = tree(entries[i+1].ID)
			}
			to, err2 := tree(e.ID)
			if err1 != nil || err2 != nil {
				continue
			}
			paths, err := s.repo.DiffPaths(r.Context(), from, to, nil)
			if err != nil {
				continue
			}
			if i := slices.IndexFunc(paths, has); i >= 0 {
				h.Match, h.Path = "path", strings.TrimSuffix(paths[i], "/")
			}
		default:
			cut = true // not matched by path: out of time
		}
		if h.Match != "" {
			hits = append(hits, h)
		}
	}
	skipped := 0
	if len(hits) < limit {
		var more []searchHit
		more, skipped = s.promptHits(r, q, entries, hits, limit-len(hits))
		hits = append(hits, more...)
	}
	// What was not searched is said (U9): paths past the time limit,
	// conversations too large to read whole.
	return map[string]any{"query": q, "hits": hits, "paths_cut_off": cut, "conversations_not_searched": skipped}, nil
}

// maxSearchedConversation bounds the transcripts search reads whole.
const maxSearchedConversation = 32 << 20

// promptHits finds q in the user messages of each session's conversation
// as its head holds it (a summary keeps only a prompt's first line): each
// as the session's first checkpoint whose conversation holds that message.
func (s *Server) promptHits(r *http.Request, q string, entries []snap.LogEntry, found []searchHit, limit int) (out []searchHit, skipped int) {
	seen := map[snap.ID]bool{}
	for _, h := range found {
		seen[h.ID] = true
	}
	bySession := map[string][]snap.LogEntry{} // oldest first, the head's ancestry
	heads := map[string]snap.ID{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !e.Abandoned {
			bySession[e.Session] = append(bySession[e.Session], e)
		}
		if e.Head {
			heads[e.Session] = e.ID
		}
	}
	for _, session := range slices.Sorted(maps.Keys(heads)) {
		head := heads[session]
		n, _, err := s.repo.ReadNode(r.Context(), head)
		if err != nil {
			continue
		}
		docs, err := s.repo.ReadTree(r.Context(), n.State)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(docs, func(d snap.TreeEntry) bool { return d.Name == snap.ConversationDoc })
		if i < 0 {
			continue
		}
		if docs[i].Size > maxSearchedConversation {
			skipped++
			continue
		}
		page, err := s.repo.Conversation(r.Context(), head, 0, 0)
		if err != nil {
			continue
		}
		for _, m := range page.Messages {
			if m.Role != "user" || !strings.Contains(strings.ToLower(m.Text), q) {
				continue
			}
			k := slices.IndexFunc(bySession[session], func(e snap.LogEntry) bool { return e.Stats.Messages > m.Index })
			if k < 0 || seen[bySession[session][k].ID] {
				continue
			}
			e := bySession[session][k]
			seen[e.ID] = true
			out = append(out, searchHit{LogEntry: e, Match: "prompt"})
			if len(out) >= limit {
				return out, skipped
			}
		}
	}
	return out, skipped
}

// tasks is the session's task tree and its staged edits; with ref, the
// tree as that checkpoint recorded it.
func (s *Server) tasks(r *http.Request) (any, error) {
	session := s.session(r)
	var at *snap.ID
	if r.URL.Query().Get("ref") != "" {
		id, err := s.resolve(r, "ref", "")
		if err != nil {
			return nil, err
		}
		at = &id
	}
	tree, err := s.flow.Tasks(r.Context(), session, at)
	if err != nil {
		return nil, err
	}
	if at != nil {
		return map[string]any{"tasks": tree}, nil
	}
	edits, err := s.flow.EditStatus(r.Context(), session)
	if err != nil {
		return nil, err
	}
	return map[string]any{"tasks": tree, "edits": edits}, nil
}

func (s *Server) status(r *http.Request) (any, error) {
	return s.repo.Status(r.Context(), s.session(r))
}

func (s *Server) blame(r *http.Request) (any, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return nil, fmt.Errorf("%w: path (a file) is missing", snap.ErrUsage)
	}
	return s.repo.Blame(r.Context(), snap.BlameOptions{Session: s.session(r), Path: p, Ref: r.URL.Query().Get("ref")})
}

// undoable says what Undo and Redo would reverse now.
func (s *Server) undoable(r *http.Request) (any, error) {
	undo, redo, err := s.repo.Undoable(r.Context(), s.session(r))
	return map[string]*snap.Op{"undo": undo, "redo": redo}, err
}

// rewindPlan is what a dry run listed: the paths restored, deleted and kept.
type rewindPlan struct {
	Restored []string `json:"restored"`
	Deleted  []string `json:"deleted"`
	Kept     []string `json:"kept"`
}

func planOf(res *snap.RewindResult) rewindPlan {
	p := rewindPlan{Restored: slices.Sorted(slices.Values(res.Restored)), Deleted: slices.Sorted(slices.Values(res.Deleted))}
	for _, k := range res.Kept {
		p.Kept = append(p.Kept, k.Path)
	}
	slices.Sort(p.Kept)
	return p
}

func (p rewindPlan) equal(q rewindPlan) bool {
	return slices.Equal(p.Restored, q.Restored) && slices.Equal(p.Deleted, q.Deleted) && slices.Equal(p.Kept, q.Kept)
}

// rewindRequest is what the rewind dialog sends.
type rewindRequest struct {
	Session          string   `json:"session"`
	Target           string   `json:"target"`
	FilesOnly        bool     `json:"files_only"`
	ConversationOnly bool     `json:"conversation_only"`
	Paths            []string `json:"paths"`
	All              bool     `json:"all"`
	DryRun           bool     `json:"dry_run"`
	// Expect: the plan the dialog showed. A rewind whose dry run now
	// lists other paths (the tree changed since the preview) is refused,
	// so that it never moves what the person did not see (U2).
	Expect *rewindPlan `json:"expect"`
}

func (s *Server) rewind(r *http.Request) (any, error) {
	var q rewindRequest
	if err := decode(r, &q); err != nil {
		return nil, err
	}
	if q.Target == "" {
		return nil, fmt.Errorf("%w: target (a checkpoint) is missing", snap.ErrUsage)
	}
	for i, p := range q.Paths {
		// A path as an editor or a tool call gives it: absolute, in the
		// project (U8); one outside stays absolute, and is refused.
		if rel, err := filepath.Rel(s.repo.Root, p); err == nil && filepath.IsAbs(p) && rel != ".." && !strings.HasPrefix(rel, "../") {
			q.Paths[i] = filepath.ToSlash(rel)
		}
	}
	o := snap.RewindOptions{Session: snap.SessionFromEnv(orDefault(q.Session, s.o.Session)),
		Target: q.Target, FilesOnly: q.FilesOnly, ConversationOnly: q.ConversationOnly, Paths: q.Paths, All: q.All, DryRun: q.DryRun}
	if q.Expect != nil && !q.DryRun {
		dry := o
		dry.DryRun = true
		res, err := s.repo.Rewind(r.Context(), dry)
		if err != nil && !errors.Is(err, snap.ErrPartial) {
			return nil, err
		}
		want := *q.Expect
		for _, l := range []*[]string{&want.Restored, &want.Deleted, &want.Kept} {
			*l = slices.Sorted(slices.Values(*l))
		}
		if now := planOf(res); !now.equal(want) {
			return nil, fmt.Errorf("%w: the working tree changed since the preview (it would now restore %d, delete %d and keep %d paths): nothing was changed; look at the preview again",
				errChanged, len(now.Restored), len(now.Deleted), len(now.Kept))
		}
	}
	return s.repo.Rewind(r.Context(), o)
}

// errChanged: a rewind's plan is no longer what the dialog showed.
var errChanged = errors.New("changed since the preview")

type undoRequest struct {
	Session string `json:"session"`
	All     bool   `json:"all"`
}

func (s *Server) undo(r *http.Request) (any, error) {
	var q undoRequest
	if err := decode(r, &q); err != nil {
		return nil, err
	}
	return s.repo.Undo(r.Context(), snap.SessionFromEnv(orDefault(q.Session, s.o.Session)), snap.UndoOptions{All: q.All})
}

func (s *Server) redo(r *http.Request) (any, error) {
	var q undoRequest
	if err := decode(r, &q); err != nil {
		return nil, err
	}
	return s.repo.Redo(r.Context(), snap.SessionFromEnv(orDefault(q.Session, s.o.Session)), snap.UndoOptions{All: q.All})
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// events streams "change" events (server-sent events) whenever the op log
// grows, whoever wrote it (the hooks, the MCP server, the CLI), so open
// pages refresh; a comment every 15 s keeps the connection alive.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "internal", "streaming is not supported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	last := int64(-1)
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	quiet := 0
	for {
		if ops, err := s.repo.Ops(r.Context(), 1); err == nil {
			var seq int64
			if len(ops) > 0 {
				seq = ops[0].Seq
			}
			if seq != last {
				fmt.Fprintf(w, "event: change\ndata: {\"seq\": %d}\n\n", seq)
				fl.Flush()
				last, quiet = seq, 0
			}
		}
		if quiet++; time.Duration(quiet)*s.o.Poll >= 15*time.Second {
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
			quiet = 0
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
