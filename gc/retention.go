package gc

import (
	"time"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// Policy says which checkpoints retention keeps. A checkpoint is kept if
// any rule keeps it:
//
//   - it is among the last KeepLast checkpoints of its session (in the
//     order they were recorded, abandoned branches included);
//   - it was recorded less than KeepWithin ago;
//   - an operation less than KeepWithin old names it (so recent operations
//     stay undoable);
//   - a ref names it: a label, a session head, the head of an archived
//     session that has not expired.
//
// A session archived more than ArchivedExpire ago loses its head ref and
// every checkpoint not kept by a label. Everything else is expired: listed
// in the store's expired file, then collected like any unreachable object.
type Policy struct {
	KeepLast       int
	KeepWithin     time.Duration
	ArchivedExpire time.Duration
}

// DefaultPolicy is what a store uses when nothing is configured: an agent
// session of a few hours keeps everything, a long one its last 50 steps,
// and nothing younger than a week is ever expired.
var DefaultPolicy = Policy{KeepLast: 50, KeepWithin: 7 * 24 * time.Hour, ArchivedExpire: 7 * 24 * time.Hour}

// expiry is what a policy decides at one moment.
type expiry struct {
	expire      []objects.ID // checkpoints to expire now
	kept        int          // checkpoints of the op log kept
	dropArchive []refs.Ref   // archive heads of sessions past ArchivedExpire
}

// planExpiry applies p to the op log and refs at now. alreadyExpired
// checkpoints are neither kept nor expired again.
func planExpiry(p Policy, ops []refs.Op, list []refs.Ref, alreadyExpired map[objects.ID]bool, now time.Time) expiry {
	var e expiry
	within := now.Add(-p.KeepWithin)
	archivedAt := map[string]time.Time{}
	for _, op := range ops {
		switch op.Kind {
		case "session-archive":
			archivedAt[op.Session] = op.Time
		case "session-rm":
			delete(archivedAt, op.Session)
		}
	}
	keep := map[objects.ID]bool{}
	for _, r := range list {
		if session, ok := archivedSession(r.Name); ok {
			if t, ok := archivedAt[session]; ok && t.Before(now.Add(-p.ArchivedExpire)) {
				e.dropArchive = append(e.dropArchive, r)
				continue
			}
		}
		keep[r.ID] = true
	}
	// Each session's checkpoints in the order the op log recorded them.
	type rec struct {
		id   objects.ID
		time time.Time
	}
	bySession := map[string][]rec{}
	seen := map[objects.ID]bool{}
	for _, op := range ops {
		recent := !op.Time.Before(within)
		for _, id := range opIDs(op) {
			if id.IsZero() {
				continue
			}
			if recent {
				keep[id] = true
			}
		}
		if op.Kind == "message" {
			// (It names a checkpoint recorded before, the session head
			// a message id was added to: counted there, or never, as a
			// move's built end.)
			continue
		}
		for _, id := range []objects.ID{op.Checkpoint, op.Safety} {
			if id.IsZero() || seen[id] || op.Session == "" {
				continue
			}
			seen[id] = true
			bySession[op.Session] = append(bySession[op.Session], rec{id, op.Time})
		}
	}
	expiredSessions := map[string]bool{}
	for _, r := range e.dropArchive {
		s, _ := archivedSession(r.Name)
		expiredSessions[s] = true
	}
	for session, recs := range bySession {
		if expiredSessions[session] {
			continue // only labels keep anything of an expired archived session
		}
		for i, r := range recs {
			if len(recs)-i <= p.KeepLast || !r.time.Before(within) {
				keep[r.id] = true
			}
		}
	}
	// Labels keep their checkpoint even in expired archived sessions: they
	// are in list and were kept above.
	for _, recs := range bySession {
		for _, r := range recs {
			switch {
			case alreadyExpired[r.id]:
			case keep[r.id]:
				e.kept++
			default:
				e.expire = append(e.expire, r.id)
			}
		}
	}
	return e
}

// archivedSession returns the session of an archived head ref.
func archivedSession(ref string) (string, bool) {
	s, archived, ok := refs.SessionOf(ref)
	return s, ok && archived
}
