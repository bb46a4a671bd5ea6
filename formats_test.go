package snap_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/workflow"
)

// docs/formats.md lists everything that lives under .snap/ and
// docs/schemas/ holds the versioned JSON Schemas of the JSON the store
// keeps. TestFormats builds a real store through every kind of operation
// (and a move interrupted part way, twice), then checks the store against
// both: every path found is listed, every listed entry this run produces
// is there, every op-log record, move journal, staged-edits document and
// config validates against its schema, and every op kind the schema knows
// was written and validated.
func TestFormats(t *testing.T) {
	t.Setenv(snap.EnvStore, "") // the hook run must find this store, not another
	list := readFormatsList(t)
	st := buildFormatsStore(t)

	t.Run("layout", func(t *testing.T) {
		seen := map[string]bool{} // row pattern -> matched
		for _, w := range st.walks {
			for _, p := range w.paths {
				row := list.match(p.rel, p.dir)
				if row == nil {
					kind := "file"
					if p.dir {
						kind = "directory"
					}
					t.Errorf("after %s: %s .snap/%s is not in docs/formats.md's list", w.when, kind, p.rel)
					continue
				}
				seen[row.pattern] = true
			}
		}
		for _, r := range list.rows {
			why, excused := formatsNotProduced[r.pattern]
			switch {
			case seen[r.pattern] && excused:
				t.Errorf("%s: found in the store, but TestFormats says it is not produced (%s): drop it from formatsNotProduced", r.pattern, why)
			case !seen[r.pattern] && !excused:
				t.Errorf("%s (%s) is listed in docs/formats.md but never appeared in the store built by TestFormats: "+
					"produce it, or say in formatsNotProduced why not", r.pattern, r.kept)
			}
		}
		for p := range formatsNotProduced {
			if list.byPattern[p] == nil {
				t.Errorf("formatsNotProduced names %s, which docs/formats.md does not list", p)
			}
		}
	})

	t.Run("schemas", func(t *testing.T) {
		schemas := compileSchemas(t)
		kinds := map[string]bool{}
		detailForms := map[string]bool{}
		for i, rec := range st.ops {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec))
			if err != nil {
				t.Fatalf("op-log record %d: %v", i+1, err)
			}
			if err := schemas["op-record.v1.schema.json"].Validate(v); err != nil {
				t.Errorf("op-log record %d does not match docs/schemas/op-record.v1.schema.json:\n%s\n%v", i+1, rec, err)
			}
			var op struct {
				Kind   string          `json:"kind"`
				Detail json.RawMessage `json:"detail"`
			}
			json.Unmarshal(rec, &op)
			kinds[op.Kind] = true
			form := "none"
			if len(op.Detail) > 0 {
				form = "detail"
				if bytes.Contains(op.Detail, []byte(`"files":`)) {
					form = "move"
				}
			}
			detailForms[op.Kind+"/"+form] = true
		}
		// Every kind the schema knows was written, so each detail schema
		// was checked against what the code writes; both forms of the
		// kinds that have two. And every OpKind the engine declares is one
		// the schema knows.
		schemaKinds := opKindsOfSchema(t)
		for _, k := range schemaKinds {
			if !kinds[k] {
				t.Errorf("op kind %q is in op-record.v1.schema.json but TestFormats wrote no such record", k)
			}
		}
		declared := declaredOpKinds(t)
		for _, k := range declared {
			if !slices.Contains(schemaKinds, k) {
				t.Errorf("op kind %q (an OpKind of the root package) is not in op-record.v1.schema.json: add it, with its detail, and write one in TestFormats", k)
			}
		}
		for _, k := range schemaKinds {
			if !slices.Contains(declared, k) && formatsUndeclaredKinds[k] == "" {
				t.Errorf("op kind %q of op-record.v1.schema.json is not an OpKind of the root package", k)
			}
		}
		for _, f := range []string{"task-commit/detail", "task-commit/move", "undo/none", "undo/move", "redo/none", "redo/move"} {
			if !detailForms[f] {
				t.Errorf("no %s record was written", f)
			}
		}
		if len(st.journals) < 2 {
			t.Fatalf("%d move journals captured, want at least 2", len(st.journals))
		}
		for i, j := range st.journals {
			validateJSON(t, schemas["move-journal.v1.schema.json"], j, "move journal %d", i+1)
		}
		if len(st.edits) == 0 {
			t.Fatal("no staged-edits document captured")
		}
		for i, e := range st.edits {
			validateJSON(t, schemas["edits-pending.v1.schema.json"], e, "edits document %d", i+1)
		}
		validateJSON(t, schemas["config.v1.schema.json"], st.config, "config")
	})
}

// formatsNotProduced: entries of docs/formats.md that the store
// TestFormats builds does not hold at any of its walks, and why.
var formatsNotProduced = map[string]string{
	".config.tmp-*":                     "a temporary file of the config's atomic replace: left only by a crash",
	".move-journal.tmp-*":               "a temporary file of the journal's atomic replace: left only by a crash",
	"edits/.<session>.json.tmp-*":       "a temporary file of the staged edits' atomic replace: left only by a crash",
	"cache/stat.tmp-*":                  "a temporary file of the stat cache's replace: left only by a crash",
	"cache/stat.log.tmp-*":              "a temporary file of a stat cache journal being started: left only by a crash",
	"tmp/pack-<pid>-*":                  "a pack being written: present during a writer's run or after a crash",
	"tmp/pack-<pid>-repack-*":           "a pack gc is writing: present during gc or after a crash",
	"refs/sessions/<session>/head.lock": "present while a ref is updated, or after a crash",
	"refs/archive/<session>/head.lock":  "present while a ref is updated, or after a crash",
	"refs/labels/<label>.lock":          "present while a ref is updated, or after a crash",
	"mcp-token":                         "written by 'snap mcp --http' (package main of cmd/snap)",
	"mcp-token-*":                       "written by 'snap mcp --http' while it makes its token",
	"hook.log.tmp":                      "made when the hook log passes 1 MiB",
	"cache/monitor.tmp-*":               "a temporary file of the monitor's bases' replace: left only by a crash",
	"cache/sessions/<hash>.tmp-*":       "a temporary file of a session index's replace: left only by a crash",
	"watch-cookie-*":                    "made and removed by the watch daemon within each answer",
	"oplog.cache":                       "written once 64 KiB of records are parsed past it (TestFormats's log is shorter; refs TestOpCacheGivesWhatTheLogHolds writes it)",
	".oplog.cache.tmp-*":                "a temporary file of the op-log cache's atomic replace: left only by a crash",
}

// formatsUndeclaredKinds: op kinds written by another package than the
// root, which declares no OpKind for them.
var formatsUndeclaredKinds = map[string]string{
	"session-expire": "gc/collect.go: an archived session retention removed",
}

// declaredOpKinds returns the values of the root package's OpKind
// constants (opkinds.go), read from its source.
func declaredOpKinds(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "OpKind" {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						k, _ := strconv.Unquote(lit.Value)
						kinds = append(kinds, k)
					}
				}
			}
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("found %d OpKind constants in the root package", len(kinds))
	}
	return kinds
}

// ---- the list in docs/formats.md

type formatsRow struct {
	pattern, kept string
	dir           bool
	re            *regexp.Regexp
}

type formatsList struct {
	rows      []*formatsRow
	byPattern map[string]*formatsRow
}

// match returns the first row whose pattern matches rel (a file, or a
// directory when dir).
func (l *formatsList) match(rel string, dir bool) *formatsRow {
	for _, r := range l.rows {
		if r.dir == dir && r.re.MatchString(rel) {
			return r
		}
	}
	return nil
}

// readFormatsList parses the table of docs/formats.md's section "The
// list": one row per entry, the first cell the path pattern in backquotes
// (<name> stands for one path component, * for any characters within one;
// a trailing / marks a directory), the kept-as cell one of the words below.
func readFormatsList(t *testing.T) *formatsList {
	t.Helper()
	data, err := os.ReadFile("docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	l := &formatsList{byPattern: map[string]*formatsRow{}}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## The list")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("docs/formats.md: a row of the list has %d cells, want 5: %s", len(cells), line)
		}
		pat := strings.Trim(strings.TrimSpace(cells[0]), "`")
		kept := strings.Trim(strings.TrimSpace(cells[3]), "*")
		if !slices.Contains([]string{"durable", "disposable", "lock", "temporary", "unsynced", "directory"}, kept) {
			t.Fatalf("docs/formats.md: %s: kept as %q, want durable, disposable, lock, temporary, unsynced or directory", pat, kept)
		}
		r := &formatsRow{pattern: pat, kept: kept, dir: strings.HasSuffix(pat, "/")}
		if r.dir != (kept == "directory") {
			t.Fatalf("docs/formats.md: %s: a pattern ending in / is a directory, and only it", pat)
		}
		expr := regexp.QuoteMeta(strings.TrimSuffix(pat, "/"))
		expr = regexp.MustCompile(`<[a-z]+>`).ReplaceAllString(expr, `[^/]+`)
		expr = strings.ReplaceAll(expr, `\*`, `[^/]*`)
		r.re = regexp.MustCompile("^" + expr + "$")
		if l.byPattern[pat] != nil {
			t.Fatalf("docs/formats.md: %s is listed twice", pat)
		}
		l.rows = append(l.rows, r)
		l.byPattern[pat] = r
	}
	if len(l.rows) < 10 {
		t.Fatalf("docs/formats.md: %d rows found in the section \"The list\"", len(l.rows))
	}
	return l
}

// ---- the store

type formatsWalk struct {
	when  string
	paths []formatsPath
}

type formatsPath struct {
	rel string
	dir bool
}

type formatsStore struct {
	walks    []formatsWalk
	ops      [][]byte // the op log's records (their JSON)
	journals [][]byte // move journals, as found
	edits    [][]byte // staged-edits documents, as found
	config   []byte
}

// cancelOnCreate cancels a move (its context) when the restore creates
// its first file in the working tree: the move is then left part way, its
// journal written, as a killed process leaves it.
type cancelOnCreate struct {
	fsys.Sys
	mu     sync.Mutex
	cancel func()
}

func (c *cancelOnCreate) Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	c.mu.Lock()
	if flags&unix.O_CREAT != 0 && c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	c.mu.Unlock()
	return c.Sys.Openat(dirfd, path, flags, mode)
}

// interrupted runs op under a context that the first file the restore
// creates cancels, and expects it to fail so.
func (c *cancelOnCreate) interrupted(t *testing.T, what string, op func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	err := op(ctx)
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s interrupted: %v, want context.Canceled", what, err)
	}
}

func buildFormatsStore(t *testing.T) *formatsStore {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	outside := t.TempDir()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Millisecond))) }
	sys := &cancelOnCreate{Sys: fsys.RealSys}
	r, _, err := snap.Init(snap.Options{Dir: root, Sys: sys, Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	st := &formatsStore{}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	walk := func(when string) { st.walk(t, r.StoreDir, when) }

	// Checkpoints with state documents (one read from a file, one given),
	// a label, a message id recorded on an unchanged checkpoint.
	transcript := filepath.Join(outside, "transcript.jsonl")
	os.WriteFile(transcript, []byte(`{"type":"user","message":{"role":"user","content":"hello"}}`+"\n"), 0o644)
	docs := []snap.StateDoc{{Name: "conversation", Source: transcript}, {Name: "context", Data: []byte("goal: formats")}}
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "one\ntwo\nthree\n", "dir/b.txt": "b1\n", "c.txt": "c1\n",
		"h/1": "h", "h/2": "h", "h/3": "h", "h/4": "h"})
	c1, err := r.Checkpoint(ctx, snap.CheckpointOptions{State: docs, MessageID: "m1", Labels: []string{"first"}})
	must("checkpoint", err)
	snaptest.WriteFiles(t, root, map[string]string{"dir/b.txt": "b2\n", "d.txt": "d2\n"})
	os.WriteFile(transcript, []byte(`{"type":"user","message":{"role":"user","content":"hello"}}`+"\n"+`{"type":"user","message":{"role":"user","content":"again"}}`+"\n"), 0o644)
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{MessageID: "m2", Summary: "second"})
	must("checkpoint", err)
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{MessageID: "m3"}) // unchanged: a message record
	must("checkpoint (message)", err)
	_, err = r.Label(ctx, "", "@", "second")
	must("label", err)

	// Moves: a rewind, its undo and redo, and the undo of a checkpoint
	// and its redo (records without detail).
	_, err = r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	must("rewind", err)
	_, err = r.Undo(ctx, "")
	must("undo", err)
	_, err = r.Redo(ctx, "")
	must("redo", err)
	_, err = r.Undo(ctx, "")
	must("undo", err)
	snaptest.WriteFiles(t, root, map[string]string{"e.txt": "e\n"})
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	must("checkpoint", err)
	_, err = r.Undo(ctx, "")
	must("undo of a checkpoint", err)
	_, err = r.Redo(ctx, "")
	must("redo of a checkpoint", err)
	walk("a rewind, undo and redo (the trash holds replaced files)")

	// The agent workflow: tasks, staged edits, a revert.
	_, err = workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "edit a"})
	must("task begin", err)
	_, err = workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "a.txt", Old: "two", New: "TWO"})
	must("edit stage", err)
	walk("an edit staged")
	_, err = workflow.New(r).TaskCommit(ctx, workflow.TaskOptions{Text: "a edited"})
	must("task commit with edits", err)
	_, err = workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "nothing"})
	must("task begin", err)
	_, err = workflow.New(r).TaskCommit(ctx, workflow.TaskOptions{Text: "done"})
	must("task commit", err)
	_, err = workflow.New(r).TaskBegin(ctx, workflow.TaskOptions{Text: "abandoned"})
	must("task begin", err)
	snaptest.WriteFiles(t, root, map[string]string{"c.txt": "c-task\n"})
	_, err = workflow.New(r).TaskRevert(ctx, workflow.TaskOptions{Text: "wrong way"})
	must("task revert", err)
	_, err = workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: "c.txt", Old: "c1", New: "c2"})
	must("edit stage", err)
	_, err = workflow.New(r).EditCommit(ctx, "", "c edited")
	must("edit commit", err)
	_, err = workflow.New(r).Revert(ctx, workflow.RevertOptions{Ref: "@"})
	must("revert", err)
	_, err = r.Undo(ctx, "")
	must("undo of a revert", err)

	// Actors: a checkpoint of the agent's, another session's, and a
	// rewind that keeps what that session wrote (its recorded end, the
	// op's checkpoints, rules_from), undone and redone.
	snaptest.WriteFiles(t, root, map[string]string{"c.txt": "c-agent\n"})
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{Actor: snap.ActorAgent, Call: "toolu_1"})
	must("checkpoint (agent)", err)
	snaptest.WriteFiles(t, root, map[string]string{"other.txt": "another session's\n"})
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{Session: "other", Actor: snap.ActorUser})
	must("checkpoint (another session)", err)
	rr, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
	must("scoped rewind", err)
	if len(rr.Kept) == 0 {
		t.Fatal("the scoped rewind kept nothing: the formats of its records are not exercised")
	}
	_, err = r.Undo(ctx, "")
	must("undo of a scoped rewind", err)
	_, err = r.Redo(ctx, "")
	must("redo of a scoped rewind", err)
	_, err = r.Undo(ctx, "", snap.UndoOptions{All: true})
	must("undo --all", err)

	// A rewind and an edit commit interrupted once their journal is
	// written: the journal is found, then the next writer completes them.
	// (Fewer than 32 files are written one by one, so the restore stops
	// after the second: it must have three or more to write.)
	snaptest.WriteFiles(t, root, map[string]string{"h/1": "1", "h/2": "2", "h/3": "3", "h/4": "4"})
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	must("checkpoint", err)
	sys.interrupted(t, "rewind", func(ctx context.Context) error {
		_, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
		return err
	})
	walk("an interrupted rewind")
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	must("checkpoint completing the rewind", err)
	for _, p := range []string{"a.txt", "g1.txt", "g2.txt", "g3.txt"} {
		_, err = workflow.New(r).EditStage(ctx, workflow.EditRequest{Path: p, Kind: "write", New: "rewritten\n"})
		must("edit stage", err)
	}
	sys.interrupted(t, "edit commit", func(ctx context.Context) error {
		_, err := workflow.New(r).EditCommit(ctx, "", "a rewritten")
		return err
	})
	walk("an interrupted edit commit")
	_, err = r.Label(ctx, "", "@", "after-recovery")
	must("label completing the edit commit", err)

	// A journal whose target is gone is set aside (move-journal.abandoned).
	snaptest.WriteFiles(t, root, map[string]string{"h/1": "1", "h/2": "2", "h/3": "3", "h/4": "4"})
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	must("checkpoint", err)
	sys.interrupted(t, "rewind (to abandon)", func(ctx context.Context) error {
		_, err := r.Rewind(ctx, snap.RewindOptions{Target: c1.ID.String()})
		return err
	})
	journal := filepath.Join(r.StoreDir, "move-journal")
	data, err := os.ReadFile(journal)
	must("read journal", err)
	var j map[string]any
	must("decode journal", json.Unmarshal(data, &j))
	j["target"] = strings.Repeat("ab", 32) // a checkpoint the store does not hold
	data, _ = json.Marshal(j)
	must("write journal", os.WriteFile(journal, data, 0o644))
	_, err = r.Label(ctx, "", "@", "after-abandon")
	must("label abandoning the journal", err)
	if _, err := os.Stat(journal + ".abandoned"); err != nil {
		t.Fatalf("the journal was not set aside: %v", err)
	}
	_, err = r.Checkpoint(ctx, snap.CheckpointOptions{})
	must("checkpoint", err)

	// Sessions: archived, removed; imported from another store (whose
	// first checkpoint stays behind, so it is listed as expired here).
	for _, s := range []string{"side", "gone"} {
		_, err = r.Checkpoint(ctx, snap.CheckpointOptions{Session: s})
		must("checkpoint in "+s, err)
	}
	must("archive", r.ArchiveSession(ctx, "side"))
	must("remove", r.RemoveSession(ctx, "gone"))
	importFrom(t, r)

	// The hook log.
	agent.Hook(ctx, strings.NewReader("{}"), io.Discard, agent.Options{}, func([]byte) (agent.Event, error) {
		return agent.Event{Agent: "formats-test", Name: "nothing", Cwd: root}, nil
	})
	walk("sessions archived, removed, imported; a hook run")

	// The watch daemon (design §10): its lock and socket while it runs,
	// and the monitor's bases once checkpoints asked it.
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- r.Watch(wctx, 0, nil) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := r.WatchStatus(time.Second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch daemon did not answer within 10s")
		}
	}
	for range 2 {
		_, err := r.Checkpoint(ctx, snap.CheckpointOptions{Session: "watched", AllowEmpty: true})
		must("a checkpoint with the watch daemon", err)
	}
	walk("the watch daemon running")
	stopWatch()
	<-watched

	// Retention and gc, hours later: the archived session expires.
	clock.Add(int64(3 * time.Hour))
	res, err := r.GC(ctx, snap.GCOptions{Policy: &snap.Policy{KeepLast: 3, KeepWithin: time.Hour, ArchivedExpire: time.Hour}})
	must("gc", err)
	if res.SessionsExpired != 1 || res.Expired == 0 {
		t.Fatalf("gc: %+v, want one archived session and some checkpoints expired", res)
	}
	_, err = r.EmptyTrash(ctx)
	must("empty trash", err)
	walk("gc")
	snaptest.Fsck(t, r)

	oplog, err := os.ReadFile(filepath.Join(r.StoreDir, "oplog"))
	must("read op log", err)
	for _, line := range strings.SplitAfter(string(oplog), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, '\t')
		if i < 0 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("op log line %q is not <json> TAB <sum> LF", line)
		}
		st.ops = append(st.ops, []byte(line[:i]))
	}
	st.config, err = os.ReadFile(filepath.Join(r.StoreDir, "config"))
	must("read config", err)
	return st
}

// importFrom copies the head of a session of another store, whose parent
// it leaves behind, into r through an Importer.
func importFrom(t *testing.T, r *snap.Repo) {
	t.Helper()
	ctx := context.Background()
	other, root := snaptest.NewRepo(t)
	snaptest.WriteFiles(t, root, map[string]string{"x/y.txt": "y1\n"})
	if _, err := other.Checkpoint(ctx, snap.CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	snaptest.WriteFiles(t, root, map[string]string{"x/y.txt": "y2\n", "z.txt": "z\n"})
	head, err := other.Checkpoint(ctx, snap.CheckpointOptions{State: []snap.StateDoc{{Name: "context", Data: []byte("elsewhere")}}})
	if err != nil {
		t.Fatal(err)
	}
	im, err := r.NewImporter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Abort()
	var copyTree func(id snap.ID) snap.ID
	copyTree = func(id snap.ID) snap.ID {
		entries, err := other.ReadTree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			if e.Mode == snap.ModeDir {
				entries[i].ID = copyTree(e.ID)
				continue
			}
			var buf bytes.Buffer
			if _, err := other.WriteContent(ctx, e.ID, &buf); err != nil {
				t.Fatal(err)
			}
			if entries[i].ID, _, err = im.PutContent(&buf); err != nil {
				t.Fatal(err)
			}
		}
		got, err := im.PutTree(entries)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	node, raw, err := other.ReadNode(ctx, head.ID)
	if err != nil {
		t.Fatal(err)
	}
	copyTree(node.Tree)
	copyTree(node.State)
	id, err := im.PutNode(raw)
	if err != nil || id != head.ID {
		t.Fatalf("import: %s, %v", id, err)
	}
	if _, err := im.Commit(ctx, []snap.SessionImport{{Session: "imported", Head: id, Checkpoints: []snap.ID{id}}}); err != nil {
		t.Fatal(err)
	}
}

// walk records every path under the store, and the documents to validate.
func (st *formatsStore) walk(t *testing.T, store, when string) {
	t.Helper()
	w := formatsWalk{when: when}
	err := filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == store {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, store+string(filepath.Separator)))
		w.paths = append(w.paths, formatsPath{rel: rel, dir: d.IsDir()})
		switch {
		case rel == "move-journal":
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.journals = append(st.journals, data)
		case strings.HasPrefix(rel, "edits/") && strings.HasSuffix(rel, ".json") && !strings.HasPrefix(d.Name(), "."):
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.edits = append(st.edits, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(w.paths, func(i, j int) bool { return w.paths[i].rel < w.paths[j].rel })
	st.walks = append(st.walks, w)
}

// ---- the schemas

// compileSchemas compiles every docs/schemas/*.json (each checked against
// its meta-schema), registered under its $id, so that they refer to each
// other without a network.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob("docs/schemas/*.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/schemas: %v %v", files, err)
	}
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	fileName := regexp.MustCompile(`^[a-z-]+\.v[0-9]+\.schema\.json$`)
	for _, f := range files {
		base := filepath.Base(f)
		if !fileName.MatchString(base) {
			t.Errorf("%s: a schema's file name is NAME.vN.schema.json", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if !strings.HasSuffix(id, "/"+base) {
			t.Errorf("%s: $id %q does not end in its file name", f, id)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ids[base] = id
	}
	out := map[string]*jsonschema.Schema{}
	for base, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		out[base] = s
	}
	for _, want := range []string{"op-record.v1.schema.json", "move-journal.v1.schema.json", "edits-pending.v1.schema.json", "config.v1.schema.json"} {
		if out[want] == nil {
			t.Fatalf("docs/schemas/%s is missing", want)
		}
	}
	return out
}

// opKindsOfSchema returns the op kinds op-record.v1.schema.json allows.
func opKindsOfSchema(t *testing.T) []string {
	data, err := os.ReadFile("docs/schemas/op-record.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Kind struct {
				Enum []string `json:"enum"`
			} `json:"kind"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil || len(s.Properties.Kind.Enum) == 0 {
		t.Fatalf("op-record.v1.schema.json: no enum of kinds (%v)", err)
	}
	return s.Properties.Kind.Enum
}

func validateJSON(t *testing.T, s *jsonschema.Schema, data []byte, what string, args ...any) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err == nil {
		err = s.Validate(v)
	}
	if err != nil {
		t.Errorf("%s does not match %s:\n%s\n%v", fmt.Sprintf(what, args...), s.Location, data, err)
	}
}
