package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the go-git worker, as the bench
// binary does.
func TestMain(m *testing.M) {
	if os.Getenv(goGitWorkerEnv) == "1" {
		if err := goGitWorker(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQuickHarness runs every workload on tiny sizes and checks correctness
// only: no errors (every rewind restored the exact bytes, every checkpoint
// recorded what changed), every row present, the table and JSON well formed.
// Speed is not asserted.
func TestQuickHarness(t *testing.T) {
	cfg := config{
		Quick: true, Scale: 1, Runs: 2, Seed: 7, Workdir: t.TempDir(),
		Realdata:     filepath.Join("..", "..", "shared", "realdata"),
		GoGitTimeout: time.Minute,
		W1Files:      300, W2Files: 100, W2Steps: 12, W3Steps: 6, W4Size: 4 << 20, W5Files: 300, W8Size: 1 << 20,
		W9Lines: 300, W9Steps: 8, W10Runs: 4, W12Small: 5, W12Big: 12, W12Runs: 2,
	}
	var log bytes.Buffer
	rep, err := runBench(cfg, &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v\nlog:\n%s", rep.Errors, log.String())
	}
	want := map[string][]string{
		"W1":  {rowFirst, rowNoChange, row10, row1000, rowRewind10, rowRewind1000, rowStore},
		"W2":  {"checkpoint latency p50", "checkpoint latency p99", "`log -n 20`", rowStore, "transcript storage"},
		"W3":  {"per-step checkpoint p50", "store growth over the replay", "rewind to a random step"},
		"W4":  {rowBigFirst, rowBigChanged, rowBigRSS},
		"W5":  {rowEditSet},
		"W8":  {rowConvDiff, rowConvDiffLive, rowConvDiffRSS, rowConvLiveRSS, rowConvCompact, rowConvCompactRSS},
		"W9":  {rowBlame, rowBlame + " (git at its best)"},
		"W10": {rowStartVersion, rowStartHook},
		"W11": {rowWatchNoChange, rowWatch10, rowScanNoChange, rowWatchRewind10},
		"W12": {rowHistLog(5), rowHistShow(5), rowHistCk(5), rowHistMsg(5), rowHistLog(12), rowHistShow(12), rowHistCk(12), rowHistMsg(12)},
	}
	for w, names := range want {
		for _, n := range names {
			if !rep.hasRow(w, n) {
				t.Errorf("no %s row %q", w, n)
			}
		}
	}
	if _, err := os.Stat(cfg.Realdata); err == nil {
		for _, x := range rep.Rows {
			if x.Workload == "W3" && x.Skipped != "" {
				t.Errorf("W3 row %q skipped although %s exists: %s", x.Name, cfg.Realdata, x.Skipped)
			}
		}
	} else {
		t.Logf("W3 rows are skipped: %s is absent", cfg.Realdata)
	}

	var md bytes.Buffer
	rep.writeMarkdown(&md)
	if n := strings.Count(md.String(), "\n| W"); n != len(rep.Rows) {
		t.Errorf("table has %d rows, report %d", n, len(rep.Rows))
	}
	var js bytes.Buffer
	if err := rep.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Rows) {
		t.Errorf("JSON does not round-trip: %v", err)
	}
	t.Logf("log:\n%s\n%s", log.String(), md.String())
}

func TestInsertLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		at   int
		want string
	}{
		{"a\nb\n", 0, "X\na\nb\n"},
		{"a\nb\n", 1, "a\nX\nb\n"},
		{"a\nb\n", 2, "a\nb\nX\n"},
		{"a\nb", 5, "a\nb\nX\n"},
	} {
		if got := string(insertLine([]byte(tc.in), tc.at, "X")); got != tc.want {
			t.Errorf("insertLine(%q, %d) = %q, want %q", tc.in, tc.at, got, tc.want)
		}
	}
}

func TestParseReplay(t *testing.T) {
	raw := []byte(`{"type":"user","uuid":"1","cwd":"/p","toolUseResult":{"filePath":"/p/a.go","oldString":"x","newString":"y","originalFile":"x x","replaceAll":false}}
{"type":"user","uuid":"2","cwd":"/p","toolUseResult":"Error: no"}{"type":"user","uuid":"3","cwd":"/p","toolUseResult":{"type":"create","filePath":"/p/b/c.go","content":"new","originalFile":null}}
{"type":"user","uuid":"4","cwd":"/p","toolUseResult":{"type":"text","file":{"filePath":"/p/a.go"}}}
`)
	steps, skipped, err := parseReplay("s", raw)
	if err != nil || skipped != 0 || len(steps) != 2 {
		t.Fatalf("steps %d, skipped %d, err %v", len(steps), skipped, err)
	}
	if s := steps[0]; s.path != "a.go" || string(s.before) != "x x" || string(s.after) != "y x" || !bytes.HasSuffix(s.prefix, []byte("}\n")) {
		t.Errorf("edit step: %+v", s)
	}
	if s := steps[1]; s.path != "b/c.go" || s.before != nil || string(s.after) != "new" || !bytes.HasSuffix(s.prefix, []byte(`"originalFile":null}}`+"\n")) {
		t.Errorf("write step: %+v", s)
	}
}

// -render prints a saved -json run exactly as the run printed its table.
func TestRenderSavedRun(t *testing.T) {
	rep := &report{Machine: map[string]string{"cpus": "2"}}
	rep.timeRow("W1", "no-change checkpoint", 50*time.Millisecond, "shadow git `status`", 60*time.Millisecond, 0.8, "")
	rep.bytesRow("W2", "store bytes", 9<<20, "shadow git objects after `git gc`", 8<<20, 1.2, "")
	rep.skip("W5", "`checkpoint --paths P`", "snap", "no time")
	rep.note("a note")
	var saved, want, got bytes.Buffer
	if err := rep.writeJSON(&saved); err != nil {
		t.Fatal(err)
	}
	printMachine(&want, rep.Machine)
	rep.writeMarkdown(&want)
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, saved.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := render(path, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("rendered:\n%s\nwant:\n%s", got.String(), want.String())
	}
	if !strings.Contains(got.String(), "| W1 | no-change checkpoint | 50.0 ms |") || !strings.Contains(got.String(), "| 0.83x | ≤ 0.80x | missed |") {
		t.Fatalf("unexpected table:\n%s", got.String())
	}
}
