package objects

import (
	"fmt"
	"testing"
)

func TestBaseCacheBoundsAndEvictsOldest(t *testing.T) {
	var c baseCache
	size := baseCacheBytes / 16
	ids := make([]ID, 40)
	for i := range ids {
		ids[i] = Hash(TypeBlob, fmt.Appendf(nil, "%d", i))
		c.put(ids[i], TypeTree, make([]byte, size))
		if c.bytes > baseCacheBytes {
			t.Fatalf("after %d puts the cache holds %d bytes, over its %d budget", i+1, c.bytes, baseCacheBytes)
		}
	}
	if _, _, ok := c.get(ids[0]); ok {
		t.Fatal("the oldest entry was not evicted")
	}
	if typ, data, ok := c.get(ids[len(ids)-1]); !ok || typ != TypeTree || len(data) != size {
		t.Fatalf("the newest entry: %v %d %v", typ, len(data), ok)
	}
	if len(c.data) != baseCacheBytes/size {
		t.Fatalf("%d entries kept, want %d", len(c.data), baseCacheBytes/size)
	}
	big := Hash(TypeBlob, []byte("big"))
	c.put(big, TypeBlob, make([]byte, baseCacheBytes/4))
	if _, _, ok := c.get(big); ok {
		t.Fatal("an entry over an eighth of the budget was kept")
	}
}
