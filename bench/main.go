package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// config is what the flags set.
type config struct {
	Snap         string // snap binary; "" builds ./cmd/snap
	Quick        bool
	Scale        int
	Runs         int
	JSON         bool
	Only         map[string]bool // nil: every workload
	Seed         int64
	Workdir      string
	Keep         bool
	Realdata     string
	GoGitTimeout time.Duration
	Render       string // a -json output to print as the markdown table instead of running

	// Sizes, set from Quick and Scale by setSizes (tests set them directly).
	W1Files int
	W2Files int
	W2Steps int
	W3Steps int // 0: every step of the transcripts
	W4Size  int64
	W5Files int
	W8Size  int64 // bytes of the W8 transcript
	W9Lines int   // lines of the W9 file
	W9Steps int   // checkpoints that edit it
	W10Runs int   // rounds of the process-start commands
	// W12: the sizes of the history measured, and rounds of the reads.
	W12Small, W12Big, W12Runs int
}

// setSizes fills the workload sizes for a full or quick run at a scale.
func (c *config) setSizes() {
	s := c.Scale
	if c.Quick {
		c.W1Files, c.W2Files, c.W2Steps, c.W3Steps, c.W4Size = 2000*s, 500*s, 100*s, 30, int64(s)*64<<20
		c.W5Files = c.W1Files
		c.W8Size = int64(s) * 8 << 20
		c.W9Lines, c.W9Steps = 5000, 50*s
		c.W10Runs = 40
		c.W12Small, c.W12Big, c.W12Runs = 30, 300, 10
		if c.Runs == 0 {
			c.Runs = 1
		}
		return
	}
	c.W1Files, c.W2Files, c.W2Steps, c.W3Steps, c.W4Size = 20000*s, 2000*s, 1000*s, 0, int64(s)<<30
	c.W5Files = 200000 * s
	c.W8Size = int64(s) * 100 << 20
	c.W9Lines, c.W9Steps = 5000*s, 1000*s
	c.W10Runs = 200
	c.W12Small, c.W12Big, c.W12Runs = 300*s, 3000*s, 40
	if c.Runs == 0 {
		c.Runs = 3
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	var only string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&c.Snap, "snap", "", "snap binary (default: build ./cmd/snap into a temporary directory)")
	fs.BoolVar(&c.Quick, "quick", false, "small sizes (what CI runs; about two minutes on 2 cores)")
	fs.IntVar(&c.Scale, "scale", 1, "grow every workload N times (files, history, file size)")
	fs.IntVar(&c.Runs, "runs", 0, "repetitions for medians (default 3, quick 1)")
	fs.BoolVar(&c.JSON, "json", false, "print the results as JSON instead of a markdown table")
	fs.StringVar(&only, "only", "", "run only these workloads, e.g. W1,W3")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of every generated workload")
	fs.StringVar(&c.Workdir, "workdir", "", "where to build the trees and stores (default: a temporary directory)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory")
	fs.StringVar(&c.Realdata, "realdata", "", "folder of real agent transcripts for W3 (default: ../shared/realdata beside the module root)")
	fs.DurationVar(&c.GoGitTimeout, "gogit-timeout", time.Minute, "skip go-git rows whose operation takes longer")
	fs.StringVar(&c.Render, "render", "", "print the markdown table of a saved -json run (a file) and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.Scale < 1 {
		return c, fmt.Errorf("-scale must be at least 1")
	}
	if only != "" {
		c.Only = map[string]bool{}
		for _, w := range strings.Split(only, ",") {
			w = strings.ToUpper(strings.TrimSpace(w))
			if _, ok := workloadByName(w); !ok {
				return c, fmt.Errorf("-only: unknown workload %q", w)
			}
			c.Only[w] = true
		}
	}
	c.setSizes()
	return c, nil
}

// workload is one named part of the benchmark.
type workload struct {
	name, about string
	run         func(*bench) error
}

var workloads = []workload{
	{"W1", "big tree", runW1},
	{"W2", "long session", runW2},
	{"W3", "real agent session", runW3},
	{"W4", "big file", runW4},
	{"W5", "edit-set checkpoint", runW5},
	{"W6", "staged edits", runW6},
	{"W7", "agent hooks", runW7},
	{"W8", "big transcript diff", runW8},
	{"W9", "blame", runW9},
	{"W10", "process start", runW10},
	{"W11", "monitored tree", runW11},
	{"W12", "history reads", runW12},
}

func workloadByName(name string) (workload, bool) {
	for _, w := range workloads {
		if w.name == name {
			return w, true
		}
	}
	return workload{}, false
}

// bench is the state of one run.
type bench struct {
	cfg    config
	rep    *report
	log    io.Writer
	root   string // work directory of this run
	hasGit bool

	srcOnce sync.Once
	src     []sourceFile
	srcErr  error
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

func (b *bench) sources() ([]sourceFile, error) {
	b.srcOnce.Do(func() { b.src, b.srcErr = loadSources() })
	return b.src, b.srcErr
}

// dir returns a fresh directory for a workload.
func (b *bench) dir(name string) (string, error) {
	d := filepath.Join(b.root, name)
	if err := os.RemoveAll(d); err != nil {
		return "", err
	}
	return d, os.MkdirAll(d, 0o755)
}

// cleanup removes a workload's directory unless -keep.
func (b *bench) cleanup(d string) {
	if !b.cfg.Keep {
		os.RemoveAll(d)
	}
}

// runBench runs the selected workloads and returns the report. A workload
// that fails records an error in the report; the others still run.
func runBench(cfg config, log io.Writer) (*report, error) {
	b := &bench{cfg: cfg, log: log, rep: &report{Config: map[string]any{}}}
	var err error
	if b.root, err = os.MkdirTemp(cfg.Workdir, "snap-bench-"); err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(b.root)
	} else {
		b.logf("work directory %s is kept", b.root)
	}
	if b.cfg.Snap == "" {
		if b.cfg.Snap, err = buildSnap(b.root); err != nil {
			return nil, err
		}
	} else if b.cfg.Snap, err = filepath.Abs(b.cfg.Snap); err != nil {
		return nil, err
	}
	if b.cfg.Realdata == "" {
		if mod, err := moduleRoot(); err == nil {
			b.cfg.Realdata = filepath.Join(mod, "..", "shared", "realdata")
		}
	}
	b.hasGit = gitInstalled()
	if !b.hasGit {
		b.rep.note("git is not installed: git rows are skipped. Install it with `apt-get install git`.")
	}
	b.rep.Machine = machineInfo(b.cfg.Snap)
	b.rep.Config = map[string]any{
		"quick": cfg.Quick, "scale": cfg.Scale, "runs": b.cfg.Runs, "seed": cfg.Seed,
		"w1_files": cfg.W1Files, "w2_files": cfg.W2Files, "w2_checkpoints": cfg.W2Steps,
		"w3_steps": cfg.W3Steps, "w4_bytes": cfg.W4Size, "w5_files": cfg.W5Files, "w8_bytes": cfg.W8Size, "w10_rounds": cfg.W10Runs, "w12_checkpoints": cfg.W12Big,
		"gogit_timeout": cfg.GoGitTimeout.String(),
	}
	for _, w := range workloads {
		if cfg.Only != nil && !cfg.Only[w.name] {
			continue
		}
		b.logf("%s (%s)", w.name, w.about)
		start := time.Now()
		if err := w.run(b); err != nil {
			b.rep.Errors = append(b.rep.Errors, fmt.Sprintf("%s: %v", w.name, err))
			b.logf("%s failed: %v", w.name, err)
		}
		b.logf("%s done in %s", w.name, time.Since(start).Round(time.Millisecond))
	}
	return b.rep, nil
}

// moduleRoot is the directory of the snap module's go.mod, found upwards from
// the current directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/snapcore-dev/snap\n")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("not inside the snap module")
		}
		d = parent
	}
}

// snapTags are the build tags of the Makefile's SNAP_TAGS: the binary the
// bench measures is the one 'make build' makes.
const snapTags = "urfave_cli_no_docs,netgo,osusergo"

// buildSnap builds ./cmd/snap into dir as 'make build' does: snap, the
// core build (snapTags and snapcore), and snap-full beside it, which the
// core build runs for snap mcp, ui and the git bridge.
func buildSnap(dir string) (string, error) {
	mod, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("-snap not given and %w", err)
	}
	for _, b := range [][2]string{{"snap", snapTags + ",snapcore"}, {"snap-full", snapTags}} {
		cmd := exec.Command("go", "build", "-tags", b[1], "-o", filepath.Join(dir, b[0]), "./cmd/snap")
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build -tags %s ./cmd/snap: %w\n%s", b[1], err, out)
		}
	}
	return filepath.Join(dir, "snap"), nil
}

// machineInfo describes where the run happened.
func machineInfo(snapBin string) map[string]string {
	m := map[string]string{
		"date":  time.Now().UTC().Format("2006-01-02 15:04 MST"),
		"nproc": fmt.Sprint(runtime.NumCPU()),
		"go":    runtime.Version(),
		"os":    runtime.GOOS + "/" + runtime.GOARCH,
		"snap":  snapBin,
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m["memory"] = strings.TrimSpace(rest)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "model name"); ok {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("git", "--version").Output(); err == nil {
		m["git"] = strings.TrimSpace(string(out))
	}
	return m
}

func main() {
	if os.Getenv(goGitWorkerEnv) == "1" {
		if err := goGitWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "go-git worker:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cfg.Render != "" {
		if err := render(cfg.Render, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	rep, err := runBench(cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if cfg.JSON {
		rep.writeJSON(os.Stdout)
	} else {
		printMachine(os.Stdout, rep.Machine)
		rep.writeMarkdown(os.Stdout)
	}
	if len(rep.Errors) > 0 {
		os.Exit(1)
	}
}

func printMachine(w io.Writer, m map[string]string) {
	fmt.Fprintf(w, "%s · %s CPUs (%s) · %s RAM · kernel %s · %s · %s\n\n",
		m["date"], m["nproc"], m["cpu"], m["memory"], m["kernel"], m["go"], m["git"])
}

// render prints the table of a report saved with -json, as the run would
// have printed it.
func render(path string, w io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	printMachine(w, rep.Machine)
	rep.writeMarkdown(w)
	return nil
}
