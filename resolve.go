package snap

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Resolve turns a REF into a checkpoint id. Forms, tried in this order:
//
//	@            the session head
//	@~N          N parents back from the head
//	#N           the N-th checkpoint of the session, as log numbers them (1 = oldest)
//	msg:ID       the latest checkpoint of the session with that message id
//	LABEL        a label
//	HEX          a full id or a unique prefix of at least 6 hex digits
//
// It returns an error wrapping ErrNoCheckpoint when nothing matches, and
// objects.ErrAmbiguous for an ambiguous prefix.
func (r *Repo) Resolve(ctx context.Context, session, ref string) (objects.ID, error) {
	return r.resolve(r.history(), session, ref)
}

func (r *Repo) resolve(h *history, session, ref string) (objects.ID, error) {
	session, err := sessionName(session)
	if err != nil {
		return objects.ID{}, err
	}
	switch {
	case ref == "" || ref == "@" || ref == "HEAD":
		id, ck, err := r.head(session)
		if err != nil {
			return id, err
		}
		if ck == nil {
			return id, fmt.Errorf("%w: session %q has no checkpoints yet", ErrNoCheckpoint, session)
		}
		return id, nil
	case strings.HasPrefix(ref, "@~"):
		n, err := strconv.Atoi(ref[2:])
		if err != nil || n < 0 {
			return objects.ID{}, fmt.Errorf("%w: bad REF %q (want @~N)", ErrUsage, ref)
		}
		id, err := r.resolve(h, session, "@")
		if err != nil {
			return id, err
		}
		for i := 0; i < n; i++ {
			ck, err := r.loadCheckpoint(id)
			if err != nil {
				return id, fmt.Errorf("%s: %w", ref, err)
			}
			if len(ck.Parents) == 0 {
				return objects.ID{}, fmt.Errorf("%w: %s goes back past the first checkpoint of session %q", ErrNoCheckpoint, ref, session)
			}
			id = ck.Parents[0]
		}
		if _, err := r.loadCheckpoint(id); err != nil {
			return id, fmt.Errorf("%s: %w", ref, err)
		}
		return id, nil
	case strings.HasPrefix(ref, "#"):
		n, err := strconv.Atoi(ref[1:])
		if err != nil || n < 1 {
			return objects.ID{}, fmt.Errorf("%w: bad REF %q (want #N, N >= 1)", ErrUsage, ref)
		}
		list, err := r.sessionCheckpoints(h, session)
		if err != nil {
			return objects.ID{}, err
		}
		if n > list.Len() {
			return objects.ID{}, fmt.Errorf("%w: session %q has %s, no #%d", ErrNoCheckpoint, session, countOf(list.Len(), "checkpoint"), n)
		}
		e := list.At(n - 1)
		if e.expired {
			return objects.ID{}, fmt.Errorf("#%d of session %q: %w", n, session, ErrExpired)
		}
		return e.ID, nil
	case strings.HasPrefix(ref, "msg:"):
		if ref == "msg:" {
			return objects.ID{}, fmt.Errorf("%w: bad REF %q (want msg:ID)", ErrUsage, ref)
		}
		if id, ok, err := r.messageCheckpoint(h, session, ref[4:]); ok || err != nil {
			return id, err
		}
		// Not this session's: a hook records in the agent's own session,
		// so say which session has it (never move to another session's
		// checkpoint unasked).
		hint := ""
		if others, err := r.sessions(h); err == nil {
			var has []string
			for _, o := range others {
				if o.Name == session {
					continue
				}
				if _, ok, _ := r.messageCheckpoint(h, o.Name, ref[4:]); ok {
					has = append(has, o.Name)
				}
			}
			if len(has) > 0 {
				hint = fmt.Sprintf("; session %s has it: add -s %s (the 'session' argument over MCP)", strings.Join(has, ", "), has[0])
			}
		}
		return objects.ID{}, fmt.Errorf("%w: no checkpoint of session %q has message id %q%s", ErrNoCheckpoint, session, ref[4:], hint)
	}
	// A full id is an id, whatever labels exist (one made before label
	// names were checked may look like one).
	if len(ref) == 2*objects.IDSize && isHex(ref) {
		if id, err := objects.ParseID(strings.ToLower(ref)); err == nil {
			if t, ok := r.objects.TypeOf(id); ok && t == objects.TypeCheckpoint {
				return id, nil
			}
		}
	}
	if refs.ValidComponent(ref) == nil {
		id, err := r.refs.Get(refs.Label(ref))
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, refs.ErrNotFound) {
			return id, err
		}
	}
	if len(ref) >= 6 && isHex(ref) {
		if len(ref) == 2*objects.IDSize {
			if id, err := objects.ParseID(strings.ToLower(ref)); err == nil && h.isExpired(id) {
				return objects.ID{}, fmt.Errorf("checkpoint %s: %w", id.Short(), ErrExpired)
			}
		}
		ids := r.objects.FindPrefix(ref, objects.TypeCheckpoint)
		if len(ids) == 0 {
			r.objects.Reload()
			ids = r.objects.FindPrefix(ref, objects.TypeCheckpoint)
		}
		switch len(ids) {
		case 1:
			return ids[0], nil
		case 0:
		default:
			return objects.ID{}, fmt.Errorf("%w: %q matches %d checkpoints", objects.ErrAmbiguous, ref, len(ids))
		}
	}
	return objects.ID{}, fmt.Errorf("%w: %q is not a checkpoint id, label or REF of session %q", ErrNoCheckpoint, ref, session)
}

// loadCheckpoint reads checkpoint id and is the one place that decides what
// its absence means: a checkpoint retention removed is ErrExpired (exit 4,
// not damage); any other missing or unreadable checkpoint is the store's
// error (objects.ErrNotFound or ErrCorrupt: damage, exit 12).
func (r *Repo) loadCheckpoint(id objects.ID) (*objects.Checkpoint, error) {
	ck, err := r.objects.ReadCheckpoint(id)
	if errors.Is(err, objects.ErrNotFound) && r.history().isExpired(id) {
		return nil, fmt.Errorf("checkpoint %s: %w", id.Short(), ErrExpired)
	}
	return ck, err
}

// countOf is "1 checkpoint", "2 checkpoints".
func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// messageCheckpoint is the latest checkpoint of session recorded with
// message id msg (false when there is none).
func (r *Repo) messageCheckpoint(h *history, session, msg string) (objects.ID, bool, error) {
	list, err := r.sessionCheckpoints(h, session)
	if err != nil {
		return objects.ID{}, false, err
	}
	// An unchanged checkpoint records its message id in the op log
	// (OpMessage): the latest of either kind of record wins.
	x, err := h.sessionIndex(session)
	if err != nil {
		return objects.ID{}, false, err
	}
	latest, when := x.message(msg)
	for i := list.Len() - 1; i >= 0; i-- {
		e := list.At(i)
		ck, err := r.load(e)
		if err != nil {
			return objects.ID{}, false, err
		}
		if ck != nil && ck.MessageID == msg {
			if !latest.IsZero() && when > ck.Time {
				break
			}
			return e.ID, true, nil
		}
	}
	if !latest.IsZero() {
		if _, err := r.loadCheckpoint(latest); err != nil {
			return objects.ID{}, false, fmt.Errorf("msg:%s: %w", msg, err)
		}
		return latest, true, nil
	}
	return objects.ID{}, false, nil
}
