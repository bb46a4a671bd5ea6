package snap

import (
	"bytes"
	"io"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
)

// The conversation of a diff, compared by what its two versions share
// (design §3: a growing transcript keeps its leading chunks): the bytes
// of their leading chunks with the same ids are not parsed, only counted
// once (conversation.DiffShared), and only what follows the last line that
// starts in them is parsed, in both. A working-tree version, which has no
// chunk list, is cut where the stored version's chunks are and hashed
// chunk by chunk until one differs. A document that is not JSONL, or that
// shares no whole chunk, is compared whole, as before.

// convDoc is one version of the conversation document, read at offsets.
type convDoc struct {
	r      io.ReaderAt
	size   int64
	leaves []objects.ChunkRef // its chunks, when it is stored; nil otherwise
	close  func() error
}

// storedDoc opens stored content for reading at offsets.
func (r *Repo) storedDoc(id objects.ID) (*convDoc, error) {
	cr, err := r.objects.OpenContent(id)
	if err != nil {
		return nil, err
	}
	return &convDoc{r: cr, size: cr.Size(), leaves: cr.Leaves(), close: cr.Close}, nil
}

// fileDoc opens a state document at its source path.
func fileDoc(path string) (*convDoc, error) {
	f, err := openSource(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &convDoc{r: f, size: min(fi.Size(), maxDocSize), close: f.Close}, nil
}

// memDoc is a document held in memory.
func memDoc(data []byte) *convDoc {
	return &convDoc{r: bytes.NewReader(data), size: int64(len(data)), close: func() error { return nil }}
}

// prefixReader reads the first n bytes of a document from head, which
// holds the same bytes (checked by their chunk ids), and the rest from
// rest: a live file's prefix is read from the file rather than
// decompressed from the store.
type prefixReader struct {
	head, rest io.ReaderAt
	n          int64
}

func (p *prefixReader) ReadAt(b []byte, off int64) (int, error) {
	if off >= p.n {
		return p.rest.ReadAt(b, off)
	}
	if int64(len(b)) <= p.n-off {
		return p.head.ReadAt(b, off)
	}
	k, err := p.head.ReadAt(b[:p.n-off], off)
	if err != nil {
		return k, err
	}
	m, err := p.rest.ReadAt(b[k:], off+int64(k))
	return k + m, err
}

// sharedLeaves is how many bytes two stored contents' leading chunks with
// the same ids hold.
func sharedLeaves(a, b []objects.ChunkRef) int64 {
	var n int64
	for i := 0; i < len(a) && i < len(b) && a[i] == b[i]; i++ {
		n += int64(a[i].Size)
	}
	return n
}

// sharedBytes is how many bytes of d, cut where leaves are, have the
// leaves' ids: the bytes d shares with the stored content, chunk by chunk,
// read once and hashed, never held beyond a chunk.
func sharedBytes(leaves []objects.ChunkRef, d *convDoc) (int64, error) {
	var off int64
	var buf []byte
	for _, l := range leaves {
		if off+int64(l.Size) > d.size {
			break
		}
		if uint64(cap(buf)) < l.Size {
			buf = make([]byte, l.Size)
		}
		b := buf[:l.Size]
		if _, err := d.r.ReadAt(b, off); err != nil {
			if err == io.EOF { // the file shrank since
				break
			}
			return 0, err
		}
		if objects.Hash(objects.TypeBlob, b) != l.ID {
			break
		}
		off += int64(l.Size)
	}
	return off, nil
}

// conversationDiff compares two versions of the conversation by what they
// share (see above); ok is false when that does not apply: the caller
// compares them whole.
func conversationDiff(a, b *convDoc) (d conversation.DiffResult, ok bool, err error) {
	var shared int64
	switch {
	case a.leaves != nil && b.leaves != nil:
		shared = sharedLeaves(a.leaves, b.leaves)
	case a.leaves != nil:
		if shared, err = sharedBytes(a.leaves, b); err != nil {
			return d, false, err
		}
		// DiffShared reads the shared bytes from its first document: read
		// them from the live one, not from the store.
		a = &convDoc{r: &prefixReader{head: b.r, rest: a.r, n: shared}, size: a.size}
	case b.leaves != nil:
		if shared, err = sharedBytes(b.leaves, a); err != nil {
			return d, false, err
		}
	}
	if shared == 0 {
		return d, false, nil
	}
	return conversation.DiffShared(a.r, a.size, b.r, b.size, shared)
}

// openDoc opens content for conversationDiff: a live document (in memory,
// or at its source path) when live has it, else stored content.
func (r *Repo) openDoc(id objects.ID, live func(objects.ID) (*convDoc, bool, error)) (*convDoc, error) {
	if live != nil {
		if d, ok, err := live(id); ok || err != nil {
			return d, err
		}
	}
	return r.storedDoc(id)
}

// liveDocs returns what openDoc needs of a capture's state documents: the
// content of a document not in the store is in memory (pending) or at its
// source path (fromSource).
func (r *Repo) liveDocs(pending map[objects.ID][]byte, fromSource map[objects.ID]string) func(objects.ID) (*convDoc, bool, error) {
	return func(id objects.ID) (*convDoc, bool, error) {
		if d, ok := pending[id]; ok {
			return memDoc(d), true, nil
		}
		if src, ok := fromSource[id]; ok && !r.objects.Has(id) {
			d, err := fileDoc(src)
			return d, true, err
		}
		return nil, false, nil
	}
}

// diffConversation is the conversation's StateDiff between from and to
// (either may be absent: zero), by what they share when both are there,
// else from read's whole documents.
func (r *Repo) diffConversation(from, to objects.ID, live func(objects.ID) (*convDoc, bool, error), read func(objects.ID) ([]byte, error)) (*conversation.DiffResult, error) {
	if !from.IsZero() && !to.IsZero() {
		a, err := r.openDoc(from, live)
		if err != nil {
			return nil, err
		}
		defer a.close()
		b, err := r.openDoc(to, live)
		if err != nil {
			return nil, err
		}
		defer b.close()
		d, ok, err := conversationDiff(a, b)
		if err != nil {
			return nil, err
		}
		if ok {
			return &d, nil
		}
	}
	var oldData, newData []byte
	var err error
	if !from.IsZero() {
		if oldData, err = read(from); err != nil {
			return nil, err
		}
	}
	if !to.IsZero() {
		if newData, err = read(to); err != nil {
			return nil, err
		}
	}
	d := conversation.Diff(conversation.Parse(oldData), conversation.Parse(newData))
	return &d, nil
}
