package gitbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
)

// RemoteOptions name a remote and the sessions to move.
type RemoteOptions struct {
	Remote   string // a remote of the repository ("origin" when empty) or a URL
	Sessions []string
	All      bool
	// IncludeSecretFiles: push exports secret-named files git does not
	// track (ExportOptions).
	IncludeSecretFiles bool
}

// PushResult says what a push did.
type PushResult struct {
	Remote   string        `json:"remote"`
	Export   *ExportResult `json:"export"`
	Updated  []string      `json:"updated"` // remote refs created or moved
	UpToDate bool          `json:"up_to_date"`
}

// PullResult says what a pull did.
type PullResult struct {
	Remote   string              `json:"remote"`
	Sessions []snap.ImportResult `json:"sessions"`
	Imported int                 `json:"imported"` // checkpoints new to this store
	// Skipped: remote session refs left alone (names snap cannot hold).
	Skipped []string `json:"skipped,omitempty"`
}

// redactURL hides a password or token in a remote URL (user:TOKEN@host).
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if _, has := p.User.Password(); has {
		p.User = url.UserPassword(p.User.Username(), "***")
	}
	return p.String()
}

// remote returns the remote named name (or a URL) and a name for its
// fetched refs under refs/snap/remotes/.
func (b *Bridge) remote(name string) (*git.Remote, string, error) {
	if name == "" {
		name = "origin"
	}
	if r, err := b.git.Remote(name); err == nil {
		return r, name, nil
	}
	if !strings.Contains(name, ":") && !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, ".") {
		return nil, "", fmt.Errorf("%w: no remote %q in %s (name a remote of the repository, or give a URL)", snap.ErrUsage, name, b.Dir)
	}
	sum := sha256.Sum256([]byte(name))
	local := "url-" + hex.EncodeToString(sum[:6])
	r := git.NewRemote(b.git.Storer, &config.RemoteConfig{Name: local, URLs: []string{name}})
	return r, local, nil
}

// Push exports the sessions and pushes their refs to the remote. Session
// heads move only forward on the remote: a remote head that is not an
// ancestor of ours is refused (like git's non-fast-forward), and nothing is
// forced but the abandoned-branch and task refs, which are derived.
func (b *Bridge) Push(ctx context.Context, o RemoteOptions) (*PushResult, error) {
	rem, _, err := b.remote(o.Remote)
	if err != nil {
		return nil, err
	}
	ex, err := b.Export(ctx, ExportOptions{Sessions: o.Sessions, All: o.All, IncludeSecretFiles: o.IncludeSecretFiles})
	if err != nil {
		return nil, err
	}
	res := &PushResult{Remote: redactURL(rem.Config().URLs[0]), Export: ex, Updated: []string{}}
	before := b.remoteRefs(ctx, rem)
	var specs []config.RefSpec
	for _, s := range ex.Sessions {
		// Fast-forward only, unless the remote's head is a checkpoint of
		// this very session here (we rewound past it: it stays reachable
		// there through the abandoned refs pushed with it).
		force := ""
		switch b.ours(ctx, s.Session, before[SessionRefs+s.Session]) {
		case abandonedHere:
			force = "+"
		case inHistoryHere:
			// A checkpoint of our history, but not in the history of our
			// export: the same checkpoints exported otherwise (with or
			// without --include-secret-files, or by other redaction rules).
			// Replacing them would move the head of everyone who pulled
			// them (adversarial A12).
			if !b.isAncestor(before[SessionRefs+s.Session], plumbing.NewHash(s.Commit)) {
				return nil, fmt.Errorf("%w: push to %s: session %s there holds checkpoints of ours exported otherwise (with or without --include-secret-files, or by another version's redaction rules); pushing would replace them for everyone who pulled them: push with the options used before, or under another session name", snap.ErrConflict, res.Remote, s.Session)
			}
		}
		specs = append(specs,
			config.RefSpec(force+SessionRefs+s.Session+":"+SessionRefs+s.Session),
			config.RefSpec(force+StateRefs+s.Session+":"+StateRefs+s.Session))
		for _, ns := range []string{AbandonedRefs, AbandonedStateRefs, TaskRefs} {
			if b.hasRefs(ns + s.Session + "/") {
				specs = append(specs, config.RefSpec("+"+ns+s.Session+"/*:"+ns+s.Session+"/*"))
			}
		}
	}
	if len(specs) == 0 {
		res.UpToDate = true
		return res, nil
	}
	err = rem.PushContext(ctx, &git.PushOptions{RemoteName: rem.Config().Name, RefSpecs: specs})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		res.UpToDate = true
		return res, nil
	}
	if err != nil {
		if strings.Contains(err.Error(), "non-fast-forward") {
			return nil, fmt.Errorf("%w: push to %s: a session head there is not in our history (someone else pushed to it): pull it into another store, or push this session under another name (snap session names are the ref names): %v", snap.ErrConflict, res.Remote, err)
		}
		return nil, fmt.Errorf("push to %s: %w", res.Remote, err)
	}
	after := b.remoteRefs(ctx, rem)
	for _, n := range sortedKeys(after) {
		if before[n] != after[n] {
			res.Updated = append(res.Updated, n)
		}
	}
	return res, nil
}

// isAncestor reports whether commit a is b or one of its ancestors, both
// in the local repository.
func (b *Bridge) isAncestor(a, h plumbing.Hash) bool {
	if a == h {
		return true
	}
	ca, err := object.GetCommit(b.git.Storer, a)
	if err != nil {
		return false
	}
	cb, err := object.GetCommit(b.git.Storer, h)
	if err != nil {
		return false
	}
	ok, err := ca.IsAncestor(cb)
	return err == nil && ok
}

// Where a remote session head's checkpoint is in this store (ours).
const (
	notHere       = iota
	abandonedHere // on a branch a rewind here abandoned: we rewound past it
	inHistoryHere // the head here or one of its ancestors
)

// ours says whether commit h is the export of a checkpoint of session here,
// and where that checkpoint is.
func (b *Bridge) ours(ctx context.Context, session string, h plumbing.Hash) int {
	if h.IsZero() {
		return notHere
	}
	c, err := object.GetCommit(b.git.Storer, h)
	if err != nil {
		return notHere
	}
	id, err := snap.ParseID(trailer(c.Message, TrailerCheckpoint))
	if err != nil {
		return notHere
	}
	from := flagsOf(c.Message).from // a redacted export of ours
	entries, err := b.snap.Log(ctx, snap.LogOptions{Session: session})
	if err != nil {
		return notHere
	}
	for _, e := range entries {
		if e.ID == id || e.ID == from {
			if e.Abandoned {
				return abandonedHere
			}
			return inHistoryHere
		}
	}
	return notHere
}

func (b *Bridge) hasRefs(prefix string) bool {
	iter, err := b.git.Storer.IterReferences()
	if err != nil {
		return false
	}
	found := false
	iter.ForEach(func(r *plumbing.Reference) error {
		if strings.HasPrefix(r.Name().String(), prefix) {
			found = true
		}
		return nil
	})
	return found
}

// remoteHas reports whether the remote has a ref under prefix.
func (b *Bridge) remoteHas(ctx context.Context, rem *git.Remote, prefix string) bool {
	for n := range b.remoteRefs(ctx, rem) {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// remoteRefs lists the remote's refs/snap/ refs (empty when it cannot).
func (b *Bridge) remoteRefs(ctx context.Context, rem *git.Remote) map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	refs, err := rem.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		return out
	}
	for _, r := range refs {
		if strings.HasPrefix(r.Name().String(), "refs/snap/") {
			out[r.Name().String()] = r.Hash()
		}
	}
	return out
}

// Pull fetches the sessions' refs from the remote (into
// refs/snap/remotes/<remote>/) and imports their checkpoints, so the store
// has the checkpoint ids the commits name: the ids of the store that
// pushed them, or of their redactions (design §9). A session head
// that moved here since (not an ancestor of the remote's) is not touched:
// that session's import fails with snap.ErrConflict.
func (b *Bridge) Pull(ctx context.Context, o RemoteOptions) (*PullResult, error) {
	if !o.All && len(o.Sessions) == 0 {
		return nil, fmt.Errorf("%w: name a session (--session) or --all", snap.ErrUsage)
	}
	rem, local, err := b.remote(o.Remote)
	if err != nil {
		return nil, err
	}
	base := RemoteRefs + local + "/"
	var specs []config.RefSpec
	names := []string{"*"}
	if !o.All {
		names = o.Sessions
	}
	for _, s := range names {
		specs = append(specs,
			config.RefSpec("+"+SessionRefs+s+":"+base+"sessions/"+s),
			config.RefSpec("+"+StateRefs+s+":"+base+"state/"+s))
		if s == "*" {
			specs = append(specs, config.RefSpec("+"+AbandonedRefs+"*:"+base+"abandoned/*"),
				config.RefSpec("+"+AbandonedStateRefs+"*:"+base+"abandoned-state/*"))
		} else if b.remoteHas(ctx, rem, AbandonedRefs+s+"/") {
			specs = append(specs, config.RefSpec("+"+AbandonedRefs+s+"/*:"+base+"abandoned/"+s+"/*"),
				config.RefSpec("+"+AbandonedStateRefs+s+"/*:"+base+"abandoned-state/"+s+"/*"))
		}
	}
	res := &PullResult{Remote: redactURL(rem.Config().URLs[0]), Sessions: []snap.ImportResult{}}
	err = rem.FetchContext(ctx, &git.FetchOptions{RemoteName: rem.Config().Name, RefSpecs: specs, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if strings.Contains(err.Error(), "couldn't find remote ref") {
			return nil, fmt.Errorf("%w: %s has no snap session %s", snap.ErrNoSession, res.Remote, strings.Join(o.Sessions, ", "))
		}
		return nil, fmt.Errorf("fetch from %s: %w", res.Remote, err)
	}
	// The fetched sessions and their tips.
	tips := map[string][]plumbing.Hash{}
	heads := map[string]plumbing.Hash{}
	iter, err := b.git.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	iter.ForEach(func(r *plumbing.Reference) error {
		n := r.Name().String()
		if s, ok := strings.CutPrefix(n, base+"sessions/"); ok {
			heads[s] = r.Hash()
			tips[s] = append(tips[s], r.Hash())
		} else if rest, ok := strings.CutPrefix(n, base+"abandoned/"); ok {
			if s, _, ok := strings.Cut(rest, "/"); ok {
				tips[s] = append(tips[s], r.Hash())
			}
		}
		return nil
	})
	want := map[string]bool{}
	for _, s := range o.Sessions {
		want[s] = true
		if _, ok := heads[s]; !ok {
			return nil, fmt.Errorf("%w: %s has no snap session %s", snap.ErrNoSession, res.Remote, s)
		}
	}
	im, err := b.snap.NewImporter(ctx)
	if err != nil {
		return nil, err
	}
	defer im.Abort()
	in := &importer{ctx: ctx, b: b, im: im, f: newFromGit(ctx, im, b.git.Storer), ids: map[plumbing.Hash]snap.ID{}, trees: map[plumbing.Hash]hint{}, nodes: map[snap.ID]*snap.Node{}}
	var imports []snap.SessionImport
	for _, s := range sortedKeys(heads) {
		if !o.All && !want[s] {
			continue
		}
		if err := refSafe(s); err != nil || strings.ContainsAny(s, "/@ ") {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s%s: not a session name snap can hold", SessionRefs, s))
			continue
		}
		var ids []snap.ID
		for _, tip := range tips[s] {
			got, err := in.history(tip)
			if err != nil {
				return nil, fmt.Errorf("session %s: %w", s, err)
			}
			ids = append(ids, got...)
		}
		var mine []snap.ID
		for _, id := range ids {
			if n := in.nodes[id]; n != nil && n.Session == s {
				mine = append(mine, id)
			}
		}
		head := in.ids[heads[s]]
		if head.IsZero() {
			return nil, fmt.Errorf("%w: %s's %s%s is commit %s, which is not a snap checkpoint (no %s trailer): nothing was imported",
				snap.ErrCorrupt, res.Remote, SessionRefs, s, heads[s].String()[:12], TrailerCheckpoint)
		}
		imports = append(imports, snap.SessionImport{Session: s, Head: head, Checkpoints: mine})
	}
	res.Imported = in.imported
	out, err := im.Commit(ctx, imports)
	res.Sessions = append(res.Sessions, out...)
	return res, err
}

// importer brings exported commits into a snap import.
type importer struct {
	ctx      context.Context
	b        *Bridge
	im       *snap.Importer
	f        *fromGit
	ids      map[plumbing.Hash]snap.ID // commit → checkpoint
	trees    map[plumbing.Hash]hint    // commit → its files as git and snap trees
	nodes    map[snap.ID]*snap.Node
	imported int
}

// history imports every checkpoint commit reachable from tip, parents
// first, and returns their ids.
func (in *importer) history(tip plumbing.Hash) ([]snap.ID, error) {
	// Post-order without recursion: a commit is imported once all its
	// parents are.
	var order []*object.Commit
	seen := map[plumbing.Hash]bool{}
	type frame struct {
		c    *object.Commit
		next int
	}
	c, err := object.GetCommit(in.b.git.Storer, tip)
	if err != nil {
		return nil, err
	}
	stack := []frame{{c: c}}
	seen[tip] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.c.ParentHashes) {
			p := top.c.ParentHashes[top.next]
			top.next++
			if seen[p] {
				continue
			}
			seen[p] = true
			pc, err := object.GetCommit(in.b.git.Storer, p)
			if err != nil {
				return nil, fmt.Errorf("commit %s: %w", p, err)
			}
			stack = append(stack, frame{c: pc})
			continue
		}
		order = append(order, top.c)
		stack = stack[:len(stack)-1]
	}
	var ids []snap.ID
	for _, c := range order {
		id, err := in.commit(c)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", c.Hash, err)
		}
		if !id.IsZero() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// commit imports one exported commit (its parents already are) and returns
// its checkpoint id; zero for a commit that is not a checkpoint's.
func (in *importer) commit(c *object.Commit) (snap.ID, error) {
	if id, ok := in.ids[c.Hash]; ok {
		return id, nil
	}
	if err := in.ctx.Err(); err != nil {
		return snap.ID{}, err
	}
	idText := trailer(c.Message, TrailerCheckpoint)
	if idText == "" {
		return snap.ID{}, nil
	}
	id, err := snap.ParseID(idText)
	if err != nil {
		return snap.ID{}, fmt.Errorf("%s trailer: %w", TrailerCheckpoint, err)
	}
	// A redacted export of a checkpoint this store has (its own push,
	// pulled back) stands for that checkpoint: the exact bytes stay, and
	// nothing is imported for it. Its files are not the commit's tree, so
	// it is no hint for its children.
	if from := flagsOf(c.Message).from; !from.IsZero() && in.im.Has(from) {
		node, _, err := in.b.snap.ReadNode(in.ctx, from)
		if err != nil {
			return snap.ID{}, err
		}
		in.ids[c.Hash] = from
		in.nodes[from] = node
		return from, nil
	}
	in.ids[c.Hash] = id
	if in.im.Has(id) {
		node, _, err := in.b.snap.ReadNode(in.ctx, id)
		if err != nil {
			return snap.ID{}, err
		}
		in.nodes[id] = node
		in.trees[c.Hash] = hint{c.TreeHash, node.Tree}
		return id, nil
	}
	sc, err := object.GetCommit(in.b.git.Storer, plumbing.NewHash(trailer(c.Message, TrailerState)))
	if err != nil {
		return snap.ID{}, fmt.Errorf("state commit: %w", err)
	}
	_, body, ok := strings.Cut(sc.Message, "\n\n")
	if !ok {
		return snap.ID{}, fmt.Errorf("state commit %s: no checkpoint node in its message", sc.Hash)
	}
	raw := []byte(strings.TrimSuffix(body, "\n"))
	node, err := snap.DecodeNode(raw)
	if err != nil {
		return snap.ID{}, fmt.Errorf("state commit %s: %w", sc.Hash, err)
	}
	var hn hint // the first parent's files: what is unchanged is not read again
	if len(c.ParentHashes) > 0 {
		hn = in.trees[c.ParentHashes[0]]
	}
	tree, err := in.f.tree(c.TreeHash, "", hn)
	if err != nil {
		return snap.ID{}, err
	}
	if tree.id != node.Tree {
		return snap.ID{}, fmt.Errorf("%w: its files give tree %s, the checkpoint names %s", snap.ErrCorrupt, tree.id.Short(), node.Tree.Short())
	}
	state, err := in.f.docs(sc.TreeHash)
	if err != nil {
		return snap.ID{}, err
	}
	if state != node.State {
		return snap.ID{}, fmt.Errorf("%w: its state documents give tree %s, the checkpoint names %s", snap.ErrCorrupt, state.Short(), node.State.Short())
	}
	got, err := in.im.PutNode(raw)
	if err != nil {
		return snap.ID{}, err
	}
	if got != id {
		return snap.ID{}, fmt.Errorf("%w: the checkpoint rebuilt is %s, the commit says %s", snap.ErrCorrupt, got.Short(), id.Short())
	}
	in.nodes[id] = node
	in.trees[c.Hash] = hint{c.TreeHash, node.Tree}
	in.imported++
	return id, nil
}
