package objects

import "sync"

// baseCacheBytes bounds the decoded delta bases a Store keeps. A chain of
// deltas (each version of a tree or chunk list on the one before) is read
// newest first by log, gc and every checkpoint's comparison with its
// parent; without the cache each read would decode the whole chain again,
// as git's delta base cache (core.deltaBaseCacheLimit) avoids too.
const baseCacheBytes = 32 << 20

// baseCache holds the verified content of recently read delta bases, by id,
// evicting the oldest first. Its slices are shared and never modified.
type baseCache struct {
	mu    sync.Mutex
	data  map[ID]cachedBase
	fifo  []ID // insertion order; fifo[head:] are live
	head  int
	bytes int
}

type cachedBase struct {
	typ  Type
	data []byte
}

func (c *baseCache) get(id ID) (Type, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[id]
	return b.typ, b.data, ok
}

// put keeps data, the verified content of id, of type t. Contents over an
// eighth of the budget are not kept.
func (c *baseCache) put(id ID, t Type, data []byte) {
	if len(data) > baseCacheBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil {
		c.data = map[ID]cachedBase{}
	}
	if _, ok := c.data[id]; ok {
		return
	}
	for c.bytes+len(data) > baseCacheBytes && c.head < len(c.fifo) {
		old := c.fifo[c.head]
		c.head++
		c.bytes -= len(c.data[old].data)
		delete(c.data, old)
	}
	if c.head > len(c.fifo)/2 { // compact the queue
		c.fifo = append(c.fifo[:0], c.fifo[c.head:]...)
		c.head = 0
	}
	c.data[id] = cachedBase{t, data}
	c.fifo = append(c.fifo, id)
	c.bytes += len(data)
}
