package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

type taskOptions struct {
	globalOptions
	docFlags
	Verb      string // begin, commit, revert, tree
	Text      string
	Parent    string // begin --parent N ("" = the current task; "0" = top level)
	KeepOpen  bool
	GitCommit *bool  // --git-commit given (nil: git.commit-on decides)
	Format    string // tree: "" (the tree) or "text" (for a prompt)
	All       bool   // revert: every path back, whoever changed it
}

func taskCommand(inv *invocation) *cli.Command {
	run := func(verb string) cli.ActionFunc {
		return func(c *cli.Context) error {
			o := taskOptions{globalOptions: globals(c), Verb: verb}
			switch verb {
			case "tree":
				if c.Args().Present() {
					return usageErrorf("task tree takes no arguments (got %q)", c.Args().First())
				}
				o.Format = c.String("format")
				if o.Format != "" && o.Format != "text" && o.Format != "tree" {
					return usageErrorf("--format %q: want tree or text", o.Format)
				}
			default:
				if c.NArg() != 1 {
					what := map[string]string{"begin": "GOAL", "commit": "SUMMARY", "revert": "REASON"}[verb]
					return usageErrorf("task %s takes one argument, %s (quote it)", verb, what)
				}
				o.Text, o.docFlags = c.Args().First(), docFlagsOf(c, inv)
				o.Parent, o.KeepOpen, o.GitCommit, o.All = c.String("parent"), c.Bool("keep-open"), gitCommitFlagOf(c), c.Bool("all")
			}
			return runTask(c.Context, o, inv.stdout)
		}
	}
	treeFlags := withGlobals(&cli.StringFlag{Name: "format", Usage: "`F` = tree (default, for people) or text (compact plain text for an agent's prompt)"})
	return &cli.Command{
		Name:  "task",
		Usage: "a stack of tasks: begin, commit with a summary, or revert with a reason",
		Description: `An agent works in tasks: 'snap task begin GOAL' pushes a task (ids 1, 2, 3...
per session, never reused) and records a task-begin checkpoint; 'snap task
commit SUMMARY' completes the current task and records a task-commit
checkpoint; 'snap task revert REASON' abandons it: the working tree goes back
to the task's task-begin checkpoint (after a safety checkpoint, so 'snap
undo' brings the attempt back; the conversation is left as it is) and the
task is recorded as reverted. 'snap task' shows the stack and the tree.

The stack is the state document "tasks" of every checkpoint and travels with
the session head: a rewind or undo that moves the head moves the stack too.
Each session has its own stack. Tasks nest at most tasks.max-depth deep
(default 3; 'snap config tasks.max-depth N').

Task checkpoints re-read the session's state documents from the paths they
were last recorded from (the transcript has grown since), unless given with
--conversation or --state.

Examples:
   snap task begin "add module Y"
   snap task begin "check dependency versions"
   snap task commit "all dependencies pinned"
   snap task revert "the approach breaks the build"
   snap task
   snap task --format text --json`,
		Flags:  treeFlags,
		Action: run("tree"),
		Subcommands: []*cli.Command{
			{
				Name: "begin", Usage: "push a new task and record a task-begin checkpoint", ArgsUsage: "GOAL",
				Description: `Pushes a task with GOAL onto the session's stack: a child of the current
task, or of the open task --parent N names (0: top level). A task deeper than
tasks.max-depth (default 3) is refused: split the work. The task-begin
checkpoint records the working tree as the task starts; 'snap task revert'
returns to it. --json answers {task, checkpoint, stack}.`,
				Flags: withGlobals(append(docCLIFlags(),
					&cli.StringFlag{Name: "parent", Usage: "the open task `N` the new one belongs to (0: top level); default: the current task"})...),
				Action: run("begin"),
			},
			{
				Name: "commit", Usage: "complete the current task with a summary (task-commit checkpoint)", ArgsUsage: "SUMMARY",
				Description: `Completes the current task with SUMMARY, records a task-commit checkpoint
and pops the task; with --keep-open the summary is recorded and the task
stays current. With no open task it is a usage error (exit 2). 'snap undo'
reopens the task. --json answers {task, checkpoint, stack}.`,
				Flags: withGlobals(append(docCLIFlags(),
					&cli.BoolFlag{Name: "keep-open", Usage: "record the summary and keep the task current"}, gitCommitFlag)...),
				Action: run("commit"),
			},
			{
				Name: "revert", Usage: "abandon the current task: its files back to its begin, recorded with a reason", ArgsUsage: "REASON",
				Description: `Abandons the current task (and whatever its subtasks did): after a safety
checkpoint of the present state, the working tree goes back to the task's
task-begin checkpoint; the conversation and other state documents stay as
they are. The task is recorded as reverted with REASON in a task-revert
checkpoint and popped; tasks finished since it began are marked undone with
it, and staged edits are dropped. 'snap undo' brings the attempt (and the
staged edits) back. What another session or you changed since the task
began is kept and listed, as by 'snap rewind'; --all puts every path back.
--json answers {task, checkpoint, stack, rewind} (rewind as 'snap rewind
--json' reports it, with kept).`,
				Flags:  withGlobals(allFlag()),
				Action: run("revert"),
			},
			{Name: "tree", Usage: "show the task stack and tree (the default)", Flags: treeFlags, Action: run("tree"),
				Description: `Shows the session's tasks as a tree: ✅ committed (with the summary),
❌ reverted (with the reason), 📝 the current task, ⏳ open tasks below it.
--format text prints the stack and finished tasks as compact plain text for
an agent's next prompt. --json gives {session, checkpoint, current, stack,
tasks: [{id, goal, status, summary, reason, parent, children, begin, end,
begin_messages, end_messages, current}]} (begin and end are checkpoint ids),
plus text with --format text.`},
		},
	}
}

// taskTreeResult is the JSON answer of 'snap task': the tree, and with
// --format text the rendering an agent pastes into its prompt.
type taskTreeResult struct {
	*workflow.TaskTree
	Text string `json:"text,omitempty"`
}

func runTask(ctx context.Context, o taskOptions, out io.Writer) error {
	repo, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer repo.Close()
	flow := workflow.New(repo)
	if o.Verb == "tree" {
		tree, err := flow.Tasks(ctx, o.session(), nil)
		if err != nil {
			return err
		}
		res := taskTreeResult{TaskTree: tree}
		if o.Format == "text" {
			res.Text = tree.Prompt()
		}
		return emit(out, o.JSON, res, func(w io.Writer) error {
			if o.Format == "text" {
				_, err := io.WriteString(w, res.Text)
				return err
			}
			if len(tree.Tasks) == 0 {
				_, err := io.WriteString(w, "no tasks yet ('snap task begin GOAL' starts one)\n")
				return err
			}
			_, err := io.WriteString(w, tree.Text())
			return err
		})
	}
	docs, err := o.stateDocs(o.globalOptions)
	if err != nil {
		return err
	}
	to := workflow.TaskOptions{Session: o.session(), Text: o.Text, KeepOpen: o.KeepOpen, State: docs, All: o.All}
	if o.Parent != "" {
		n, err := strconv.Atoi(o.Parent)
		if err != nil {
			return usageErrorf("--parent %q: want a task id (0: top level)", o.Parent)
		}
		to.Parent = &n // (the workflow checks it)
	}
	var res *workflow.TaskResult
	var gitCommit *gitCommitResult
	switch o.Verb {
	case "begin":
		res, err = flow.TaskBegin(ctx, to)
	case "commit":
		// --git-commit: the files the task changed, from its task-begin
		// checkpoint (and the staged edits the commit applies).
		var begin *snap.ID
		tree, terr := flow.Tasks(ctx, o.session(), nil)
		if terr != nil {
			tree = &workflow.TaskTree{}
		}
		if tree.Current != nil {
			for _, t := range tree.Tasks {
				if t.ID == *tree.Current {
					begin = t.Begin
				}
			}
		}
		var gc *gitCommitter
		if begin == nil && tree.Current != nil && wantGitCommit(repo, o.GitCommit, "task-commit") {
			return fmt.Errorf("%w: --git-commit: task %d's task-begin checkpoint is gone (retention), so the files it changed are unknown; commit without it", snap.ErrUsage, *tree.Current)
		}
		if begin != nil {
			gc, err = newGitCommitter(ctx, repo, o.GitCommit, "task-commit", func() ([]string, error) {
				ps, err := repo.ChangedPaths(ctx, *begin, nil)
				if err != nil {
					return nil, err
				}
				st, err := flow.EditStatus(ctx, o.session())
				if err != nil {
					return nil, err
				}
				for _, c := range st.Pending {
					ps = append(ps, c.Path)
				}
				return ps, nil
			})
			if err != nil {
				return err
			}
		}
		res, err = flow.TaskCommit(ctx, to)
		if err == nil && gc != nil {
			gitCommit, err = gc.commit(ctx, *begin, res.Checkpoint, res.Task.Summary)
		}
	case "revert":
		res, err = flow.TaskRevert(ctx, to)
	}
	if err == nil {
		startAutoGC(ctx, repo)
	}
	if res == nil {
		return err
	}
	if err != nil && !errors.Is(err, snap.ErrPartial) {
		return withSafety(err, res.Rewind)
	}
	emitErr := emit(out, o.JSON, taskCommitResult{res, gitCommit}, func(w io.Writer) error {
		writeGitCommit(w, gitCommit)
		t := res.Task
		switch o.Verb {
		case "begin":
			fmt.Fprintf(w, "began task %d: %s (checkpoint %s)\n", t.ID, printable(oneLine(t.Goal)), res.Checkpoint.Short())
		case "commit":
			if t.Current {
				fmt.Fprintf(w, "task %d stays open: %s (checkpoint %s)\n", t.ID, printable(oneLine(t.Summary)), res.Checkpoint.Short())
			} else {
				fmt.Fprintf(w, "committed task %d: %s (checkpoint %s)\n", t.ID, printable(oneLine(t.Summary)), res.Checkpoint.Short())
			}
		case "revert":
			writeRewind(w, res.Rewind, o.session(), "'snap undo' brings the attempt back")
			fmt.Fprintf(w, "reverted task %d: %s (checkpoint %s)\n", t.ID, printable(oneLine(t.Reason)), res.Checkpoint.Short())
		}
		if len(res.Stack) == 0 {
			fmt.Fprintln(w, "no open task")
		} else {
			fmt.Fprintf(w, "open tasks: %s\n", joinInts(res.Stack, " > "))
		}
		return nil
	})
	if emitErr != nil {
		return emitErr
	}
	return err
}

// taskCommitResult is a task result, with the git commit --git-commit made.
type taskCommitResult struct {
	*workflow.TaskResult
	GitCommit *gitCommitResult `json:"git_commit,omitempty"`
}

func joinInts(ns []int, sep string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += sep
		}
		s += strconv.Itoa(n)
	}
	return s
}
