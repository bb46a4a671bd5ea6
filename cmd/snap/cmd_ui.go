package main

import (
	"github.com/urfave/cli/v2"
)

func uiCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "ui",
		Usage:     "open snap's web app: timeline, checkpoints with their conversation, compare, search, rewind with a preview, undo",
		ArgsUsage: " ",
		Description: `Serves a local web app over the project's store and prints its URL; open it
in a browser. Sessions; the timeline of a session (checkpoints newest first
with their kind, actor, tool call, summary and files; branches a rewind left;
the operations beside it, the last one undoable); a checkpoint with its
changed files, each a click from its diff, and the conversation at that
point, message by message; compare any two checkpoints, or one with the
working tree, unified or side by side, conversation included; search across
sessions by prompt, tool call, file path or summary; the task tree and staged
edits. A rewind opens a dialog that shows its dry run, exactly what would be
restored, deleted and kept, before anything moves; afterwards the page offers
Undo. Keys: h history, c compare with the head, r rewind (the selected
checkpoint, else the one before the head), u undo, / search. Pages follow
what hooks and other sessions record, live.

   --addr HOST:PORT   where to listen (default 127.0.0.1:0, a free port on
                      loopback); another address lets other machines reach
                      it (0.0.0.0:PORT: all of this machine's; then open it
                      by an IP address, as a name is refused): anyone with
                      the URL can then rewind the project
   --open             also open the URL in the default browser ($BROWSER,
                      else xdg-open)
   --url-file FILE    also write the URL to FILE (mode 0600): for a script
                      that starts snap ui in the background

The URL carries a random token that every request for data needs (the page
keeps it for its tab, never in a cookie); requests naming another Host, and
changes that do not come from the page itself (same origin), are refused. It runs until interrupted.
With --json the URL is printed as {"url": "..."}.

Examples:
   snap ui
   snap ui --open
   snap ui --url-file ui-url &`,
		Flags: withGlobals(
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "listen on `HOST:PORT`"},
			&cli.BoolFlag{Name: "open", Usage: "open the URL in the default browser"},
			&cli.StringFlag{Name: "url-file", Usage: "also write the URL to `FILE`"},
		),
		Action: func(c *cli.Context) error { return runUI(c, inv) },
	}
}
