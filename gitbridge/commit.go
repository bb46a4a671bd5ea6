package gitbridge

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/merge"
)

// CommitResult is the commit made on the user's branch.
type CommitResult struct {
	Commit string   `json:"commit"` // "" when nothing differed from HEAD (no commit made)
	Branch string   `json:"branch"`
	Paths  []string `json:"paths"` // the paths it changed
}

// userRepo is the state of the user's repository a commit starts from.
type userRepo struct {
	branch plumbing.ReferenceName
	head   *plumbing.Reference // nil on an unborn branch
	tree   *object.Tree        // HEAD's tree (nil: none)
	idx    *index.Index
}

// inProgress are the files git leaves while an operation is under way.
var inProgress = map[string]string{
	"MERGE_HEAD": "a merge", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert",
	"rebase-merge": "a rebase", "rebase-apply": "a rebase or am",
}

// check reads HEAD and the index and refuses what a commit on the user's
// branch must not happen in: a detached HEAD, a merge, rebase, cherry-pick
// or revert under way, and paths with staged changes (the index differs
// from HEAD there) or conflicts.
func (b *Bridge) check(paths []string) (*userRepo, error) {
	if b.bare() {
		return nil, fmt.Errorf("%w: %s is a bare repository: there is no branch to commit the task on", snap.ErrConflict, b.Dir)
	}
	for f, what := range inProgress {
		if _, err := os.Lstat(filepath.Join(b.Dir, f)); err == nil {
			return nil, fmt.Errorf("%w: %s is under way in %s: finish or abort it first (nothing was committed)", snap.ErrConflict, what, b.Dir)
		}
	}
	if !b.locked {
		if _, err := os.Lstat(filepath.Join(b.Dir, "index.lock")); err == nil {
			return nil, fmt.Errorf("%w: %s exists: another git process is running (or crashed: remove the file); nothing was committed",
				snap.ErrBusy, filepath.Join(b.Dir, "index.lock"))
		}
	}
	if flagged, err := indexFlags(filepath.Join(b.Dir, "index")); err != nil {
		return nil, fmt.Errorf("%w: reading the git index: %v", snap.ErrConflict, err)
	} else if len(flagged) > 0 {
		return nil, fmt.Errorf("%w: the git index marks %s assume-unchanged or skip-worktree, which snap's index writer would not keep: commit with git, or clear the marks (nothing was committed)",
			snap.ErrConflict, strings.Join(flagged, ", "))
	}
	head, err := b.git.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, fmt.Errorf("git HEAD: %w", err)
	}
	if head.Type() != plumbing.SymbolicReference {
		return nil, fmt.Errorf("%w: HEAD is detached (at %s): check out a branch for the commit (nothing was committed)", snap.ErrConflict, head.Hash().String()[:12])
	}
	u := &userRepo{branch: head.Target()}
	if u.head, err = b.git.Storer.Reference(u.branch); errors.Is(err, plumbing.ErrReferenceNotFound) {
		u.head = nil
	} else if err != nil {
		return nil, err
	} else {
		c, err := object.GetCommit(b.git.Storer, u.head.Hash())
		if err != nil {
			return nil, err
		}
		if u.tree, err = c.Tree(); err != nil {
			return nil, err
		}
	}
	if u.idx, err = b.git.Storer.Index(); err != nil {
		if splitIndex(b.Dir) {
			return nil, fmt.Errorf("%w: the git index is split (core.splitIndex), which snap's index writer cannot update: "+
				"commit with git, or unsplit it ('git config core.splitIndex false; git update-index --no-split-index'); nothing was committed",
				snap.ErrConflict)
		}
		return nil, fmt.Errorf("%w: reading the git index: %v (nothing was committed)", snap.ErrConflict, err)
	}
	var staged []string
	for _, p := range slices.Compact(slices.Sorted(slices.Values(paths))) {
		for d := path.Dir(p); d != "." && d != "/" && u.tree != nil; d = path.Dir(d) {
			if e, err := u.tree.FindEntry(d); err == nil && e.Mode == filemode.Submodule {
				return nil, fmt.Errorf("%w: %s is inside the submodule %s: commit it in the submodule's own repository (nothing was committed)", snap.ErrConflict, p, d)
			}
		}
		var inHead *object.TreeEntry
		if u.tree != nil {
			if e, err := u.tree.FindEntry(p); err == nil && e.Mode == filemode.Dir {
				// A directory in HEAD (the task made it a file, a link
				// or an empty directory): staged when the index differs
				// from HEAD beneath it (M17).
				if stagedUnder(u, p) {
					staged = append(staged, p)
				}
				continue
			} else if err == nil {
				inHead = e
			}
		}
		var inIndex *index.Entry
		for _, e := range u.idx.Entries {
			if e.Name == p {
				if e.Stage != 0 { // (go-git names stage 1 "Merged"; in git, 0 is merged)
					return nil, fmt.Errorf("%w: %s has a merge conflict in the index (nothing was committed)", snap.ErrConflict, p)
				}
				inIndex = e
			}
		}
		switch {
		case inHead == nil && inIndex == nil:
		case inHead != nil && inIndex != nil && inHead.Hash == inIndex.Hash && inHead.Mode == inIndex.Mode && !inIndex.IntentToAdd:
		default:
			staged = append(staged, p)
		}
	}
	if len(staged) > 0 {
		return nil, fmt.Errorf("%w: you have staged changes to %s: commit or unstage them first ('git restore --staged'); nothing was committed",
			snap.ErrConflict, strings.Join(staged, ", "))
	}
	return u, nil
}

// stagedUnder reports whether the index differs from HEAD's tree beneath
// directory p: an entry added, removed or changed there, or a conflict.
func stagedUnder(u *userRepo, p string) bool {
	head := map[string]*object.File{}
	if t, err := u.tree.Tree(p); err == nil {
		t.Files().ForEach(func(f *object.File) error {
			head[p+"/"+f.Name] = f
			return nil
		})
	}
	seen := 0
	for _, e := range u.idx.Entries {
		if !strings.HasPrefix(e.Name, p+"/") {
			continue
		}
		f, ok := head[e.Name]
		if !ok || e.Stage != 0 || e.IntentToAdd || f.Hash != e.Hash || f.Mode != e.Mode {
			return true
		}
		seen++
	}
	return seen != len(head)
}

func (b *Bridge) bare() bool {
	_, err := b.git.Worktree()
	return err != nil
}

// CheckCommit reports whether a commit of paths could be made on the
// user's branch now (see Commit), changing nothing.
func (b *Bridge) CheckCommit(ctx context.Context, paths []string) error {
	if err := b.worktreePrefix(); err != nil {
		return err
	}
	gitPaths := make([]string, len(paths))
	for i, p := range paths {
		gitPaths[i] = path.Join(b.prefix, p)
	}
	_, err := b.check(gitPaths)
	return err
}

// worktreePrefix finds the git work tree's root (b.root) and where the
// snap project lies in it (b.prefix, "" at its root); a project outside the
// work tree is refused.
func (b *Bridge) worktreePrefix() error {
	wt, err := b.git.Worktree()
	if err != nil {
		return fmt.Errorf("%w: %s is a bare repository: there is no branch to commit the task on", snap.ErrConflict, b.Dir)
	}
	b.root = wt.Filesystem.Root()
	root, _ := filepath.EvalSymlinks(b.root)
	proj, _ := filepath.EvalSymlinks(b.snap.Root)
	rel, err := filepath.Rel(root, proj)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return fmt.Errorf("%w: the project %s is not inside the git work tree %s", snap.ErrUsage, b.snap.Root, b.root)
	}
	b.prefix = filepath.ToSlash(rel)
	if b.prefix == "." {
		b.prefix = ""
	}
	return nil
}

// ChangedPaths lists the paths whose files differ between checkpoints
// from and to (to nil: the working tree, as the session's next checkpoint
// records it): snap.Repo.ChangedPaths.
func (b *Bridge) ChangedPaths(ctx context.Context, from snap.ID, to *snap.ID) ([]string, error) {
	return b.snap.ChangedPaths(ctx, from, to)
}

// Commit makes a commit on the user's current branch holding exactly the
// files that changed from checkpoint from to checkpoint to (as they are
// in to), on top of HEAD, with message and a Snap-Checkpoint trailer
// naming to; a file or link that replaced a directory HEAD tracks drops
// every file HEAD has beneath it, as git must. The branch moves by
// compare-and-swap. The index entries of those paths are set to the
// committed content (so git status shows them clean); every other entry
// stays as it was. The index is rewritten under
// git's own lock (index.lock) by go-git, which keeps every entry and drops
// git's optional caches (cache-tree, untracked cache), which git rebuilds.
// Nothing is committed when check refuses. No git hook runs: the commit
// records what the agent's task did, which snap already checkpointed, and
// a hook that rewrote or refused it would split the two records.
func (b *Bridge) Commit(ctx context.Context, from, to snap.ID, message string) (*CommitResult, error) {
	paths, err := b.ChangedPaths(ctx, from, &to)
	if err != nil {
		return nil, err
	}
	if err := b.worktreePrefix(); err != nil {
		return nil, err
	}
	// Under git's index lock from the checks to the new index: no git
	// command changes the index or stages anything meanwhile.
	unlock, err := b.lockIndex()
	if err != nil {
		return nil, err
	}
	b.locked = true
	defer func() { unlock(); b.locked = false }()
	gitPaths := make([]string, len(paths))
	for i, p := range paths {
		gitPaths[i] = path.Join(b.prefix, p)
	}
	u, err := b.check(gitPaths)
	if err != nil {
		return nil, err
	}
	node, _, err := b.snap.ReadNode(ctx, to)
	if err != nil {
		return nil, err
	}
	fromNode, _, err := b.snap.ReadNode(ctx, from)
	if err != nil {
		return nil, err
	}
	res := &CommitResult{Branch: u.branch.Short(), Paths: []string{}}
	g := newToGit(ctx, b.snap, b.git.Storer, nil)
	// What each path becomes (by its path in the git repository, which
	// may hold the project in a subdirectory): an entry, or nil (deleted).
	changes := map[string]*object.TreeEntry{}
	asEnded := map[string]string{} // git path → project path, committed as the task's end holds it
	for _, sp := range paths {
		p := path.Join(b.prefix, sp)
		e, ok, err := b.entryAt(ctx, node.Tree, sp)
		if err != nil {
			return nil, err
		}
		if (!ok || e.Mode == snap.ModeDir) && u.tree != nil {
			// No file or link now: a directory (git has none of its
			// own), or nothing snap records (an empty directory gone,
			// or one it ignores now). A file or link git tracks at p
			// goes; a directory git tracks at p stays, its files are
			// paths of their own, and those snap does not record are
			// not the commit's to delete (M17, M21).
			if he, err := u.tree.FindEntry(p); err == nil && he.Mode == filemode.Dir {
				continue
			}
		}
		if !ok || e.Mode == snap.ModeDir {
			// Absent from the checkpoint but still on disk: snap's rules
			// left it out (ignored now, unreadable), the task did not
			// delete it; git keeps tracking it.
			if fi, err := os.Lstat(filepath.Join(b.root, filepath.FromSlash(p))); err == nil && !fi.IsDir() {
				continue
			}
			changes[p] = nil
			continue
		}
		h, err := g.blob(e.ID, e.Size, plumbing.ZeroHash)
		if err != nil {
			return nil, err
		}
		// Only the task's change goes on the branch (N3): where HEAD
		// differs from what the task began with (your uncommitted edits),
		// the change from its begin to its end is applied to HEAD's
		// content, and your edits stay in the working tree, uncommitted.
		end := h
		if h, err = b.ownChange(ctx, g, u, fromNode.Tree, sp, p, e, h); err != nil {
			return nil, err
		}
		if h == end {
			asEnded[p] = sp
		}
		mode := map[snap.Mode]filemode.FileMode{snap.ModeFile: filemode.Regular, snap.ModeExec: filemode.Executable, snap.ModeSymlink: filemode.Symlink}[e.Mode]
		changes[p] = &object.TreeEntry{Name: p, Mode: mode, Hash: h}
	}
	// A file or link where HEAD has a directory: HEAD's files beneath it
	// go too, those snap did not record (ignored, say) as well, since git
	// keeps nothing beneath a file; the index holds only HEAD's entries
	// there (check), and they go with them (M19).
	if u.tree != nil {
		for _, p := range sortedKeys(changes) {
			if changes[p] == nil {
				continue
			}
			if he, err := u.tree.FindEntry(p); err != nil || he.Mode != filemode.Dir {
				continue
			}
			t, err := u.tree.Tree(p)
			if err != nil {
				return nil, err
			}
			if err := t.Files().ForEach(func(f *object.File) error {
				changes[p+"/"+f.Name] = nil
				return nil
			}); err != nil {
				return nil, err
			}
		}
	}
	// Paths already as HEAD has them (changed by the user's own commits
	// meanwhile) are not the task's to commit.
	for _, p := range sortedKeys(changes) {
		var inHead *object.TreeEntry
		if u.tree != nil {
			inHead, _ = u.tree.FindEntry(p)
		}
		if c := changes[p]; c == nil && inHead == nil || c != nil && inHead != nil && c.Hash == inHead.Hash && c.Mode == inHead.Mode {
			delete(changes, p)
			continue
		}
		res.Paths = append(res.Paths, p)
	}
	if len(changes) == 0 {
		return res, nil // nothing differs from HEAD: no commit
	}
	var base plumbing.Hash
	var parents []plumbing.Hash
	if u.head != nil {
		base, parents = u.tree.Hash, []plumbing.Hash{u.head.Hash()}
	}
	tree, err := b.editTree(base, changes)
	if err != nil {
		return nil, err
	}
	// The commit is on the user's branch: theirs to sign (N3), the
	// session and checkpoint in trailers.
	sig := b.userSignature(node.When())
	msg := strings.TrimRight(message, "\n") + "\n\n" + TrailerCheckpoint + ": " + to.String() + "\n" +
		TrailerSession + ": " + node.Session + "\n"
	if a, err := b.attribution(ctx, node, from, to, paths); err != nil {
		return nil, err
	} else if a != "" {
		msg += TrailerAttributed + ": " + a + "\n"
	}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents, Message: msg}
	obj := b.git.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, err
	}
	ch, err := b.git.Storer.SetEncodedObject(obj)
	if err != nil {
		return nil, err
	}
	if err := b.git.Storer.CheckAndSetReference(plumbing.NewHashReference(u.branch, ch), u.head); err != nil {
		return nil, fmt.Errorf("%w: branch %s moved while committing: %v (nothing was committed)", snap.ErrConflict, res.Branch, err)
	}
	res.Commit = ch.String()
	if err := b.writeIndex(u.idx, changes); err != nil {
		return res, fmt.Errorf("committed %s on %s, but updating the git index failed: %w ('git reset -q -- %s' refreshes it)", ch.String()[:12], res.Branch, err, strings.Join(paths, " "))
	}
	// Who wrote the task's lines, as git-ai reads it (refs/notes/ai).
	for p := range asEnded {
		if changes[p] == nil {
			delete(asEnded, p)
		}
	}
	note, err := b.blameAuthorship(ctx, node.Session, to, fromNode.When(), asEnded, sig.Name+" <"+sig.Email+">").log(ch)
	if err == nil && note != "" {
		err = b.addNotes(map[plumbing.Hash]string{ch: note}, sig, "Notes added by 'snap task commit --git-commit'\n")
	}
	if err != nil {
		return res, fmt.Errorf("committed %s on %s, but its git-ai note (%s) could not be written: %w", ch.String()[:12], res.Branch, NotesRef, err)
	}
	return res, nil
}

// ownChange is the content path p (sp in the project) is committed with,
// given the task's end e (git blob h): h itself when HEAD holds what the
// task began with (or no file, or the task's begin had none); else the
// change from the begin to e applied to HEAD's content by lines. A change
// that cannot be applied so (overlapping lines, not text) refuses the
// commit, naming the path.
func (b *Bridge) ownChange(ctx context.Context, g *toGit, u *userRepo, fromTree snap.ID, sp, p string, e snap.TreeEntry, h plumbing.Hash) (plumbing.Hash, error) {
	if u.tree == nil || e.Mode == snap.ModeSymlink {
		return h, nil
	}
	he, err := u.tree.FindEntry(p)
	if err != nil || he.Mode != filemode.Regular && he.Mode != filemode.Executable {
		return h, nil
	}
	fe, ok, err := b.entryAt(ctx, fromTree, sp)
	if err != nil || !ok || fe.Mode != snap.ModeFile && fe.Mode != snap.ModeExec {
		return h, err
	}
	fh, err := g.blob(fe.ID, fe.Size, plumbing.ZeroHash)
	if err != nil || fh == he.Hash || h == he.Hash {
		return h, err
	}
	read := func(id plumbing.Hash) ([]byte, error) {
		blob, err := b.git.BlobObject(id)
		if err != nil {
			return nil, err
		}
		rd, err := blob.Reader()
		if err != nil {
			return nil, err
		}
		defer rd.Close()
		return io.ReadAll(rd)
	}
	head, err1 := read(he.Hash)
	begin, err2 := read(fh)
	end, err3 := read(h)
	if err := errors.Join(err1, err2, err3); err != nil {
		return h, err
	}
	refuse := func(why string) error {
		return fmt.Errorf("%w: %s: %s; commit or stash your own changes to it first, or commit with git (nothing was committed)",
			snap.ErrConflict, p, why)
	}
	if !merge.IsText(head) || !merge.IsText(begin) || !merge.IsText(end) {
		return h, refuse("it holds uncommitted changes from before the task, and it is not text that the task's change could be applied to alone")
	}
	merged, hunks := merge.Lines(head, begin, end)
	if len(hunks) > 0 {
		return h, refuse(fmt.Sprintf("the task's change overlaps uncommitted changes made before it (at line %d)", hunks[0].Line))
	}
	return g.putStream(int64(len(merged)), plumbing.ZeroHash, func(w io.Writer) error {
		_, err := w.Write(merged)
		return err
	})
}

// attribution counts the lines the checkpoints from just after from up to
// to first recorded in paths, by actor: "agent 42, user 3" ("" when none).
func (b *Bridge) attribution(ctx context.Context, node *snap.Node, from, to snap.ID, paths []string) (string, error) {
	cs, err := b.snap.Contributions(ctx, snap.ContributionOptions{Session: node.Session, Since: from.String()})
	if err != nil {
		return "", err
	}
	in := map[string]bool{}
	for _, p := range paths {
		in[p] = true
	}
	counts := map[string]int{}
	for _, c := range cs {
		if c.Time.After(node.When()) {
			break
		}
		for _, f := range c.Files {
			if in[f.Path] {
				counts[c.Actor] += f.Lines
			}
		}
		if c.Checkpoint == to {
			break
		}
	}
	var parts []string
	for _, a := range []string{snap.ActorAgent, snap.ActorUser, snap.ActorUnknown, "import"} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, counts[a]))
		}
	}
	return strings.Join(parts, ", "), nil
}

// userSignature is the identity of a commit on the user's own branch: the
// repository's user.name and user.email (its config, then the global and
// system ones), else snap's git.author.
func (b *Bridge) userSignature(t time.Time) object.Signature {
	sig := b.signature(t)
	if cfg, err := b.git.ConfigScoped(config.SystemScope); err == nil && cfg.User.Name != "" && cfg.User.Email != "" {
		sig.Name, sig.Email = cfg.User.Name, cfg.User.Email
	}
	return sig
}

// entryAt finds path p in snap tree root.
func (b *Bridge) entryAt(ctx context.Context, root snap.ID, p string) (snap.TreeEntry, bool, error) {
	id := root
	parts := strings.Split(p, "/")
	for i, name := range parts {
		entries, err := b.snap.ReadTree(ctx, id)
		if err != nil {
			return snap.TreeEntry{}, false, err
		}
		k := sort.Search(len(entries), func(j int) bool { return entries[j].Name >= name })
		if k == len(entries) || entries[k].Name != name {
			return snap.TreeEntry{}, false, nil
		}
		if i == len(parts)-1 {
			return entries[k], true, nil
		}
		if entries[k].Mode != snap.ModeDir {
			return snap.TreeEntry{}, false, nil
		}
		id = entries[k].ID
	}
	return snap.TreeEntry{}, false, nil
}

// editTree writes the tree base with changes applied (path → entry; nil
// deletes), dropping directories left empty, and returns it.
func (b *Bridge) editTree(base plumbing.Hash, changes map[string]*object.TreeEntry) (plumbing.Hash, error) {
	t := &object.Tree{}
	if !base.IsZero() {
		bt, err := object.GetTree(b.git.Storer, base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, bt.Entries...)
	}
	here := map[string]*object.TreeEntry{}
	sub := map[string]map[string]*object.TreeEntry{}
	for p, e := range changes {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if sub[dir] == nil {
				sub[dir] = map[string]*object.TreeEntry{}
			}
			sub[dir][rest] = e
		} else {
			here[p] = e
		}
	}
	var out []object.TreeEntry
	done := map[string]bool{}
	for name, c := range here {
		if _, dir := sub[name]; dir && c == nil {
			delete(here, name) // a file that became a directory: the directory's changes say it all
		}
	}
	for _, e := range t.Entries {
		if c, ok := here[e.Name]; ok {
			if e.Mode == filemode.Submodule {
				return plumbing.ZeroHash, fmt.Errorf("%w: %s is a submodule: snap does not replace it (nothing was committed)", snap.ErrConflict, e.Name)
			}
			done[e.Name] = true
			if c != nil {
				out = append(out, object.TreeEntry{Name: e.Name, Mode: c.Mode, Hash: c.Hash})
			}
			continue
		}
		if s, ok := sub[e.Name]; ok {
			if e.Mode == filemode.Submodule {
				return plumbing.ZeroHash, fmt.Errorf("%w: %s is a submodule: commit its files in the submodule's own repository (nothing was committed)", snap.ErrConflict, e.Name)
			}
			done[e.Name] = true
			var baseSub plumbing.Hash // a file there becomes the directory
			if e.Mode == filemode.Dir {
				baseSub = e.Hash
			}
			h, err := b.editTree(baseSub, s)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if h != emptyTree {
				out = append(out, object.TreeEntry{Name: e.Name, Mode: filemode.Dir, Hash: h})
			}
			continue
		}
		out = append(out, e)
	}
	for name, c := range here {
		if !done[name] && c != nil {
			out = append(out, object.TreeEntry{Name: name, Mode: c.Mode, Hash: c.Hash})
		}
	}
	for name, s := range sub {
		if done[name] {
			continue
		}
		h, err := b.editTree(plumbing.ZeroHash, s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h != emptyTree {
			out = append(out, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	sort.Sort(object.TreeEntrySorter(out))
	nt := &object.Tree{Entries: out}
	obj := b.git.Storer.NewEncodedObject()
	if err := nt.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if len(out) == 0 {
		return emptyTree, nil
	}
	return b.git.Storer.SetEncodedObject(obj)
}

// emptyTree is git's id of the tree with no entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// lockIndex takes git's index lock (index.lock, created exclusively, as
// git does); git commands refuse to touch the index while it exists.
func (b *Bridge) lockIndex() (func(), error) {
	lock := filepath.Join(b.Dir, "index.lock")
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %s exists: another git process is running (or crashed: remove the file); nothing was committed", snap.ErrBusy, lock)
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return func() { os.Remove(lock) }, nil
}

// writeIndex sets the entries of the changed paths in idx to the committed
// content (stat data from the working file when it holds that content, so
// git status need not re-hash it) and writes idx through index.lock,
// which lockIndex holds.
func (b *Bridge) writeIndex(idx *index.Index, changes map[string]*object.TreeEntry) error {
	root := b.root
	var kept []*index.Entry
	for _, e := range idx.Entries {
		if _, changed := changes[e.Name]; !changed {
			kept = append(kept, e)
		}
	}
	for p, c := range changes {
		if c == nil {
			continue
		}
		e := &index.Entry{Name: p, Hash: c.Hash, Mode: c.Mode}
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && b.holds(filepath.Join(root, p), fi, c) {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				e.CreatedAt = timeOf(st.Ctim)
				e.ModifiedAt = timeOf(st.Mtim)
				e.Dev, e.Inode, e.UID, e.GID = uint32(st.Dev), uint32(st.Ino), st.Uid, st.Gid
				e.Size = uint32(fi.Size())
			}
		}
		kept = append(kept, e)
	}
	sort.Slice(kept, func(i, j int) bool {
		if kept[i].Name != kept[j].Name {
			return kept[i].Name < kept[j].Name
		}
		return kept[i].Stage < kept[j].Stage
	})
	idx.Entries = kept
	idx.Cache = nil // the cache-tree is stale for the changed paths; git rebuilds it
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return err
	}
	lock := filepath.Join(b.Dir, "index.lock")
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(lock, filepath.Join(b.Dir, "index"))
}

// holds reports whether the working file at p is entry c's content.
func (b *Bridge) holds(p string, fi os.FileInfo, c *object.TreeEntry) bool {
	var data []byte
	var err error
	if fi.Mode()&os.ModeSymlink != 0 {
		var target string
		target, err = os.Readlink(p)
		data = []byte(target)
	} else if fi.Mode().IsRegular() {
		data, err = os.ReadFile(p)
	} else {
		return false
	}
	return err == nil && plumbing.ComputeHash(plumbing.BlobObject, data) == c.Hash
}

func timeOf(ts syscall.Timespec) time.Time { return time.Unix(ts.Sec, ts.Nsec) }

// splitIndex reports whether the git repository at gitDir keeps a split
// index (core.splitIndex: a sharedindex.<id> file beside the index), which
// go-git can neither read nor write.
func splitIndex(gitDir string) bool {
	m, _ := filepath.Glob(filepath.Join(gitDir, "sharedindex.*"))
	return len(m) > 0
}

// indexFlags lists the entries of the git index at p marked assume-unchanged
// or skip-worktree, which go-git's index encoder drops (none when the file
// is absent). Versions 2 and 3 are read; version 4 entries are not parsed
// and none is reported.
func indexFlags(p string) ([]string, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("not a git index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, nil
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	var out []string
	off := 12
	for i := 0; i < n; i++ {
		if off+62 > len(data) {
			return nil, fmt.Errorf("truncated git index")
		}
		flags := binary.BigEndian.Uint16(data[off+60 : off+62])
		start := off + 62
		var ext uint16
		if flags&0x4000 != 0 {
			if start+2 > len(data) {
				return nil, fmt.Errorf("truncated git index")
			}
			ext = binary.BigEndian.Uint16(data[start : start+2])
			start += 2
		}
		end := bytes.IndexByte(data[start:], 0)
		if end < 0 {
			return nil, fmt.Errorf("truncated git index")
		}
		name := string(data[start : start+end])
		if flags&0x8000 != 0 || ext&0x4000 != 0 {
			out = append(out, name)
		}
		entryLen := start + end - off
		off += (entryLen + 8) &^ 7 // NUL-padded to a multiple of 8
	}
	return out, nil
}
