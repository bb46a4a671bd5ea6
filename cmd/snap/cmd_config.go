package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type configOptions struct {
	globalOptions
	Key   string
	Value *string // nil: read
	Unset bool
}

type configResult struct {
	Key   string `json:"key"`
	Value string `json:"value"` // "" means the default
}

func configCommand(inv *invocation) *cli.Command {
	keys := snap.ConfigKeys()
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	desc := `Reads (snap config KEY) or sets (snap config KEY VALUE) a setting of the
store, like git config. --unset returns a setting to its default. An empty
value printed means the default is in force.

Settings:
`
	for _, k := range names {
		desc += fmt.Sprintf("   %-24s %s\n", k, keys[k])
	}
	desc += `
Examples:
   snap config capture.max-file-size 200M
   snap config gc.grace
   snap config --unset gc.grace`
	return &cli.Command{
		Name:        "config",
		Usage:       "read or set a store setting",
		ArgsUsage:   "KEY [VALUE]",
		Description: desc,
		Flags:       withGlobals(&cli.BoolFlag{Name: "unset", Usage: "return KEY to its default"}),
		Action: func(c *cli.Context) error {
			o := configOptions{globalOptions: globals(c), Key: c.Args().Get(0), Unset: c.Bool("unset")}
			switch {
			case c.NArg() == 2 && !o.Unset:
				v := c.Args().Get(1)
				o.Value = &v
			case c.NArg() != 1:
				return usageErrorf("config takes KEY, or KEY VALUE")
			}
			return runConfig(c.Context, o, inv.stdout)
		},
	}
}

func runConfig(ctx context.Context, o configOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	switch {
	case o.Unset:
		err = repo.ConfigSet(ctx, o.Key, "")
	case o.Value != nil:
		if *o.Value == "" {
			return usageErrorf("empty value: use --unset to return %s to its default", o.Key)
		}
		err = repo.ConfigSet(ctx, o.Key, *o.Value)
	}
	if err != nil {
		return err
	}
	v, err := repo.ConfigGet(o.Key)
	if err != nil {
		return err
	}
	return emit(out, o.JSON, configResult{Key: o.Key, Value: v}, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, v)
		return err
	})
}
