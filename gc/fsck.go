package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/storage"
)

// Severity says whether a problem is damage.
type Severity string

// Severities. Only errors make a store corrupt.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding of Fsck (or of the reachability walk).
type Problem struct {
	Severity Severity `json:"severity"`
	// Object is the id (64 hex digits) of the object at fault: the one
	// missing or corrupt, or the one whose content is inconsistent.
	Object string `json:"object,omitempty"`
	// Path is the file at fault, relative to the store directory and
	// slash-separated: "packs/<name>.pack", "refs/labels/x", "oplog", "tmp/pack-1".
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	s := string(p.Severity) + ":"
	if p.Path != "" {
		s += " " + p.Path + ":"
	}
	if p.Object != "" {
		s += " " + p.Object + ":"
	}
	return s + " " + p.Message
}

// FsckReport is what Fsck checked and found.
type FsckReport struct {
	Objects     int       `json:"objects"`     // distinct objects in the indexed packs
	Packs       int       `json:"packs"`       // pack files, those that cannot be indexed included
	Checkpoints int       `json:"checkpoints"` // reachable checkpoints read and decoded
	Refs        int       `json:"refs"`        // refs read
	Ops         int       `json:"ops"`         // verified op-log records
	Problems    []Problem `json:"problems"`    // never nil: [] in JSON when clean
}

// Corrupt reports whether any problem is an error (CLI exit 12).
func (r *FsckReport) Corrupt() bool {
	for _, p := range r.Problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Fsck checks the store (see doc.go for the list) and reports every problem
// it finds. With full, it also reads and re-hashes every record of every
// pack. It returns an error only when it could not run (ctx done); damage is
// reported in the FsckReport. It changes nothing in the store except
// creating gc.lock, which it locks shared so that it never runs beside gc.
func Fsck(ctx context.Context, st *objects.Store, rs *refs.Store, full bool) (*FsckReport, error) {
	lock, err := storage.LockReader(ctx, rs.Locks())
	if err != nil {
		return nil, err
	}
	if lock != nil {
		defer lock.Close()
	}
	rep := &FsckReport{Problems: []Problem{}}
	expired, eerr := rs.Expired()
	w := newWalker(ctx, st, expired)
	if eerr != nil {
		w.errorf(objects.ID{}, "expired", "list of expired checkpoints is damaged: %v", eerr)
	}
	if err := st.Reload(); err != nil {
		w.errorf(objects.ID{}, objects.PacksDir, "cannot list packs: %v", err)
	}
	if err := st.CheckIndexes(); err != nil {
		w.errorf(objects.ID{}, objects.PacksDir, "cannot check pack indexes: %v", err)
	}
	w.packsBroken = len(st.LoadErrors()) > 0

	// Packs that cannot be indexed.
	packs := st.PackInfo()
	loadErrs := st.LoadErrors()
	rep.Packs = len(packs) + len(loadErrs)
	rep.Objects = st.Stats().Objects
	for _, name := range sortedKeys(loadErrs) {
		w.errorf(objects.ID{}, objects.PacksDir+"/"+name, "pack cannot be indexed, its objects are missing: %v", loadErrs[name])
	}

	// Refs and op log, as files.
	for _, err := range rs.Check() {
		var warn *refs.Warning
		var ce *refs.CorruptError
		switch {
		case errors.As(err, &warn):
			w.add(SeverityWarning, objects.ID{}, warn.Path, warn.Reason)
		case errors.As(err, &ce):
			msg := ce.Reason
			if ce.Line > 0 {
				msg = fmt.Sprintf("line %d (offset %d): %s", ce.Line, ce.Offset, ce.Reason)
			}
			w.errorf(objects.ID{}, ce.Path, "%s", msg)
		default:
			w.errorf(objects.ID{}, "", "%v", err)
		}
	}
	list, err := rs.List("")
	if err != nil && !errors.Is(err, refs.ErrCorrupt) { // damaged refs: reported by Check
		w.errorf(objects.ID{}, "refs", "cannot list refs: %v", err)
	}
	rep.Refs = len(list)
	ops, err := rs.LogOps()
	if err != nil && !errors.Is(err, refs.ErrCorrupt) { // damaged records: reported by Check
		w.errorf(objects.ID{}, "oplog", "cannot read the op log: %v", err)
	}
	rep.Ops = len(ops)

	// Roots: each must name a checkpoint. A bad ref is reported per ref; a
	// bad op-log id once, with every op naming it.
	for _, r := range list {
		w.rootCheck(r.ID, "refs/"+r.Name, "ref refs/"+r.Name)
	}
	var opOrder []objects.ID
	opUses := map[objects.ID][]string{}
	for _, op := range ops {
		for i, id := range opIDs(op) {
			if id.IsZero() || expired[id] {
				continue
			}
			if opUses[id] == nil {
				opOrder = append(opOrder, id)
			}
			opUses[id] = append(opUses[id], fmt.Sprintf("op %d %s", op.Seq, opField(op, i)))
		}
	}
	for _, id := range opOrder {
		w.rootCheck(id, "oplog", "op log ("+summarize(opUses[id])+")")
	}
	if err := w.run(); err != nil {
		return nil, err
	}
	rep.Checkpoints = w.checkpoints

	// Leftovers.
	if rs.JournalPending() {
		w.add(SeverityWarning, objects.ID{}, refs.JournalName, "a rewind, undo or redo was interrupted; the next snap command that writes completes it")
	}
	w.strays(objects.TmpDir, func(name string, isPack bool) string {
		return "temporary file: a writer in progress, or one that crashed; gc removes it after the grace period"
	})
	w.strays(objects.PacksDir, func(name string, isPack bool) string {
		if isPack {
			return ""
		}
		return "not a pack file; snap ignores it"
	})

	if full {
		if err := w.verifyPacks(packs); err != nil {
			return nil, err
		}
	}
	rep.Problems = append(rep.Problems, w.probs...)
	return rep, nil
}

// rootCheck checks that a root names a checkpoint and queues it; a missing
// or mistyped root is reported against path (the ref or op log).
func (w *walker) rootCheck(id objects.ID, path, ref string) {
	t, ok := w.st.TypeOf(id)
	switch {
	case !ok:
		w.gone[id] = true // reported here; not again by the walk
		if w.packsBroken {
			w.incomplete = true
		}
		w.errorf(id, path, "%s names a missing checkpoint", ref)
	case t != objects.TypeCheckpoint:
		w.errorf(id, path, "%s names a %s, not a checkpoint", ref, t)
		w.root(id, ref)
	default:
		w.checkpoint(id, ref)
	}
}

// opField names the i-th id of opIDs(op).
func opField(op refs.Op, i int) string {
	switch i {
	case 0:
		return "checkpoint"
	case 1:
		return "target"
	case 2:
		return "safety"
	}
	if k := i - 3 - 2*len(op.Refs); k >= 0 {
		return fmt.Sprintf("checkpoints[%d]", k)
	}
	rc := op.Refs[(i-3)/2]
	if (i-3)%2 == 0 {
		return rc.Name + " old"
	}
	return rc.Name + " new"
}

// summarize joins the first few uses and counts the rest.
func summarize(uses []string) string {
	const max = 5
	if len(uses) <= max {
		return strings.Join(uses, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(uses[:max], ", "), len(uses)-max)
}

// strays reports every entry of the store subdirectory dir for which why
// returns a reason, as a warning.
func (w *walker) strays(dir string, why func(name string, isPack bool) string) {
	if w.st.Dir() == "" {
		return // a store not on disk (storage/memstore) has no directories to stray into
	}
	des, err := os.ReadDir(filepath.Join(w.st.Dir(), dir))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.errorf(objects.ID{}, dir, "cannot list: %v", err)
		}
		return
	}
	for _, de := range des {
		isPack := strings.HasSuffix(de.Name(), ".pack") && de.Type().IsRegular()
		if reason := why(de.Name(), isPack); reason != "" {
			w.add(SeverityWarning, objects.ID{}, dir+"/"+de.Name(), reason)
		}
	}
}

// verifyPacks re-hashes every record of every indexed pack (fsck --full).
// Copies the walk already reported as unreadable are not reported twice.
func (w *walker) verifyPacks(packs []objects.PackInfo) error {
	seen := map[badCopy]bool{}
	for _, c := range w.corrupt {
		seen[c] = true
	}
	for _, p := range packs {
		err := w.st.VerifyPack(p.Name, func(info objects.ObjectInfo, err error) error {
			if err := w.tick(); err != nil {
				return err
			}
			if err == nil || seen[badCopy{info.ID, info.Pack}] {
				return nil
			}
			state := "unreachable"
			if _, ok := w.reach[info.ID]; ok {
				state = "reachable"
			}
			w.errorf(info.ID, objects.PacksDir+"/"+info.Pack, "%s %s (at offset %d) is corrupt: %v", state, info.Type, info.Offset, err)
			return nil
		})
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err != nil {
			w.errorf(objects.ID{}, objects.PacksDir+"/"+p.Name, "cannot verify pack: %v", err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
