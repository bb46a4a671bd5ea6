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
}

type initResult struct {
	Created bool   `json:"created"`
	Root    string `json:"root"`
	Store   string `json:"store"`
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
a project that already has a store uses that store.

Examples:
   snap init
   snap init -C ~/src/myproject --json`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("init takes no arguments")
			}
			return runInit(c.Context, initOptions{globals(c)}, inv.stdout)
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
	return emit(out, o.JSON, res, func(w io.Writer) error {
		if created {
			_, err := fmt.Fprintf(w, "Initialized snap store in %s\n", repo.StoreDir)
			return err
		}
		_, err := fmt.Fprintf(w, "snap store already exists in %s (nothing changed)\n", repo.StoreDir)
		return err
	})
}
