package snap

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// SessionInfo describes a session.
type SessionInfo struct {
	Name        string     `json:"name"`
	Head        objects.ID `json:"head"`
	Checkpoints int        `json:"checkpoints"`
	Updated     time.Time  `json:"updated"`
	Archived    bool       `json:"archived"`
	// Agent is the program that last took a checkpoint of the session for
	// its agent (Checkpoint.Agent of the head or its nearest first-parent
	// ancestor that names one, within 32); "" when none did.
	Agent string `json:"agent,omitempty"`
}

// Sessions lists sessions (active first, then archived), by name, with the
// number of checkpoints log lists for each (those retention expired are
// not counted).
func (r *Repo) Sessions(ctx context.Context) ([]SessionInfo, error) {
	return r.sessions(r.history())
}

func (r *Repo) sessions(h *history) ([]SessionInfo, error) {
	out := []SessionInfo{}
	for _, kind := range []string{refs.SessionsPrefix, refs.ArchivePrefix} {
		list, err := r.refs.List(kind)
		if err != nil && len(list) == 0 && !errors.Is(err, refs.ErrCorrupt) {
			return nil, err
		}
		for _, ref := range list {
			name, archived, ok := refs.SessionOf(ref.Name)
			if !ok {
				continue
			}
			info := SessionInfo{Name: name, Head: ref.ID, Archived: archived}
			// Counted as log lists them: every checkpoint of the session
			// that retention has not expired.
			if list, err := r.sessionCheckpoints(h, name); err == nil {
				for i := range list.Len() {
					if !list.At(i).expired {
						info.Checkpoints++
					}
				}
			}
			if ck, err := r.objects.ReadCheckpoint(ref.ID); err == nil {
				info.Updated = ck.When()
				for i := 0; ck != nil && i < 32; i++ {
					if ck.Agent != "" {
						info.Agent = ck.Agent
						break
					}
					if len(ck.Parents) == 0 {
						break
					}
					ck, _ = r.objects.ReadCheckpoint(ck.Parents[0])
				}
			}
			out = append(out, info)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Archived != out[j].Archived {
			return !out[i].Archived
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Label names a checkpoint (moving the label if it exists).
func (r *Repo) Label(ctx context.Context, session, ref, name string) (objects.ID, error) {
	session, err := sessionName(session)
	if err != nil {
		return objects.ID{}, err
	}
	if err := validLabel(name); err != nil {
		return objects.ID{}, err
	}
	t, err := r.begin(ctx, writer)
	if err != nil {
		return objects.ID{}, err
	}
	defer t.end()
	id, err := r.Resolve(ctx, session, ref)
	if err != nil {
		return id, err
	}
	old, err := r.refs.Get(refs.Label(name))
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return id, err
	}
	if old == id {
		return id, nil
	}
	return id, t.commit(ctx, &refs.Op{Kind: string(OpLabel), Session: session,
		Refs: []refs.RefChange{{Name: refs.Label(name), Old: old, New: id}}})
}

// ArchiveSession moves a session out of the active list (its checkpoints
// stay until retention expires them). RemoveSession deletes its head; both
// are recorded in the op log.
//
// Both are undoable: 'snap undo' in that session puts the session back.
func (r *Repo) ArchiveSession(ctx context.Context, session string) error {
	return r.moveSession(ctx, session, refs.ArchivedHead(session), OpSessionArchive)
}

// RemoveSession deletes a session's head ref (an active session's, else an
// archived one's).
func (r *Repo) RemoveSession(ctx context.Context, session string) error {
	return r.moveSession(ctx, session, "", OpSessionRemove)
}

// checkNotArchived refuses to start a session whose name an archived
// session holds: two sessions of one name would be listed twice and
// could not both be archived.
func (r *Repo) checkNotArchived(session string) error {
	if _, err := r.refs.Get(refs.ArchivedHead(session)); err == nil {
		return Advise(fmt.Errorf("%w: session %q is archived; use another session name", ErrUsage, session),
			Advice{Do: DoUndo, Arg: session}, Advice{Do: DoRemoveSession, Arg: session})
	}
	return nil
}

func (r *Repo) moveSession(ctx context.Context, session, to string, kind OpKind) error {
	session, err := sessionName(session)
	if err != nil {
		return err
	}
	t, err := r.begin(ctx, writer)
	if err != nil {
		return err
	}
	defer t.end()
	from := refs.SessionHead(session)
	id, err := r.refs.Get(from)
	if errors.Is(err, refs.ErrNotFound) {
		if to == "" { // removing an archived session
			from = refs.ArchivedHead(session)
			id, err = r.refs.Get(from)
		} else if _, aerr := r.refs.Get(to); aerr == nil {
			return fmt.Errorf("%w: session %q is archived already", ErrUsage, session)
		}
	}
	if errors.Is(err, refs.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNoSession, session)
	}
	if err != nil {
		return err
	}
	if to != "" {
		if _, err := r.refs.Get(to); err == nil {
			return fmt.Errorf("%w: session %q has an archived copy already: remove that first (removing the name removes the active session first, so archive or rename this one's work instead)", ErrUsage, session)
		}
	}
	op := &refs.Op{Kind: string(kind), Session: session}
	if to != "" {
		op.Refs = append(op.Refs, refs.RefChange{Name: to, New: id})
	}
	op.Refs = append(op.Refs, refs.RefChange{Name: from, Old: id})
	return t.commit(ctx, op)
}
