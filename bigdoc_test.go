package snap_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
)

// F8: a state document is streamed through the chunker, and a page of the
// conversation view streamed from the store: checkpointing a 192 MiB
// transcript, appending to it, and reading two of its messages each grow
// the heap by a fixed amount (~60 MiB of encoder tables and buffers), far
// less than the document (they read it whole: 830 MB of
// RSS for an 824 MB transcript).
func TestHugeTranscriptMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 192 MiB transcript")
	}
	r, root := snaptest.NewRepo(t)
	writeFile(t, filepath.Join(root, "a"), "1")
	conv := filepath.Join(t.TempDir(), "huge.jsonl")
	const size = 192 << 20
	writeTranscript(t, conv, size, 0)
	defer debug.SetGCPercent(debug.SetGCPercent(20))

	grew := peakHeap(t, func() {
		checkpoint(t, r, snap.CheckpointOptions{State: convDoc(t, conv)})
	})
	t.Logf("first checkpoint: heap grew %d MiB", grew>>20)
	if grew > 80<<20 {
		t.Errorf("checkpoint of a %d MiB transcript grew the heap by %d MiB", size>>20, grew>>20)
	}
	writeTranscript(t, conv, 1<<20, 1) // appended
	writeFile(t, filepath.Join(root, "a"), "2")
	var res *snap.CheckpointResult
	grew = peakHeap(t, func() { res = checkpoint(t, r, snap.CheckpointOptions{}) })
	t.Logf("append checkpoint: heap grew %d MiB, %d messages, %d new bytes", grew>>20, res.Stats.Messages, res.NewBytes)
	if grew > 80<<20 || res.NewBytes > 4<<20 {
		t.Errorf("append: heap grew %d MiB, %d new bytes", grew>>20, res.NewBytes)
	}
	var page *snap.ConversationPage
	grew = peakHeap(t, func() {
		var err error
		if page, err = r.Conversation(ctx, mustResolve(t, r, "", "@"), 0, 2); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("conversation --limit 2: heap grew %d MiB, total %d", grew>>20, page.Total)
	if grew > 80<<20 || len(page.Messages) != 2 || page.Total != res.Stats.Messages {
		t.Errorf("page: heap grew %d MiB, %d messages of %d (checkpoint counted %d)", grew>>20, len(page.Messages), page.Total, res.Stats.Messages)
	}
}

// writeTranscript appends about n bytes of Claude Code JSONL records to p.
func writeTranscript(t *testing.T, p string, n int, seed int) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i, written := 0, 0; written < n; i++ {
		k, _ := fmt.Fprintf(w, `{"type":"user","uuid":"u%d-%d","message":{"role":"user","content":"message %d of run %d: %s"}}`+"\n",
			seed, i, i, seed, "padding padding padding padding padding padding padding padding padding padding")
		written += k
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// peakHeap runs fn and returns how far the heap in use rose above where it
// was before, sampled every millisecond.
func peakHeap(t *testing.T, fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	fn()
	close(done)
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}
