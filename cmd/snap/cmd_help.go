package main

import (
	"bytes"
	"strings"

	"github.com/urfave/cli/v2"
)

type helpResult struct {
	Command string `json:"command"` // "snap", "snap log", "snap session archive"
	Help    string `json:"help"`    // the text 'snap help' prints
}

// installHelp gives app snap's help command (newApp calls it). urfave/cli
// adds its own help command, and the app's --help/-h flag, only to an app
// that has no command named help: the flag is added here too.
func installHelp(app *cli.App, inv *invocation) {
	h := helpCommand(inv)
	h.OnUsageError = onUsageError
	app.Commands = append(app.Commands, h)
	if cli.HelpFlag != nil && findFlag(app.Flags, "help") == nil {
		app.Flags = append(app.Flags, cli.HelpFlag)
	}
}

// helpCommand is 'snap help [COMMAND [SUBCOMMAND]]'. It replaces
// urfave/cli's own help command, which shows a command's help for
// 'snap help session archive' (the subcommand is dropped), leaves out the
// subcommands and options of 'snap help session' and takes no --json. This
// one prints exactly what 'snap COMMAND [SUBCOMMAND] --help' prints (as
// {command, help} with --json); an unknown topic is a usage error.
func helpCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the help of snap, of a command or of a subcommand",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Description: `Prints what 'snap --help', 'snap COMMAND --help' or
'snap COMMAND SUBCOMMAND --help' prints: 'snap help session' lists the
subcommands of session, 'snap help session archive' explains that one. With
--json: {command, help}, help being the same text.`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			return runHelp(c, inv, c.Args().Slice())
		},
	}
}

// runHelp prints the help of the command that names (a command, then its
// subcommands) designates, or of the app when names is empty.
func runHelp(c *cli.Context, inv *invocation, names []string) error {
	g := globals(c)
	path := []string{"snap"}
	cmds := c.App.Commands
	var cmd *cli.Command
	for _, name := range names {
		if cmd != nil && len(cmd.Subcommands) == 0 {
			return usageErrorf("'%s' has no subcommands (see 'snap help %s')", strings.Join(path, " "), strings.Join(path[1:], " "))
		}
		if cmd = findCommand(cmds, name); cmd == nil || cmd.Name == "help" && len(path) > 1 {
			where := "snap help"
			if len(path) > 1 {
				where = "snap help " + strings.Join(path[1:], " ")
			}
			return usageErrorf("no help topic for '%s' (see '%s')", printable(name), where)
		}
		path = append(path, cmd.Name)
		cmds = cmd.Subcommands
	}
	// The app prints a command's help as 'snap COMMAND --help' does: run it
	// so. The app is set up already; running it again only parses these
	// arguments and prints.
	show := func() error {
		if cmd == nil {
			return cli.ShowAppHelp(c)
		}
		return c.App.RunContext(c.Context, append(append([]string(nil), path...), "--help"))
	}
	if !g.JSON {
		return show()
	}
	var buf bytes.Buffer
	w := c.App.Writer
	c.App.Writer = &buf
	err := show()
	c.App.Writer = w
	if err != nil {
		return err
	}
	return writeJSON(inv.stdout, helpResult{Command: strings.Join(path, " "), Help: buf.String()})
}
