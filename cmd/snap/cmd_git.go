package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/gitbridge"
)

// gitOptions are the options of the git bridge's commands.
type gitOptions struct {
	globalOptions
	Verb   string // export, import, push, pull
	All    bool
	Repo   string // --repo: the git repository ("" = the project's)
	Arg    string // import: REV; push, pull: REMOTE
	Commit bool
	// IncludeSecretFiles: export and push also secret-named files git does
	// not track (held back by default).
	IncludeSecretFiles bool
}

var gitRepoFlag = &cli.StringFlag{Name: "repo", Usage: "the git repository `PATH` (bare or not); default: the one holding the project"}

// includeSecretFilesFlag is export's and push's --include-secret-files.
var includeSecretFilesFlag = &cli.BoolFlag{Name: "include-secret-files", Usage: "also export files whose name marks them as secrets (.env*, *.pem, id_rsa*...) that git does not track (see 'snap help redact')"}

func gitFlags(all string) []cli.Flag {
	fs := []cli.Flag{gitRepoFlag}
	if all != "" {
		fs = append(fs, &cli.BoolFlag{Name: "all", Usage: all})
	}
	return withGlobals(fs...)
}

func gitAction(inv *invocation, verb string, args int, what string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > args || verb == "import" && c.NArg() != 1 {
			return usageErrorf("%s takes %s", verb, what)
		}
		o := gitOptions{globalOptions: globals(c), Verb: verb, All: c.Bool("all"), Repo: c.String("repo"), Arg: c.Args().First(),
			IncludeSecretFiles: c.Bool("include-secret-files")}
		if o.All && o.Session != "" {
			return usageErrorf("--all and --session: choose one")
		}
		return runGit(c.Context, o, inv.stdout)
	}
}

func gitCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "git",
		Usage: "the git bridge: checkpoints as git commits under refs/snap/",
		Description: `'snap git export' writes every checkpoint of a session as a git commit in the
project's git repository (or --repo PATH, which may be bare), under refs/snap/
only: refs/snap/sessions/<session> is the head, refs/snap/state/<session> its
state commit (one file per state document: conversation, context, tasks...),
refs/snap/abandoned/<session>/<id> keeps branches a rewind left, and
refs/snap/tasks/<session>/<task> is one branch per task. A commit's tree is
the checkpoint's files; its message is the summary with the trailers
Snap-Checkpoint, Snap-Session, Snap-Kind, Snap-Message-Id and Snap-State;
author and committer are git.author at the checkpoint's time, so the same
checkpoint gives the same commit on any machine. Exporting again writes only
what is new. HEAD, the index, the working tree, branches and tags are never
touched, and no git hook runs.

No secret found in a state document is exported: each is replaced by
[REDACTED:<kind>], and files whose name marks them as secrets (.env*, *.pem,
id_rsa*, credentials*.json...) that git does not track are held back unless
--include-secret-files is given ('snap help redact'; 'snap redact --check'
shows what). A commit so redacted is that of a checkpoint of its own: its
Snap-Checkpoint is the redacted checkpoint's id, its Snap-Redacted-From the
local one's. The store here keeps the exact bytes.

'snap git import REV' records a checkpoint whose files are git revision REV's
tree (kind git-import); the working tree is not touched.

Examples:
   snap git export
   snap git export --all --repo ../mirror.git
   snap git import HEAD
   git log --graph refs/snap/tasks/default/1`,
		Subcommands: []*cli.Command{
			{
				Name: "export", Usage: "write the session's checkpoints as git commits under refs/snap/",
				Description: `Exports the session (-s, default: the current one) or, with --all, every live
session, redacted (see 'snap help git'). --json answers {repo, sessions:
[{session, head, commit, exported, checkpoints, abandoned}], commits, objects,
refs_updated, secrets: [{kind, rule, fingerprint, masked, where}], held_back,
secret_files_included}; exported is the id the head's commit rebuilds to when
redaction changed it.`,
				Flags:  append(gitFlags("export every live session"), includeSecretFilesFlag),
				Action: gitAction(inv, "export", 0, "no arguments"),
			},
			{
				Name: "import", Usage: "record a checkpoint from a git commit's tree", ArgsUsage: "REV",
				Description: `Records a checkpoint of the session whose files are REV's tree (a branch, a
tag, a commit id, HEAD~2...), with kind git-import and the commit's subject as
its summary. Submodules and names snap cannot hold are left out and listed.
--json answers {rev, commit, checkpoint, skipped}.`,
				Flags:  gitFlags(""),
				Action: gitAction(inv, "import", 1, "REV"),
			},
		},
	}
}

func pushCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name: "push", Usage: "export sessions and push their refs/snap/ refs to a git remote", ArgsUsage: "[REMOTE]",
		Description: `Exports the session (-s, default: the current one; --all: every live session)
as 'snap git export' does, then pushes its refs/snap/ refs to REMOTE: a remote
of the project's git repository (default origin) or a URL (file, ssh, git,
http(s)). A session head moves forward only: when the remote's is not an
ancestor of ours the push is refused (exit 1, conflict). Pushing again sends
nothing. What is pushed is redacted: no secret of a state document, no
secret-named file git does not track unless --include-secret-files ('snap
help redact'). --json answers {remote, export, updated, up_to_date}.

Examples:
   snap push
   snap push origin --all
   snap push ../team.git -s agent-7`,
		Flags:  append(gitFlags("push every live session"), includeSecretFilesFlag),
		Action: gitAction(inv, "push", 1, "at most REMOTE"),
	}
}

func pullCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name: "pull", Usage: "fetch sessions from a git remote and import their checkpoints", ArgsUsage: "REMOTE",
		Description: `Fetches the session's refs (-s, default: the current one; --all: every session
the remote has) from REMOTE into refs/snap/remotes/ and imports every
checkpoint: the store then lists the same checkpoint ids as the one that
pushed them (a checkpoint pushed redacted has the id of its redaction, and
its placeholders), and 'snap rewind' restores the same files and conversation. A
session head that moved here since is not overwritten (exit 1, conflict):
pull into another store or rewind first. Pulling again imports nothing.
--json answers {remote, sessions: [{session, old, head, moved, added}],
imported}.

Examples:
   snap pull origin
   snap pull origin --all
   snap pull ../team.git -s agent-7`,
		Flags:  gitFlags("pull every session the remote has"),
		Action: gitAction(inv, "pull", 1, "REMOTE"),
	}
}

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
		for _, k := range sortedKeys(kinds) {
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

// short shortens a hex id for display.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// gitCommitFlag is --git-commit of 'task commit' and 'edit commit'.
var gitCommitFlag = &cli.BoolFlag{Name: "git-commit", Usage: "also commit the changed files on the current git branch (see 'snap help git'); default: git.commit-on"}

// gitCommitter makes the real commit of a task or edit commit: checked
// before snap records anything (a refusal changes nothing), made after.
type gitCommitter struct {
	b *gitbridge.Bridge
}

// gitCommitFlagOf is --git-commit as given: nil when absent (the setting
// decides), else its value (--git-commit=false turns the setting off for
// one call).
func gitCommitFlagOf(c *cli.Context) *bool {
	if !c.IsSet("git-commit") {
		return nil
	}
	v := c.Bool("git-commit")
	return &v
}

// wantGitCommit: the flag when given, else git.commit-on = on.
func wantGitCommit(repo *snap.Repo, flag *bool, on string) bool {
	if flag != nil {
		return *flag
	}
	v, _ := repo.ConfigGet("git.commit-on")
	return v == on
}

// newGitCommitter returns nil when no commit is wanted (wantGitCommit).
func newGitCommitter(ctx context.Context, repo *snap.Repo, flag *bool, on string, paths func(*gitbridge.Bridge) ([]string, error)) (*gitCommitter, error) {
	if !wantGitCommit(repo, flag, on) {
		return nil, nil
	}
	b, err := gitbridge.Open(repo, "")
	if err != nil {
		return nil, err
	}
	ps, err := paths(b)
	if err != nil {
		return nil, err
	}
	if err := b.CheckCommit(ctx, ps); err != nil {
		return nil, err
	}
	return &gitCommitter{b: b}, nil
}

// commit commits what changed from checkpoint from to checkpoint to.
func (g *gitCommitter) commit(ctx context.Context, from, to snap.ID, message string) (*gitbridge.CommitResult, error) {
	res, err := g.b.Commit(ctx, from, to, message)
	if err != nil {
		return res, fmt.Errorf("snap recorded checkpoint %s, but the git commit failed: %w", to.Short(), err)
	}
	return res, nil
}

func writeGitCommit(w io.Writer, c *gitbridge.CommitResult) {
	switch {
	case c == nil:
	case c.Commit == "":
		fmt.Fprintf(w, "no git commit: the files are as %s has them\n", c.Branch)
	default:
		fmt.Fprintf(w, "git commit %s on %s (%s)\n", short(c.Commit), c.Branch, plural(len(c.Paths), "file"))
	}
}
