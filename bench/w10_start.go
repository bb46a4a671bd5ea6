package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// W10 process start: the fixed cost of starting snap, which every hook event
// (two per tool call of an agent) and every command pays before doing
// anything. `snap --version` against `git --version`, and against a minimal
// Go program (one that prints a line: what any Go program pays, the issue's
// peer); a hook event that records nothing — a PreToolUse of Read: the
// payload parsed, the store opened, one line appended to the hook log —
// against `git rev-parse --git-dir`, git's cheapest command that finds its
// repository. In a small project that is a git work tree and has a snap
// store. W10Runs rounds, each running the commands once in an order that
// flips every round; medians. Then snap's package initialisation, summed
// from GODEBUG=inittrace=1, median of as many runs.

const (
	rowStartVersion = "`snap --version`"
	rowStartMinimal = "`snap --version` against a minimal Go program"
	rowStartHook    = "no-op hook event (PreToolUse of Read)"
	rowStartInit    = "package initialisation (`GODEBUG=inittrace=1`, summed; target ≤ 2 ms)"
)

// minimalGo builds a Go program that prints a line into dir, with the go
// command on PATH ("" when there is none: the row is left out).
func minimalGo(dir string) string {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	src := filepath.Join(dir, "minimal")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module minimal\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644)
	bin := filepath.Join(src, "minimal")
	cmd := exec.Command(goCmd, "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: W10: the minimal Go program did not build: %v: %s\n", err, out)
		return ""
	}
	return bin
}

// initTime is the package initialisation of one run of snap --version:
// the clock times GODEBUG=inittrace=1 prints, summed.
func initTime(snapBin string) (time.Duration, error) {
	cmd := exec.Command(snapBin, "--version")
	cmd.Env = append(cleanEnv(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init pkg @0.39 ms, 0.047 ms clock, 0 bytes, 0 allocs
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] == "init" && f[6] == "clock," {
			if ms, err := strconv.ParseFloat(f[4], 64); err == nil {
				sum += time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	return sum, nil
}

func runW10(b *bench) error {
	const W = "W10"
	root, err := b.dir("w10")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir := filepath.Join(root, "proj")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return err
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("f%02d.go", i)), []byte(fmt.Sprintf("package src // %d\n", i)), 0o644); err != nil {
			return err
		}
	}
	conv := filepath.Join(root, "claude", "session.jsonl")
	os.MkdirAll(filepath.Dir(conv), 0o755)
	if err := os.WriteFile(conv, []byte(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n"), 0o644); err != nil {
		return err
	}
	if b.hasGit {
		if _, err := run(dir, "git", "init", "-q"); err != nil {
			return err
		}
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("--conversation", conv, "-s", "w10"); err != nil {
		return err
	}
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "w10", "transcript_path": conv, "cwd": dir,
		"tool_name": "Read", "tool_use_id": "toolu_r", "tool_input": map[string]any{"file_path": filepath.Join(dir, "src", "f00.go")}})

	// timed runs one command in the project and times it, process start and
	// exit included; anything on stderr is an error (the hook writes there
	// only when something went wrong), and so is output from the hook.
	timed := func(stdin []byte, name string, args ...string) (time.Duration, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, cleanEnv()
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		switch {
		case err != nil:
			err = fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		case stderr.Len() > 0:
			err = fmt.Errorf("%s %s wrote on stderr: %s", filepath.Base(name), strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		case stdin != nil && stdout.Len() > 0:
			err = fmt.Errorf("the hook printed %q", stdout.String())
		}
		return d, err
	}
	var version, hook, gitVersion, gitRevParse, minimal []time.Duration
	add := func(to *[]time.Duration, stdin []byte, name string, args ...string) func() error {
		return func() error {
			d, err := timed(stdin, name, args...)
			*to = append(*to, d)
			return err
		}
	}
	steps := []func() error{
		add(&version, nil, b.cfg.Snap, "--version"),
		add(&hook, payload, b.cfg.Snap, "hook", "claude-code"),
	}
	if b.hasGit {
		steps = append(steps, add(&gitVersion, nil, "git", "--version"), add(&gitRevParse, nil, "git", "rev-parse", "--git-dir"))
	}
	minimalBin := minimalGo(root)
	if minimalBin != "" {
		steps = append(steps, add(&minimal, nil, minimalBin))
	}
	start := time.Now()
	for i := range b.cfg.W10Runs {
		if err := alternate(i, steps...); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	took := time.Since(start)
	var inits []time.Duration
	for range b.cfg.W10Runs {
		d, err := initTime(b.cfg.Snap)
		if err != nil {
			return fmt.Errorf("GODEBUG=inittrace=1 snap --version: %w", err)
		}
		inits = append(inits, d)
	}
	b.rep.timeRow(W, rowStartInit, median(inits), "", 0, 0, "")
	if minimalBin != "" {
		b.rep.timeRow(W, rowStartMinimal, median(version), "a minimal Go program (prints a line)", median(minimal), 2, "")
	}
	// The hook recorded nothing, and said so in the hook log.
	out, err := s.run("hook", "log", "-n", "1")
	if err != nil {
		return err
	}
	if !strings.Contains(string(out), "PreToolUse session=w10: nothing to record") {
		return fmt.Errorf("the hook log does not end with the no-op event: %q", out)
	}
	p90 := func(ds []time.Duration) string { return formatValue(unitSeconds, percentile(ds, 90).Seconds()) }
	if !b.hasGit {
		b.rep.timeRow(W, rowStartVersion, median(version), "", 0, 0, "")
		b.rep.timeRow(W, rowStartHook, median(hook), "", 0, 0, "")
		b.rep.note("W10: %d rounds in %s, the order flipped every round, git not installed; p90: `snap --version` %s, no-op hook %s.",
			b.cfg.W10Runs, took.Round(10*time.Millisecond), p90(version), p90(hook))
		return nil
	}
	b.rep.timeRow(W, rowStartVersion, median(version), "`git --version`", median(gitVersion), 0, "")
	b.rep.timeRow(W, rowStartHook, median(hook), "`git rev-parse --git-dir`", median(gitRevParse), 0, "")
	b.rep.note("W10: %d rounds in %s, each running the commands once, the order flipped every round; process start and exit included; "+
		"p90: `snap --version` %s, no-op hook %s, `git --version` %s, `git rev-parse --git-dir` %s.",
		b.cfg.W10Runs, took.Round(10*time.Millisecond), p90(version), p90(hook), p90(gitVersion), p90(gitRevParse))
	return nil
}
