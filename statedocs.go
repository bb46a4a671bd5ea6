package snap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
	"github.com/snapcore-dev/snap/worktree"
)

// State documents: the named documents a checkpoint binds beside the tree
// (the conversation, the context of an API call, the task stack, a
// caller's own), read from their source paths, written back by a move, and
// previewed by show.

// ConversationDoc is the name of the state document holding the transcript.
const ConversationDoc = "conversation"

// StateDoc is a named state document to record with a checkpoint.
type StateDoc struct {
	Name   string // "conversation", "context", ... ("tasks" is snap's own: TaskDoc)
	Source string // absolute path it is read from and written back to; "" when read from stdin
	// Data is the content; nil with a Source: read from Source when the
	// checkpoint is taken, streamed through the chunker (memory stays
	// bounded whatever its size).
	Data []byte
}

// maxDocSize bounds how much of a state document views load into memory.
const maxDocSize = 1 << 30

// ReadStateDoc reads a state document from path (relative paths are taken
// from the current directory), recording its absolute path as the source
// that later checkpoints re-read and a rewind writes back to. Path "-"
// reads stdin and records no source; so does a path under /dev or /proc
// (/dev/stdin, /proc/self/fd/N: a stream, read once, never re-read or
// written). Anything else must be a regular file, or a symlink to one (the
// link is recorded, and a rewind writes through it to the file the agent
// appends to); a missing file, a directory or a FIFO is ErrUsage.
func ReadStateDoc(name, path string, stdin io.Reader) (StateDoc, error) {
	if err := validStateName(name); err != nil {
		return StateDoc{}, err
	}
	abs := path
	if path != "-" {
		var err error
		if abs, err = filepath.Abs(path); err != nil {
			return StateDoc{}, err
		}
	}
	stream := path == "-" || isStream(abs)
	if !stream {
		if _, err := followLinks(abs); err != nil {
			stream = true // a link (chain) to /dev/stdin and the like: a stream too
		}
	}
	if stream {
		if path != "-" {
			f, err := os.Open(abs)
			if err != nil {
				return StateDoc{}, fmt.Errorf("%w: state document %s: %v", ErrUsage, name, err)
			}
			defer f.Close()
			stdin = f
		}
		if stdin == nil {
			return StateDoc{}, fmt.Errorf("%w: state document %s: no stdin", ErrUsage, name)
		}
		data, err := io.ReadAll(stdin)
		return StateDoc{Name: name, Data: data}, err
	}
	f, err := openSource(abs)
	if err != nil {
		return StateDoc{}, fmt.Errorf("%w: state document %s: %v", ErrUsage, name, err)
	}
	f.Close()
	return StateDoc{Name: name, Source: abs}, nil // read, streamed, by the checkpoint
}

// isStream reports whether p names a process's stream rather than a file
// (/dev/stdin, /dev/fd/N, /proc/self/fd/N): read once, never recorded as a
// source. Other paths are files only when they are regular files (a
// device or FIFO is refused by openSource); a file under /dev/shm is a
// file.
func isStream(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/")
}

// errNotRegular: a state document's source is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openSource opens a state document's source path for reading: a regular
// file, or a symlink to one, opened without blocking (a FIFO put there is
// refused, not waited on; so is a link chain to a stream).
func openSource(p string) (*os.File, error) {
	if _, err := followLinks(p); isStream(p) || err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errNotRegular}
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &fs.PathError{Op: "read", Path: p, Err: errNotRegular}
		}
		return nil, err
	}
	return f, nil
}

// inProject returns the source paths that lie inside the project, relative
// to its root: they are state documents, not tree files. A path is compared
// as written and as the file system resolves its directory (a transcript
// recorded through a symlinked project path is the same file).
func (r *Repo) inProject(sources ...map[string]string) []string {
	seen := map[string]bool{}
	realRoot := realPath(r.Root)
	for _, m := range sources {
		for _, src := range m {
			real := filepath.Join(realPath(filepath.Dir(src)), filepath.Base(src))
			for _, pair := range [][2]string{{r.Root, src}, {realRoot, real}} {
				if rel, err := filepath.Rel(pair[0], pair[1]); err == nil && filepath.IsLocal(rel) {
					seen[filepath.ToSlash(rel)] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// othersDocs returns the project paths where a session's head keeps a
// state document, other than own (this capture's own, excluded from its
// tree), each with what it is: "session S's state document NAME". To
// every other session such a path is a file (model finding M1, report
// N1), which no move of theirs overwrites or deletes.
func (r *Repo) othersDocs(own []string) map[string]string {
	out := map[string]string{}
	heads, _ := r.refs.List(refs.SessionsPrefix)
	for _, h := range heads {
		ck, err := r.objects.ReadCheckpoint(h.ID)
		if err != nil {
			continue
		}
		session, _, _ := refs.SessionOf(h.Name)
		for _, name := range slices.Sorted(maps.Keys(ck.StateSources)) {
			for _, rel := range r.inProject(map[string]string{name: ck.StateSources[name]}) {
				if _, seen := out[rel]; !seen && !slices.Contains(own, rel) {
					out[rel] = fmt.Sprintf("session %s's state document %s", session, name)
				}
			}
		}
	}
	return out
}

// restoreState writes the target's state documents back to their source
// paths (or into scope.StateOut), skipping those already equal; a document
// the target records as absent (a source and no content) is removed from
// its source path, and so is, by an undo, a copy the rewind it undoes
// created (scope.UndoCreatedState) while it holds what that rewind wrote.
func (r *Repo) restoreState(tck *objects.Checkpoint, now *captured, scope rewindScope, dryRun bool, res *RewindResult) error {
	st, err := r.objects.ReadTree(tck.State)
	if err != nil {
		return err
	}
	stateOut := scope.StateOut
	wanted := func(name string) bool { return len(scope.Docs) == 0 || slices.Contains(scope.Docs, name) }
	if stateOut == "" && !scope.Foreign {
		r.removeCreatedState(tck, scope, dryRun, res)
		for _, name := range slices.Sorted(maps.Keys(tck.StateSources)) {
			if !wanted(name) {
				continue
			}
			dest := tck.StateSources[name]
			if _, ok := st.Find(name); ok || now.sources[name] != dest {
				continue
			}
			if _, present := now.docs[name]; !present {
				continue // absent now too
			}
			if err := r.safeStatePath(dest); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
				continue
			}
			real, err := r.docPath(dest) // a link stays; the file it leads to goes
			if err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
				continue
			}
			if !dryRun {
				if err := r.removeDoc(real); err != nil {
					res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
					continue
				}
			}
			res.State = append(res.State, StateRestored{Name: name, Path: dest, Deleted: true})
		}
	}
	for _, e := range st.Entries {
		if !wanted(e.Name) {
			continue
		}
		dest := tck.StateSources[e.Name]
		if scope.Foreign && stateOut == "" {
			// Taken elsewhere: only where this machine's head reads it.
			if dest = now.sources[e.Name]; dest == "" && e.Name != TaskDoc {
				res.Errors = append(res.Errors, stateOutError("state:"+e.Name, "taken in another store: its recorded path is not this machine's"))
				continue
			}
		}
		if stateOut != "" {
			dest = filepath.Join(stateOut, e.Name)
		}
		if dest == "" && e.Name == TaskDoc {
			continue // the task stack has no file: it travels with the head
		}
		if dest == "" {
			if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID {
				continue // from stdin, and as in the target already
			}
			res.Errors = append(res.Errors, stateOutError("state:"+e.Name, "no recorded source path (read from stdin)"))
			continue
		}
		if err := r.safeStatePath(dest); err != nil {
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
			continue
		}
		if cur, ok := now.docs[e.Name]; ok && cur.ID == e.ID && now.sources[e.Name] == dest {
			continue // already as in the target
		}
		created := false
		if stateOut == "" && now.sources[e.Name] != dest {
			// The head keeps this document elsewhere, so the safety
			// checkpoint holds that copy, not the file here: a file here
			// that differs is not overwritten; where nothing is, the file
			// written is listed as created.
			if real, err := r.docPath(dest); err == nil {
				_, lerr := os.Lstat(real)
				created = errors.Is(lerr, fs.ErrNotExist)
				if f, err := os.Open(real); err == nil {
					fi, serr := f.Stat()
					same := serr == nil && worktree.SameBlob(r.objects, e.ID, f, fi.Size())
					f.Close()
					if same {
						continue
					}
					res.Errors = append(res.Errors, stateOutError(dest,
						fmt.Sprintf("holds another version of %s, which the session now keeps at %s: not overwritten", e.Name, now.sources[e.Name])))
					continue
				}
			}
		}
		if dryRun {
			_, err = r.docPath(dest)
		} else {
			err = r.writeDoc(e.ID, dest)
		}
		if err != nil {
			res.Errors = append(res.Errors, worktree.PathError{Path: dest, Error: err.Error(), Err: err})
			continue
		}
		res.State = append(res.State, StateRestored{Name: e.Name, Path: dest, Created: created})
	}
	sort.SliceStable(res.State, func(i, j int) bool { return res.State[i].Name < res.State[j].Name })
	return nil
}

// removeCreatedState removes, for an undo, each state document the rewind
// it undoes created where the target (its safety checkpoint) keeps no
// document, while the file holds what that rewind wrote.
func (r *Repo) removeCreatedState(tck *objects.Checkpoint, scope rewindScope, dryRun bool, res *RewindResult) {
	if len(scope.UndoCreatedState) == 0 || scope.UndoFrom == nil {
		return
	}
	from, err := r.objects.ReadCheckpoint(*scope.UndoFrom)
	if err != nil {
		return // expired or damaged: nothing to compare with, so it stays
	}
	fst, err := r.objects.ReadTree(from.State)
	if err != nil {
		return
	}
	for _, c := range scope.UndoCreatedState {
		e, ok := fst.Find(c.Name)
		if !ok || slices.Contains(slices.Collect(maps.Values(tck.StateSources)), c.Path) || r.safeStatePath(c.Path) != nil {
			continue
		}
		real, err := r.docPath(c.Path)
		if err != nil {
			continue
		}
		f, err := os.Open(real)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		same := err == nil && fi.Mode().IsRegular() && worktree.SameBlob(r.objects, e.ID, f, fi.Size())
		f.Close()
		if !same {
			continue // changed since: it stays
		}
		if !dryRun {
			if err := r.removeDoc(real); err != nil {
				res.Errors = append(res.Errors, worktree.PathError{Path: c.Path, Error: err.Error(), Err: err})
				continue
			}
		}
		res.State = append(res.State, StateRestored{Name: c.Name, Path: c.Path, Deleted: true})
	}
}

// safeStatePath refuses state-document destinations inside the store or a
// .git directory, streams and devices (/dev, /proc), and relative ones.
func (r *Repo) safeStatePath(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("state path %q is not absolute and clean", p)
	}
	if isStream(p) || strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/dev/") && !strings.HasPrefix(p, "/dev/shm/") {
		return Advise(fmt.Errorf("state path %q is a device or stream, not a file", p), Advice{Do: DoStateOut})
	}
	// Checked as written and as the file system resolves it: a directory
	// on the way may be a symlink into the store, /dev or a .git.
	real := p
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		real = filepath.Join(dir, filepath.Base(p))
	}
	store := r.StoreDir
	if s, err := filepath.EvalSymlinks(store); err == nil {
		store = s
	}
	for _, q := range []string{p, real} {
		if isStream(q) || strings.HasPrefix(q, "/sys/") || strings.HasPrefix(q, "/dev/") && !strings.HasPrefix(q, "/dev/shm/") {
			return Advise(fmt.Errorf("state path %q leads to a device or stream, not a file", p), Advice{Do: DoStateOut})
		}
		for _, s := range []string{r.StoreDir, store} {
			if q == s || strings.HasPrefix(q, s+string(filepath.Separator)) {
				return fmt.Errorf("state path %q lies inside the store", p)
			}
		}
		for _, c := range strings.Split(q, string(filepath.Separator)) {
			if objects.IsReservedName(c) && strings.EqualFold(strings.TrimRight(c, ". "), ".git") {
				return fmt.Errorf("state path %q lies inside a .git directory", p)
			}
		}
	}
	return nil
}

// followLinks follows the symlink at p, and the one it leads to, and so on,
// to the path of what is not a symlink (which may not exist), refusing a
// chain that passes through a stream or device (/dev/stdin, /proc/self/fd
// — where a write would land on whatever the process's descriptor is).
func followLinks(p string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if p = filepath.Clean(target); isStream(p) {
			return "", fmt.Errorf("%s leads to %s, a stream or device", p, target)
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

// docPath is the file a state document recorded at dest is written to
// or removed from: dest, or, when dest is a symlink, the file the chain of
// links leads to (the one an agent appends to; the links stay). That file
// may be missing, its directory may not: a link leading into a missing
// directory, a stream or a protected place is refused. A rewind and its
// dry run make the same checks.
func (r *Repo) docPath(dest string) (string, error) {
	fi, err := os.Lstat(dest)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return dest, nil
	}
	real, err := followLinks(dest)
	if err != nil {
		return "", Advise(fmt.Errorf("%s: %v", dest, err), Advice{Do: DoStateOut})
	}
	if _, err := os.Stat(real); err != nil {
		if fi, derr := os.Stat(filepath.Dir(real)); !errors.Is(err, fs.ErrNotExist) || derr != nil || !fi.IsDir() {
			return "", Advise(fmt.Errorf("%s is a symlink to %s, which cannot be written (%v)", dest, real, err), Advice{Do: DoStateOut})
		}
	}
	if err := r.safeStatePath(real); err != nil {
		return "", err
	}
	return real, nil
}

// writeDoc writes a stored document to dest (see docPath) by temporary
// file and rename.
func (r *Repo) writeDoc(id objects.ID, dest string) error {
	dest, err := r.docPath(dest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(dest), worktree.TempName()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = r.objects.WriteBlob(id, f)
	if err == nil {
		err = f.Sync() // durable before the move is recorded (design §4)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if fi, serr := os.Stat(dest); serr == nil {
			os.Chmod(f.Name(), fi.Mode().Perm())
		} else {
			os.Chmod(f.Name(), 0o644)
		}
		err = os.Rename(f.Name(), dest)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return r.fs.SyncDir(filepath.Dir(dest))
}

// removeDoc removes a state document's file (absent is fine), durably.
func (r *Repo) removeDoc(real string) error {
	if err := os.Remove(real); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return r.fs.SyncDir(filepath.Dir(real))
}

// stateOutError is a state document a rewind could not put at path p, for
// reason: writing the documents to a directory of one's choice does.
func stateOutError(p, reason string) worktree.PathError {
	return worktree.PathError{Path: p, Error: reason, Err: Advise(errors.New(reason), Advice{Do: DoStateOut})}
}

// ContextDoc is the state document an agent saves the context of its next
// API call in, on a "pre-call" checkpoint, so that a failed call can be
// retried: 'snap rewind REF --state context' puts it back.
const ContextDoc = "context"

// ContextSummary is what show reports of a context document in the
// recommended shape:
//
//	{"system": "...", "messages": [...],
//	 "config": {"model": "...", "max_tokens": 8192, "temperature": 0.2},
//	 "task": {...}, "files": [{"path": "...", "content": "..."}],
//	 "call": {"attempt": 1, "params": {...}}}
//
// Every field is optional; a document that is not a JSON object with
// messages or config has no summary.
type ContextSummary struct {
	Model       string         `json:"model,omitempty"`
	Attempt     int            `json:"attempt,omitempty"`
	SystemChars int            `json:"system_chars"`
	Messages    int            `json:"messages"`
	Files       []string       `json:"files"`
	Config      map[string]any `json:"config,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
	Task        any            `json:"task,omitempty"`
}

// maxPreviewDoc bounds the documents show reads whole for its previews.
const maxPreviewDoc = 16 << 20

func (r *Repo) summarizeContext(e objects.TreeEntry) *ContextSummary {
	if e.Size > maxPreviewDoc {
		return nil
	}
	data, err := r.objects.ReadBlob(e.ID, maxPreviewDoc)
	if err != nil {
		return nil
	}
	var doc struct {
		System   *string           `json:"system"`
		Messages []json.RawMessage `json:"messages"`
		Config   map[string]any    `json:"config"`
		Task     any               `json:"task"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
		Call struct {
			Attempt int            `json:"attempt"`
			Params  map[string]any `json:"params"`
		} `json:"call"`
	}
	if json.Unmarshal(data, &doc) != nil || doc.Messages == nil && doc.Config == nil {
		return nil
	}
	s := &ContextSummary{Messages: len(doc.Messages), Files: []string{}, Config: doc.Config, Params: doc.Call.Params,
		Attempt: doc.Call.Attempt, Task: doc.Task}
	if doc.System != nil {
		s.SystemChars = utf8.RuneCountInString(*doc.System)
	}
	if m, ok := doc.Config["model"].(string); ok {
		s.Model = m
	}
	for _, f := range doc.Files {
		s.Files = append(s.Files, f.Path)
	}
	return s
}

// ConversationPreview is a conversation's first user message and last
// assistant message, each cut to 280 characters.
type ConversationPreview struct {
	Messages      int    `json:"messages"`
	FirstUser     string `json:"first_user,omitempty"`
	LastAssistant string `json:"last_assistant,omitempty"`
}

// previewConversation streams the document twice (its head, then its
// tail), so memory stays bounded whatever its size.
func (r *Repo) previewConversation(e objects.TreeEntry) *ConversationPreview {
	page := func(off int) (*conversation.Conversation, int, error) {
		rd := r.blobReader(e.ID)
		defer rd.Close()
		return conversation.ParsePage(rd, off, 20)
	}
	head, total, err := page(0)
	if err != nil {
		return nil
	}
	p := &ConversationPreview{Messages: total}
	for _, m := range head.Messages {
		if m.Role == "user" && m.Text != "" {
			p.FirstUser = cut(m.Text, 280)
			break
		}
	}
	tail := head
	if total > 20 {
		if tail, _, err = page(total - 20); err != nil {
			return p
		}
	}
	for i := len(tail.Messages) - 1; i >= 0; i-- {
		if m := tail.Messages[i]; m.Role == "assistant" && m.Text != "" {
			p.LastAssistant = cut(m.Text, 280)
			break
		}
	}
	return p
}

// cut is s cut to n characters, marked.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// readDoc reads a whole state document into a buffer of its size (the
// tree entry's), not one grown by doubling.
func (r *Repo) readDoc(e objects.TreeEntry) ([]byte, error) {
	if e.Size < 0 || e.Size > maxDocSize {
		return r.objects.ReadBlob(e.ID, maxDocSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, e.Size))
	if _, err := r.objects.WriteBlob(e.ID, buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// countMessages counts the conversation's messages, reusing the parent's
// count when the document did not change. A document read from its source
// is counted by streaming the file again, a stored one by streaming it from
// the store: memory stays bounded (-1 when it cannot be counted).
func (r *Repo) countMessages(doc objects.ID, c *captured, parent *objects.Checkpoint) int {
	if parent != nil && parent.Stats.Messages >= 0 {
		if pstate, err := r.objects.ReadTree(parent.State); err == nil {
			if e, ok := pstate.Find(ConversationDoc); ok && e.ID == doc {
				return parent.Stats.Messages
			}
		}
	}
	if data, ok := c.data[ConversationDoc]; ok {
		return conversation.Count(data)
	}
	var n int
	var err error
	if src, ok := c.files[ConversationDoc]; ok {
		var f *os.File
		if f, err = openSource(src); err == nil {
			n, err = conversation.CountReader(f)
			f.Close()
		}
	} else {
		n, err = conversation.CountReader(r.blobReader(doc))
	}
	if err != nil {
		return -1
	}
	return n
}

// blobReader streams stored content (verified as it is read).
func (r *Repo) blobReader(id objects.ID) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := r.objects.WriteBlob(id, pw)
		pw.CloseWithError(err)
	}()
	return pr
}
