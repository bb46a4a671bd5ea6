package mcp

import (
	"fmt"

	snap "github.com/snapcore-dev/snap"
)

// The MCP server's words for the engine's advice (snap.Advice): the model
// reading an answer calls tools, not commands (cmd/snap/advice.go words
// the same advice for the CLI).

// adviceText is the sentence that follows an error or a hint.
func adviceText(a snap.Advice) string {
	switch a.Do {
	case snap.DoEditRevert, snap.DoEditDrop:
		return "memo_revert drops the pending changes"
	case snap.DoEditReplace:
		return "memo_replace stages one"
	case snap.DoEditWrite:
		return "write the file yourself, then checkpoint"
	case snap.DoEditStatus, snap.DoEditPreview:
		return "memo_preview shows them"
	case snap.DoEditCommit:
		return "memo_commit writes them"
	case snap.DoTaskBegin:
		return "memo_begin_task begins one"
	case snap.DoTaskParent:
		return "memo_begin_task with parent_task_id set to a task higher up begins it there"
	case snap.DoEditMatch:
		if a.Arg != "" {
			return fmt.Sprintf("repeat the call with match_id set to a candidate's letter (e.g. %s)", a.Arg)
		}
		return "repeat the call with match_id set to a candidate's letter"
	case snap.DoEditMore:
		return fmt.Sprintf("%s more matches are not shown (show_all_matches lists up to 26, search_after narrows)", a.Arg)
	case snap.DoUndo:
		return "undo undoes the session's last operation"
	case snap.DoRewind:
		if a.Arg != "" {
			return "rewind to " + a.Arg + " returns there"
		}
		return "rewind to a checkpoint both histories have"
	case snap.DoStateOut:
		return "ask the user to restore the state documents into a directory of their choice"
	case snap.DoInit, snap.DoInitOwnStore, snap.DoRemoveSession:
		return "ask the user to run snap in a terminal to fix the store"
	}
	return string(a.Do)
}

// withAdvice is err's message followed by its advice in tool words, each
// said once.
func withAdvice(err error) string {
	return err.Error() + snap.AdviceWords(snap.AdviceOf(err), adviceText)
}
