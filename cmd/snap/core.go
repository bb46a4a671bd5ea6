//go:build snapcore

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

// The core build (the tag snapcore: make build's bin/snap) links the
// engine, the command-line interface and the agents' hooks: what every
// hook event and most commands run, starting in about two thirds of the
// time of the complete build (bench/README.md, W10). The MCP server (snap mcp),
// the web app (snap ui) and the git bridge (snap git, push, pull, redact
// --check, trace export, a --git-commit) link the MCP SDK, net/http and
// go-git, whose package initialisation alone costs a hook more than its
// event; for those the core build runs snap-full, the complete build
// installed beside it, in its own place (execve: the same arguments,
// environment and standard streams, the same exit code), before doing
// anything else. This is how git runs its transports (git-remote-https).

// fullName is the complete build's file name, beside the core build;
// $SNAP_FULL, when set, is its path instead (a package that installs it
// elsewhere, as git's helpers live in its exec path; the tests).
const fullName = "snap-full"

// completeBuild: this is the core build (handshake).
const completeBuild = false

// handshakeTimeout bounds how long checkFull waits for snap-full's answer.
const handshakeTimeout = 10 * time.Second

// execFull replaces this process with snap-full run with this process's
// arguments; it returns only when that cannot be done.
func execFull(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return err // (interrupted before the hand-over: nothing runs)
	}
	full := os.Getenv("SNAP_FULL")
	if full == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("%s needs %s (the complete snap), and this snap cannot find its own path: %w", what, fullName, err)
		}
		full = filepath.Join(filepath.Dir(self), fullName)
	}
	if _, err := os.Stat(full); err != nil {
		return fmt.Errorf("%s needs %s, the complete snap, beside this one or named by $SNAP_FULL: %w; 'make build' builds both, 'go install ./cmd/snap' one complete snap", what, fullName, err)
	}
	// A core build run by a core build (snap-full replaced by a copy of
	// snap) would run itself for ever: the mark says it was.
	if os.Getenv(execMark) != "" {
		return fmt.Errorf("%s needs the complete snap, and %s is a core build too: 'make build' builds both", what, os.Getenv(execMark))
	}
	if err := checkFull(ctx, full); err != nil {
		return fmt.Errorf("%s needs %s, the complete snap of this version, and %w; 'make build' builds both", what, fullName, err)
	}
	env := append(os.Environ(), execMark+"="+full)
	err := syscall.Exec(full, append([]string{full}, os.Args[1:]...), env)
	return fmt.Errorf("%s: running %s: %w", what, full, err)
}

// checkFull asks full which build it is (handshake) and returns an error
// unless it answers as this version's complete build: a snap-full left
// from another version, a core build, a copy cut short, or another
// program is never run in its place.
func checkFull(parent context.Context, full string) error {
	ctx, cancel := context.WithTimeout(parent, handshakeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, full)
	cmd.Env = append(os.Environ(), handshakeEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{&out, 4096}
	err := cmd.Run()
	answer := strings.TrimSpace(out.String())
	want := strings.Replace(handshake(), "core build", "complete build", 1)
	switch {
	case parent.Err() != nil:
		return parent.Err() // interrupted: nothing runs
	case ctx.Err() != nil && err != nil:
		return fmt.Errorf("%s did not say which build it is within %v: %w", full, handshakeTimeout, ctx.Err())
	case err != nil:
		return fmt.Errorf("%s does not run: %v", full, err) // (%v: an *exec.ExitError is a cli.ExitCoder, which would classify as a usage error)
	case answer == handshake():
		return fmt.Errorf("%s is a core build too", full)
	case answer == "":
		return fmt.Errorf("%s is not snap: it gave no answer to %s", full, handshakeEnv)
	case answer != want:
		return fmt.Errorf("%s is another build: it is %q, this snap needs %q", full, answer, want)
	}
	return nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.w.Write(p[:min(len(p), max(l.n-l.w.Len(), 0))])
	return len(p), nil
}

func runMCP(c *cli.Context, _ *invocation) error { return execFull(c.Context, "snap mcp") }

func runUI(c *cli.Context, _ *invocation) error { return execFull(c.Context, "snap ui") }

func runGit(ctx context.Context, o gitOptions, _ io.Writer) error {
	if o.Verb == "export" || o.Verb == "import" {
		return execFull(ctx, "snap git "+o.Verb)
	}
	return execFull(ctx, "snap "+o.Verb)
}

func runRedactCheck(ctx context.Context, _ redactOptions, _ io.Writer) error {
	return execFull(ctx, "snap redact --check")
}

func runTraceExport(ctx context.Context, _ traceOptions, _ io.Writer) error {
	return execFull(ctx, "snap trace export")
}

// gitCommitter is never made here: a commit that wants one runs snap-full.
type gitCommitter struct{}

// gitCommitResult is never made here (see gitCommitter).
type gitCommitResult struct{}

func openGitCommitter(ctx context.Context, _ *snap.Repo, _ func() ([]string, error)) (*gitCommitter, error) {
	return nil, execFull(ctx, "a git commit (--git-commit, git.commit-on)")
}

func (*gitCommitter) commit(context.Context, snap.ID, snap.ID, string) (*gitCommitResult, error) {
	return nil, nil
}

func writeGitCommit(io.Writer, *gitCommitResult) {}

func isNoGitRepo(error) bool { return false }

// handOff runs snap-full for a task or edit commit before anything else
// (reading stdin, opening the store): whether it makes a git commit is
// known only once the store's settings are read, and by then stdin (a
// --conversation -) would be consumed and a warning printed
// (torture/split-findings/01, 03).
func handOff(ctx context.Context, args []string) error {
	if cmd := commandOf(args); len(cmd) == 1 && (cmd[0] == "task" || cmd[0] == "edit") && slices.Contains(args, "commit") {
		return execFull(ctx, "snap "+cmd[0]+" commit")
	}
	return nil
}
