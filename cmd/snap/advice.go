package main

import (
	"errors"
	"fmt"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

// The CLI's words for the engine's advice (snap.Advice): the engine names
// an operation, the CLI the command that runs it. mcp/advice.go words the
// same advice as tools.

// adviceText is the sentence that follows an error: what resolves it.
func adviceText(a snap.Advice) string {
	arg := func(placeholder string) string {
		if a.Arg != "" {
			return a.Arg
		}
		return placeholder
	}
	switch a.Do {
	case snap.DoInit:
		return "run 'snap init'"
	case snap.DoInitOwnStore:
		return "give this project a store of its own (snap init without --store or SNAP_STORE)"
	case snap.DoUndo:
		return fmt.Sprintf("'snap -s %s undo' undoes its last operation", arg("SESSION"))
	case snap.DoRewind:
		return fmt.Sprintf("'snap rewind %s'", arg("REF"))
	case snap.DoRemoveSession:
		return fmt.Sprintf("'snap session rm %s' deletes it", arg("SESSION"))
	case snap.DoStateOut:
		return "use --state-out DIR"
	case snap.DoTaskBegin:
		return "'snap task begin GOAL' begins one"
	case snap.DoTaskParent:
		return "'snap task begin GOAL --parent N' begins it higher up"
	case snap.DoEditWrite:
		return "'snap edit write' creates a file"
	case snap.DoEditReplace:
		return "'snap edit replace' stages one"
	case snap.DoEditDelete:
		return "'snap edit delete PATH' stages a deletion"
	case snap.DoEditDrop:
		if a.Arg != "" {
			return fmt.Sprintf("'snap edit drop %s' drops it", a.Arg)
		}
		return "'snap edit drop LETTER' drops a pending change"
	case snap.DoEditRevert:
		return "'snap edit revert REASON' drops the pending changes"
	case snap.DoEditStatus:
		return "'snap edit status' shows them"
	case snap.DoEditPreview:
		return "'snap edit preview' shows them"
	case snap.DoEditCommit:
		return "'snap edit commit SUMMARY' writes them"
	case snap.DoEditMatch:
		return fmt.Sprintf("repeat the call with --match LETTER (e.g. --match %s)", arg("A"))
	case snap.DoEditMore:
		return fmt.Sprintf("%s more matches are not shown (--all-matches lists up to 26, --after ANCHOR narrows)", arg("some"))
	}
	return string(a.Do)
}

// adviceCommand is the command line an answer's next actions list.
func adviceCommand(a snap.Advice) string {
	switch a.Do {
	case snap.DoEditPreview:
		return "snap edit preview"
	case snap.DoEditCommit:
		return "snap edit commit SUMMARY"
	case snap.DoEditDrop:
		return "snap edit drop LETTER"
	case snap.DoEditRevert:
		return "snap edit revert REASON"
	case snap.DoEditReplace:
		return "snap edit replace PATH --old TEXT --new TEXT"
	case snap.DoEditWrite:
		return "snap edit write PATH"
	case snap.DoEditDelete:
		return "snap edit delete PATH"
	case snap.DoEditMatch:
		return "snap edit replace PATH --old TEXT --new TEXT --match LETTER"
	}
	return adviceText(a)
}

// withAdvice is err's message followed by its advice in the CLI's words
// (an error with no store advises 'snap init'), each said once.
func withAdvice(err error) string {
	advice := snap.AdviceOf(err)
	if len(advice) == 0 && errors.Is(err, snap.ErrNoStore) {
		advice = []snap.Advice{{Do: snap.DoInit}}
	}
	return err.Error() + snap.AdviceWords(advice, adviceText)
}

// forCLI is an edit answer with its hint completed and its next actions
// listed as commands.
func forCLI(ans *workflow.EditAnswer) *workflow.EditAnswer {
	a := *ans
	a.Hint += snap.AdviceWords(ans.Advice, adviceText)
	a.NextActions = []string{}
	for _, n := range ans.Next {
		a.NextActions = append(a.NextActions, adviceCommand(n))
	}
	return &a
}
