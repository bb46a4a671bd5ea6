package objects

import (
	"fmt"
	"io"
	"sort"
)

// OpenContent opens the content id for reading at offsets (io.ReaderAt)
// without holding it whole; Close stops its read-ahead.
func (s *Store) OpenContent(id ID) (*ContentReader, error) {
	leaves, err := s.Leaves(id)
	if err != nil {
		return nil, err
	}
	c := &ContentReader{s: s, leaves: leaves, offs: make([]int64, len(leaves)), cur: -1}
	for i, l := range leaves {
		c.offs[i] = c.size
		c.size += int64(l.Size)
	}
	return c, nil
}

// Size is the content's length.
func (c *ContentReader) Size() int64 { return c.size }

// Leaves are the content's chunks (see Store.Leaves).
func (c *ContentReader) Leaves() []ChunkRef { return c.leaves }

// Close stops reading ahead.
func (c *ContentReader) Close() error {
	c.stopAhead()
	return nil
}

// ContentReader reads stored content (a blob or a chunk list) at offsets,
// one chunk at a time, verifying each chunk (its id, by Store.Read, and
// its size). Chunks are
// read (decompressed) ahead, a few at a time, by a goroutine, so that a
// reader going front to back, as a parse does, does not wait for them.
type ContentReader struct {
	s      *Store
	leaves []ChunkRef
	offs   []int64 // where each leaf starts
	size   int64
	cur    int // the leaf in buf; -1: none
	buf    []byte

	ahead     chan leafData // leaves aheadNext, aheadNext+1, ...
	aheadNext int
	stop      chan struct{} // closed to stop the goroutine filling ahead
}

type leafData struct {
	data []byte
	err  error
}

// readAhead is how many chunks a ContentReader reads ahead.
const readAhead = 4

func (c *ContentReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		if off >= c.size {
			return n, io.EOF
		}
		i := sort.Search(len(c.offs), func(i int) bool { return c.offs[i] > off }) - 1
		if i != c.cur {
			data, err := c.leaf(i)
			if err != nil {
				return n, err
			}
			c.buf, c.cur = data, i
		}
		k := copy(p[n:], c.buf[off-c.offs[i]:])
		n += k
		off += int64(k)
	}
	return n, nil
}

// leaf returns the content of leaf i: the next one read ahead, or, when i
// is not, from a new goroutine reading from i on.
func (c *ContentReader) leaf(i int) ([]byte, error) {
	if c.ahead != nil && c.aheadNext == i {
		if d, ok := <-c.ahead; ok {
			c.aheadNext++
			return d.data, d.err
		}
	}
	c.stopAhead()
	ch, stop := make(chan leafData, readAhead), make(chan struct{})
	c.ahead, c.stop, c.aheadNext = ch, stop, i+1
	go func() {
		defer close(ch)
		for j := i; j < len(c.leaves); j++ {
			select {
			case <-stop:
				return
			default:
			}
			data, err := c.readLeaf(j)
			select {
			case ch <- leafData{data, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	d := <-ch // leaf i: there is one, and nothing stopped the goroutine yet
	return d.data, d.err
}

// stopAhead stops reading ahead.
func (c *ContentReader) stopAhead() {
	if c.stop != nil {
		close(c.stop)
		c.stop, c.ahead = nil, nil
	}
}

func (c *ContentReader) readLeaf(i int) ([]byte, error) {
	l := c.leaves[i]
	t, data, err := c.s.Read(l.ID)
	if err != nil {
		return nil, err
	}
	if t != TypeBlob || uint64(len(data)) != l.Size {
		return nil, fmt.Errorf("%w: chunk %s is a %s of %d bytes, its list says a blob of %d", ErrCorrupt, l.ID.Short(), t, len(data), l.Size)
	}
	return data, nil
}
