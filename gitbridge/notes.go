package gitbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
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

// authorshipLog is the git-ai authorship log of commit (its sha) for the
// committed files (git path → snap project path) whose lines a checkpoint
// of the session after since recorded first: the agent's lines under the
// session's key, the user's under the git identity's; lines nobody can
// vouch for are left out ("untracked" in the standard). "" when no line
// is attested.
func (b *Bridge) authorshipLog(ctx context.Context, commit plumbing.Hash, session string, to snap.ID, since time.Time, files map[string]string, human string) (string, error) {
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:])[:14] }
	sessionKey := "s_" + hash("snap:"+session)
	humanKey := "h_" + hash(human)
	var att strings.Builder
	usedAgent, usedHuman := false, false
	for _, gp := range slices.Sorted(maps.Keys(files)) {
		res, err := b.snap.Blame(ctx, snap.BlameOptions{Session: session, Path: files[gp], Ref: to.String()})
		if err != nil {
			continue // not text, say: no attestation for it
		}
		byKey := map[string][]int{}
		for _, l := range res.Lines {
			if !l.Time.After(since) {
				continue
			}
			switch l.Actor {
			case snap.ActorAgent:
				k := sessionKey + "::t_" + hash(l.Checkpoint.String())
				byKey[k] = append(byKey[k], l.Line)
				usedAgent = true
			case snap.ActorUser:
				byKey[humanKey] = append(byKey[humanKey], l.Line)
				usedHuman = true
			}
		}
		if len(byKey) == 0 {
			continue
		}
		name := gp
		if strings.ContainsAny(name, " \t\n") {
			name = `"` + name + `"`
		}
		att.WriteString(name + "\n")
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			fmt.Fprintf(&att, "  %s %s\n", k, lineRanges(byKey[k]))
		}
	}
	if !usedAgent && !usedHuman {
		return "", nil
	}
	meta := map[string]any{"schema_version": "authorship/3.0.0", "base_commit_sha": commit.String(), "prompts": map[string]any{}}
	if usedAgent {
		meta["sessions"] = map[string]any{sessionKey: map[string]any{"agent_id": map[string]string{"tool": "snap", "id": session, "model": "unknown"}}}
	}
	if usedHuman {
		meta["humans"] = map[string]any{humanKey: map[string]string{"author": human}}
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

// addNote attaches note to commit under NotesRef (replacing a note it
// had): a notes commit on the ref's previous one, the ref moved by
// compare-and-swap, as 'git notes --ref=ai add -f' does.
func (b *Bridge) addNote(commit plumbing.Hash, note string, sig object.Signature) error {
	s := b.git.Storer
	blob := s.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return err
	}
	w.Write([]byte(note))
	w.Close()
	bh, err := s.SetEncodedObject(blob)
	if err != nil {
		return err
	}
	old, err := s.Reference(plumbing.ReferenceName(NotesRef))
	if err != nil && err != plumbing.ErrReferenceNotFound {
		return err
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
			// this one is written at the root, which git reads first.)
			if e.Name != commit.String() {
				entries = append(entries, e)
			}
		}
		parents = []plumbing.Hash{old.Hash()}
	}
	entries = append(entries, object.TreeEntry{Name: commit.String(), Mode: filemode.Regular, Hash: bh})
	sort.Slice(entries, func(i, j int) bool { return treeOrder(entries[i]) < treeOrder(entries[j]) })
	tobj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(tobj); err != nil {
		return err
	}
	th, err := s.SetEncodedObject(tobj)
	if err != nil {
		return err
	}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: th, ParentHashes: parents, Message: "Notes added by 'snap task commit --git-commit'\n"}
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
