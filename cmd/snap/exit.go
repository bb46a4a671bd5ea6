package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
)

// Exit codes (design §6). This file is the one place errors become codes.
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitPartial      = 3
	exitNoCheckpoint = 4
	exitNoStore      = 10
	exitBusy         = 11
	exitCorrupt      = 12
	exitInterrupted  = 130 // 128 + SIGINT, as a shell reports a command Ctrl-C stopped
)

// errCorruptFound is returned by fsck when it finds damage; the report has
// already been printed.
var errCorruptFound = errors.New("store corrupt")

// internalError is a panic recovered in run: a bug in snap, reported as an
// error (exit 1, code "internal_error") instead of a crash. The stack goes to
// stderr only in text mode, after the message.
type internalError struct {
	value any
	stack []byte
}

func (e *internalError) Error() string {
	return fmt.Sprintf("internal error: %v (a bug in snap: please report it with the command that caused it)", e.value)
}

// usageError is a malformed command line: unknown flag, missing or extra
// argument, bad value.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// onUsageError turns urfave/cli's flag-parsing errors into usage errors.
func onUsageError(c *cli.Context, err error, isSubcommand bool) error {
	name := "snap"
	if c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	return usageErrorf("%v (see '%s --help')", err, name)
}

// classification maps an error to an exit code and a short snake_case code
// for the JSON error document. The first matching row wins: a store that
// cannot be read is reported as such before what the command was trying
// to do.
var classification = []struct {
	is   func(error) bool
	exit int
	code string
}{
	// Ctrl-C (or SIGTERM, or a hang-up): whatever the command was doing,
	// it stopped, cleaning up after itself.
	{isErr(context.Canceled), exitInterrupted, "interrupted"},
	{isErr(snap.ErrNoStore), exitNoStore, "no_store"},
	{isErr(snap.ErrOtherProject), exitNoStore, "other_project"},
	{isNoGitRepo, exitNoStore, "no_git_repo"},
	{isErr(snap.ErrBusy), exitBusy, "store_busy"},
	{isErr(errCorruptFound), exitCorrupt, "store_corrupt"},
	{isErr(snap.ErrCorrupt), exitCorrupt, "store_corrupt"},
	{isErr(snap.ErrRefsCorrupt), exitCorrupt, "store_corrupt"},
	// An object a ref or checkpoint names is missing: the store is damaged
	// (an unknown id given by the user is ErrNoCheckpoint, not this).
	{isErr(snap.ErrObjectMissing), exitCorrupt, "object_missing"},
	{isErr(snap.ErrPartial), exitPartial, "partial"},
	{isErr(snap.ErrNoCheckpoint), exitNoCheckpoint, "no_checkpoint"},
	{isErr(snap.ErrNoSession), exitNoCheckpoint, "no_session"},
	{isErr(snap.ErrNoPath), exitNoCheckpoint, "no_path"},
	// An ambiguous id prefix names no single checkpoint: 4, like an unknown
	// one; the message says to give more digits.
	{isErr(snap.ErrAmbiguous), exitNoCheckpoint, "ambiguous_ref"},
	{isUsage, exitUsage, "usage"},
	{isErr(snap.ErrUsage), exitUsage, "usage"},
	{isErr(snap.ErrBadName), exitUsage, "usage"},
	{isErr(snap.ErrNothingToUndo), exitError, "nothing_to_undo"},
	{isErr(snap.ErrNothingToRedo), exitError, "nothing_to_redo"},
	{isErr(snap.ErrConflict), exitError, "conflict"},
	{isInternal, exitError, "internal_error"},
}

func isInternal(err error) bool {
	var ie *internalError
	return errors.As(err, &ie)
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func isUsage(err error) bool {
	var u *usageError
	if errors.As(err, &u) {
		return true
	}
	// urfave/cli's own errors ("No help topic for ...") carry an exit code
	// of their choosing; they are all about the command line.
	var ec cli.ExitCoder
	return errors.As(err, &ec)
}

// classify returns the exit code and the JSON error code for err.
func classify(err error) (int, string) {
	if err == nil {
		return exitOK, ""
	}
	for _, c := range classification {
		if c.is(err) {
			return c.exit, c.code
		}
	}
	return exitError, "error"
}

// reportError writes err to w, as {"error":{"code","message"}} when asJSON,
// else as "snap: message", and returns the exit code.
func reportError(w io.Writer, asJSON bool, err error) int {
	exit, code := classify(err)
	msg := withAdvice(err)
	if asJSON {
		doc := map[string]any{"error": map[string]string{"code": code, "message": msg}}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(doc)
	} else {
		fmt.Fprintf(w, "snap: %s\n", msg)
		var ie *internalError
		if errors.As(err, &ie) {
			w.Write(ie.stack)
		}
	}
	return exit
}
