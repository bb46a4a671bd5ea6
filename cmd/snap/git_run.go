//go:build !snapcore

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
)

// The git bridge's part of the CLI: what needs go-git. A snap built with
// the tag snapcore does not link it and runs snap-full instead (core.go).

// runGit is 'snap git export|import', 'snap push' and 'snap pull'.
func runGit(ctx context.Context, o gitOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	b, err := gitbridge.Open(repo, o.Repo)
	if err != nil {
		return err
	}
	var sessions []string
	if !o.All {
		sessions = []string{o.session()}
	}
	switch o.Verb {
	case "export":
		res, err := b.Export(ctx, gitbridge.ExportOptions{Sessions: sessions, All: o.All, IncludeSecretFiles: o.IncludeSecretFiles})
		if err != nil {
			return err
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			for _, s := range res.Sessions {
				fmt.Fprintf(w, "%s: %d checkpoints, head %s = commit %s", s.Session, s.Checkpoints, short(s.Head), short(s.Commit))
				if s.Exported != "" {
					fmt.Fprintf(w, " (exported redacted as %s)", short(s.Exported))
				}
				fmt.Fprintln(w)
			}
			writeRedactions(w, res)
			_, err := fmt.Fprintf(w, "wrote %d commits (%d objects) to %s; %d refs updated\n", res.Commits, res.Objects, res.Repo, len(res.RefsUpdated))
			return err
		})
	case "import":
		res, err := b.ImportRev(ctx, o.Arg, o.session())
		if err != nil {
			return err
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			for _, s := range res.Skipped {
				fmt.Fprintf(w, "skipped %s: %s\n", s.Path, s.Reason)
			}
			if res.Checkpoint.Unchanged {
				_, err := fmt.Fprintf(w, "nothing recorded: the session head %s already has the files of git %s (%s)\n", res.Checkpoint.ID.Short(), short(res.Commit), res.Rev)
				return err
			}
			_, err := fmt.Fprintf(w, "recorded %s from git %s (%s)\n", res.Checkpoint.ID.Short(), short(res.Commit), res.Rev)
			return err
		})
	case "push":
		res, err := b.Push(ctx, gitbridge.RemoteOptions{Remote: o.Arg, Sessions: sessions, All: o.All, IncludeSecretFiles: o.IncludeSecretFiles})
		if err != nil {
			return err
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			writeRedactions(w, res.Export)
			if res.UpToDate {
				_, err := fmt.Fprintf(w, "%s is up to date\n", res.Remote)
				return err
			}
			_, err := fmt.Fprintf(w, "pushed %d refs to %s\n", len(res.Updated), res.Remote)
			return err
		})
	default: // pull
		res, err := b.Pull(ctx, gitbridge.RemoteOptions{Remote: o.Arg, Sessions: sessions, All: o.All})
		if err != nil {
			return err
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			for _, s := range res.Sessions {
				state := "up to date"
				if s.Moved {
					state = "head now " + s.Head.Short()
				}
				fmt.Fprintf(w, "%s: %d new checkpoints, %s\n", s.Session, s.Added, state)
			}
			for _, sk := range res.Skipped {
				fmt.Fprintf(w, "skipped %s\n", sk)
			}
			_, err := fmt.Fprintf(w, "imported %d checkpoints from %s\n", res.Imported, res.Remote)
			return err
		})
	}
}

// writeRedactions says what an export kept from leaving the machine.
func writeRedactions(w io.Writer, res *gitbridge.ExportResult) {
	if n := len(res.Secrets); n > 0 {
		kinds := map[string]int{}
		for _, s := range res.Secrets {
			kinds[s.Kind]++
		}
		var list []string
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			list = append(list, fmt.Sprintf("%d %s", kinds[k], k))
		}
		fmt.Fprintf(w, "redacted %s (%s); 'snap redact --check' shows where\n", plural(n, "secret"), strings.Join(list, ", "))
	}
	if n := res.SessionsHeldBack; n > 0 {
		fmt.Fprintf(w, "held back %s whose name holds what looks like a secret (the name would be a ref's on the remote)\n", plural(n, "session"))
	}
	if n := len(res.HeldBack); n > 0 {
		fmt.Fprintf(w, "held back %s git does not track: %s (--include-secret-files exports them)\n", plural(n, "secret file"), strings.Join(res.HeldBack, ", "))
	}
	if n := len(res.SecretFilesIncluded); n > 0 {
		fmt.Fprintf(w, "included %s on request: %s\n", plural(n, "secret file"), strings.Join(res.SecretFilesIncluded, ", "))
	}
}

// gitCommitter makes the real commit of a task or edit commit: checked
// before snap records anything (a refusal changes nothing), made after.
type gitCommitter struct {
	b *gitbridge.Bridge
}

// gitCommitResult is the git commit a task or edit commit made.
type gitCommitResult = gitbridge.CommitResult

// openGitCommitter opens the project's git repository and checks that a
// commit of paths can be made.
func openGitCommitter(ctx context.Context, repo *snap.Repo, paths func() ([]string, error)) (*gitCommitter, error) {
	b, err := gitbridge.Open(repo, "")
	if err != nil {
		return nil, err
	}
	ps, err := paths()
	if err != nil {
		return nil, err
	}
	if err := b.CheckCommit(ctx, ps); err != nil {
		return nil, err
	}
	return &gitCommitter{b: b}, nil
}

// commit commits what changed from checkpoint from to checkpoint to.
func (g *gitCommitter) commit(ctx context.Context, from, to snap.ID, message string) (*gitCommitResult, error) {
	res, err := g.b.Commit(ctx, from, to, message)
	if err != nil {
		return res, fmt.Errorf("snap recorded checkpoint %s, but the git commit failed: %w", to.Short(), err)
	}
	return res, nil
}

func writeGitCommit(w io.Writer, c *gitCommitResult) {
	switch {
	case c == nil:
	case c.Commit == "":
		fmt.Fprintf(w, "no git commit: the files are as %s has them\n", c.Branch)
	default:
		fmt.Fprintf(w, "git commit %s on %s (%s)\n", short(c.Commit), c.Branch, plural(len(c.Paths), "file"))
	}
}

// completeBuild: this is the complete build (handshake).
const completeBuild = true

// The complete build clears the mark a core build set (execMark), so
// that nothing it runs inherits it.
func init() { os.Unsetenv(execMark) }

// handOff: the complete build runs everything itself (core.go).
func handOff(context.Context, []string) error { return nil }

// isNoGitRepo reports an error of the git bridge's: no git repository.
func isNoGitRepo(err error) bool { return errors.Is(err, gitbridge.ErrNoGitRepo) }

// short shortens a hex id for display.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
