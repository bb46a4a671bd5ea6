package gitbridge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/snapcore-dev/snap"
)

// Bridge is a snap project and the git repository its checkpoints are
// written to.
type Bridge struct {
	snap *snap.Repo
	git  *git.Repository
	// Dir is the git directory (or the bare repository).
	Dir                     string
	authorName, authorEmail string
	// For a commit on the user's branch: the work tree's root, the
	// project's place in it, and whether Commit holds index.lock.
	root, prefix string
	locked       bool
}

// Open returns the bridge between r and the git repository at path: the
// repository holding the project when path is "" (found from the project
// root upwards), else the repository (bare or not) at path.
func Open(r *snap.Repo, path string) (*Bridge, error) {
	dir := path
	if dir == "" {
		dir = r.Root
	}
	g, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: path == "", EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if path == "" {
			return nil, fmt.Errorf("%w holds %s: run 'git init' there, or name one with --repo", ErrNoGitRepo, r.Root)
		}
		return nil, fmt.Errorf("%w at %s", ErrNoGitRepo, path)
	}
	if err != nil {
		return nil, fmt.Errorf("git repository %s: go-git cannot open it (%v): the git bridge does not support this repository's layout (for example sparse checkout's extensions.worktreeConfig)", dir, err)
	}
	b := &Bridge{snap: r, git: g}
	if b.Dir, err = gitDir(g, dir); err != nil {
		return nil, err
	}
	author, err := r.ConfigGet("git.author")
	if err != nil {
		return nil, err
	}
	if author == "" {
		author = snap.DefaultGitAuthor
	}
	if b.authorName, b.authorEmail, err = snap.ParseAuthor(author); err != nil {
		return nil, err
	}
	return b, nil
}

// gitDir returns the repository's git directory: for a linked worktree or
// a submodule (a .git file saying "gitdir: DIR"), that DIR, which holds
// its index and HEAD.
func gitDir(g *git.Repository, dir string) (string, error) {
	wt, err := g.Worktree()
	if err != nil {
		return filepath.Abs(dir)
	}
	dotgit := filepath.Join(wt.Filesystem.Root(), ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || fi.IsDir() {
		return dotgit, nil
	}
	data, err := os.ReadFile(dotgit)
	if err != nil {
		return "", err
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", dotgit)
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(wt.Filesystem.Root(), target)
	}
	return filepath.Clean(target), nil
}

// Head is the commit HEAD names ("" on an unborn branch).
func (b *Bridge) Head() (string, error) {
	ref, err := b.git.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ref.Hash().String(), nil
}
