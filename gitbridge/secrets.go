package gitbridge

import (
	"context"
	"errors"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/redact"
)

// Trailers of an export that is not the checkpoint's exact content
// (design §9): the id of the local checkpoint it was made from (its
// Snap-Checkpoint is the id of the redacted checkpoint it rebuilds to),
// the number of files held back, and whether secret-named files were
// included on request.
const (
	TrailerRedactedFrom = "Snap-Redacted-From"
	TrailerHeldBack     = "Snap-Held-Back"
	TrailerSecretFiles  = "Snap-Secret-Files"
)

// Secret is one secret redacted by an export (each counted once, however
// many checkpoints and documents held it). It never holds the secret.
type Secret struct {
	Kind        string `json:"kind"`
	Rule        string `json:"rule"`
	Fingerprint string `json:"fingerprint"`
	Masked      string `json:"masked"`
	Where       string `json:"where"` // the first place it was found: <checkpoint>:<document>:<line>, or <checkpoint>:summary
}

// redacted is what an export wrote for one stored document.
type redacted struct {
	git  plumbing.Hash
	snap snap.ID
	size int64
}

// secrets is an export's redaction: the state documents' secrets and the
// tree's secret files (redact.SecretFileName) that git does not track.
type secrets struct {
	ctx     context.Context
	r       *snap.Repo
	include bool            // --include-secret-files
	tracked map[string]bool // paths the project's git index tracks, relative to the project
	im      *snap.Importer  // computes the ids of redacted objects (never committed)
	docs    map[snap.ID]*redacted
	// last: the report on the document of each name scanned last (the
	// parent's version, exporting oldest first): a grown transcript is
	// scanned from where that one's scan can go on (redact.ScanAfter).
	last  map[string]*redact.Report
	found map[string]*Secret // by fingerprint
	order []string
	held  map[string]bool
	// included: secret-named files exported because asked to.
	included map[string]bool
	// named: whether each path seen has a secret's name (secretName),
	// asked once per path however many checkpoints hold it.
	named map[string]bool
}

func newSecrets(ctx context.Context, r *snap.Repo, include bool) *secrets {
	s := &secrets{ctx: ctx, r: r, include: include, docs: map[snap.ID]*redacted{}, last: map[string]*redact.Report{}, found: map[string]*Secret{},
		held: map[string]bool{}, included: map[string]bool{}, named: map[string]bool{}}
	s.tracked = trackedFiles(r.Root)
	return s
}

// trackedFiles lists what the git repository holding the project tracks
// (its index), as paths relative to the project; empty when there is none.
func trackedFiles(root string) map[string]bool {
	out := map[string]bool{}
	g, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return out
	}
	wt, err := g.Worktree()
	if err != nil {
		return out
	}
	top, _ := filepath.EvalSymlinks(wt.Filesystem.Root())
	proj, _ := filepath.EvalSymlinks(root)
	prefix, err := filepath.Rel(top, proj)
	if err != nil || !filepath.IsLocal(prefix) && prefix != "." {
		return out
	}
	prefix = filepath.ToSlash(prefix)
	idx, err := g.Storer.Index()
	if err != nil {
		return out
	}
	for _, e := range idx.Entries {
		if prefix == "." {
			out[e.Name] = true
		} else if rel, ok := cutDir(e.Name, prefix); ok {
			out[rel] = true
		}
	}
	return out
}

// cutDir returns p relative to dir when p is beneath it.
func cutDir(p, dir string) (string, bool) {
	if len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' {
		return p[len(dir)+1:], true
	}
	return "", false
}

// importer returns the (lazily started) import that computes the ids of
// redacted content, trees and checkpoints. It is aborted at the end of the
// export: the store keeps only what it had.
func (s *secrets) importer() (*snap.Importer, error) {
	if s.im == nil {
		im, err := s.r.NewImporter(s.ctx)
		if err != nil {
			return nil, err
		}
		s.im = im
	}
	return s.im, nil
}

func (s *secrets) close() {
	if s.im != nil {
		s.im.Abort()
	}
}

// putTree is the id of a directory of entries, held-back files left out.
func (s *secrets) putTree(entries []snap.TreeEntry) (snap.ID, error) {
	im, err := s.importer()
	if err != nil {
		return snap.ID{}, err
	}
	return im.PutTree(entries)
}

// content streams stored content id through f (a pipe from the store).
func (s *secrets) content(id snap.ID, f func(io.Reader) error) error {
	pr, pw := io.Pipe()
	go func() {
		_, err := s.r.WriteContent(s.ctx, id, pw)
		pw.CloseWithError(err)
	}()
	err := f(pr)
	pr.CloseWithError(errors.New("gitbridge: reader done"))
	return err
}

// doc returns the redaction of stored state document name (nil when it
// holds no secret), scanning each document once per export. where names it
// for Secret.Where.
func (s *secrets) doc(g *toGit, id snap.ID, name, where string, base plumbing.Hash) (*redacted, error) {
	if d, ok := s.docs[id]; ok {
		return d, nil
	}
	rep, err := redact.ScanAfter(s.last[name], func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			_, err := s.r.WriteContent(s.ctx, id, pw)
			pw.CloseWithError(err)
		}()
		return pr, nil
	})
	if err != nil {
		return nil, err
	}
	s.last[name] = rep
	if rep.Clean() {
		s.docs[id] = nil
		return nil, nil
	}
	for _, f := range rep.Findings {
		s.note(f, where+":"+strconv.Itoa(f.Line))
	}
	apply := func(w io.Writer) error {
		return s.content(id, func(r io.Reader) error {
			_, err := rep.Apply(r, w)
			return err
		})
	}
	h, err := g.putStream(rep.OutSize, base, apply)
	if err != nil {
		return nil, err
	}
	im, err := s.importer()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(apply(pw)) }()
	sid, n, err := im.PutContent(pr)
	pr.CloseWithError(errors.New("gitbridge: reader done"))
	if err != nil {
		return nil, err
	}
	d := &redacted{git: h, snap: sid, size: n}
	s.docs[id] = d
	return d, nil
}

// text redacts a short text (a summary, a task's goal).
func (s *secrets) text(t, where string) (string, error) {
	out, rep, err := redact.Bytes([]byte(t))
	if err != nil {
		return "", err
	}
	for _, f := range rep.Findings {
		s.note(f, where)
	}
	return string(out), nil
}

// name redacts an identifier or a path (redact.Name).
func (s *secrets) name(t, where string) (string, error) {
	out, rep, err := redact.Name(t)
	if err != nil {
		return "", err
	}
	for _, f := range rep.Findings {
		s.note(f, where)
	}
	return out, nil
}

// record redacts the texts of a checkpoint's record that an export carries
// besides its documents: the summary, the message id, the labels and the
// paths its documents were read from (adversarial A4). short names the
// checkpoint where a finding is reported.
func (s *secrets) record(n *snap.Node, short string) error {
	var err error
	if n.Summary, err = s.text(n.Summary, short+":summary"); err != nil {
		return err
	}
	if n.MessageID, err = s.name(n.MessageID, short+":message_id"); err != nil {
		return err
	}
	if len(n.Labels) > 0 {
		labels := make([]string, len(n.Labels))
		for i, l := range n.Labels {
			if labels[i], err = s.name(l, short+":label"); err != nil {
				return err
			}
		}
		n.Labels = labels
	}
	if len(n.StateSources) > 0 {
		src := make(map[string]string, len(n.StateSources))
		for name, p := range n.StateSources {
			if src[name], err = s.name(p, short+":state_sources:"+name); err != nil {
				return err
			}
		}
		n.StateSources = src
	}
	return nil
}

// quiet redacts a short text without reporting what it found (a text an
// earlier export reported).
func (s *secrets) quiet(t string) (string, error) {
	out, _, err := redact.Bytes([]byte(t))
	return string(out), err
}

func (s *secrets) note(f redact.Finding, where string) {
	if _, ok := s.found[f.Fingerprint]; ok {
		return
	}
	s.found[f.Fingerprint] = &Secret{Kind: f.Kind, Rule: f.Rule, Fingerprint: f.Fingerprint, Masked: f.Masked, Where: where}
	s.order = append(s.order, f.Fingerprint)
}

// report fills an export's result.
func (s *secrets) report(res *ExportResult) {
	for _, fp := range s.order {
		res.Secrets = append(res.Secrets, *s.found[fp])
	}
	res.HeldBack = sortedKeys(s.held)
	res.SecretFilesIncluded = sortedKeys(s.included)
}

// dirKey is a directory by path and content: what a file is held back
// for depends on its path.
type dirKey struct {
	dir string
	id  snap.ID
}

// kept is a directory as exported: its snap id, the files and bytes held
// back beneath it (id is the stored directory's when nothing is), whether
// secret-named files untracked by git are included beneath it on request,
// and whether any file beneath has a secret's name (tracked or not).
type kept struct {
	id     snap.ID
	held   int64
	files  int
	incl   bool
	secret bool
}

// add counts a subdirectory's in its directory's.
func (k *kept) add(sub kept) {
	k.held += sub.held
	k.files += sub.files
	k.incl = k.incl || sub.incl
	k.secret = k.secret || sub.secret
}

// file decides for the file at p (relative to the project, size bytes):
// false when it is held back (a secret's name, git does not track it, and
// the export was not asked to include such files), counted in k.
func (s *secrets) file(k *kept, p string, size int64) bool {
	secret, known := s.named[p]
	if !known {
		_, secret = secretName(p)
		s.named[p] = secret
	}
	if !secret {
		return true
	}
	k.secret = true
	if s.tracked[p] {
		return true
	}
	if s.include {
		s.included[p] = true
		k.incl = true
		return true
	}
	s.held[p] = true
	k.held += size
	k.files++
	return false
}

// keptDir walks a stored directory's trees (never its files) for what the
// export holds back beneath it, when the directory's git tree is known
// already (the parent checkpoint's) but not its exported snap id.
func (s *secrets) keptDir(g *toGit, id snap.ID, dir string) (kept, error) {
	if k, ok := g.kept[dirKey{dir, id}]; ok {
		return k, nil
	}
	entries, err := s.r.ReadTree(s.ctx, id)
	if err != nil {
		return kept{}, err
	}
	var out []snap.TreeEntry
	k := kept{id: id}
	for _, e := range entries {
		p := path.Join(dir, e.Name)
		if e.Mode == snap.ModeDir {
			sub, err := s.keptDir(g, e.ID, p)
			if err != nil {
				return kept{}, err
			}
			k.add(sub)
			e.ID, e.Size = sub.id, e.Size-sub.held
		} else if !s.file(&k, p, e.Size) {
			continue
		}
		out = append(out, e)
	}
	if !sameEntries(entries, out) {
		if k.id, err = s.putTree(out); err != nil {
			return kept{}, err
		}
	}
	g.kept[dirKey{dir, id}] = k
	return k, nil
}

func sameEntries(a, b []snap.TreeEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// exportedFlags are what an exported commit's trailers say of how it was
// made.
type exportedFlags struct {
	from     snap.ID // Snap-Redacted-From (zero: the checkpoint's exact content)
	heldBack bool
	included bool
	// attribution: Snap-Attribution, the lines the checkpoint adds by its
	// actor ("agent 12"); written, never read back.
	attribution string
}

func flagsOf(msg string) exportedFlags {
	var f exportedFlags
	f.from, _ = snap.ParseID(trailer(msg, TrailerRedactedFrom))
	f.heldBack = trailer(msg, TrailerHeldBack) != ""
	f.included = trailer(msg, TrailerSecretFiles) != ""
	return f
}

// reusable reports whether an exported commit found for checkpoint id is
// what this export would write: one that included secret files is not
// reused by an export that holds them back, nor one that held files back
// by an export asked to include them.
func (s *secrets) reusable(f exportedFlags, id snap.ID) bool {
	if !s.include {
		return !f.included
	}
	return !(f.heldBack && f.from == id)
}

// sortedHashes orders candidate commits for determinism.
func sortedHashes(hs []plumbing.Hash) []plumbing.Hash {
	sort.Slice(hs, func(i, j int) bool { return hs[i].String() < hs[j].String() })
	return hs
}

// SecretFile is a file of a checkpoint whose name marks it as holding
// secrets (redact.SecretFileName).
type SecretFile struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"` // the name pattern it matches
	// Tracked: git tracks it, so an export keeps it (git has it anyway);
	// else an export holds it back unless asked to include it.
	Tracked bool `json:"tracked"`
}

// SecretFiles lists the secret-named files of checkpoint id, in tree order.
func SecretFiles(ctx context.Context, r *snap.Repo, id snap.ID) ([]SecretFile, error) {
	node, _, err := r.ReadNode(ctx, id)
	if err != nil {
		return nil, err
	}
	tracked := trackedFiles(r.Root)
	out := []SecretFile{}
	var walk func(tree snap.ID, dir string) error
	walk = func(tree snap.ID, dir string) error {
		entries, err := r.ReadTree(ctx, tree)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name)
			if e.Mode == snap.ModeDir {
				if err := walk(e.ID, p); err != nil {
					return err
				}
			} else if pat, ok := secretName(p); ok {
				out = append(out, SecretFile{Path: p, Pattern: pat, Tracked: tracked[p]})
			}
		}
		return nil
	}
	return out, walk(node.Tree, "")
}

// secretName reports whether the file at p is held back unless git tracks
// it, and why: its name marks it as a secret (redact.SecretFileName: the
// pattern), or its path holds what looks like one, a token pasted into a
// name (adversarial A4: "a secret in its name (KIND)").
func secretName(p string) (string, bool) {
	if pat, ok := redact.SecretFileName(p); ok {
		return pat, true
	}
	if _, rep, err := redact.Name(p); err == nil && !rep.Clean() {
		return "a secret in its name (" + rep.Findings[0].Kind + ")", true
	}
	return "", false
}

// RecordFinding is what an export would redact in one text of a
// checkpoint's record.
type RecordFinding struct {
	Field    string           `json:"field"` // summary, message_id, label, state_sources:NAME
	Findings []redact.Finding `json:"findings"`
}

// RecordSecrets lists what an export redacts in checkpoint n's record
// (secrets.record): the summary, the message id, the labels, the paths its
// documents were read from.
func RecordSecrets(n *snap.Node) ([]RecordFinding, error) {
	var out []RecordFinding
	add := func(field, t string, scan func(string) (string, *redact.Report, error)) error {
		_, rep, err := scan(t)
		if err == nil && !rep.Clean() {
			out = append(out, RecordFinding{Field: field, Findings: rep.Findings})
		}
		return err
	}
	text := func(t string) (string, *redact.Report, error) {
		b, rep, err := redact.Bytes([]byte(t))
		return string(b), rep, err
	}
	if err := add("summary", n.Summary, text); err != nil {
		return nil, err
	}
	if err := add("message_id", n.MessageID, redact.Name); err != nil {
		return nil, err
	}
	for _, l := range n.Labels {
		if err := add("label", l, redact.Name); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(n.StateSources) {
		if err := add("state_sources:"+name, n.StateSources[name], redact.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
