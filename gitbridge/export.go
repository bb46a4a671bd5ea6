package gitbridge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
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
)

// exported is a checkpoint as written to git.
type exported struct {
	commit, state plumbing.Hash
	tree          plumbing.Hash // the commit's tree
	node          *snap.Node
}

// ExportOptions select the sessions to export.
type ExportOptions struct {
	Sessions []string // the sessions to export; with All, every live session
	All      bool
}

// ExportResult says what an export wrote.
type ExportResult struct {
	Repo        string          `json:"repo"`
	Sessions    []SessionExport `json:"sessions"`
	Commits     int             `json:"commits"`      // checkpoint commits written (not already in the repository)
	Objects     int             `json:"objects"`      // git objects written, all kinds
	RefsUpdated []string        `json:"refs_updated"` // refs created, moved or deleted
}

// SessionExport is one exported session.
type SessionExport struct {
	Session     string `json:"session"`
	Head        string `json:"head"`   // checkpoint id
	Commit      string `json:"commit"` // its commit
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
	ex, err := b.newExporter(ctx)
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Repo: b.Dir, Sessions: []SessionExport{}, RefsUpdated: []string{}}
	for _, s := range sessions {
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
		updated, err := b.setRefs(want, []string{SessionRefs + s, StateRefs + s}, []string{AbandonedRefs + s + "/", AbandonedStateRefs + s + "/", TaskRefs + s + "/"})
		if err != nil {
			return nil, err
		}
		res.RefsUpdated = append(res.RefsUpdated, updated...)
		res.Sessions = append(res.Sessions, se)
	}
	res.Commits, res.Objects = ex.commits, ex.g.wrote
	return res, nil
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
	known   map[snap.ID]plumbing.Hash // exported before: checkpoint → commit
	done    map[snap.ID]*exported
	commits int
}

func (b *Bridge) newExporter(ctx context.Context) (*exporter, error) {
	known, err := b.exportedCommits(ctx)
	if err != nil {
		return nil, err
	}
	return &exporter{ctx: ctx, b: b, g: newToGit(ctx, b.snap, b.git.Storer), known: known, done: map[snap.ID]*exported{}}, nil
}

// export writes checkpoint id (and, first, its parents) unless the
// repository has it. An expired parent is left out of the commit's parents.
func (ex *exporter) export(id snap.ID) (*exported, error) {
	if x, ok := ex.done[id]; ok {
		return x, nil
	}
	node, raw, err := ex.b.snap.ReadNode(ex.ctx, id)
	if err != nil {
		return nil, err
	}
	if h, ok := ex.known[id]; ok {
		if x, err := ex.b.readExported(h); err == nil && x.node != nil {
			x.node = node
			ex.done[id] = x
			return x, nil
		}
	}
	var parents, stateParents []plumbing.Hash
	var hint *exported
	for _, p := range node.Parents {
		px, err := ex.export(p)
		if errors.Is(err, snap.ErrExpired) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parent %s: %w", p.Short(), err)
		}
		parents = append(parents, px.commit)
		stateParents = append(stateParents, px.state)
		if hint == nil {
			hint = px
		}
	}
	var tree plumbing.Hash
	if hint != nil {
		tree, err = ex.g.tree(node.Tree, hint.node.Tree, hint.tree)
	} else {
		tree, err = ex.g.tree(node.Tree, snap.ID{}, plumbing.ZeroHash)
	}
	if err != nil {
		return nil, err
	}
	stateTree, err := ex.stateTree(node.State)
	if err != nil {
		return nil, err
	}
	sig := ex.b.signature(node.When())
	state := &object.Commit{Author: sig, Committer: sig, TreeHash: stateTree, ParentHashes: stateParents,
		Message: fmt.Sprintf("snap state of checkpoint %s\n\n%s\n", id, raw)}
	stateHash, err := ex.putCommit(state)
	if err != nil {
		return nil, err
	}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents,
		Message: commitMessage(id, node, stateHash)}
	ch, err := ex.putCommit(c)
	if err != nil {
		return nil, err
	}
	ex.commits++
	x := &exported{commit: ch, state: stateHash, tree: tree, node: node}
	ex.done[id] = x
	return x, nil
}

// stateTree writes a checkpoint's state documents as a flat git tree.
func (ex *exporter) stateTree(state snap.ID) (plumbing.Hash, error) {
	entries, err := ex.b.snap.ReadTree(ex.ctx, state)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	t := &object.Tree{}
	for _, e := range entries {
		h, err := ex.g.blob(e.ID, e.Size)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("state document %s: %w", e.Name, err)
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: e.Name, Mode: filemode.Regular, Hash: h})
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	obj := ex.b.git.Storer.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return ex.g.put(obj)
}

func (ex *exporter) putCommit(c *object.Commit) (plumbing.Hash, error) {
	obj := ex.b.git.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return ex.g.put(obj)
}

// commitMessage is the summary (or the kind) and the trailers.
func commitMessage(id snap.ID, n *snap.Node, state plumbing.Hash) string {
	subject := strings.TrimSpace(n.Summary)
	if subject == "" {
		subject = n.Kind
	}
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "%s: %s\n", TrailerCheckpoint, id)
	fmt.Fprintf(&b, "%s: %s\n", TrailerSession, n.Session)
	fmt.Fprintf(&b, "%s: %s\n", TrailerKind, n.Kind)
	if n.MessageID != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerMessageID, oneLine(n.MessageID))
	}
	fmt.Fprintf(&b, "%s: %s\n", TrailerState, state)
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
func (b *Bridge) exportedCommits(ctx context.Context) (map[snap.ID]plumbing.Hash, error) {
	known := map[snap.ID]plumbing.Hash{}
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
			known[id] = h
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
	if _, err := object.GetCommit(b.git.Storer, st); err != nil {
		return nil, err
	}
	return &exported{commit: h, state: st, tree: c.TreeHash, node: &snap.Node{}}, nil
}
