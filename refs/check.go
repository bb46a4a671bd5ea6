package refs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/snapcore-dev/snap/storage"
)

// Check verifies the refs directory and the op log and returns every problem
// found, nil when there is none. Damage is reported as *CorruptError
// (errors.Is ErrCorrupt): op-log records failing verification before the
// tail, seqs out of order, ref files that are not exactly 64 lowercase hex
// digits and a newline (or hold the zero id, or are not regular files),
// files and directories under refs/ with illegal names. Conditions that are
// not damage are reported as *Warning: lock files under refs/ (a writer in
// progress or a crashed one; a stale lock makes writers of that ref fail with
// ErrBusy until removed) and a torn op-log tail. I/O failures are returned
// as they are. Check does not look at objects: whether refs point at
// existing objects is for the object-level fsck.
//
// Check takes no lock; run concurrently with writers it may report their
// lock files and an append in progress as warnings.
func (s *Store) Check() []error {
	var probs []error

	data, err := s.readLog()
	switch {
	case err == nil:
		scan := parseLog(data)
		probs = append(probs, scan.corrupt...)
		if scan.torn != "" {
			probs = append(probs, &Warning{Path: logName,
				Reason: fmt.Sprintf("torn tail at offset %d (%s), left by a crash during an append; the next append removes it", scan.tailOff, scan.torn)})
		}
	case !errors.Is(err, fs.ErrNotExist):
		probs = append(probs, fmt.Errorf("refs: check: %w", err))
	}

	err = s.be.WalkRefs("", func(name string, isDir bool, err error) error {
		if err != nil {
			probs = append(probs, fmt.Errorf("refs: check: %w", err))
			return nil
		}
		shown := "refs/" + name
		switch {
		case isDir:
			if reason := componentProblem(name[strings.LastIndexByte(name, '/')+1:]); reason != "" {
				probs = append(probs, &CorruptError{Path: shown, Reason: "directory with an illegal ref name: " + reason})
				return fs.SkipDir
			}
		case strings.HasSuffix(name, ".lock") && ValidName(strings.TrimSuffix(name, ".lock")) == nil:
			probs = append(probs, &Warning{Path: shown,
				Reason: "lock file: a writer is updating this ref, or crashed while doing so (remove it if no snap process is running)"})
		case ValidName(name) != nil:
			probs = append(probs, &CorruptError{Path: shown, Reason: "file with an illegal ref name"})
		default:
			_, err := s.read(name)
			switch {
			case err == nil, errors.Is(err, errNoRef): // errNoRef: deleted meanwhile
			case errors.Is(err, ErrCorrupt):
				probs = append(probs, err)
			default:
				probs = append(probs, fmt.Errorf("refs: check: %w", err))
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		probs = append(probs, &CorruptError{Path: "refs", Reason: "refs directory is missing"})
		err = nil
	case errors.Is(err, storage.ErrNotDir):
		probs = append(probs, &CorruptError{Path: "refs", Reason: "not a directory"})
		err = nil
	}
	if err != nil {
		probs = append(probs, fmt.Errorf("refs: check: %w", err))
	}
	return probs
}
