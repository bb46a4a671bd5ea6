package model

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"testing"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/objects"
)

var longFlag = flag.Bool("model.long", false, "run the long mode (10,000 steps); also SNAP_MODEL_STEPS=N")

var (
	snapBin  string // the CLI built by TestMain
	baseSeed uint64 // SNAP_MODEL_SEED, else the time
	// canUnread: chmod 000 stops this process reading a file (false as
	// root, where the "unreadable" operations are skipped).
	canUnread bool
	// features of the engine found by probing it once (see probeFeatures).
	feat features
)

// features are behaviours the model adapts to, decided by a probe of the
// engine at start (the engine changes while this harness is used).
type features struct {
	emptyDirs bool // an empty directory is recorded in the tree
	// absentDocs: a state document whose source is gone is recorded as
	// absent (its source kept, no content) and a rewind removes it.
	absentDocs bool
	// docsExcluded: a state document's source inside the project is not
	// a tree file.
	docsExcluded bool
}

func TestMain(m *testing.M) {
	flag.Parse()
	// Every session index the engine reads from its file is checked
	// against the whole log (sessionindex.go): each step's checks below
	// (checkHeads reads every session's log) then check the index too.
	os.Setenv("SNAP_TEST_CHECK_INDEX", "1")
	// The default (CI) run replays fixed seeds, so CI fails only on a
	// change in snap, not on the draw.
	// The long mode, and SNAP_MODEL_SEED=random, explore new ones.
	baseSeed = ciSeed
	if long() || os.Getenv("SNAP_MODEL_SEED") == "random" {
		baseSeed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	if s := os.Getenv("SNAP_MODEL_SEED"); s != "" && s != "random" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "model: bad SNAP_MODEL_SEED %q: %v\n", s, err)
			os.Exit(2)
		}
		baseSeed = v
	}
	dir, err := os.MkdirTemp("", "snap-model-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "model:", err)
		os.Exit(1)
	}
	snapBin = filepath.Join(dir, "snap")
	build := exec.Command("go", "build", "-o", snapBin, "github.com/snapcore-dev/snap/cmd/snap")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "model: building snap:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	canUnread = probeUnreadable(dir)
	if feat, err = probeFeatures(dir); err != nil {
		fmt.Fprintln(os.Stderr, "model: probing the engine:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Printf("model: seed %d (reproduce with SNAP_MODEL_SEED=%d); chmod 000 stops reads: %v; engine: %+v\n",
		baseSeed, baseSeed, canUnread, feat)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// probeUnreadable reports whether chmod 000 stops this process reading.
func probeUnreadable(dir string) bool {
	p := filepath.Join(dir, "unreadable")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		return false
	}
	defer os.Remove(p)
	os.Chmod(p, 0)
	f, err := os.Open(p)
	if err == nil {
		f.Close()
		return false
	}
	return true
}

// probeFeatures checks once what the engine records, so the model follows
// it: planned changes (empty directories) switch on here by themselves.
func probeFeatures(dir string) (features, error) {
	var f features
	root := filepath.Join(dir, "probe")
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		return f, err
	}
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644)
	repo, _, err := snap.Init(snap.Options{Dir: root})
	if err != nil {
		return f, err
	}
	defer repo.Close()
	res, err := repo.Checkpoint(context.Background(), snap.CheckpointOptions{})
	if err != nil {
		return f, err
	}
	ck, err := repo.Objects().ReadCheckpoint(res.ID)
	if err != nil {
		return f, err
	}
	t, err := repo.Objects().ReadTree(ck.Tree)
	if err != nil {
		return f, err
	}
	if e, ok := t.Find("empty"); ok && e.Mode == objects.ModeDir {
		f.emptyDirs = true
	}
	// A transcript inside the project, then gone.
	conv := filepath.Join(root, "chat.jsonl")
	os.WriteFile(conv, []byte(`{"role":"user","content":"hi"}`+"\n"), 0o644)
	d, err := snap.ReadStateDoc("conversation", conv, nil)
	if err != nil {
		return f, err
	}
	if res, err = repo.Checkpoint(context.Background(), snap.CheckpointOptions{State: []snap.StateDoc{d}}); err != nil {
		return f, err
	}
	if ck, err = repo.Objects().ReadCheckpoint(res.ID); err != nil {
		return f, err
	}
	if t, err = repo.Objects().ReadTree(ck.Tree); err != nil {
		return f, err
	}
	_, inTree := t.Find("chat.jsonl")
	f.docsExcluded = !inTree
	os.Remove(conv)
	if res, err = repo.Checkpoint(context.Background(), snap.CheckpointOptions{}); err != nil {
		return f, err
	}
	if ck, err = repo.Objects().ReadCheckpoint(res.ID); err != nil {
		return f, err
	}
	st, err := repo.Objects().ReadTree(ck.State)
	if err != nil {
		return f, err
	}
	_, inState := st.Find("conversation")
	f.absentDocs = !inState && ck.StateSources["conversation"] != ""
	return f, nil
}

// long reports whether the long mode was asked for.
func long() bool { return *longFlag || os.Getenv("SNAP_MODEL") == "long" }

// envInt reads an integer knob.
func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.Atoi(s); err == nil {
			return v
		}
	}
	return def
}

// envList reads a comma-separated knob.
func envList(name string) []string {
	var out []string
	for _, s := range strings.Split(os.Getenv(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
