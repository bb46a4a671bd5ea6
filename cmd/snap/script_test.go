package main

// CLI script tests, in the style of Go's cmd/go: every file in
// testdata/script/*.txtar is a testscript (github.com/rogpeppe/go-internal/
// testscript) that runs the real snap binary (this test binary, re-executed
// as "snap") in a fresh work directory and checks its output and exit codes.
//
// Besides testscript's built-in commands, scripts can use:
//
//	exitcode N PROG [ARGS...]   run PROG; fail unless it exits with code N
//	                            (testscript's "! snap" only says non-zero).
//	                            Its stdout and stderr are then checked as
//	                            after any command ("stdout", "stderr").
//	json [-re|-len] FILE PATH [WANT]
//	                            the JSON document in FILE ("stdout" and
//	                            "stderr" are the last command's) has PATH;
//	                            with WANT, its value is WANT (a string as is,
//	                            anything else as compact JSON; -re: WANT is a
//	                            regexp; -len: WANT is the length of the array
//	                            or object at PATH). PATH is .a.b.0.c ("." is
//	                            the whole document).
//	json -set VAR FILE PATH     set $VAR to the value at PATH.
//	holdlock FILE               flock(2) FILE exclusively until the script
//	                            ends (a "running gc" for store-busy cases).
//	corruptpacks DIR            flip one byte in the middle of every *.pack
//	                            in DIR (a damaged store for exit 12).
//	uiget [-notoken] URLFILE PATH
//	                            GET PATH from the 'snap ui' whose URL
//	                            URLFILE holds (--url-file), with its token.
//
// TestDocExamplesScripted checks that every example in README.md's sh code
// blocks and in every command's help (Examples: sections, the app's
// "typical session") appears in some script, either literally as a command
// line or after "# example: " when a shell construct (a pipe, &&, a
// redirection) needs translating into script commands.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/urfave/cli/v2"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"snap": func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
	})
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                filepath.Join("testdata", "script"),
		RequireUniqueNames: true,
		Setup: func(e *testscript.Env) error {
			// testscript starts every script from an empty environment
			// (PATH, HOME=/no-home, TMPDIR, WORK); the settings below make
			// what snap (and git, were it run) reads explicit.
			home := filepath.Join(e.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			// No background "snap gc --auto": its timing would make
			// outputs (and the trash a later gc reports) vary.
			e.Setenv("SNAP_NO_AUTO_GC", "1")
			e.Setenv("SNAP_STORE", "")   // "" is unset for snap
			e.Setenv("SNAP_SESSION", "") // likewise
			e.Setenv("SNAP_CPUPROFILE", "")
			// Built with the tag snapcore, this binary runs the complete
			// build for what the core build does not link (core.go).
			e.Setenv("SNAP_FULL", os.Getenv("SNAP_FULL"))
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig-none"))
			e.Setenv("TZ", "UTC")
			e.Setenv("LC_ALL", "C")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":     cmdExitCode,
			"json":         cmdJSON,
			"holdlock":     cmdHoldLock,
			"corruptpacks": cmdCorruptPacks,
			"uiget":        cmdUIGet,
		},
	})
}

// cmdExitCode: exitcode N PROG [ARGS...]
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (say which code)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}

// cmdJSON: json [-re|-len] FILE PATH [WANT], json -set VAR FILE PATH
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	useRE, useLen, setVar := false, false, ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-re":
			useRE = true
			args = args[1:]
		case "-len":
			useLen = true
			args = args[1:]
		case "-set":
			if len(args) < 2 {
				ts.Fatalf("usage: json -set VAR FILE PATH")
			}
			setVar = args[1]
			args = args[2:]
		default:
			ts.Fatalf("json: unknown flag %s", args[0])
		}
	}
	if len(args) < 2 || len(args) > 3 || (setVar != "" && (len(args) != 2 || neg || useRE || useLen)) ||
		((useRE || useLen) && len(args) != 3) || (useRE && useLen) {
		ts.Fatalf("usage: json [-re|-len] FILE PATH [WANT] | json -set VAR FILE PATH")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc); err != nil {
		ts.Fatalf("json: %s is not one JSON document: %v", args[0], err)
	}
	v, found, err := jsonPath(doc, args[1])
	if err != nil {
		ts.Fatalf("json: %v", err)
	}
	if useLen && found {
		switch x := v.(type) {
		case []any:
			v = float64(len(x))
		case map[string]any:
			v = float64(len(x))
		default:
			ts.Fatalf("json: %s %s is neither an array nor an object: %s", args[0], args[1], jsonText(v))
		}
	}
	if setVar != "" {
		if !found {
			ts.Fatalf("json: %s has no %s", args[0], args[1])
		}
		ts.Setenv(setVar, jsonText(v))
		return
	}
	if len(args) == 2 {
		switch {
		case found && neg:
			ts.Fatalf("json: %s has %s (= %s)", args[0], args[1], jsonText(v))
		case !found && !neg:
			ts.Fatalf("json: %s has no %s", args[0], args[1])
		}
		return
	}
	got, want := jsonText(v), args[2]
	ok := found && got == want
	if useRE {
		re, err := regexp.Compile(want)
		if err != nil {
			ts.Fatalf("json: %v", err)
		}
		ok = found && re.MatchString(got)
	}
	switch {
	case !found && !neg:
		ts.Fatalf("json: %s has no %s", args[0], args[1])
	case ok && neg:
		ts.Fatalf("json: %s %s = %s, want anything else", args[0], args[1], got)
	case !ok && !neg:
		ts.Fatalf("json: %s %s = %s, want %s", args[0], args[1], got, want)
	}
}

// jsonPath looks up a .a.b.0.c path.
func jsonPath(doc any, path string) (any, bool, error) {
	if !strings.HasPrefix(path, ".") {
		return nil, false, fmt.Errorf("path %q does not start with '.'", path)
	}
	v := doc
	if path == "." {
		return v, true, nil
	}
	for _, seg := range strings.Split(path[1:], ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false, nil
			}
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false, nil
			}
			v = x[n]
		default:
			return nil, false, nil
		}
	}
	return v, true, nil
}

// jsonText renders a value for comparison: strings as they are, anything
// else as compact JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// cmdHoldLock: holdlock FILE
func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdlock FILE")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR|os.O_CREATE, 0o644)
	ts.Check(err)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		ts.Fatalf("holdlock %s: %v", args[0], err)
	}
	ts.Defer(func() { f.Close() })
}

// cmdCorruptPacks: corruptpacks DIR
func cmdCorruptPacks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: corruptpacks DIR")
	}
	packs, err := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), "*.pack"))
	ts.Check(err)
	if len(packs) == 0 {
		ts.Fatalf("corruptpacks: no *.pack in %s", args[0])
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		ts.Check(err)
		b[len(b)/2] ^= 0xff
		ts.Check(os.WriteFile(p, b, 0o644))
	}
}

// TestDocExamplesScripted: every documented example runs in some script.
func TestDocExamplesScripted(t *testing.T) {
	examples := map[string]string{} // normalised example -> where it is documented
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range readmeExamples(string(readme)) {
		examples[normalizeExample(ex)] = "README.md"
	}
	app := newApp(&invocation{})
	for _, ex := range descriptionExamples(app.Description) {
		examples[normalizeExample(ex)] = "snap help (typical session)"
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			for _, ex := range descriptionExamples(c.Description) {
				examples[normalizeExample(ex)] = "snap help " + name
			}
			walk(name, c.Subcommands)
		}
	}
	walk("", app.Commands)
	t.Logf("%d documented examples", len(examples))
	if len(examples) < 30 {
		t.Fatalf("found only %d examples: is the extraction broken?", len(examples))
	}

	scripted := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "-- ") {
				break // the files of the archive
			}
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "# example:"); ok {
				scripted[normalizeExample(rest)] = true
			} else if !strings.HasPrefix(line, "#") {
				scripted[normalizeExample(line)] = true
			}
		}
	}
	var missing []string
	for ex, where := range examples {
		if !scripted[ex] {
			missing = append(missing, fmt.Sprintf("%s: %s", where, ex))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("documented example not run by any testdata/script/*.txtar (add it literally, or as '# example: ...' above its translation): %s", m)
	}
}

// readmeExamples returns the lines of the README's sh code blocks that run
// snap (not make, go build or cd).
func readmeExamples(md string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in && strings.TrimPrefix(line, "```") == "sh"
		case in && runsSnap.MatchString(stripComment(line)):
			out = append(out, line)
		}
	}
	return out
}

var runsSnap = regexp.MustCompile(`(^|[|&;]\s*)snap(\s|$)`)

// descriptionExamples returns the indented lines that follow "Examples:",
// "Example:" or "A typical session:" in a help Description.
func descriptionExamples(desc string) []string {
	var out []string
	lines := strings.Split(desc, "\n")
	for i := 0; i < len(lines); i++ {
		switch strings.TrimSpace(lines[i]) {
		case "Examples:", "Example:", "A typical session:":
		default:
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		for ; j < len(lines) && strings.HasPrefix(lines[j], "   ") && strings.TrimSpace(lines[j]) != ""; j++ {
			out = append(out, lines[j])
		}
		i = j
	}
	return out
}

// normalizeExample makes an example and a script line comparable: the
// trailing shell comment goes, runs of blanks become one space, a
// "double-quoted" word without shell specials becomes 'single-quoted' and
// ~/ becomes $HOME/ (testscript's only quoting and variable syntax).
func normalizeExample(s string) string {
	s = strings.Join(strings.Fields(stripComment(s)), " ")
	s = dquoted.ReplaceAllString(s, "'$1'")
	s = tilde.ReplaceAllString(s, "$1$$HOME/")
	return s
}

var (
	dquoted = regexp.MustCompile(`"([^"'$\\` + "`" + `]*)"`)
	tilde   = regexp.MustCompile(`(^|\s)~/`)
)

// stripComment cuts a " # comment" that is outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimRight(s[:i], " \t")
		}
	}
	return s
}

// cmdUIGet: uiget [-notoken] URLFILE PATH: waits (up to 20 s) for the URL
// 'snap ui --url-file URLFILE' writes, then GETs PATH on that server with
// its token (none with -notoken); the body goes to stdout, and the status
// code to stderr as "status N".
func cmdUIGet(ts *testscript.TestScript, neg bool, args []string) {
	token := true
	if len(args) > 0 && args[0] == "-notoken" {
		token, args = false, args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: uiget [-notoken] URLFILE PATH")
	}
	var raw []byte
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(ts.MkAbs(args[0]))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			raw = b
			break
		}
		if time.Since(start) > 20*time.Second {
			ts.Fatalf("uiget: %s not written after 20 s: %v", args[0], err)
		}
	}
	u, err := url.Parse(strings.TrimSpace(string(raw)))
	ts.Check(err)
	req, err := http.NewRequest("GET", u.Scheme+"://"+u.Host+args[1], nil)
	ts.Check(err)
	if token {
		req.Header.Set("X-Snap-Token", u.Query().Get("token"))
	}
	res, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	ts.Check(err)
	ts.Stdout().Write(body)
	fmt.Fprintf(ts.Stderr(), "status %d\n", res.StatusCode)
	if failed := res.StatusCode != http.StatusOK; failed != neg {
		ts.Fatalf("uiget %s: status %d", args[1], res.StatusCode)
	}
}
