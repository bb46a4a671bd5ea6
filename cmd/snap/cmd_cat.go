package main

import (
	"bytes"
	"context"
	"encoding/base64"
	snap "github.com/snapcore-dev/snap"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

type catOptions struct {
	globalOptions
	Ref   string // "" is the session head
	Path  string // a file of the checkpoint's tree, or
	State string // a state document
}

// catResult is cat's JSON document: content as text when it is valid UTF-8,
// else base64 in content_base64.
type catResult struct {
	Checkpoint    snap.ID `json:"checkpoint"`
	Path          string  `json:"path,omitempty"`
	State         string  `json:"state,omitempty"`
	Size          int     `json:"size"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

func catCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "cat",
		Usage:     "print a file or a state document as it was at a checkpoint",
		ArgsUsage: "REF:PATH | REF --state NAME",
		Description: `Writes the raw bytes of a file (REF:PATH, PATH relative to the project
root) or of a state document (REF --state NAME) as recorded in checkpoint REF
to stdout. An empty REF (":PATH") is the session head.

With --json, prints {"checkpoint", "path" or "state", "size", "content"};
content that is not valid UTF-8 is given base64-encoded in "content_base64".

Examples:
   snap cat '#2:src/main.go'
   snap cat msg:msg_07:README.md > README.old
   snap cat @~1 --state conversation | tail -n 3`,
		Flags: withGlobals(
			&cli.StringFlag{Name: "state", Usage: "print state document `NAME` (conversation, context, ...) instead of a file"},
		),
		Action: func(c *cli.Context) error {
			o := catOptions{globalOptions: globals(c), State: c.String("state")}
			if c.NArg() > 1 {
				return usageErrorf("cat takes one argument, REF:PATH or REF --state NAME")
			}
			arg := c.Args().First()
			if o.State != "" {
				o.Ref = arg
			} else {
				ref, path, ok := splitRefPath(arg)
				if !ok || path == "" {
					return usageErrorf("cat wants REF:PATH (a file) or REF --state NAME (a state document), got %q", arg)
				}
				o.Ref, o.Path = ref, path
			}
			return runCat(c.Context, o, inv.stdout)
		},
	}
}

// splitRefPath splits "REF:PATH". A msg:ID REF keeps its own colon
// ("msg:ID:PATH"); message ids containing ':' cannot be used here.
func splitRefPath(s string) (ref, path string, ok bool) {
	if rest, isMsg := strings.CutPrefix(s, "msg:"); isMsg {
		id, path, ok := strings.Cut(rest, ":")
		return "msg:" + id, path, ok
	}
	return strings.Cut(s, ":")
}

func runCat(ctx context.Context, o catOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	id, err := repo.Resolve(ctx, o.session(), o.Ref)
	if err != nil {
		return err
	}
	cat := func(w io.Writer) error { // resolved once: the JSON names what was printed
		if o.State != "" {
			return repo.CatState(ctx, id, o.State, w)
		}
		return repo.Cat(ctx, id, o.Path, w)
	}
	if !o.JSON {
		return cat(out)
	}
	var buf bytes.Buffer
	if err := cat(&buf); err != nil {
		return err
	}
	res := catResult{Checkpoint: id, Path: o.Path, State: o.State, Size: buf.Len()}
	if utf8.Valid(buf.Bytes()) {
		s := buf.String()
		res.Content = &s
	} else {
		s := base64.StdEncoding.EncodeToString(buf.Bytes())
		res.ContentBase64 = &s
	}
	return writeJSON(out, res)
}
