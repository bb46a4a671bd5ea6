package main

import (
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/mcp"
)

func mcpCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve snap to an agent over the Model Context Protocol (stdio)",
		Description: `Serves the project's store over MCP on stdin/stdout: tools checkpoint, log,
show, diff, status, rewind (a dry run unless confirm is true), undo, redo,
conversation (paged; compact), and the agent-workflow verbs memo_begin_task,
memo_replace (staged edits with lettered candidates), memo_preview,
memo_commit, memo_commit_auto, memo_revert and memo_task_tree. The project is
the working directory (or -C DIR); the session is each tool's session
argument, else -s. Add it to Claude Code with:

   claude mcp add snap -- snap mcp -C /path/to/project

or to any MCP client's configuration as
{"mcpServers": {"snap": {"command": "snap", "args": ["mcp", "-C", "/path/to/project"]}}}.`,
		Flags: withGlobals(),
		Action: func(c *cli.Context) error {
			g := globals(c)
			repo, err := g.open(c.Context)
			if err != nil {
				return err
			}
			defer repo.Close()
			srv := mcp.New(repo, g.Session, version())
			return srv.Run(c.Context, &sdk.IOTransport{Reader: io.NopCloser(inv.stdin), Writer: nopWriteCloser{inv.stdout}})
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
