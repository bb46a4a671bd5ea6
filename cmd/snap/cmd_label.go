package main

import (
	"context"
	"fmt"
	snap "github.com/snapcore-dev/snap"
	"io"

	"github.com/urfave/cli/v2"
)

type labelOptions struct {
	globalOptions
	Ref  string
	Name string
}

type labelResult struct {
	Label string  `json:"label"`
	ID    snap.ID `json:"id"`
}

func labelCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "label",
		Usage:     "name a checkpoint",
		ArgsUsage: "REF NAME",
		Description: `Gives checkpoint REF the label NAME, usable wherever a REF is expected. An
existing label of that name is moved. Labels are shared by all sessions and
keep their checkpoint from being collected. NAME: letters, digits, '.', '_'
and '-', starting with a letter or digit. 'snap undo' removes (or moves back)
the label.

Examples:
   snap label @ tests-pass
   snap rewind tests-pass`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageErrorf("label takes REF and NAME")
			}
			return runLabel(c.Context, labelOptions{globalOptions: globals(c), Ref: c.Args().Get(0), Name: c.Args().Get(1)}, inv.stdout)
		},
	}
}

func runLabel(ctx context.Context, o labelOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	id, err := repo.Label(ctx, o.session(), o.Ref, o.Name)
	if err != nil {
		return err
	}
	res := labelResult{Label: o.Name, ID: id}
	return emit(out, o.JSON, res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "labelled %s as %s\n", id.Short(), o.Name)
		return err
	})
}
