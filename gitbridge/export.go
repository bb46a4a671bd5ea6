package gitbridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/redact"
)

// Ref namespaces the bridge writes (all under refs/snap/).
const (
	SessionRefs        = "refs/snap/sessions/"        // + session: the head's commit
	StateRefs          = "refs/snap/state/"           // + session: the head's state commit
	AbandonedRefs      = "refs/snap/abandoned/"       // + session/id: the tip of a branch a rewind left
	AbandonedStateRefs = "refs/snap/abandoned-state/" // + session/id: its state commit
	TaskRefs           = "refs/snap/tasks/"           // + session/task: a task's branch
	RemoteRefs         = "refs/snap/remotes/"         // + remote/...: what pull fetched
)

// Trailers of an exported commit.
const (
	TrailerCheckpoint = "Snap-Checkpoint"
	TrailerSession    = "Snap-Session"
	TrailerKind       = "Snap-Kind"
	TrailerMessageID  = "Snap-Message-Id"
	TrailerState      = "Snap-State"
	TrailerActor      = "Snap-Actor"       // who made the checkpoint's change (agent, user), when known
	TrailerCall       = "Snap-Call"        // the agent's tool call it records
	TrailerAttributed = "Snap-Attribution" // lines a --git-commit adds, by actor: "agent 42, user 3"
)

// exported is a checkpoint as written to git.
type exported struct {
	commit, state plumbing.Hash
	tree          plumbing.Hash // the commit's tree
	stateTree     plumbing.Hash // the state commit's tree
	node          *snap.Node    // the local checkpoint
	// id is the checkpoint the commit rebuilds to (its Snap-Checkpoint):
	// the local one, or its redaction (design §9).
	id      snap.ID
	subject string // the commit's subject, redacted
	flags   exportedFlags
}

// ExportOptions select the sessions to export.
type ExportOptions struct {
	Sessions []string // the sessions to export; with All, every live session
	All      bool
	// IncludeSecretFiles exports files whose name marks them as secrets
	// (redact.SecretFileName) that git does not track; by default they are
	// held back.
	IncludeSecretFiles bool
}

// ExportResult says what an export wrote.
type ExportResult struct {
	Repo        string          `json:"repo"`
	Sessions    []SessionExport `json:"sessions"`
	Commits     int             `json:"commits"`      // checkpoint commits written (not already in the repository)
	Objects     int             `json:"objects"`      // git objects written, all kinds
	RefsUpdated []string        `json:"refs_updated"` // refs created, moved or deleted
	// Secrets: the secrets redacted from the commits this export wrote
	// (each once; never the secret itself). HeldBack: secret-named files
	// left out of them; SecretFilesIncluded: those exported on request.
	Secrets  []Secret `json:"secrets"`
	HeldBack []string `json:"held_back"`
	// SessionsHeldBack: sessions --all left out because their name, which
	// names their refs, holds what looks like a secret.
	SessionsHeldBack    int      `json:"sessions_held_back,omitempty"`
	SecretFilesIncluded []string `json:"secret_files_included,omitempty"`
}

// SessionExport is one exported session.
type SessionExport struct {
	Session string `json:"session"`
	Head    string `json:"head"`   // checkpoint id
	Commit  string `json:"commit"` // its commit
	// Exported: the id the commit rebuilds to, when it is not Head's (the
	// checkpoint redacted: design §9).
	Exported    string `json:"exported,omitempty"`
	Checkpoints int    `json:"checkpoints"`
	Abandoned   int    `json:"abandoned"` // branch tips kept by refs/snap/abandoned/
}

// Export writes the chosen sessions' checkpoints as commits (see the
// package doc for the mapping) and points the session refs at them. It is
// incremental and idempotent: checkpoints already exported (found from the
// refs/snap/ refs by their Snap-Checkpoint trailer) are not written again,
// and refs already right are not touched. Only refs under refs/snap/ are
// written; HEAD, the index, the working tree, branches and tags never are,
// and no hook runs.
func (b *Bridge) Export(ctx context.Context, o ExportOptions) (*ExportResult, error) {
	sessions, err := b.sessions(ctx, o.Sessions, o.All)
	if err != nil {
		return nil, err
	}
	ex, err := b.newExporter(ctx, o.IncludeSecretFiles)
	if err != nil {
		return nil, err
	}
	defer ex.close()
	res := &ExportResult{Repo: b.Dir, Sessions: []SessionExport{}, RefsUpdated: []string{}, Secrets: []Secret{}, HeldBack: []string{}}
	for _, s := range sessions {
		// A session's name is its refs' name: it cannot be redacted
		// (adversarial A4).
		if _, rep, err := redact.Name(s); err == nil && !rep.Clean() {
			if !o.All {
				return nil, fmt.Errorf("%w: the name of session %s… holds what looks like a secret (%s): it would be the name of its refs on the remote; export other sessions, or continue this one's work in a session named otherwise", snap.ErrUsage, rep.Findings[0].Masked, rep.Findings[0].Kind)
			}
			res.SessionsHeldBack++
			continue
		}
		entries, err := b.snap.Log(ctx, snap.LogOptions{Session: s})
		if err != nil {
			return nil, err
		}
		// Oldest first, so parents are written before children.
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Seq < entries[j].Seq })
		se := SessionExport{Session: s}
		want := map[string]plumbing.Hash{}
		isParent := map[snap.ID]bool{}
		var head *exported
		for _, e := range entries {
			x, err := ex.export(e.ID)
			if err != nil {
				return nil, fmt.Errorf("session %s: checkpoint %s: %w", s, e.ID.Short(), err)
			}
			for _, p := range x.node.Parents {
				isParent[p] = true
			}
			se.Checkpoints++
			if e.Head {
				head, se.Head, se.Commit = x, e.ID.String(), x.commit.String()
				if x.id != e.ID {
					se.Exported = x.id.String()
				}
			}
		}
		for _, e := range entries {
			if e.Head || isParent[e.ID] {
				continue
			}
			x := ex.done[e.ID]
			want[AbandonedRefs+s+"/"+e.ID.String()] = x.commit
			want[AbandonedStateRefs+s+"/"+e.ID.String()] = x.state
			se.Abandoned++
		}
		if head != nil {
			want[SessionRefs+s] = head.commit
			want[StateRefs+s] = head.state
		}
		// Task branches (tasks.go).
		tb, err := ex.taskBranches(s, entries)
		if err != nil {
			return nil, err
		}
		for name, h := range tb {
			want[name] = h
		}
		if err := ex.flush(); err != nil {
			return nil, err
		}
		updated, err := b.setRefs(want, []string{SessionRefs + s, StateRefs + s}, []string{AbandonedRefs + s + "/", AbandonedStateRefs + s + "/", TaskRefs + s + "/"})
		if err != nil {
			return nil, err
		}
		res.RefsUpdated = append(res.RefsUpdated, updated...)
		res.Sessions = append(res.Sessions, se)
	}
	res.Commits, res.Objects = ex.commits, ex.g.wrote
	ex.sec.report(res)
	if err := b.addNotes(ex.notes, b.userSignature(time.Now()), "Notes added by 'snap git export'\n"); err != nil {
		return res, fmt.Errorf("the checkpoints are exported, but their git-ai notes (%s) could not be written: %w", NotesRef, err)
	}
	return res, nil
}

// attribute attests the lines checkpoint node (exported as id, in git tree
// tree) adds to its parent's tree to its actor, when the node names one:
// its session's agent, or the person. Files held back from the export are
// left out.
func (ex *exporter) attribute(node *snap.Node, id, parentTree snap.ID, tree plumbing.Hash, heldBack bool) (*authorship, error) {
	att := newAuthorship(ex.human)
	if node.Actor != snap.ActorAgent && node.Actor != snap.ActorUser {
		return att, nil
	}
	added, err := ex.b.snap.AddedLines(ex.ctx, parentTree, node.Tree)
	if err != nil {
		return nil, err
	}
	var gt *object.Tree
	if heldBack {
		if gt, err = ex.g.getTree(tree); err != nil {
			return nil, err
		}
	}
	for _, f := range added {
		if len(f.Ranges) == 0 {
			continue
		}
		if gt != nil {
			if _, err := gt.FindEntry(f.Path); err != nil {
				continue // held back
			}
		}
		var lines []int
		for _, r := range f.Ranges {
			for l := r[0]; l <= r[1]; l++ {
				lines = append(lines, l)
			}
		}
		if node.Actor == snap.ActorAgent {
			att.agent(f.Path, node.Session, id, lines...)
		} else {
			att.user(f.Path, lines...)
		}
	}
	return att, nil
}

// sessions returns the sessions to work on: the named ones (each must
// exist), or with all every live session.
func (b *Bridge) sessions(ctx context.Context, named []string, all bool) ([]string, error) {
	infos, err := b.snap.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	var out []string
	for _, s := range infos {
		if !s.Archived {
			live[s.Name] = true
			if all {
				out = append(out, s.Name)
			}
		}
	}
	if all {
		return out, nil
	}
	for _, s := range named {
		if !live[s] {
			return nil, fmt.Errorf("%w: session %s", snap.ErrNoSession, s)
		}
	}
	for _, s := range out {
		if err := refSafe(s); err != nil {
			return nil, err
		}
	}
	for _, s := range named {
		if err := refSafe(s); err != nil {
			return nil, err
		}
	}
	return named, nil
}

// refSafe refuses a session name git cannot hold in a ref name (git
// check-ref-format): "..", a trailing "." or ".lock", a leading ".".
func refSafe(session string) error {
	if strings.Contains(session, "..") || strings.HasSuffix(session, ".") || strings.HasSuffix(session, ".lock") ||
		strings.HasPrefix(session, ".") || strings.Contains(session, "@{") {
		return fmt.Errorf("%w: session %q cannot be a git ref name (no '..', no trailing '.' or '.lock'): rename it to share it through git", snap.ErrUsage, session)
	}
	return nil
}

// setRefs makes the refs under the given prefixes exactly want: exact
// names in fixed are set or deleted, refs under the prefixes not in want
// are deleted. It returns the refs it changed.
func (b *Bridge) setRefs(want map[string]plumbing.Hash, fixed, prefixes []string) ([]string, error) {
	var changed []string
	have := map[string]plumbing.Hash{}
	iter, err := b.git.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		n := r.Name().String()
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				have[n] = r.Hash()
			}
		}
		for _, f := range fixed {
			if n == f {
				have[n] = r.Hash()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, n := range sortedKeys(want) {
		if have[n] == want[n] {
			continue
		}
		if err := b.git.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(n), want[n])); err != nil {
			return changed, err
		}
		changed = append(changed, n)
	}
	for _, n := range sortedKeys(have) {
		if _, ok := want[n]; !ok {
			if err := b.git.Storer.RemoveReference(plumbing.ReferenceName(n)); err != nil {
				return changed, err
			}
			changed = append(changed, n)
		}
	}
	return changed, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// exporter writes checkpoints as commits, each once.
type exporter struct {
	ctx     context.Context
	b       *Bridge
	g       *toGit
	sec     *secrets
	known   map[snap.ID][]plumbing.Hash // exported before: checkpoint → commits
	done    map[snap.ID]*exported
	commits int
	notes   map[plumbing.Hash]string // git-ai authorship logs of the commits written
	human   string                   // the person's identity in them, "Name <email>"
}

func (b *Bridge) newExporter(ctx context.Context, includeSecretFiles bool) (*exporter, error) {
	known, err := b.exportedCommits(ctx)
	if err != nil {
		return nil, err
	}
	sec := newSecrets(ctx, b.snap, includeSecretFiles)
	sig := b.userSignature(time.Time{})
	g := newToGit(ctx, b.snap, b.git.Storer, sec)
	if fs, ok := b.git.Storer.(interface{ Filesystem() billy.Filesystem }); ok {
		g.pack = newPackWriter(fs.Filesystem(), b.git.Storer, b.Dir)
	}
	return &exporter{ctx: ctx, b: b, g: g, sec: sec, known: known, done: map[snap.ID]*exported{},
		notes: map[plumbing.Hash]string{}, human: sig.Name + " <" + sig.Email + ">"}, nil
}

// close drops what an unfinished export wrote.
func (ex *exporter) close() {
	ex.sec.close()
	if ex.g.pack != nil {
		ex.g.pack.abort()
	}
}

// flush makes the objects written so far part of the repository, before
// a ref names them.
func (ex *exporter) flush() error {
	if ex.g.pack == nil {
		return nil
	}
	return ex.g.pack.finish()
}

// export writes checkpoint id (and, first, its parents) unless the
// repository has it. An expired parent is left out of the commit's parents.
// What leaves the machine is redacted (design §9): the state documents'
// secrets, the summary's, and secret files git does not track; when that
// changes anything the commit is that of a checkpoint of its own, whose
// parents are the parents' exports, and says which local one it was made
// from (Snap-Redacted-From).
func (ex *exporter) export(id snap.ID) (*exported, error) {
	if x, ok := ex.done[id]; ok {
		return x, nil
	}
	node, raw, err := ex.b.snap.ReadNode(ex.ctx, id)
	if err != nil {
		return nil, err
	}
	for _, h := range sortedHashes(ex.known[id]) {
		if x, err := ex.b.readExported(h); err == nil && ex.sec.reusable(x.flags, id) && (x.id == id || x.flags.from == id) {
			x.node = node
			// The task branches' subjects, as a fresh export makes them.
			out := *node
			if out.Summary, err = ex.sec.quiet(node.Summary); err != nil {
				return nil, err
			}
			x.subject = subjectOf(&out)
			ex.done[id] = x
			return x, nil
		}
	}
	out := *node // the checkpoint as exported
	out.Parents = nil
	var parents, stateParents []plumbing.Hash
	var hint *exported
	for _, p := range node.Parents {
		px, err := ex.export(p)
		if errors.Is(err, snap.ErrExpired) {
			out.Parents = append(out.Parents, p)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parent %s: %w", p.Short(), err)
		}
		out.Parents = append(out.Parents, px.id)
		parents = append(parents, px.commit)
		stateParents = append(stateParents, px.state)
		if hint == nil {
			hint = px
		}
	}
	var tree plumbing.Hash
	var files kept
	if hint != nil {
		tree, files, err = ex.g.tree(node.Tree, "", hint.node.Tree, hint.tree)
	} else {
		tree, files, err = ex.g.tree(node.Tree, "", snap.ID{}, plumbing.ZeroHash)
	}
	if err != nil {
		return nil, err
	}
	out.Tree = files.id
	var hintState plumbing.Hash
	if hint != nil {
		hintState = hint.stateTree
	}
	stateTree, state, err := ex.stateTree(id, node.State, hintState)
	if err != nil {
		return nil, err
	}
	out.State = state
	if err := ex.sec.record(&out, id.Short()); err != nil {
		return nil, err
	}
	x := &exported{id: id, node: node}
	if !slices.Equal(out.Parents, node.Parents) || out.Tree != node.Tree || out.State != node.State || out.Summary != node.Summary ||
		out.MessageID != node.MessageID || !slices.Equal(out.Labels, node.Labels) || !maps.Equal(out.StateSources, node.StateSources) {
		im, err := ex.sec.importer()
		if err != nil {
			return nil, err
		}
		raw = out.Encode()
		if x.id, err = im.PutNode(raw); err != nil {
			return nil, err
		}
		x.flags.from = id
	}
	x.flags.heldBack, x.flags.included = files.files > 0, files.incl
	var hintTree snap.ID
	if hint != nil {
		hintTree = hint.node.Tree
	}
	att, err := ex.attribute(node, x.id, hintTree, tree, x.flags.heldBack)
	if err != nil {
		return nil, err
	}
	if n := att.count(); n > 0 {
		x.flags.attribution = fmt.Sprintf("%s %d", node.Actor, n)
	}
	sig := ex.b.signature(node.When())
	state0 := &object.Commit{Author: sig, Committer: sig, TreeHash: stateTree, ParentHashes: stateParents,
		Message: fmt.Sprintf("snap state of checkpoint %s\n\n%s\n", x.id, raw)}
	if x.state, err = ex.putCommit(state0); err != nil {
		return nil, err
	}
	x.subject = subjectOf(&out)
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents,
		Message: commitMessage(x.id, &out, x.state, x.flags)}
	if x.commit, err = ex.putCommit(c); err != nil {
		return nil, err
	}
	x.tree, x.stateTree = tree, stateTree
	if note, err := att.log(x.commit); err != nil {
		return nil, err
	} else if note != "" {
		ex.notes[x.commit] = note
	}
	ex.commits++
	ex.done[id] = x
	return x, nil
}

// stateTree writes a checkpoint's state documents, redacted, as a flat git
// tree, and returns it with the id of the state tree as exported. hint is
// the parent's state tree in git: each document a delta against its
// version there when that pays.
func (ex *exporter) stateTree(id, state snap.ID, hint plumbing.Hash) (plumbing.Hash, snap.ID, error) {
	entries, err := ex.b.snap.ReadTree(ex.ctx, state)
	if err != nil {
		return plumbing.ZeroHash, snap.ID{}, err
	}
	bases := map[string]plumbing.Hash{}
	if !hint.IsZero() {
		if ht, err := ex.g.getTree(hint); err == nil {
			for _, e := range ht.Entries {
				bases[e.Name] = e.Hash
			}
		}
	}
	t := &object.Tree{}
	out := slices.Clone(entries)
	for i, e := range entries {
		d, err := ex.sec.doc(ex.g, e.ID, e.Name, id.Short()+":"+e.Name, bases[e.Name])
		if err != nil {
			return plumbing.ZeroHash, snap.ID{}, fmt.Errorf("state document %s: %w", e.Name, err)
		}
		var h plumbing.Hash
		if d != nil {
			h, out[i].ID, out[i].Size = d.git, d.snap, d.size
		} else if h, err = ex.g.blob(e.ID, e.Size, bases[e.Name]); err != nil {
			return plumbing.ZeroHash, snap.ID{}, fmt.Errorf("state document %s: %w", e.Name, err)
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: e.Name, Mode: filemode.Regular, Hash: h})
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	obj := ex.b.git.Storer.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, snap.ID{}, err
	}
	h, err := ex.g.put(obj, hint)
	if err != nil {
		return plumbing.ZeroHash, snap.ID{}, err
	}
	if sameEntries(entries, out) {
		return h, state, nil
	}
	kept, err := ex.sec.putTree(out)
	return h, kept, err
}

func (ex *exporter) putCommit(c *object.Commit) (plumbing.Hash, error) {
	obj := ex.b.git.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return ex.g.put(obj, plumbing.ZeroHash)
}

// subjectOf is a checkpoint's summary, or its kind.
func subjectOf(n *snap.Node) string {
	subject := strings.TrimSpace(n.Summary)
	if subject == "" {
		subject = n.Kind
	}
	return subject
}

// commitMessage is the summary (or the kind) and the trailers.
func commitMessage(id snap.ID, n *snap.Node, state plumbing.Hash, f exportedFlags) string {
	var b strings.Builder
	b.WriteString(subjectOf(n))
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "%s: %s\n", TrailerCheckpoint, id)
	fmt.Fprintf(&b, "%s: %s\n", TrailerSession, n.Session)
	fmt.Fprintf(&b, "%s: %s\n", TrailerKind, n.Kind)
	if n.MessageID != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerMessageID, oneLine(n.MessageID))
	}
	if n.Actor != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerActor, n.Actor)
	}
	if n.Call != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerCall, oneLine(n.Call))
	}
	if f.attribution != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerAttributed, f.attribution)
	}
	fmt.Fprintf(&b, "%s: %s\n", TrailerState, state)
	if !f.from.IsZero() {
		fmt.Fprintf(&b, "%s: %s\n", TrailerRedactedFrom, f.from)
	}
	if f.heldBack {
		fmt.Fprintf(&b, "%s: %s\n", TrailerHeldBack, "yes")
	}
	if f.included {
		fmt.Fprintf(&b, "%s: %s\n", TrailerSecretFiles, "included")
	}
	return b.String()
}

// oneLine keeps a trailer value on its line.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// trailer returns the value of the last trailer key in a message.
func trailer(msg, key string) string {
	var v string
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(line, key+": "); ok {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

// signature is git.author at the checkpoint's time, in UTC: the same on any
// machine, so the same checkpoint always gives the same commit.
func (b *Bridge) signature(t time.Time) object.Signature {
	return object.Signature{Name: b.authorName, Email: b.authorEmail, When: t.UTC().Truncate(time.Second)}
}

// exportedCommits finds the checkpoints already exported: every commit
// reachable from refs/snap/ (remotes included) with a Snap-Checkpoint
// trailer.
func (b *Bridge) exportedCommits(ctx context.Context) (map[snap.ID][]plumbing.Hash, error) {
	known := map[snap.ID][]plumbing.Hash{}
	seen := map[plumbing.Hash]bool{}
	iter, err := b.git.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	var tips []plumbing.Hash
	err = iter.ForEach(func(r *plumbing.Reference) error {
		n := r.Name().String()
		// Pulled commits too: a checkpoint someone else exported keeps
		// their commit (author and all) when it is exported again here.
		if r.Type() == plumbing.HashReference && (strings.HasPrefix(n, SessionRefs) || strings.HasPrefix(n, AbandonedRefs) ||
			strings.HasPrefix(n, TaskRefs) || strings.HasPrefix(n, RemoteRefs)) {
			tips = append(tips, r.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for len(tips) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := tips[len(tips)-1]
		tips = tips[:len(tips)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(b.git.Storer, h)
		if err != nil {
			continue // a ref to a missing or foreign object: rewritten below
		}
		if id, err := snap.ParseID(trailer(c.Message, TrailerCheckpoint)); err == nil {
			known[id] = append(known[id], h)
			// A redacted export stands for the local checkpoint it was
			// made from too.
			if from := flagsOf(c.Message).from; !from.IsZero() {
				known[from] = append(known[from], h)
			}
		}
		tips = append(tips, c.ParentHashes...)
	}
	return known, nil
}

// readExported reads an exported commit's tree and state commit.
func (b *Bridge) readExported(h plumbing.Hash) (*exported, error) {
	c, err := object.GetCommit(b.git.Storer, h)
	if err != nil {
		return nil, err
	}
	st := plumbing.NewHash(trailer(c.Message, TrailerState))
	if st.IsZero() {
		return nil, fmt.Errorf("commit %s has no %s trailer", h, TrailerState)
	}
	sc, err := object.GetCommit(b.git.Storer, st)
	if err != nil {
		return nil, err
	}
	id, err := snap.ParseID(trailer(c.Message, TrailerCheckpoint))
	if err != nil {
		return nil, fmt.Errorf("commit %s: %s trailer: %w", h, TrailerCheckpoint, err)
	}
	return &exported{commit: h, state: st, tree: c.TreeHash, stateTree: sc.TreeHash, node: &snap.Node{}, id: id, flags: flagsOf(c.Message)}, nil
}
