package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type initOptions struct {
	globalOptions
	Watch bool // start the watch daemon too
}

type initResult struct {
	Created bool   `json:"created"`
	Root    string `json:"root"`
	Store   string `json:"store"`
	// Watching: the pid of the watch daemon --watch started or found.
	Watching int `json:"watching,omitempty"`
}

func initCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the store (idempotent)",
		ArgsUsage: " ",
		Description: `Creates the store, .snap/ at the project root (or at --store PATH), unless
it exists already. Running it again changes nothing. In a git repository the
store is added to .git/info/exclude, so git never sees it.

The project is -C DIR (default: the current directory); a directory inside
a project that already has a store uses that store. --watch also starts the
project's file-system monitor (snap watch), so that checkpoints read only
what changed.

Examples:
   snap init
   snap init --watch
   snap init -C ~/src/myproject --json`,
		Flags: withGlobals(&cli.BoolFlag{Name: "watch", Usage: "also start the file-system monitor (snap watch)"}),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("init takes no arguments")
			}
			return runInit(c.Context, initOptions{globals(c), c.Bool("watch")}, inv.stdout)
		},
	}
}

func runInit(ctx context.Context, o initOptions, out io.Writer) error {
	repo, created, err := snap.Init(o.repoOptions())
	if err != nil {
		return err
	}
	defer repo.Close()
	res := initResult{Created: created, Root: repo.Root, Store: repo.StoreDir}
	if o.Watch {
		st, _, err := startWatch(repo, defaultWatchIdle)
		if err != nil {
			return err
		}
		res.Watching = st.Pid
	}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		var err error
		if created {
			_, err = fmt.Fprintf(w, "Initialized snap store in %s\n", repo.StoreDir)
		} else {
			_, err = fmt.Fprintf(w, "snap store already exists in %s (nothing changed)\n", repo.StoreDir)
		}
		if err == nil && res.Watching != 0 {
			_, err = fmt.Fprintf(w, "watching %s (pid %d; snap watch --status, --stop)\n", repo.Root, res.Watching)
		}
		return err
	})
}
