package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/edits"
	"github.com/snapcore-dev/snap/workflow"
)

type editOptions struct {
	globalOptions
	Verb      string // replace, write, delete, status, preview, drop, commit, revert
	Request   workflow.EditRequest
	Arg       string // drop: the letter; commit: the summary; revert: the reason
	Mode      string // preview
	Context   int    // preview
	Stdin     io.Reader
	GitCommit *bool // commit --git-commit (nil: git.commit-on decides)
}

// editStdinRequest is the JSON request 'snap edit replace --stdin' reads.
type editStdinRequest struct {
	Path       string `json:"path"`
	Old        string `json:"old"`
	New        string `json:"new"`
	Match      string `json:"match"`
	After      string `json:"after"`
	AllMatches bool   `json:"all_matches"`
}

func editCommand(inv *invocation) *cli.Command {
	run := func(verb string) cli.ActionFunc {
		return func(c *cli.Context) error {
			o := editOptions{globalOptions: globals(c), Verb: verb, Stdin: inv.stdin}
			if err := o.parse(c); err != nil {
				return err
			}
			return runEdit(c.Context, o, inv.stdout)
		}
	}
	return &cli.Command{
		Name:  "edit",
		Usage: "stage changes to files (lettered A-Z), preview them, commit them together",
		Description: `Staged edits change nothing on disk until they are committed. 'snap edit
replace PATH --old TEXT --new TEXT' finds TEXT in the file as it was when its
first change was staged (its base) and stages the replacement as the next
pending change, lettered A, B, C... When TEXT occurs more than once nothing is
staged: the answer (status needs_match) lists lettered candidates with their
lines, and the call is repeated with --match LETTER; the letters stay the same
for the same query, so A, then B, then C of one answer can be staged in turn.
'snap edit commit SUMMARY' applies every pending change to every file at once
(all files change or none), after a safety checkpoint, and records an
edit-commit checkpoint; 'snap undo' puts the files back. A file changed on disk
since its change was staged refuses the commit, naming it: nothing is written
and the changes stay pending. Pending changes are kept in the store per
session, so a crash or another process loses none.

Examples:
   snap edit replace config.yaml --old 'timeout: 30' --new 'timeout: 60'
   snap edit replace config.yaml --old 'timeout: 30' --new 'timeout: 60' --match B
   snap edit status
   snap edit preview --mode stats
   snap edit commit 'raise the timeouts'`,
		Action: run("status"),
		Flags:  withGlobals(),
		Subcommands: []*cli.Command{
			{
				Name: "replace", Usage: "stage replacing a text of a file", ArgsUsage: "PATH",
				Description: `Stages replacing --old (or the content of --old-file) with --new (or
--new-file) in PATH's base. --after ANCHOR considers only matches after the
first occurrence of ANCHOR; --match LETTER picks a candidate of a needs_match
answer; --all-matches lists up to 26 candidates instead of 5. --stdin reads
the request as JSON: {"path", "old", "new", "match", "after", "all_matches"}.
A text that does not occur is an error showing the closest lines (exit 4).`,
				Flags: withGlobals(
					&cli.StringFlag{Name: "old", Usage: "the `TEXT` to replace"},
					&cli.StringFlag{Name: "new", Usage: "the replacement `TEXT`"},
					&cli.StringFlag{Name: "old-file", Usage: "read the text to replace from `FILE`"},
					&cli.StringFlag{Name: "new-file", Usage: "read the replacement from `FILE`"},
					&cli.StringFlag{Name: "match", Usage: "the candidate `LETTER` to stage"},
					&cli.StringFlag{Name: "after", Usage: "only matches after the first occurrence of `ANCHOR`"},
					&cli.BoolFlag{Name: "all-matches", Usage: "list up to 26 candidates"},
					&cli.BoolFlag{Name: "stdin", Usage: "read the request as JSON from stdin"},
				),
				Action: run("replace"),
			},
			{
				Name: "write", Usage: "stage a file's whole new content", ArgsUsage: "PATH",
				Description: `Stages PATH's whole new content: --content TEXT, --file FILE, else stdin.
It creates the file when it does not exist.`,
				Flags: withGlobals(
					&cli.StringFlag{Name: "content", Usage: "the new content `TEXT`"},
					&cli.StringFlag{Name: "file", Usage: "read the new content from `FILE`"},
				),
				Action: run("write"),
			},
			{Name: "delete", Usage: "stage deleting a file", ArgsUsage: "PATH",
				Description: "Stages deleting PATH (a regular file).", Flags: withGlobals(), Action: run("delete")},
			{Name: "status", Usage: "list the pending changes", Flags: withGlobals(), Action: run("status"),
				Description: `Lists the pending changes: {status: editing|idle, pending_changes:
[{change_id, path, kind, line, position, preview}], next_actions}.`},
			{
				Name: "preview", Usage: "show what the pending changes do",
				Description: `Renders the pending changes: --mode compact (default: --context N lines, 3,
around each change, removed lines '- ', added '+ '), full (each file's whole
changed region), or stats (+N/-M characters and position per change).`,
				Flags: withGlobals(
					&cli.StringFlag{Name: "mode", Value: "compact", Usage: "`M` = compact, full or stats"},
					&cli.IntFlag{Name: "context", Value: 3, Usage: "`N` lines of context"},
				),
				Action: run("preview"),
			},
			{Name: "drop", Usage: "remove one pending change", ArgsUsage: "LETTER", Flags: withGlobals(), Action: run("drop"),
				Description: "Removes pending change LETTER; the later ones keep their letters."},
			{Name: "commit", Usage: "apply every pending change atomically (edit-commit checkpoint)", ArgsUsage: "SUMMARY", Flags: withGlobals(gitCommitFlag), Action: run("commit"),
				Description: `Applies every pending change to every file at once and records an
edit-commit checkpoint with SUMMARY; answers {checkpoint, applied_changes,
chars_added, chars_removed, paths}. 'snap undo' puts the files back.`},
			{Name: "revert", Usage: "drop every pending change", ArgsUsage: "REASON", Flags: withGlobals(), Action: run("revert"),
				Description: "Drops every pending change (nothing on disk changes); answers {dropped_changes, paths}."},
		},
	}
}

// parse fills o from the command line.
func (o *editOptions) parse(c *cli.Context) error {
	args := c.Args().Slice()
	one := func(what string) (string, error) {
		if len(args) != 1 {
			return "", usageErrorf("edit %s takes one argument, %s", o.Verb, what)
		}
		return args[0], nil
	}
	var err error
	switch o.Verb {
	case "replace":
		if c.Bool("stdin") {
			if len(args) > 0 || c.IsSet("old") || c.IsSet("new") {
				return usageErrorf("edit replace --stdin takes the whole request as JSON on stdin, no PATH or --old/--new")
			}
			var q editStdinRequest
			dec := json.NewDecoder(io.LimitReader(o.Stdin, 3*workflow.MaxEditBytes))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&q); err != nil {
				return usageErrorf("edit replace --stdin: not a request: %v", err)
			}
			o.Request = workflow.EditRequest{Path: q.Path, Old: q.Old, New: q.New, Match: q.Match, After: q.After, AllMatches: q.AllMatches}
			break
		}
		if o.Request.Path, err = one("PATH"); err != nil {
			return err
		}
		o.Request.Old, o.Request.New = c.String("old"), c.String("new")
		if o.Request.Old, err = o.textOrFile(c, "old", "old-file", true); err != nil {
			return err
		}
		if o.Request.New, err = o.textOrFile(c, "new", "new-file", false); err != nil {
			return err
		}
		o.Request.Match, o.Request.After, o.Request.AllMatches = strings.ToUpper(c.String("match")), c.String("after"), c.Bool("all-matches")
	case "write":
		if o.Request.Path, err = one("PATH"); err != nil {
			return err
		}
		o.Request.Kind = edits.Write
		switch {
		case c.IsSet("content") && c.IsSet("file"):
			return usageErrorf("edit write: --content and --file exclude each other")
		case c.IsSet("content"):
			o.Request.New = c.String("content")
		case c.IsSet("file"):
			if o.Request.New, err = o.readFile(c.String("file")); err != nil {
				return err
			}
		default:
			if o.Request.New, err = readEditText(o.Stdin, "standard input"); err != nil {
				return err
			}
		}
	case "delete":
		o.Request.Kind = edits.Delete
		o.Request.Path, err = one("PATH")
	case "drop":
		o.Arg, err = one("LETTER")
	case "commit":
		o.Arg, err = one("SUMMARY (quote it)")
		o.GitCommit = gitCommitFlagOf(c)
	case "revert":
		o.Arg, err = one("REASON (quote it)")
	case "preview":
		o.Mode, o.Context = c.String("mode"), c.Int("context")
		if len(args) > 0 {
			return usageErrorf("edit preview takes no arguments")
		}
	case "status":
		if len(args) > 0 {
			return usageErrorf("unknown edit command %q (see 'snap help edit')", args[0])
		}
	}
	if err != nil {
		return err
	}
	if o.Request.Path != "" && !strings.HasPrefix(o.Request.Path, "/") {
		// Relative to where snap runs (or -C), as every PATH argument.
		abs, err := o.absPath(o.Request.Path)
		if err != nil {
			return err
		}
		o.Request.Path = abs
	}
	return nil
}

// textOrFile reads flag or its file variant; required says one must be given.
func (o *editOptions) textOrFile(c *cli.Context, flag, fileFlag string, required bool) (string, error) {
	switch {
	case c.IsSet(flag) && c.IsSet(fileFlag):
		return "", usageErrorf("--%s and --%s exclude each other", flag, fileFlag)
	case c.IsSet(fileFlag):
		return o.readFile(c.String(fileFlag))
	case c.IsSet(flag):
		return c.String(flag), nil
	case required:
		return "", usageErrorf("edit replace needs --%s TEXT (or --%s FILE, or --stdin)", flag, fileFlag)
	}
	return "", nil
}

func (o *editOptions) readFile(name string) (string, error) {
	p, err := o.absPath(name)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	defer f.Close()
	return readEditText(f, name)
}

// readEditText reads at most workflow.MaxEditBytes (a bigger file, or an
// endless one such as /dev/zero, is refused, not read into memory).
func readEditText(r io.Reader, name string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, workflow.MaxEditBytes+1))
	if err != nil {
		return "", usageErrorf("%s: %v", name, err)
	}
	if len(data) > workflow.MaxEditBytes {
		return "", usageErrorf("%s holds more than %d bytes: staged edits hold at most that; write the file directly", name, workflow.MaxEditBytes)
	}
	return string(data), nil
}

func runEdit(ctx context.Context, o editOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	flow := workflow.New(repo)
	session := o.session()
	o.Request.Session = session
	switch o.Verb {
	case "replace", "write", "delete":
		ans, err := flow.EditStage(ctx, o.Request)
		if err != nil {
			return err
		}
		ans = forCLI(ans)
		return emit(out, o.JSON, ans, func(w io.Writer) error { writeEditAnswer(w, ans); return nil })
	case "status":
		ans, err := flow.EditStatus(ctx, session)
		if err != nil {
			return err
		}
		ans = forCLI(ans)
		return emit(out, o.JSON, ans, func(w io.Writer) error { writeEditAnswer(w, ans); return nil })
	case "drop":
		ans, err := flow.EditDrop(ctx, session, o.Arg)
		if err != nil {
			return err
		}
		ans = forCLI(ans)
		return emit(out, o.JSON, ans, func(w io.Writer) error {
			fmt.Fprintf(w, "dropped %s: %s\n", ans.Dropped.ChangeID, ans.Dropped.Preview)
			writeEditAnswer(w, ans)
			return nil
		})
	case "preview":
		pv, err := flow.EditPreview(ctx, session, o.Mode, o.Context)
		if err != nil {
			return err
		}
		return emit(out, o.JSON, pv, func(w io.Writer) error {
			if len(pv.Files) == 0 {
				fmt.Fprintln(w, "no pending changes")
			}
			for _, f := range pv.Files {
				io.WriteString(w, f.Text)
			}
			return nil
		})
	case "revert":
		res, err := flow.EditRevert(ctx, session, o.Arg)
		if err != nil {
			return err
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "dropped %s; nothing on disk changed\n", plural(res.DroppedChanges, "pending change"))
			return err
		})
	case "commit":
		gc, err := newGitCommitter(ctx, repo, o.GitCommit, "edit-commit", func() ([]string, error) {
			st, err := flow.EditStatus(ctx, session)
			if err != nil {
				return nil, err
			}
			var ps []string
			for _, c := range st.Pending {
				ps = append(ps, c.Path)
			}
			return ps, nil
		})
		if err != nil {
			return err
		}
		res, err := flow.EditCommit(ctx, session, o.Arg)
		if err == nil {
			startAutoGC(ctx, repo)
		}
		if err != nil {
			if res != nil {
				return withSafety(err, res.Rewind)
			}
			return err
		}
		var gitCommit *gitCommitResult
		if gc != nil && res.Checkpoint != nil {
			if node, _, nerr := repo.ReadNode(ctx, *res.Checkpoint); nerr == nil && len(node.Parents) > 0 {
				gitCommit, err = gc.commit(ctx, node.Parents[0], *res.Checkpoint, o.Arg)
			}
		}
		emitErr := emit(out, o.JSON, editCommitResult{res, gitCommit}, func(w io.Writer) error {
			writeGitCommit(w, gitCommit)
			_, err := fmt.Fprintf(w, "committed %s to %s (+%d/-%d chars), checkpoint %s; 'snap undo' puts the files back\n",
				plural(res.AppliedChanges, "change"), plural(len(res.Paths), "file"), res.CharsAdded, res.CharsRemoved, res.Checkpoint.Short())
			return err
		})
		if emitErr != nil {
			return emitErr
		}
		return err
	}
	return usageErrorf("unknown edit command %q", o.Verb)
}

// editCommitResult is an edit commit's result, with the git commit
// --git-commit made.
type editCommitResult struct {
	*workflow.EditCommitResult
	GitCommit *gitCommitResult `json:"git_commit,omitempty"`
}

// writeEditAnswer prints an edit answer for people.
func writeEditAnswer(w io.Writer, ans *workflow.EditAnswer) {
	if ans.Staged != nil {
		fmt.Fprintf(w, "staged %s: %s:%d %s\n", ans.Staged.ChangeID, quotePath(ans.Staged.Path), ans.Staged.Line, printable(ans.Staged.Preview))
	}
	if ans.Status == "needs_match" {
		for _, c := range ans.Candidates {
			note := ""
			switch {
			case c.Staged != "":
				note = " (staged as " + c.Staged + ")"
			case c.Recommended:
				note = " (recommended)"
			}
			fmt.Fprintf(w, "  %s  line %d: %s%s\n", c.MatchID, c.Line, printable(c.Context), note)
		}
		fmt.Fprintln(w, ans.Hint)
		return
	}
	if len(ans.Pending) == 0 {
		fmt.Fprintln(w, "no pending changes")
		return
	}
	fmt.Fprintf(w, "pending: %s\n", plural(len(ans.Pending), "change"))
	for _, p := range ans.Pending {
		fmt.Fprintf(w, "  %s %s:%d %s\n", p.ChangeID, quotePath(p.Path), p.Line, printable(p.Preview))
	}
}
