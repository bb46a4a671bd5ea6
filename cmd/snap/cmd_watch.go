package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

// defaultWatchIdle is how long a daemon started by snap watch (or
// watch.auto) lives without a capture asking it anything.
const defaultWatchIdle = 2 * time.Hour

func watchCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "keep a file-system monitor for the project, so that checkpoints read only what changed",
		ArgsUsage: " ",
		Description: `Starts the project's watch daemon in the background and returns. The daemon
watches the project's directories (inotify, through fsnotify; not .git, the
store or what the ignore rules ignore, such as node_modules) and tells every
capture of the whole tree (a checkpoint, a hook's, a rewind's safety
checkpoint) which directories may have changed since the last one: the
capture reads only those and takes the rest from that checkpoint. On a big
tree a checkpoint then costs what changed, not the size of the tree.

Nothing depends on it: a checkpoint taken with it records exactly what a
full scan would. Whenever the daemon cannot vouch for a directory (it just
started, its event queue overflowed, a directory could not be watched, it
is dead or does not answer within half a second) the capture reads that
directory, or everything, as without it; with a file system mounted inside
the project, always. A write through a shared mmap or Linux native AIO
raises no event: it is recorded by the next full scan, which runs at least
every 10 minutes whatever the daemon says, when it moved the file's mtime
or ctime (a second write to an mmap'd page not yet written back moves
neither, and no stat-based tool sees it, git status included). Linux allows each user a number of
watches (fs.inotify.max_user_watches; one per directory): past it the
directories left unwatched are read by every capture; --status says how many.

One daemon per project; it exits after --idle without a capture asking it
anything, when the project or its store is removed, or on --stop.
'snap config watch.auto true' starts one whenever a checkpoint or a hook
finds none running; 'snap init --watch' starts one at once.

   --status      whether a daemon runs, and what it watches
   --stop        stop it
   --idle D      exit after D without a query (default 2h; 0: never)
   --foreground  run the daemon in this process (until interrupted)

Examples:
   snap watch
   snap watch --status
   snap watch --stop`,
		Flags: withGlobals(
			&cli.BoolFlag{Name: "status", Usage: "report whether a daemon runs, and what it watches"},
			&cli.BoolFlag{Name: "stop", Usage: "stop the running daemon"},
			&cli.DurationFlag{Name: "idle", Value: defaultWatchIdle, Usage: "exit after `D` without a query (0: never)"},
			&cli.BoolFlag{Name: "foreground", Usage: "run the daemon in this process"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("watch takes no arguments")
			}
			n := 0
			for _, f := range []string{"status", "stop", "foreground"} {
				if c.Bool(f) {
					n++
				}
			}
			if n > 1 {
				return usageErrorf("--status, --stop and --foreground exclude one another")
			}
			g := globals(c)
			g.longRunning = c.Bool("foreground") // the daemon; --status, --stop and the start of a daemon run for a moment
			repo, err := g.open(c.Context)
			if err != nil {
				return err
			}
			defer repo.Close()
			switch {
			case c.Bool("status"):
				st, err := repo.WatchStatus(2 * time.Second)
				if errors.Is(err, snap.ErrWatchNotRunning) {
					return emit(inv.stdout, g.JSON, map[string]any{"running": false}, func(w io.Writer) error {
						_, err := fmt.Fprintln(w, "no watch daemon runs for this project")
						return err
					})
				}
				if err != nil {
					return err
				}
				return emit(inv.stdout, g.JSON, map[string]any{"running": true, "daemon": st}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "watching %s (pid %d, since %s): %d directories watched, %d not (%d could not be); %d queries answered; epoch %s (%s), %d overflows\n",
						st.Root, st.Pid, st.Started.Format(time.DateTime), st.Watches, st.Unwatched, st.Failed, st.Queries, st.Epoch, st.EpochReason, st.Overflows)
					return err
				})
			case c.Bool("stop"):
				err := repo.WatchStop()
				if errors.Is(err, snap.ErrWatchNotRunning) {
					err = nil
				}
				if err != nil {
					return err
				}
				return emit(inv.stdout, g.JSON, map[string]any{"running": false}, func(w io.Writer) error {
					_, err := fmt.Fprintln(w, "no watch daemon runs for this project now")
					return err
				})
			case c.Bool("foreground"):
				logf := func(format string, args ...any) { fmt.Fprintf(inv.stderr, "snap watch: "+format+"\n", args...) }
				err := repo.Watch(c.Context, c.Duration("idle"), logf)
				if errors.Is(err, snap.ErrWatchRunning) {
					return fmt.Errorf("%w (snap watch --status)", err)
				}
				return err
			}
			st, started, err := startWatch(repo, c.Duration("idle"))
			if err != nil {
				return err
			}
			return emit(inv.stdout, g.JSON, map[string]any{"running": true, "started": started, "daemon": st}, func(w io.Writer) error {
				verb := "already watching"
				if started {
					verb = "watching"
				}
				_, err := fmt.Fprintf(w, "%s %s (pid %d; snap watch --status, --stop)\n", verb, st.Root, st.Pid)
				return err
			})
		},
	}
}

// startWatch starts the project's watch daemon in the background (this
// executable, 'watch --foreground', in a session of its own, its output
// discarded) unless one runs, and waits until it answers. started says
// whether this call started it.
func startWatch(repo *snap.Repo, idle time.Duration) (st *snap.WatchState, started bool, err error) {
	st, err = repo.WatchStatus(2 * time.Second)
	switch {
	case err == nil:
		return st, false, nil
	case !errors.Is(err, snap.ErrWatchNotRunning):
		// One holds the lock and does not answer (stopped, hung): a second
		// could not start.
		return nil, false, fmt.Errorf("a watch daemon runs for this project but does not answer (%w): snap watch --stop, or kill it", err)
	}
	if err := spawnWatch(repo, idle); err != nil {
		return nil, false, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := repo.WatchStatus(time.Second)
		if err == nil {
			return st, true, nil
		}
		if time.Now().After(deadline) {
			return nil, false, fmt.Errorf("the watch daemon did not start within 10s: %w (run snap watch --foreground to see why)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spawnWatch starts 'snap watch --foreground' for repo's project in the
// background, without waiting for it.
func spawnWatch(repo *snap.Repo, idle time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"watch", "--foreground", "--idle", idle.String(), "-C", repo.Root}
	if repo.StoreDir != filepath.Join(repo.Root, ".snap") {
		args = append(args, "--store", repo.StoreDir)
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "snap" // (what the program is called: a test binary acts as snap by it)
	cmd.Dir = repo.Root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with the caller's terminal or process group
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the watch daemon: %w", err)
	}
	return cmd.Process.Release()
}

// maintain is what a command that recorded something starts in the
// background, as the store asks: a gc when one is due, the watch daemon.
func maintain(ctx context.Context, repo *snap.Repo) {
	startAutoGC(ctx, repo)
	autoWatch(repo)
}

// autoWatch starts the daemon in the background when the store asks for
// one (watch.auto) and none runs; it never waits for it, and never fails
// the command that called it.
func autoWatch(repo *snap.Repo) {
	if !repo.WatchAuto() {
		return
	}
	// (A short wait: a daemon that does not answer at once is there, and a
	// hook must not wait for it.)
	if _, err := repo.WatchStatus(100 * time.Millisecond); errors.Is(err, snap.ErrWatchNotRunning) {
		spawnWatch(repo, defaultWatchIdle)
	}
}
