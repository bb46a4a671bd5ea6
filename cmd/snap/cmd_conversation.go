package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

type conversationOptions struct {
	globalOptions
	Ref     string // "" is the session head
	Offset  int
	Limit   int // 0: all
	Compact bool
	Raw     bool // with Compact: the compacted document in its own format
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

--compact replaces the messages of each finished task (snap task) by one
summary message: its goal, summary or reason, and the files it changed, and
reports history_delta {messages_removed, tokens_saved} (tokens estimated as
characters / 4). --raw prints the compacted document in its own format (JSONL
stays JSONL, a JSON array stays an array), for a harness that owns its
history to load back; in a Claude Code transcript the summary record takes
the cut records' place in the uuid/parentUuid chain. The checkpoint keeps
the full history.

Examples:
   snap conversation --limit 5
   snap conversation '#3' --offset 10 --limit 10 --json
   snap conversation --compact --json
   snap conversation --compact --raw > compacted.jsonl`,
		Flags: withGlobals(
			&cli.IntFlag{Name: "offset", Usage: "skip the first `N` messages"},
			&cli.IntFlag{Name: "limit", Usage: "show at most `N` messages", DefaultText: "all"},
			&cli.BoolFlag{Name: "compact", Usage: "replace each finished task's messages by a summary"},
			&cli.BoolFlag{Name: "raw", Usage: "with --compact: print the compacted document in its own format"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("conversation takes one REF, got %d arguments", c.NArg())
			}
			o := conversationOptions{globalOptions: globals(c), Ref: c.Args().First(), Offset: c.Int("offset"), Limit: c.Int("limit"),
				Compact: c.Bool("compact"), Raw: c.Bool("raw")}
			if o.Raw && !o.Compact {
				return usageErrorf("--raw goes with --compact ('snap cat REF --state conversation' prints the document as recorded)")
			}
			if o.Compact && (o.Offset > 0 || o.Limit > 0) {
				return usageErrorf("--compact shows the whole conversation; it does not take --offset or --limit")
			}
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
	if o.Compact {
		cc, err := workflow.New(repo).CompactConversation(ctx, id)
		if err != nil {
			return err
		}
		if o.Raw {
			if cc.Raw == nil {
				return fmt.Errorf("%s: %s", id.Short(), cc.RawProblem)
			}
			_, err := out.Write(cc.Raw)
			return err
		}
		return emit(out, o.JSON, cc, func(w io.Writer) error {
			page := &snap.ConversationPage{Checkpoint: cc.Checkpoint, Format: cc.Format, Total: len(cc.Messages), Messages: cc.Messages}
			if err := writeConversation(w, page); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "\ncompacted %s: %s removed, about %d tokens saved\n",
				plural(len(cc.Tasks), "finished task"), plural(cc.HistoryDelta.MessagesRemoved, "message"), cc.HistoryDelta.TokensSaved)
			return err
		})
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
