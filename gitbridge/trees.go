package gitbridge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/snapcore-dev/snap"
)

// toGit writes snap trees and content as git trees and blobs. Each snap
// object is converted once per run (trees, by path and id; blobs), and a
// directory whose snap id equals the one at the same path in an already
// exported checkpoint (hint) takes that checkpoint's git tree without
// reading its files, so an incremental export costs what changed. Files
// the export holds back (secrets.hold) are left out, and the snap id of
// each directory without them is computed (kept).
type toGit struct {
	ctx   context.Context
	snap  *snap.Repo
	st    storer.EncodedObjectStorer
	pack  *packWriter // where objects go; nil: loose, into st
	sec   *secrets
	trees map[dirKey]plumbing.Hash
	kept  map[dirKey]kept
	blobs map[snap.ID]plumbing.Hash
	wrote int // objects written
}

func newToGit(ctx context.Context, r *snap.Repo, st storer.EncodedObjectStorer, sec *secrets) *toGit {
	return &toGit{ctx: ctx, snap: r, st: st, sec: sec, trees: map[dirKey]plumbing.Hash{}, kept: map[dirKey]kept{}, blobs: map[snap.ID]plumbing.Hash{}}
}

// tree returns the git tree of snap tree id at path dir, writing what is
// missing, and the directory as exported (kept). hint, when not zero, is
// the git tree of the same directory in the parent checkpoint (its snap
// entries are compared by id, name by name).
func (g *toGit) tree(id snap.ID, dir string, hintSnap snap.ID, hint plumbing.Hash) (plumbing.Hash, kept, error) {
	key := dirKey{dir, id}
	if h, ok := g.trees[key]; ok {
		return h, g.kept[key], nil
	}
	if err := g.ctx.Err(); err != nil {
		return plumbing.ZeroHash, kept{}, err
	}
	entries, err := g.snap.ReadTree(g.ctx, id)
	if err != nil {
		return plumbing.ZeroHash, kept{}, err
	}
	// The hint's entries by name: the snap id each had and its git hash.
	type pair struct {
		snap snap.ID
		git  plumbing.Hash
	}
	hints := map[string]pair{}
	if !hint.IsZero() && !hintSnap.IsZero() {
		if he, err := g.snap.ReadTree(g.ctx, hintSnap); err == nil {
			if ht, err := g.getTree(hint); err == nil {
				byName := map[string]plumbing.Hash{}
				for _, e := range ht.Entries {
					byName[e.Name] = e.Hash
				}
				for _, e := range he {
					if h, ok := byName[e.Name]; ok {
						hints[e.Name] = pair{e.ID, h}
					}
				}
			}
		}
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	var out []snap.TreeEntry // the directory as exported
	k := kept{id: id}
	for _, e := range entries {
		hp := hints[e.Name]
		p := joinPath(dir, e.Name)
		var h plumbing.Hash
		var mode filemode.FileMode
		switch e.Mode {
		case snap.ModeDir:
			mode = filemode.Dir
			var sub kept
			if hp.snap == e.ID {
				// The parent's git tree serves unless a file beneath has
				// a secret's name (git may track it now, not then).
				if sub, err = g.sec.keptDir(g, e.ID, p); err != nil {
					return plumbing.ZeroHash, kept{}, err
				}
				if !sub.secret {
					h = hp.git
					g.trees[dirKey{p, e.ID}] = h
				}
			}
			if h.IsZero() {
				if h, sub, err = g.tree(e.ID, p, hp.snap, hp.git); err != nil {
					return plumbing.ZeroHash, kept{}, err
				}
			}
			k.add(sub)
			e.ID, e.Size = sub.id, e.Size-sub.held
		case snap.ModeFile, snap.ModeExec, snap.ModeSymlink:
			if !g.sec.file(&k, p, e.Size) {
				continue
			}
			mode = map[snap.Mode]filemode.FileMode{snap.ModeFile: filemode.Regular, snap.ModeExec: filemode.Executable, snap.ModeSymlink: filemode.Symlink}[e.Mode]
			if hp.snap == e.ID {
				h, g.blobs[e.ID] = hp.git, hp.git
			} else if h, err = g.blob(e.ID, e.Size, hp.git); err != nil {
				return plumbing.ZeroHash, kept{}, fmt.Errorf("%s: %w", e.Name, err)
			}
		default:
			return plumbing.ZeroHash, kept{}, fmt.Errorf("%s: unknown mode %v", e.Name, e.Mode)
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: e.Name, Mode: mode, Hash: h})
		out = append(out, e)
	}
	if !sameEntries(entries, out) {
		if k.id, err = g.sec.putTree(out); err != nil {
			return plumbing.ZeroHash, kept{}, err
		}
	}
	sort.Sort(object.TreeEntrySorter(t.Entries)) // git's order: a directory sorts as "name/"
	obj := g.st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, kept{}, err
	}
	h, err := g.put(obj, hint)
	if err != nil {
		return plumbing.ZeroHash, kept{}, err
	}
	g.trees[key], g.kept[key] = h, k
	return h, k, nil
}

// blob returns the git blob of snap content id (size bytes), writing it
// when the repository does not have it (as a delta against base, the
// same path's blob in the parent checkpoint, when that pays).
func (g *toGit) blob(id snap.ID, size int64, base plumbing.Hash) (plumbing.Hash, error) {
	if h, ok := g.blobs[id]; ok {
		return h, nil
	}
	h, err := g.putStream(size, base, func(w io.Writer) error {
		n, err := g.snap.WriteContent(g.ctx, id, w)
		if err == nil && n != size {
			err = fmt.Errorf("content %s: %d bytes, its tree entry says %d", id.Short(), n, size)
		}
		return err
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	g.blobs[id] = h
	return h, nil
}

// putStream writes a blob of size bytes that write produces. Into a pack,
// a blob up to packDeltaMax is produced once, into memory, and may be a
// delta against base; a larger one (and any blob written loose) is
// produced twice, to hash it and then to store it, never held whole.
func (g *toGit) putStream(size int64, base plumbing.Hash, write func(io.Writer) error) (plumbing.Hash, error) {
	if g.pack != nil && size <= packDeltaMax {
		var buf bytes.Buffer
		buf.Grow(int(size))
		if err := write(&buf); err != nil {
			return plumbing.ZeroHash, err
		}
		if int64(buf.Len()) != size {
			return plumbing.ZeroHash, fmt.Errorf("blob: %d bytes, %d expected", buf.Len(), size)
		}
		return g.add(plumbing.BlobObject, buf.Bytes(), base)
	}
	if g.pack != nil {
		h, wrote, err := g.pack.addStream(size, write)
		if wrote {
			g.wrote++
		}
		return h, err
	}
	hasher := plumbing.NewHasher(plumbing.BlobObject, size)
	if err := write(hasher); err != nil {
		return plumbing.ZeroHash, err
	}
	h := hasher.Sum()
	if g.st.HasEncodedObject(h) != nil {
		obj := &streamObject{hash: h, typ: plumbing.BlobObject, size: size, open: write}
		if _, err := g.st.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		g.wrote++
	}
	return h, nil
}

// put stores an encoded tree or commit unless the repository has it (a
// tree as a delta against base when that pays).
func (g *toGit) put(obj plumbing.EncodedObject, base plumbing.Hash) (plumbing.Hash, error) {
	if g.pack != nil {
		r, err := obj.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return g.add(obj.Type(), data, base)
	}
	h := obj.Hash()
	if g.st.HasEncodedObject(h) == nil {
		return h, nil
	}
	g.wrote++
	return g.st.SetEncodedObject(obj)
}

func (g *toGit) add(typ plumbing.ObjectType, data []byte, base plumbing.Hash) (plumbing.Hash, error) {
	h, wrote, err := g.pack.add(typ, data, base)
	if wrote {
		g.wrote++
	}
	return h, err
}

// getTree reads a git tree, from the pack being written when it is there.
func (g *toGit) getTree(h plumbing.Hash) (*object.Tree, error) {
	if g.pack != nil {
		typ, data, ok, err := g.pack.get(h)
		if err != nil {
			return nil, err
		}
		if ok {
			if typ != plumbing.TreeObject {
				return nil, fmt.Errorf("git object %s: a %s, not a tree", h, typ)
			}
			obj := &plumbing.MemoryObject{}
			obj.SetType(typ)
			obj.Write(data)
			t := &object.Tree{}
			return t, t.Decode(obj)
		}
	}
	return object.GetTree(g.st, h)
}

// streamObject is an object whose content is produced on demand (a pipe
// from the snap store), so a large file is never held in memory.
type streamObject struct {
	hash plumbing.Hash
	typ  plumbing.ObjectType
	size int64
	open func(w io.Writer) error
}

func (o *streamObject) Hash() plumbing.Hash             { return o.hash }
func (o *streamObject) Type() plumbing.ObjectType       { return o.typ }
func (o *streamObject) SetType(t plumbing.ObjectType)   { o.typ = t }
func (o *streamObject) Size() int64                     { return o.size }
func (o *streamObject) SetSize(n int64)                 { o.size = n }
func (o *streamObject) Writer() (io.WriteCloser, error) { return nil, fmt.Errorf("read-only object") }
func (o *streamObject) Reader() (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(o.open(pw)) }()
	return pr, nil
}

// fromGit writes git trees and blobs into a snap import. A git object is
// converted once per run; hints pair a git tree with the snap tree already
// stored for it (the parent checkpoint's), so unchanged directories are
// not read again.
type fromGit struct {
	ctx   context.Context
	im    *snap.Importer
	st    storer.EncodedObjectStorer
	trees map[plumbing.Hash]sized
	blobs map[plumbing.Hash]sized
	// skip, when not nil, is called for an entry snap cannot hold (a
	// submodule, a name snap refuses) instead of failing.
	skip func(path, why string)
}

type sized struct {
	id   snap.ID
	size int64
}

func newFromGit(ctx context.Context, im *snap.Importer, st storer.EncodedObjectStorer) *fromGit {
	return &fromGit{ctx: ctx, im: im, st: st, trees: map[plumbing.Hash]sized{}, blobs: map[plumbing.Hash]sized{}}
}

// hint is a git tree known to be a stored snap tree: the same directory in
// the parent checkpoint.
type hint struct {
	git  plumbing.Hash
	snap snap.ID
}

// tree imports git tree h (at path dir, for messages) and returns its snap
// id and total size. An entry whose git hash equals the hint's entry of the
// same name takes the hint's snap entry unread, so importing a checkpoint
// whose parent is stored costs what changed.
func (f *fromGit) tree(h plumbing.Hash, dir string, hn hint) (sized, error) {
	if s, ok := f.trees[h]; ok {
		return s, nil
	}
	if err := f.ctx.Err(); err != nil {
		return sized{}, err
	}
	t, err := object.GetTree(f.st, h)
	if err != nil {
		return sized{}, fmt.Errorf("tree %s: %w", dir, err)
	}
	type known struct {
		git plumbing.Hash
		e   snap.TreeEntry
	}
	hints := map[string]known{}
	if !hn.git.IsZero() {
		if ht, err := object.GetTree(f.st, hn.git); err == nil {
			if he, err := f.im.ReadTree(f.ctx, hn.snap); err == nil {
				byName := map[string]snap.TreeEntry{}
				for _, e := range he {
					byName[e.Name] = e
				}
				for _, e := range ht.Entries {
					if se, ok := byName[e.Name]; ok {
						hints[e.Name] = known{e.Hash, se}
					}
				}
			}
		}
	}
	var entries []snap.TreeEntry
	var total int64
	for _, e := range t.Entries {
		p := e.Name
		if dir != "" {
			p = dir + "/" + e.Name
		}
		var s sized
		var mode snap.Mode
		k, hinted := hints[e.Name]
		switch e.Mode {
		case filemode.Dir:
			mode = snap.ModeDir
			var sub hint
			if hinted && k.e.Mode == snap.ModeDir {
				if k.git == e.Hash {
					s = sized{k.e.ID, k.e.Size}
					break
				}
				sub = hint{k.git, k.e.ID}
			}
			if s, err = f.tree(e.Hash, p, sub); err != nil {
				return sized{}, err
			}
		case filemode.Regular, filemode.Deprecated:
			mode = snap.ModeFile
		case filemode.Executable:
			mode = snap.ModeExec
		case filemode.Symlink:
			mode = snap.ModeSymlink
		default:
			if f.skip != nil {
				f.skip(p, fmt.Sprintf("git mode %v (a submodule) has no snap equivalent", e.Mode))
				continue
			}
			return sized{}, fmt.Errorf("%s: git mode %v has no snap equivalent", p, e.Mode)
		}
		if mode != snap.ModeDir {
			if hinted && k.git == e.Hash && k.e.Mode != snap.ModeDir {
				s = sized{k.e.ID, k.e.Size}
			} else if s, err = f.blob(e.Hash, p); err != nil {
				return sized{}, err
			}
		}
		entries = append(entries, snap.TreeEntry{Name: e.Name, Mode: mode, ID: s.id, Size: s.size})
		total += s.size
	}
	id, err := f.im.PutTree(entries)
	if err != nil && f.skip != nil {
		// A name snap refuses (".git" spelled otherwise, a control
		// character): drop such entries and say so.
		var kept []snap.TreeEntry
		total = 0
		for _, e := range entries {
			if _, err := f.im.PutTree([]snap.TreeEntry{e}); err != nil {
				f.skip(joinPath(dir, e.Name), err.Error())
				continue
			}
			kept = append(kept, e)
			total += e.Size
		}
		id, err = f.im.PutTree(kept)
	}
	if err != nil {
		return sized{}, fmt.Errorf("tree %q: %w", dir, err)
	}
	s := sized{id, total}
	f.trees[h] = s
	return s, nil
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// blob imports git blob h.
func (f *fromGit) blob(h plumbing.Hash, p string) (sized, error) {
	if s, ok := f.blobs[h]; ok {
		return s, nil
	}
	obj, err := f.st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return sized{}, fmt.Errorf("%s: blob %s: %w", p, h, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return sized{}, err
	}
	defer rd.Close()
	id, n, err := f.im.PutContent(rd)
	if err != nil {
		return sized{}, fmt.Errorf("%s: %w", p, err)
	}
	s := sized{id, n}
	f.blobs[h] = s
	return s, nil
}

// docs imports a state commit's tree: one file per state document.
func (f *fromGit) docs(h plumbing.Hash) (snap.ID, error) {
	t, err := object.GetTree(f.st, h)
	if err != nil {
		return snap.ID{}, err
	}
	var entries []snap.TreeEntry
	for _, e := range t.Entries {
		if e.Mode != filemode.Regular {
			return snap.ID{}, fmt.Errorf("state document %q: mode %v, want a file", e.Name, e.Mode)
		}
		s, err := f.blob(e.Hash, "state:"+e.Name)
		if err != nil {
			return snap.ID{}, err
		}
		entries = append(entries, snap.TreeEntry{Name: e.Name, Mode: snap.ModeFile, ID: s.id, Size: s.size})
	}
	return f.im.PutTree(entries)
}
