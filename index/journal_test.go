package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap/internal/bin"
)

// listingsOf is a cache's listings: directory → stat, recorded, names.
func listingsOf(c *Cache) map[string]string {
	m := map[string]string{}
	for d, l := range listingMap(c) {
		m[d] = fmt.Sprint(l.Stat, l.Recorded, l.Names)
	}
	return m
}

func sameCache(t *testing.T, what string, got, want *Cache) {
	t.Helper()
	if g, w := entriesOf(got), entriesOf(want); !maps.Equal(g, w) {
		t.Fatalf("%s: %d entries loaded, %d in the cache saved", what, len(g), len(w))
	}
	if g, w := listingsOf(got), listingsOf(want); !maps.Equal(g, w) {
		t.Fatalf("%s: listings differ:\n%v\n%v", what, g, w)
	}
}

// A cache saved again and again with a few changes each time: the changes
// go to the journal, the cache file stays as it was until the journal
// passes a sixteenth of it, and every load is exactly the cache saved.
func TestJournalKeepsEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	rng := rand.New(rand.NewPCG(1, 1))
	c := New()
	for i := range 2000 {
		p := fmt.Sprintf("d%02d/f%04d.go", i%50, i)
		c.Put(p, statForTest(int64(i), t0), idForTest(p), t0.Add(time.Hour))
	}
	for d := range 50 {
		c.PutListing(fmt.Sprintf("d%02d", d), statForTest(0, t0), []string{"a", "b"}, t0.Add(time.Hour))
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	ino, data := fileIdentityForTest(t, path)
	rewrites := 0
	for step := 1; step <= 400; step++ {
		for range 1 + rng.IntN(5) {
			i := rng.IntN(2100)
			p := fmt.Sprintf("d%02d/f%04d.go", i%50, i)
			c.Put(p, statForTest(int64(i), t0.Add(time.Duration(step)*time.Second)), idForTest(fmt.Sprint(p, step)), t0.Add(time.Hour))
		}
		d := fmt.Sprintf("d%02d", rng.IntN(60))
		c.PutListing(d, statForTest(int64(step), t0), []string{"a", fmt.Sprint("n", step)}, t0.Add(time.Hour))
		if step%37 == 0 { // a full scan that no longer finds some paths and directories
			gone := rng.IntN(50)
			c.Retain(func(p string) bool { return p[:3] != fmt.Sprintf("d%02d", gone) })
			c.Listing(fmt.Sprintf("d%02d", gone+1), Stat{})
			c.DropUnusedListings()
		}
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		if i, d := fileIdentityForTest(t, path); i != ino || string(d) != string(data) {
			rewrites++
			ino, data = i, d
			if _, err := os.Stat(JournalPath(path)); err == nil {
				t.Fatalf("step %d: the cache file was rewritten and its journal is still there", step)
			}
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		sameCache(t, fmt.Sprintf("step %d", step), got, c)
	}
	if rewrites == 0 || rewrites > 40 {
		t.Fatalf("the cache file was rewritten %d times in 400 saves", rewrites)
	}
}

// A journal cut short or damaged is read up to its last batch that checks;
// the next save writes the file whole. A journal of another cache file
// (rewritten since) is not read.
func TestJournalDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	c := New()
	for i := range 100 {
		c.Put(fmt.Sprint("f", i), statForTest(int64(i), t0), idForTest(fmt.Sprint(i)), t0.Add(time.Hour))
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	var states []map[string]Entry // after each save
	for step := range 3 {
		c.Put(fmt.Sprint("new", step), statForTest(1, t0), idForTest(fmt.Sprint("new", step)), t0.Add(time.Hour))
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		states = append(states, entriesOf(c))
	}
	j, err := os.ReadFile(JournalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(j) - 1, len(j) - 5, len(j) - 20} {
		os.WriteFile(JournalPath(path), j[:cut], 0o644)
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(entriesOf(got), states[1]) {
			t.Fatalf("journal cut at %d of %d: %d entries, want the first two batches' %d", cut, len(j), len(entriesOf(got)), len(states[1]))
		}
	}
	flipped := slices.Clone(j)
	flipped[len(j)-10] ^= 1
	os.WriteFile(JournalPath(path), flipped, 0o644)
	got, _ := Load(path)
	if !maps.Equal(entriesOf(got), states[1]) {
		t.Fatal("a damaged batch was read")
	}
	// The next save writes the file whole: a batch after a damaged one
	// would never be read.
	got.Put("later", statForTest(1, t0), idForTest("later"), t0.Add(time.Hour))
	if err := got.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(JournalPath(path)); err == nil {
		t.Fatal("saved after a damaged journal: the journal is still there")
	}
	again, _ := Load(path)
	sameCache(t, "after the damaged journal", again, got)

	// Another process rewrites the cache file; a journal written for the
	// old one is ignored.
	again.Put("x", statForTest(1, t0), idForTest("x"), t0.Add(time.Hour))
	again.Save(path) // a journal for the file as it is
	other := New()
	other.Put("only", statForTest(1, t0), idForTest("only"), t0.Add(time.Hour))
	if err := other.Save(path + ".other"); err != nil {
		t.Fatal(err)
	}
	os.Rename(path+".other", path)
	got, _ = Load(path)
	if len(entriesOf(got)) != 1 {
		t.Fatalf("a journal of another cache file was read: %d entries", len(entriesOf(got)))
	}
}

// Two processes with the same tree: each loads, changes a few entries and
// saves, in turn and out of turn. Every entry loaded is one of them put
// (truthful), and each one's latest puts are there after its own save.
func TestJournalTwoWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	base := New()
	for i := range 300 {
		base.Put(fmt.Sprint("f", i), statForTest(int64(i), t0), idForTest(fmt.Sprint(i)), t0.Add(time.Hour))
	}
	if err := base.Save(path); err != nil {
		t.Fatal(err)
	}
	put := map[string]map[Entry]bool{} // every entry ever put, by path
	record := func(p string, e Entry) {
		if put[p] == nil {
			put[p] = map[Entry]bool{}
		}
		put[p][e] = true
	}
	for p, e := range entriesOf(base) {
		record(p, e)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	a, _ := Load(path)
	b, _ := Load(path)
	for step := range 300 {
		w := a
		if rng.IntN(2) == 0 {
			w = b
		}
		p := fmt.Sprint("f", rng.IntN(400))
		e := Entry{Stat: statForTest(int64(step), t0), Recorded: t0.Add(time.Hour).UnixNano(), ID: idForTest(fmt.Sprint(p, step))}
		w.Put(p, e.Stat, e.ID, t0.Add(time.Hour))
		record(p, e)
		if err := w.Save(path); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for q, ge := range entriesOf(got) {
			if !put[q][ge] {
				t.Fatalf("step %d: %s loaded as an entry nobody put", step, q)
			}
		}
		if ge := entriesOf(got)[p]; ge != e {
			t.Fatalf("step %d: the entry just saved is not what loads", step)
		}
		if rng.IntN(10) == 0 { // the other process starts again from the file
			if w == a {
				b, _ = Load(path)
			} else {
				a, _ = Load(path)
			}
		}
	}
}

// FuzzJournal: a journal of any bytes never panics and never makes an
// entry with an empty path or a listing with unsorted names. Run with:
//
//	go test -run='^$' -fuzz='^FuzzJournal$' -fuzztime=15s ./index/
func FuzzJournal(f *testing.F) {
	c := New()
	c.sum = make([]byte, 32) // as if read from a file: changes are kept for a batch
	c.Put("a", statForTest(1, t0), idForTest("a"), t0.Add(time.Hour))
	c.Put("b/c", statForTest(2, t0), idForTest("c"), t0.Add(time.Hour))
	c.PutListing("b", statForTest(0, t0), []string{"c", "d"}, t0.Add(time.Hour))
	f.Add(c.encodeBatchLocked(1<<20), true)
	c.Retain(func(p string) bool { return p != "a" })
	c.DropUnusedListings()
	c.DropUnusedListings()
	f.Add(c.encodeBatchLocked(1<<20), true)
	sum := make([]byte, 32)
	f.Fuzz(func(t *testing.T, batch []byte, frame bool) {
		if frame && len(batch) >= 8 { // the records framed as a batch that checks
			recs := batch[4 : len(batch)-4]
			binary.LittleEndian.PutUint32(batch, uint32(len(recs)))
			binary.LittleEndian.PutUint32(batch[len(batch)-4:], crc32.Checksum(recs, bin.Castagnoli))
		}
		c := New()
		c.Put("a", statForTest(1, t0), idForTest("a"), t0)
		n := c.replayJournal(append(append([]byte(journalMagic), sum...), batch...), sum)
		if n < len(journalMagic)+32 {
			t.Fatalf("replayed %d bytes", n)
		}
		for p := range entriesOf(c) {
			if p == "" {
				t.Fatal("an entry with an empty path")
			}
		}
		for d, l := range listingMap(c) {
			if !slices.IsSorted(l.Names) || slices.Contains(l.Names, "") {
				t.Fatalf("listing %q: %q", d, l.Names)
			}
		}
	})
}

// BenchmarkSaveTenChanges: a save after ten files changed, in a cache of
// 20,000 and 200,000 paths, through the journal and written whole.
//
//	go test -run='^$' -bench=SaveTenChanges ./index/
func BenchmarkSaveTenChanges(b *testing.B) {
	for _, n := range []int{20000, 200000} {
		for _, whole := range []bool{false, true} {
			b.Run(fmt.Sprintf("paths=%d/whole=%v", n, whole), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "stat")
				c := New()
				for i := range n {
					p := fmt.Sprintf("src/d%04d/file%06d.go", i%2000, i)
					c.Put(p, statForTest(int64(i), t0), idForTest(p), t0.Add(time.Hour))
				}
				if err := c.Save(path); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					for k := range 10 {
						j := (i*10 + k) % n
						p := fmt.Sprintf("src/d%04d/file%06d.go", j%2000, j)
						c.Put(p, statForTest(int64(i), t0), idForTest(p), t0.Add(time.Hour))
					}
					if whole {
						c.sum = nil
					}
					if err := c.Save(path); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A FIFO (or any file not regular) where the cache file or its journal
// belongs is not read: opening it waited for a writer forever, and every
// checkpoint with it. Load gives what it can at once; the next save
// replaces both.
func TestLoadRefusesFilesThatAreNotRegular(t *testing.T) {
	for _, which := range []string{"cache", "journal"} {
		t.Run(which, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stat")
			c := New()
			c.Put("a", statForTest(1, t0), idForTest("a"), t0.Add(time.Hour))
			if err := c.Save(path); err != nil {
				t.Fatal(err)
			}
			fifo := path
			if which == "journal" {
				fifo = JournalPath(path)
			}
			os.Remove(fifo)
			if err := unix.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan *Cache, 1)
			go func() { l, _ := Load(path); done <- l }()
			var l *Cache
			select {
			case l = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Load is still waiting on a FIFO at the %s's place", which)
			}
			if which == "journal" && l.Len() != 1 {
				t.Fatalf("the cache file was not read beside a FIFO journal: %d entries", l.Len())
			}
			l.Put("b", statForTest(2, t0), idForTest("b"), t0.Add(time.Hour))
			if err := l.Save(path); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, JournalPath(path)} {
				if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
					t.Fatalf("after a save %s is still %v", filepath.Base(p), fi.Mode())
				}
			}
			if again, err := Load(path); err != nil || again.Len() == 0 {
				t.Fatalf("reloaded: %d entries, %v", again.Len(), err)
			}
		})
	}
}
