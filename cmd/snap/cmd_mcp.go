package main

import (
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/agent"
)

func mcpCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve snap to an agent over the Model Context Protocol (stdio, or --http on loopback)",
		Description: `Serves the project's store over MCP: tools checkpoint, log, show, diff,
status, rewind (a dry run unless confirm is true), undo, redo, conversation
(paged; compact), and the agent-workflow verbs memo_begin_task, memo_replace
(staged edits with lettered candidates), memo_preview, memo_commit,
memo_commit_auto, memo_revert and memo_task_tree. The project is the working
directory (or -C DIR; a project with no store gets one, as with the hooks:
at the root of its git repository, never in the home directory); the session
is each tool's session argument, else -s.
The checkpoint tool's conversation_path must be a .jsonl or .json file in the
project, under a --conversation-dir, or in an agent's transcript directory:
` + transcriptDirList() + `.
The server acts with your rights, and a rewind writes the conversation back
where it was read.

On stdin/stdout by default. Add it to Claude Code with:

   claude mcp add snap -- snap mcp -C /path/to/project

or to any MCP client's configuration as
{"mcpServers": {"snap": {"command": "snap", "args": ["mcp", "-C", "/path/to/project"]}}}.

With --http 127.0.0.1:PORT it serves MCP's streamable HTTP transport at
http://127.0.0.1:PORT/mcp instead, on loopback addresses only (any other
address is refused: the server acts on your files with your rights). Every
request must carry "Authorization: Bearer TOKEN": the token is
$SNAP_MCP_TOKEN when set, else the one in .snap/mcp-token (made on first use,
mode 0600, kept across runs so a client's configuration stays valid). A
request whose Host is not 127.0.0.1:PORT, localhost:PORT or [::1]:PORT, or
with an Origin header other than the server's own (http:// and one of
those), is refused with 403: a web page in a browser never reaches the
tools. Port 0
picks a free port; the address is printed (with --json: {"url", "token_file"}).
It runs until interrupted.

   claude mcp add --transport http snap http://127.0.0.1:8765/mcp \
     --header "Authorization: Bearer $(cat .snap/mcp-token)"`,
		Flags: withGlobals(
			&cli.StringFlag{Name: "http", Usage: "serve streamable HTTP on this loopback `HOST:PORT` instead of stdio"},
			&cli.StringSliceFlag{Name: "conversation-dir", Usage: "also accept the checkpoint tool's conversation_path under `DIR` (repeatable)"},
		),
		Action: func(c *cli.Context) error { return runMCP(c, inv) },
	}
}

// transcriptDirList names the registered agents' transcript directories
// for 'snap help mcp': "~/.claude/projects, ~/.gemini, ...".
func transcriptDirList() string {
	var out []string
	for _, d := range agent.TranscriptDirs("~") {
		out = append(out, filepath.ToSlash(d))
	}
	return strings.Join(out, ", ")
}
