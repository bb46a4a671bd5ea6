package gitbridge

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/go-git/go-git/v5"

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
		return nil, fmt.Errorf("git repository %s: %w", dir, err)
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

// gitDir returns the repository's git directory.
func gitDir(g *git.Repository, dir string) (string, error) {
	if wt, err := g.Worktree(); err == nil {
		return filepath.Join(wt.Filesystem.Root(), ".git"), nil
	}
	return filepath.Abs(dir)
}
