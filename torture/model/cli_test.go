package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
)

// cliResult is one run of the real binary.
type cliResult struct {
	args   []string
	code   int
	stdout []byte
	stderr []byte
}

func (c cliResult) String() string {
	s := fmt.Sprintf("snap %s: exit %d", strings.Join(c.args, " "), c.code)
	if e := strings.TrimSpace(string(c.stderr)); e != "" {
		s += ": " + clip(e, 600)
	}
	return s
}

// snapEnv is the environment of every run: no store or session from ours,
// no background gc (it would race with the checks).
func snapEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SNAP_STORE=") || strings.HasPrefix(kv, "SNAP_SESSION=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "SNAP_NO_AUTO_GC=1")
}

func runSnap(dir string, args ...string) cliResult {
	cmd := exec.Command(snapBin, args...)
	cmd.Dir = dir
	cmd.Env = snapEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{args: args, stdout: out.Bytes(), stderr: errb.Bytes()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = -1
		}
	case err != nil:
		res.code = -2
		res.stderr = append(res.stderr, err.Error()...)
	}
	return res
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// checkPanic: no command ever crashes, whatever its exit code.
func (r *runner) checkPanic(res cliResult) {
	e := string(res.stderr)
	if res.code < 0 || strings.Contains(e, "panic:") || strings.Contains(e, "goroutine ") || strings.Contains(e, "internal error") {
		r.failf("cli-panic", "%s", res)
	}
}

// runCLI runs one read-only command and checks its exit code (and, where
// the model knows it, its output) and that it changed nothing.
func (r *runner) runCLI(p *project, c *CLIOp) {
	d0, o0 := r.mustScan(p), p.scanOut()
	s := c.Session
	if s == "" {
		s = "default"
	}
	json1 := c.Variant == 1
	withJSON := func(args ...string) []string {
		if json1 {
			return append(args, "--json")
		}
		return args
	}
	tgt, ref, maybe := p.target(c.Target, c.Form, s)
	want := []int{0}
	if tgt == nil {
		want = []int{4}
	}
	if maybe {
		want = []int{0, 4}
	}
	var args []string
	var check func(out []byte) string // "" when the output is right
	h := p.head(s)
	switch c.Cmd {
	case "log":
		args = withJSON("log", "-s", s)
		want = []int{0}
	case "log-all":
		args = withJSON("log", "--all")
		want = []int{0}
	case "sessions":
		args = withJSON("sessions")
		want = []int{0}
	case "op-log":
		args = withJSON("op", "log")
		want = []int{0}
	case "fsck":
		args = withJSON("fsck")
		want = []int{0}
	case "show":
		args = []string{"show", "-s", s, "--json", ref}
		if tgt != nil && !maybe {
			check = func(out []byte) string { return r.checkShow(p, tgt, out) }
		}
	case "status":
		args = []string{"status", "-s", s, "--json"}
		want = []int{0}
		check = func(out []byte) string { return r.checkStatus(p, h, d0, out) }
	case "diff", "diff-stat", "diff-json":
		args = []string{"diff", "-s", s}
		if c.Cmd == "diff-stat" {
			args = append(args, "--stat")
		}
		want = []int{0}
		if h == nil {
			want = []int{4}
		}
		if c.Cmd == "diff-json" {
			args = append(args, "--json")
			check = func(out []byte) string {
				exp, _ := p.nowCapture(h, d0)
				return compareChanges("diff --json", h.files, exp.files, parseDiffFiles(out))
			}
		}
	case "diff2":
		t2, ref2, maybe2 := p.target(c.Target2, "id", s)
		args = []string{"diff", "-s", s, "--json", ref, ref2}
		switch {
		case maybe || maybe2:
			want = []int{0, 4}
		case tgt == nil || t2 == nil:
			want = []int{4}
		default:
			check = func(out []byte) string {
				return compareChanges("diff REF REF2 --json", tgt.files, t2.files, parseDiffFiles(out))
			}
		}
	case "cat":
		if tgt == nil {
			args = []string{"cat", "-s", s, ref + ":x"}
			break
		}
		var files []string
		for q, e := range tgt.files {
			if e.K != 'd' {
				files = append(files, q)
			}
		}
		sort.Strings(files)
		q := "no/such/file"
		if c.Pick >= 0 && len(files) > 0 {
			q = files[c.Pick%len(files)]
		}
		args = []string{"cat", "-s", s, ref + ":" + q}
		e, ok := tgt.files[q]
		if !ok {
			want = []int{4}
			if maybe {
				want = []int{0, 4}
			}
			break
		}
		check = func(out []byte) string {
			if string(out) != e.Data {
				return fmt.Sprintf("printed %q, the checkpoint holds %q", clip(string(out), 80), clip(e.Data, 80))
			}
			return ""
		}
	case "cat-state", "conversation":
		args = []string{"cat", "-s", s, ref, "--state", "conversation"}
		if c.Cmd == "conversation" {
			args = withJSON("conversation", "-s", s, ref)
		}
		if tgt == nil {
			break
		}
		d, ok := tgt.docs["conversation"]
		if !ok || d.Absent {
			want = []int{4}
			if maybe {
				want = []int{0, 4}
			}
			break
		}
		if c.Cmd == "cat-state" {
			check = func(out []byte) string {
				if string(out) != d.Data {
					return fmt.Sprintf("printed %q, the checkpoint holds %q", clip(string(out), 80), clip(d.Data, 80))
				}
				return ""
			}
		}
	case "edit-status":
		args = []string{"edit", "status", "-s", s, "--json"}
		want = []int{0}
		check = func(out []byte) string { return r.checkEditStatusJSON(p, s, out) }
	case "edit-preview":
		mode := previewModes[(c.Pick+3)%3]
		args = []string{"edit", "preview", "-s", s, "--json", "--mode", mode}
		want = []int{0}
		switch class, _, beyond := previewRefusal(d0, p.edits(s), mode, 3); {
		case beyond:
			want = []int{0, 1, 2}
		case class == "conflict":
			want = []int{1}
		case class == "usage":
			want = []int{2}
		case class != "":
			want = []int{1}
		default:
			check = func(out []byte) string { return r.checkPreviewJSON(p, s, out) }
		}
	case "task":
		args = withJSON("task", "-s", s)
		want = []int{0}
		if json1 {
			check = func(out []byte) string { return r.checkTaskJSON(p, s, out) }
		}
	default:
		r.failf("harness", "unknown cli command %q", c.Cmd)
		return
	}
	r.lastCLI = args
	res := runSnap(p.root, args...)
	r.stats["cli "+c.Cmd]++
	r.checkPanic(res)
	okCode := false
	for _, w := range want {
		okCode = okCode || res.code == w
	}
	if !okCode {
		r.failf("cli-exit:"+c.Cmd, "%s (want exit %v)", res, want)
	} else if res.code == 0 && check != nil {
		if msg := check(res.stdout); msg != "" {
			r.failf("cli-output:"+c.Cmd, "%s: %s", res, msg)
		}
	}
	r.checkUnchanged(p, d0, o0, "snap "+strings.Join(args, " "))
}

type fileChange struct{ path, status string }

func parseDiffFiles(out []byte) []fileChange {
	var d struct {
		Files []struct {
			Path    string `json:"path"`
			Status  string `json:"status"`
			OldMode string `json:"old_mode"`
			NewMode string `json:"new_mode"`
		} `json:"files"`
	}
	if json.Unmarshal(out, &d) != nil {
		return []fileChange{{"<unparsable output>", ""}}
	}
	var fc []fileChange
	for _, f := range d.Files {
		if (f.OldMode == "dir" || f.NewMode == "dir") && !strings.HasSuffix(f.Path, "/") {
			f.Path += "/" // an empty directory
		}
		fc = append(fc, fileChange{f.Path, f.Status})
	}
	return fc
}

// modelChanges lists the non-directory paths that differ from a to b.
func modelChanges(a, b tree) []fileChange {
	var out []fileChange
	for q, e := range b {
		if e.K == 'd' {
			continue
		}
		if o, ok := a[q]; !ok || o.K == 'd' {
			out = append(out, fileChange{q, "added"})
		} else if !o.same(e) {
			out = append(out, fileChange{q, "modified"})
		}
	}
	for q, e := range a {
		if e.K == 'd' {
			continue
		}
		if n, ok := b[q]; !ok || n.K == 'd' {
			out = append(out, fileChange{q, "deleted"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// compareChanges compares a reported file list with the model's (empty
// directories, which the engine may list, are left out of both).
func compareChanges(what string, a, b tree, got []fileChange) string {
	want := modelChanges(a, b)
	var g []fileChange
	for _, c := range got {
		if !strings.HasSuffix(c.path, "/") { // an empty directory
			g = append(g, c)
		}
	}
	sort.Slice(g, func(i, j int) bool { return g[i].path < g[j].path })
	if fmt.Sprint(g) != fmt.Sprint(want) {
		return fmt.Sprintf("%s lists %v, the model %v", what, g, want)
	}
	return ""
}

func (r *runner) checkShow(p *project, c *ckRec, out []byte) string {
	var s struct {
		Files struct {
			Added, Modified, Deleted []string
		} `json:"files"`
		ParentExpired bool `json:"parent_expired"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return "output does not parse: " + err.Error()
	}
	var parent tree
	if !c.parent.IsZero() {
		pc := p.byID[c.parent]
		if pc == nil || pc.expired || s.ParentExpired {
			return ""
		}
		parent = pc.files
	}
	var got []fileChange
	for _, q := range s.Files.Added {
		got = append(got, fileChange{q, "added"})
	}
	for _, q := range s.Files.Modified {
		got = append(got, fileChange{q, "modified"})
	}
	for _, q := range s.Files.Deleted {
		got = append(got, fileChange{q, "deleted"})
	}
	return compareChanges("show --json", parent, c.files, got)
}

// checkStatus compares `status --json` with the model: the files that
// differ from the head, and the state documents that differ or are gone
// from their sources.
func (r *runner) checkStatus(p *project, h *ckRec, d tree, out []byte) string {
	var s struct {
		Files struct {
			Added, Modified, Deleted []string
		} `json:"files"`
		StateChanged []json.RawMessage `json:"state_changed"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return "output does not parse: " + err.Error()
	}
	var hfiles tree
	var hdocs map[string]doc
	if h != nil {
		hfiles, hdocs = h.files, h.docs
	}
	exp, docs := p.nowCapture(h, d)
	var got []fileChange
	for _, q := range s.Files.Added {
		got = append(got, fileChange{q, "added"})
	}
	for _, q := range s.Files.Modified {
		got = append(got, fileChange{q, "modified"})
	}
	for _, q := range s.Files.Deleted {
		got = append(got, fileChange{q, "deleted"})
	}
	if msg := compareChanges("status --json", hfiles, exp.files, got); msg != "" {
		return msg
	}
	if h == nil {
		return ""
	}
	// State documents: a name (older engines) or {name, status}.
	reported := map[string]string{}
	for _, raw := range s.StateChanged {
		var name string
		var sc struct{ Name, Status string }
		if json.Unmarshal(raw, &name) == nil {
			reported[name] = "changed"
		} else if json.Unmarshal(raw, &sc) == nil {
			reported[sc.Name] = sc.Status
		}
	}
	for n, hd := range hdocs {
		nd, ok := docs[n]
		gone := hd.Source != "" && !hd.Absent && (!ok || nd.Absent)
		if _, exists := readOutside(hd.Source); hd.Source != "" && !hd.Absent && !exists {
			gone = true
		}
		switch {
		case gone:
			if reported[n] == "" {
				r.failf("status-missing-doc", "status: state document %s is gone from its source %s, and status does not say so", n, hd.Source)
			}
			delete(reported, n)
		case ok && nd != hd:
			if reported[n] == "" {
				r.failf("cli-output:status", "status: state document %s changed at its source %s, and status does not say so", n, hd.Source)
			}
			delete(reported, n)
		}
	}
	for n, st := range reported {
		if hd, ok := hdocs[n]; ok && hd == docs[n] {
			r.failf("cli-output:status", "status reports state document %s %s, but it is as in the head", n, st)
		}
	}
	return ""
}
