package gitbridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
)

// KindGitImport is the kind of a checkpoint recorded from a git commit.
const KindGitImport = "git-import"

// ImportResult says what ImportRev recorded.
type ImportResult struct {
	Rev        string                 `json:"rev"`
	Commit     string                 `json:"commit"`
	Checkpoint *snap.CheckpointResult `json:"checkpoint"`
	// Skipped: tree entries snap cannot hold (submodules, names snap
	// refuses), left out of the checkpoint.
	Skipped []snap.Skipped `json:"skipped"`
}

// ImportRev records a checkpoint of session whose files are the tree of
// git revision rev (a branch, tag, commit id, HEAD~2, ...): kind
// git-import, summary the commit's subject. The working tree is not
// touched; the session's state documents are carried from its head as a
// checkpoint carries them.
func (b *Bridge) ImportRev(ctx context.Context, rev, session string) (*ImportResult, error) {
	if strings.Contains(rev, ":") || strings.Contains(rev, "^{") && !strings.HasSuffix(rev, "^{commit}") {
		return nil, fmt.Errorf("%w: git revision %q: REV must name a commit (a branch, tag, commit id, HEAD~2...), not a tree or a path in one", snap.ErrUsage, rev)
	}
	h, err := b.git.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("%w: git revision %q: no such commit (%v)", snap.ErrUsage, rev, err)
	}
	c, err := object.GetCommit(b.git.Storer, *h)
	if err != nil {
		return nil, fmt.Errorf("%w: git revision %q does not name a commit (%v)", snap.ErrUsage, rev, err)
	}
	im, err := b.snap.NewImporter(ctx)
	if err != nil {
		return nil, err
	}
	defer im.Abort()
	res := &ImportResult{Rev: rev, Commit: c.Hash.String(), Skipped: []snap.Skipped{}}
	f := newFromGit(ctx, im, b.git.Storer)
	f.skip = func(p, why string) { res.Skipped = append(res.Skipped, snap.Skipped{Path: p, Reason: why}) }
	tree, err := f.tree(c.TreeHash, "", hint{})
	if err != nil {
		return nil, err
	}
	if _, err := im.Commit(ctx, nil); err != nil {
		return nil, err
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	res.Checkpoint, err = b.snap.Checkpoint(ctx, snap.CheckpointOptions{Session: session, Kind: KindGitImport, Tree: tree.id,
		Summary: fmt.Sprintf("%s (git %s)", subject, c.Hash.String()[:12])})
	return res, err
}
