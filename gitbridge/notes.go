package gitbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/snapcore-dev/snap"
)

// NotesRef is where git-ai authorship logs live (Git AI Standard v3.0.0,
// github.com/git-ai-project/git-ai, specs/git_ai_standard_v3.0.0.md).
const NotesRef = "refs/notes/ai"

// authorship gathers a git-ai authorship log: which lines of which
// committed files an agent session (each version of it by the checkpoint
// that recorded it) or a person wrote. Lines nobody can vouch for are left
// out ("untracked" in the standard).
type authorship struct {
	human    string                      // the person's identity, "Name <email>"
	lines    map[string]map[string][]int // git path → key → lines
	sessions map[string]string           // agent key → session
	anyHuman bool                        // some line is the person's
}

func newAuthorship(human string) *authorship {
	return &authorship{human: human, lines: map[string]map[string][]int{}, sessions: map[string]string{}}
}

// keyHash is the standard's short hash of a key's source.
func keyHash(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:])[:14] }

func (a *authorship) add(path, key string, lines ...int) {
	if a.lines[path] == nil {
		a.lines[path] = map[string][]int{}
	}
	a.lines[path][key] = append(a.lines[path][key], lines...)
}

// count is the number of lines attested.
func (a *authorship) count() int {
	n := 0
	for _, keys := range a.lines {
		for _, ls := range keys {
			n += len(ls)
		}
	}
	return n
}

// agent attests lines of path to session's agent, as checkpoint recorded them.
func (a *authorship) agent(path, session string, checkpoint snap.ID, lines ...int) {
	key := "s_" + keyHash("snap:"+session)
	a.sessions[key] = session
	a.add(path, key+"::t_"+keyHash(checkpoint.String()), lines...)
}

// user attests lines of path to the person.
func (a *authorship) user(path string, lines ...int) {
	a.anyHuman = true
	a.add(path, "h_"+keyHash(a.human), lines...)
}

// log is the authorship log for commit: "" when no line is attested.
func (a *authorship) log(commit plumbing.Hash) (string, error) {
	if len(a.lines) == 0 {
		return "", nil
	}
	var att strings.Builder
	for _, gp := range slices.Sorted(maps.Keys(a.lines)) {
		name := gp
		if strings.ContainsAny(name, " \t\n") {
			name = `"` + name + `"`
		}
		att.WriteString(name + "\n")
		for _, k := range slices.Sorted(maps.Keys(a.lines[gp])) {
			fmt.Fprintf(&att, "  %s %s\n", k, lineRanges(a.lines[gp][k]))
		}
	}
	meta := map[string]any{"schema_version": "authorship/3.0.0", "base_commit_sha": commit.String(), "prompts": map[string]any{}}
	if len(a.sessions) > 0 {
		sessions := map[string]any{}
		for k, s := range a.sessions {
			sessions[k] = map[string]any{"agent_id": map[string]string{"tool": "snap", "id": s, "model": "unknown"}}
		}
		meta["sessions"] = sessions
	}
	if a.anyHuman {
		meta["humans"] = map[string]any{"h_" + keyHash(a.human): map[string]string{"author": a.human}}
	}
	var mj strings.Builder
	enc := json.NewEncoder(&mj)
	enc.SetEscapeHTML(false) // "Name <email>" as written
	enc.SetIndent("", "  ")
	if err := enc.Encode(meta); err != nil {
		return "", err
	}
	return att.String() + "---\n" + mj.String(), nil
}

// blameAuthorship attests the lines of the files (git path → snap project
// path) as checkpoint to holds them that a checkpoint recorded first after
// since: an agent's under its session, the user's under human.
func (b *Bridge) blameAuthorship(ctx context.Context, session string, to snap.ID, since time.Time, files map[string]string, human string) *authorship {
	a := newAuthorship(human)
	for _, gp := range slices.Sorted(maps.Keys(files)) {
		res, err := b.snap.Blame(ctx, snap.BlameOptions{Session: session, Path: files[gp], Ref: to.String()})
		if err != nil {
			continue // not text, say: no attestation for it
		}
		for _, l := range res.Lines {
			if !l.Time.After(since) {
				continue
			}
			switch l.Actor {
			case snap.ActorAgent:
				a.agent(gp, l.Session, l.Checkpoint, l.Line)
			case snap.ActorUser:
				a.user(gp, l.Line)
			}
		}
	}
	return a
}

// lineRanges writes sorted line numbers as "1-4,9,12-13".
func lineRanges(lines []int) string {
	sort.Ints(lines)
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(lines[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lines[i], lines[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// addNotes attaches each note to its commit under NotesRef (replacing a
// note it had): one notes commit on the ref's previous one, the ref moved
// by compare-and-swap, as 'git notes --ref=ai add -f' does for one.
// Nothing is written when every commit already has its note.
func (b *Bridge) addNotes(notes map[plumbing.Hash]string, sig object.Signature, message string) error {
	s := b.git.Storer
	old, err := s.Reference(plumbing.ReferenceName(NotesRef))
	if err != nil && err != plumbing.ErrReferenceNotFound {
		return err
	}
	blobs := map[string]plumbing.Hash{} // commit → its note's blob
	for c, note := range notes {
		blob := s.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, err := blob.Writer()
		if err != nil {
			return err
		}
		w.Write([]byte(note))
		w.Close()
		if blobs[c.String()], err = s.SetEncodedObject(blob); err != nil {
			return err
		}
	}
	var entries []object.TreeEntry
	var parents []plumbing.Hash
	if old != nil {
		oc, err := object.GetCommit(s, old.Hash())
		if err != nil {
			return err
		}
		ot, err := oc.Tree()
		if err != nil {
			return err
		}
		for _, e := range ot.Entries {
			// (A note fanned out in directories is left as git wrote it;
			// these are written at the root, which git reads first.)
			if h, ok := blobs[e.Name]; ok && h == e.Hash {
				delete(blobs, e.Name) // the same note already
			}
			if _, ok := blobs[e.Name]; !ok {
				entries = append(entries, e)
			}
		}
		parents = []plumbing.Hash{old.Hash()}
	}
	if len(blobs) == 0 {
		return nil
	}
	for name, h := range blobs {
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	sort.Slice(entries, func(i, j int) bool { return treeOrder(entries[i]) < treeOrder(entries[j]) })
	tobj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(tobj); err != nil {
		return err
	}
	th, err := s.SetEncodedObject(tobj)
	if err != nil {
		return err
	}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: th, ParentHashes: parents, Message: message}
	cobj := s.NewEncodedObject()
	if err := c.Encode(cobj); err != nil {
		return err
	}
	ch, err := s.SetEncodedObject(cobj)
	if err != nil {
		return err
	}
	return s.CheckAndSetReference(plumbing.NewHashReference(plumbing.ReferenceName(NotesRef), ch), old)
}

// treeOrder is git's order of tree entries: a directory sorts as its name
// with a slash.
func treeOrder(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// AuthorshipLog is the git-ai authorship log of the lines session's
// checkpoints recorded first after since (a REF; "" = all), in the files
// they changed as the session's head holds them: what
// 'git notes --ref=ai add -F - COMMIT' attaches to the commit that records
// them. Its base_commit_sha is the repository's HEAD (forty zeros before
// its first commit). "" when no line is attested.
func (b *Bridge) AuthorshipLog(ctx context.Context, session, since string) (string, error) {
	head, err := b.snap.Resolve(ctx, session, "@")
	if err != nil {
		return "", err
	}
	var from time.Time
	if since != "" {
		id, err := b.snap.Resolve(ctx, session, since)
		if err != nil {
			return "", err
		}
		n, _, err := b.snap.ReadNode(ctx, id)
		if err != nil {
			return "", err
		}
		from = n.When()
	}
	cs, err := b.snap.Contributions(ctx, snap.ContributionOptions{Session: session, Since: since})
	if err != nil {
		return "", err
	}
	files := map[string]string{}
	for _, c := range cs {
		for _, f := range c.Files {
			files[path.Join(b.prefix, f.Path)] = f.Path
		}
	}
	gitHead, err := b.Head()
	if err != nil {
		return "", err
	}
	sig := b.userSignature(time.Time{})
	return b.blameAuthorship(ctx, session, head, from, files, sig.Name+" <"+sig.Email+">").log(plumbing.NewHash(gitHead))
}
