package snap_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/snaptest"
)

// TestHelperCheckpointer is not a test: TestConcurrentSessions runs the
// test binary as separate processes that enter here.
func TestHelperCheckpointer(t *testing.T) {
	dir, session := os.Getenv("SNAP_HELPER_DIR"), os.Getenv("SNAP_HELPER_SESSION")
	if dir == "" {
		t.Skip("helper process only")
	}
	r, err := snap.Open(snap.Options{Dir: dir})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	n := 0
	fmt.Sscan(os.Getenv("SNAP_HELPER_N"), &n)
	for i := 0; i < n; i++ {
		// Each process edits its own file, so every checkpoint has content
		// of its own to verify.
		p := filepath.Join(dir, session+".txt")
		content := fmt.Sprintf("%s step %d\n", session, i)
		os.WriteFile(p, []byte(content), 0o644)
		// Two writers of one session may write the same content: AllowEmpty
		// keeps every call a checkpoint of its own.
		res, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: session, Summary: content, AllowEmpty: true})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("OK", res.ID, i)
	}
	os.Exit(0)
}

// TestConcurrentSessions runs several processes checkpointing at once in
// one store, some in the same session: every acknowledged checkpoint must be
// in its session's log and restorable.
func TestConcurrentSessions(t *testing.T) {
	r, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"shared.txt": "shared\n"})
	const perProc = 15
	procs := []string{"alpha", "beta", "gamma", "alpha"} // two writers share "alpha"
	type ack struct {
		session string
		id      objects.ID
	}
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	for _, s := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCheckpointer$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SNAP_HELPER_DIR="+root, "SNAP_HELPER_SESSION="+s, fmt.Sprintf("SNAP_HELPER_N=%d", perProc))
			var out bytes.Buffer
			cmd.Stdout = &out
			cmd.Stderr = &out
			err := cmd.Run()
			text := out.String()
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) >= 2 && f[0] == "OK" {
					id, perr := objects.ParseID(f[1])
					if perr != nil {
						t.Errorf("bad id %q", f[1])
						continue
					}
					mu.Lock()
					acks = append(acks, ack{s, id})
					mu.Unlock()
				}
			}
			if err != nil {
				t.Errorf("process %s: %v\n%s", s, err, text)
			}
		}()
	}
	wg.Wait()
	if len(acks) != len(procs)*perProc {
		t.Fatalf("%d acknowledged checkpoints, want %d", len(acks), len(procs)*perProc)
	}
	r.Objects().Reload()
	for _, a := range acks {
		log, err := r.Log(ctx, snap.LogOptions{Session: a.session})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range log {
			found = found || e.ID == a.id
		}
		if !found {
			t.Errorf("checkpoint %s of %s missing from its log", a.id.Short(), a.session)
		}
		show, err := r.Show(ctx, a.id)
		if err != nil {
			t.Errorf("show %s: %v", a.id.Short(), err)
			continue
		}
		var sb strings.Builder
		if err := r.Cat(ctx, a.id, a.session+".txt", &sb); err != nil {
			t.Errorf("cat %s: %v", a.id.Short(), err)
		} else if !strings.HasPrefix(show.Summary, a.session) {
			t.Errorf("checkpoint %s has summary %q", a.id.Short(), show.Summary)
		}
	}
	// Same-session writers were serialised by CAS: alpha's log is one chain
	// holding all of both writers' checkpoints.
	log, _ := r.Log(ctx, snap.LogOptions{Session: "alpha"})
	if len(log) != 2*perProc {
		t.Fatalf("alpha has %d checkpoints, want %d", len(log), 2*perProc)
	}
	for _, e := range log {
		if e.Abandoned {
			t.Errorf("alpha checkpoint #%d abandoned: a concurrent update was lost", e.Seq)
		}
	}
}
