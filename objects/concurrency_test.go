package objects

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/fsys"
)

// contentForTest is object k of a shared pool: goroutines that pick the same
// k put the same bytes. Every fourth object is compressible, every
// seventh is empty-ish, so that both record encodings are exercised.
func contentForTest(k int) []byte {
	switch {
	case k%7 == 0:
		return []byte(fmt.Sprintf("%d", k))
	case k%4 == 0:
		return bytes.Repeat([]byte(fmt.Sprintf("compressible %d ", k)), 40)
	}
	return []byte(fmt.Sprintf("object %d: %x", k, Hash(TypeBlob, []byte{byte(k), byte(k >> 8)})))
}

// Eight goroutines Put overlapping contents into one Writer; after Commit
// every id reads back, from this store and a fresh one, and the pack holds
// each object exactly once.
func TestConcurrentPutOneWriter(t *testing.T) {
	s, dir := openStoreForTest(t)
	w := s.NewWriter()
	const goroutines, perG, pool = 8, 150, 300
	// A chunked blob shared by all goroutines: its chunks overlap too.
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i*31 + i>>10)
	}
	var mu sync.Mutex
	ids := map[ID][]byte{}
	var bigIDs []ID
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			local := map[ID][]byte{}
			for i := 0; i < perG; i++ {
				k := (g*perG/2 + i*3) % pool
				data := contentForTest(k)
				id, err := w.Put(TypeBlob, data)
				if err != nil {
					errc <- err
					return
				}
				if id != Hash(TypeBlob, data) {
					errc <- fmt.Errorf("Put returned a wrong id")
					return
				}
				local[id] = data
				if !w.Has(id) {
					errc <- fmt.Errorf("Has(%s) false right after Put", id.Short())
					return
				}
			}
			bid, err := w.PutBytes(big)
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			for id, d := range local {
				ids[id] = d
			}
			bigIDs = append(bigIDs, bid)
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, b := range bigIDs {
		if b != bigIDs[0] {
			t.Fatal("PutBytes of the same content gave different ids")
		}
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	fresh := reopenForTest(t, dir)
	for _, st := range []*Store{s, fresh} {
		for id, want := range ids {
			typ, data, err := st.Read(id)
			if err != nil || typ != TypeBlob || !bytes.Equal(data, want) {
				t.Fatalf("Read %s: %v", id.Short(), err)
			}
		}
		got, err := st.ReadBlob(bigIDs[0], int64(len(big)))
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("chunked blob: %v", err)
		}
	}
	pf, err := loadPackPath(fsys.OS, onlyPackForTest(t, dir), true)
	if err != nil {
		t.Fatal(err)
	}
	entries := pf.entries()
	if st := fresh.Stats(); st.Objects != len(entries) {
		t.Fatalf("store indexes %d objects, pack holds %d records", st.Objects, len(entries))
	}
	seen := map[ID]bool{}
	for _, e := range entries {
		if seen[e.id] {
			t.Fatalf("object %s written twice", e.id.Short())
		}
		seen[e.id] = true
	}
	for id := range ids {
		if !seen[id] {
			t.Fatalf("object %s missing from the pack", id.Short())
		}
	}
}

// Two Writers of one Store put overlapping objects and commit at the same
// time, while readers look up objects (and so Reload) concurrently. Every
// object of both writers reads back afterwards, here and from a fresh store.
func TestConcurrentWritersCommit(t *testing.T) {
	s, dir := openStoreForTest(t)
	const rounds = 3
	all := map[ID][]byte{}
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		results := make([]map[ID][]byte, 2)
		errs := make([]error, 2)
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for i := 0; i < 2; i++ {
			readers.Add(1)
			go func(i int) { // readers: misses make the store Reload
				defer readers.Done()
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					id := Hash(TypeBlob, contentForTest(r*1000+k%400))
					_, data, err := s.Read(id)
					if err == nil && !bytes.Equal(data, contentForTest(r*1000+k%400)) {
						t.Errorf("concurrent read returned wrong bytes")
						return
					}
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Errorf("concurrent read: %v", err)
						return
					}
					s.Has(id)
					s.Stats()
				}
			}(i)
		}
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				w := s.NewWriter()
				got := map[ID][]byte{}
				for k := i * 100; k < i*100+300; k++ { // 100..299 overlap
					data := contentForTest(r*1000 + k)
					id, err := w.Put(TypeBlob, data)
					if err != nil {
						errs[i] = err
						w.Abort()
						return
					}
					got[id] = data
				}
				if _, err := w.Commit(); err != nil {
					errs[i] = err
					return
				}
				results[i] = got
			}(i)
		}
		wg.Wait()
		close(stop)
		readers.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d writer %d: %v", r, i, err)
			}
		}
		for _, m := range results {
			for id, d := range m {
				all[id] = d
			}
		}
		for id, want := range all {
			if _, data, err := s.Read(id); err != nil || !bytes.Equal(data, want) {
				t.Fatalf("round %d: Read %s: %v", r, id.Short(), err)
			}
		}
	}
	fresh := reopenForTest(t, dir)
	for id, want := range all {
		if _, data, err := fresh.Read(id); err != nil || !bytes.Equal(data, want) {
			t.Fatalf("fresh store: Read %s: %v", id.Short(), err)
		}
	}
	if n := fresh.Stats().Objects; n != len(all) {
		t.Fatalf("fresh store indexes %d objects, want %d", n, len(all))
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, TmpDir)); len(tmp) != 0 {
		t.Fatalf("temporary files left behind: %d", len(tmp))
	}
}

// Reads race with the removal of a pack (what gc does) and the Reload that
// notices it: no data race, and every read either succeeds with the right
// bytes or fails cleanly.
func TestReadWhilePackRemoved(t *testing.T) {
	s, dir := openStoreForTest(t)
	var ids []ID
	var packs []string
	for p := 0; p < 4; p++ {
		w := s.NewWriter()
		for k := 0; k < 20; k++ {
			id, err := w.Put(TypeBlob, contentForTest(p*100+k))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		name, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		packs = append(packs, name)
	}
	r := reopenForTest(t, dir) // packs not opened yet
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := range ids {
				id := ids[(i+g*7)%len(ids)]
				_, _, err := r.Read(id)
				_ = err // the pack may be gone: any error is acceptable here
			}
		}(g)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, name := range packs[:3] {
			os.Remove(filepath.Join(dir, PacksDir, name))
			r.Reload()
		}
	}()
	wg.Wait()
	for _, id := range ids[60:] {
		if _, _, err := r.Read(id); err != nil {
			t.Fatalf("object of the remaining pack: %v", err)
		}
	}
}

// A Reload that runs while another goroutine commits must not forget the
// pack just committed. Reload lists packs/ and only then takes the store
// lock; if Commit renames its pack and registers it in between, Reload sees
// a registered pack that was not in its listing and drops it as "removed":
// the committed objects vanish from Has/TypeOf/Each until a later Reload,
// and a read in flight on that pack fails with "file already closed".
func TestCommitSurvivesConcurrentReload(t *testing.T) {
	const commits = 120
	s, _ := openStoreForTest(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var committed []ID // objects whose Commit returned
	var readErrs int
	var firstErr error
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				if i == 0 {
					s.Reload()
					continue
				}
				// Read an object that is committed and never removed.
				mu.Lock()
				n := len(committed)
				var id ID
				if n > 0 {
					id = committed[k%n]
				}
				mu.Unlock()
				if n == 0 {
					continue
				}
				if _, _, err := s.Read(id); err != nil {
					mu.Lock()
					readErrs++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}(i)
	}
	var lost int
	for i := 0; i < commits; i++ {
		w := s.NewWriter()
		data := contentForTest(5000 + i)
		id, err := w.Put(TypeBlob, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		committed = append(committed, id)
		mu.Unlock()
		// The drop can land just after Commit returns: watch for a moment.
		for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
			if !s.Has(id) {
				lost++
				break
			}
		}
	}
	close(stop)
	wg.Wait()
	if lost > 0 || readErrs > 0 {
		t.Fatalf("of %d commits, %d vanished from the index shortly after Commit returned; %d reads of committed objects failed (first error: %v)", commits, lost, readErrs, firstErr)
	}
}
