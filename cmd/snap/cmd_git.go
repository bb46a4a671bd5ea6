package main

import (
	"context"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
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

// gitCommitFlag is --git-commit of 'task commit' and 'edit commit'.
var gitCommitFlag = &cli.BoolFlag{Name: "git-commit", Usage: "also commit the changed files on the current git branch (see 'snap help git'); default: git.commit-on"}

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

// newGitCommitter returns nil when no commit is wanted (wantGitCommit);
// paths lists the files the commit will change, for the checks made
// before snap records anything.
func newGitCommitter(ctx context.Context, repo *snap.Repo, flag *bool, on string, paths func() ([]string, error)) (*gitCommitter, error) {
	if !wantGitCommit(repo, flag, on) {
		return nil, nil
	}
	return openGitCommitter(ctx, repo, paths)
}
