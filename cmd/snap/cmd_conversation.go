package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

type conversationOptions struct {
	globalOptions
	Ref    string // "" is the session head
	Offset int
	Limit  int // 0: all
}

func conversationCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "conversation",
		Usage:     "show the conversation recorded at a checkpoint, message by message",
		ArgsUsage: "[REF]",
		Description: `Shows the conversation document recorded at REF (default: the session head)
as structured messages, paged with --offset and --limit. Each message is

   [index] role  timestamp
       text
       → ToolName {input, truncated}
       ← tool result (truncated)

JSON arrays of messages (OpenAI/Anthropic style), objects with a messages
array (Gemini CLI) and JSONL transcripts (Claude Code) are understood. A
document that cannot be parsed is still stored byte for byte; the view says
why it cannot show it ('snap cat REF --state conversation' prints the raw
bytes). With --json: {checkpoint, format, total, offset, messages, problems}.

Examples:
   snap conversation --limit 5
   snap conversation '#3' --offset 10 --limit 10 --json`,
		Flags: withGlobals(
			&cli.IntFlag{Name: "offset", Usage: "skip the first `N` messages"},
			&cli.IntFlag{Name: "limit", Usage: "show at most `N` messages", DefaultText: "all"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("conversation takes one REF, got %d arguments", c.NArg())
			}
			o := conversationOptions{globalOptions: globals(c), Ref: c.Args().First(), Offset: c.Int("offset"), Limit: c.Int("limit")}
			if o.Offset < 0 || o.Limit < 0 {
				return usageErrorf("--offset and --limit must not be negative")
			}
			return runConversation(c.Context, o, inv.stdout)
		},
	}
}

func runConversation(ctx context.Context, o conversationOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	id, err := repo.Resolve(ctx, o.session(), o.Ref)
	if err != nil {
		return err
	}
	page, err := repo.Conversation(ctx, id, o.Offset, o.Limit)
	if err != nil {
		return err
	}
	page.Messages = nonNil(page.Messages)
	page.Problems = nonNil(page.Problems)
	return emit(out, o.JSON, page, func(w io.Writer) error { return writeConversation(w, page) })
}

// maxToolDetail bounds how much of a tool input or result is printed.
const maxToolDetail = 160

func writeConversation(w io.Writer, page *snap.ConversationPage) error {
	shown := len(page.Messages)
	switch {
	case page.Total == 0:
		fmt.Fprintf(w, "conversation at %s (%s): no messages\n", page.Checkpoint.Short(), page.Format)
	case shown == 0:
		fmt.Fprintf(w, "conversation at %s (%s): %s, none from offset %d\n", page.Checkpoint.Short(), page.Format,
			plural(page.Total, "message"), page.Offset)
	default:
		fmt.Fprintf(w, "conversation at %s (%s): messages %d-%d of %d\n", page.Checkpoint.Short(), page.Format,
			page.Offset, page.Offset+shown-1, page.Total)
	}
	for _, m := range page.Messages {
		fmt.Fprintln(w)
		head := fmt.Sprintf("[%d] %s", m.Index, m.Role)
		if m.Timestamp != "" {
			head += "  " + m.Timestamp
		}
		fmt.Fprintln(w, head)
		if m.Text != "" {
			fmt.Fprintln(w, indent(m.Text, "    "))
		}
		for _, tc := range m.ToolCalls {
			line := "    → " + tc.Name
			if len(tc.Input) > 0 {
				line += " " + truncate(compactJSON(tc.Input), maxToolDetail)
			}
			fmt.Fprintln(w, line)
		}
		for _, tr := range m.ToolResults {
			line := "    ← "
			if tr.IsError {
				line += "(error) "
			}
			fmt.Fprintln(w, line+oneLine(truncate(tr.Content, maxToolDetail)))
		}
	}
	if rest := page.Total - page.Offset - shown; rest > 0 && shown > 0 {
		fmt.Fprintf(w, "\n(%d more; --offset %d for the next page)\n", rest, page.Offset+shown)
	}
	for _, p := range page.Problems {
		if p.Line > 0 {
			fmt.Fprintf(w, "note: line %d: %s\n", p.Line, p.Message)
		} else {
			fmt.Fprintf(w, "note: %s\n", p.Message)
		}
	}
	return nil
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
