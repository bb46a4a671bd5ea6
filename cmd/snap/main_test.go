package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/snapcore-dev/snap/gc"

	"github.com/urfave/cli/v2"
)

// TestCommandsJSON runs every command's happy path with --json on a fresh
// project (see newProject) and checks the fields of its JSON document.
func TestCommandsJSON(t *testing.T) {
	tests := []struct {
		name  string
		setup func(p *project)
		stdin string
		args  []string
		check func(t *testing.T, p *project, doc map[string]any)
	}{
		{
			name: "init is idempotent",
			args: []string{"init"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "created", doc["created"], any(false))
				eq(t, "root", doc["root"], any(p.dir))
				eq(t, "store", doc["store"], any(filepath.Join(p.dir, ".snap")))
			},
		},
		{
			name: "checkpoint",
			setup: func(p *project) {
				p.write(map[string]string{"new.txt": "new\n", "main.go": "package main\n", "debug.log": "ignored"})
			},
			args: []string{"checkpoint", "-m", "msg_3", "--summary", "third", "--label", "third", "--kind", "post-tool"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				if id, _ := doc["id"].(string); len(id) != 64 {
					t.Errorf("id = %v", doc["id"])
				}
				eq(t, "session", doc["session"], any("default"))
				eq(t, "parent", doc["parent"], any(p.ids[1]))
				eq(t, "kind", doc["kind"], any("post-tool"))
				sameStrings(t, "files.added", strs(t, get(t, doc, "files.added")), "new.txt")
				sameStrings(t, "files.modified", strs(t, get(t, doc, "files.modified")), "main.go")
				sameStrings(t, "files.deleted", strs(t, get(t, doc, "files.deleted")))
				if n := len(get(t, doc, "skipped").([]any)); n != 0 {
					t.Errorf("skipped = %v", doc["skipped"])
				}
				if nb, _ := doc["new_bytes"].(float64); nb <= 0 {
					t.Errorf("new_bytes = %v", doc["new_bytes"])
				}
				// The conversation is carried over, re-read from its source.
				eq(t, "state.conversation", get(t, doc, "state.conversation"), any(float64(len(convLine1+convLine2+convLine3+convLine4))))
				eq(t, "stats.messages", get(t, doc, "stats.messages"), any(float64(4)))
			},
		},
		{
			name:  "checkpoint first of a new session, state from stdin",
			stdin: "task state",
			args:  []string{"checkpoint", "-s", "agent-2", "--state", "todo=-"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "session", doc["session"], any("agent-2"))
				eq(t, "parent", doc["parent"], nil)
				eq(t, "state.todo", get(t, doc, "state.todo"), any(float64(len("task state"))))
			},
		},
		{
			name:  "checkpoint conversation from stdin",
			stdin: convLine1,
			args:  []string{"checkpoint", "--conversation", "-"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "state.conversation", get(t, doc, "state.conversation"), any(float64(len(convLine1))))
				eq(t, "stats.messages", get(t, doc, "stats.messages"), any(float64(1)))
			},
		},
		{
			name:  "checkpoint state file relative to -C",
			setup: func(p *project) { p.write(map[string]string{"notes.md": "notes"}) },
			args:  []string{"checkpoint", "--state", "notes=notes.md"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "state.notes", get(t, doc, "state.notes"), any(float64(5)))
				show := p.json("show")
				for _, s := range show["state"].([]any) {
					if s := s.(map[string]any); s["name"] == "notes" {
						eq(t, "source", s["source"], any(filepath.Join(p.dir, "notes.md")))
					}
				}
			},
		},
		{
			name:  "checkpoint skips files over --max-file-size",
			setup: func(p *project) { p.write(map[string]string{"big.bin": strings.Repeat("x", 3000)}) },
			args:  []string{"checkpoint", "--max-file-size", "2K"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "skipped.0.path", get(t, doc, "skipped.0.path"), any("big.bin"))
				if r, _ := get(t, doc, "skipped.0.reason").(string); r == "" {
					t.Errorf("skipped without a reason")
				}
				sameStrings(t, "files.added", strs(t, get(t, doc, "files.added")))
			},
		},
		{
			name:  "checkpoint --paths examines only those paths",
			setup: func(p *project) { p.write(map[string]string{"main.go": "package x\n", "util.go": "package y\n"}) },
			args:  []string{"checkpoint", "--paths", "util.go"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				sameStrings(t, "files.modified", strs(t, get(t, doc, "files.modified")), "util.go")
			},
		},
		{
			name: "log",
			args: []string{"log"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "session", doc["session"], any("default"))
				cks := get(t, doc, "checkpoints").([]any)
				if len(cks) != 2 {
					t.Fatalf("%d checkpoints", len(cks))
				}
				eq(t, "[0].seq", get(t, doc, "checkpoints.0.seq"), any(float64(2)))
				eq(t, "[0].id", get(t, doc, "checkpoints.0.id"), any(p.ids[1]))
				eq(t, "[0].head", get(t, doc, "checkpoints.0.head"), any(true))
				eq(t, "[1].message_id", get(t, doc, "checkpoints.1.message_id"), any("msg_1"))
				eq(t, "[1].abandoned", get(t, doc, "checkpoints.1.abandoned"), any(false))
				eq(t, "[0].stats.messages", get(t, doc, "checkpoints.0.stats.messages"), any(float64(4)))
			},
		},
		{
			name: "log -n 1",
			args: []string{"log", "-n", "1"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				if n := len(get(t, doc, "checkpoints").([]any)); n != 1 {
					t.Errorf("%d checkpoints", n)
				}
			},
		},
		{
			name: "show",
			args: []string{"show", "#1"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "id", doc["id"], any(p.ids[0]))
				eq(t, "seq", doc["seq"], any(float64(1)))
				sameStrings(t, "labels", strs(t, doc["labels"]), "start")
				eq(t, "state.0.name", get(t, doc, "state.0.name"), any("conversation"))
				eq(t, "state.0.source", get(t, doc, "state.0.source"), any(p.conv))
				sameStrings(t, "files.added", strs(t, get(t, doc, "files.added")), ".gitignore", "README.md", "main.go")
			},
		},
		{
			name:  "status",
			setup: func(p *project) { p.write(map[string]string{"main.go": "changed\n"}) },
			args:  []string{"status"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "head", doc["head"], any(p.ids[1]))
				eq(t, "clean", doc["clean"], any(false))
				sameStrings(t, "files.modified", strs(t, get(t, doc, "files.modified")), "main.go")
			},
		},
		{
			name: "diff between checkpoints",
			args: []string{"diff", "#1", "#2"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "from", doc["from"], any(p.ids[0]))
				eq(t, "to", doc["to"], any(p.ids[1]))
				got := map[string]string{}
				for _, f := range get(t, doc, "files").([]any) {
					f := f.(map[string]any)
					got[f["path"].(string)] = f["status"].(string)
				}
				eq(t, "files", fmt.Sprint(got), fmt.Sprint(map[string]string{"README.md": "deleted", "main.go": "modified", "util.go": "added"}))
				eq(t, "state.0.name", get(t, doc, "state.0.name"), any("conversation"))
				eq(t, "conversation.common", get(t, doc, "state.0.conversation.common"), any(float64(2)))
				if n := len(get(t, doc, "state.0.conversation.added").([]any)); n != 2 {
					t.Errorf("%d messages added", n)
				}
			},
		},
		{
			name:  "diff working tree limited to a path",
			setup: func(p *project) { p.write(map[string]string{"main.go": "changed\n", "util.go": "changed\n"}) },
			args:  []string{"diff", "--stat", "--", "util.go"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "to", doc["to"], nil)
				files := get(t, doc, "files").([]any)
				if len(files) != 1 {
					t.Fatalf("files = %v", files)
				}
				eq(t, "files.0.path", get(t, doc, "files.0.path"), any("util.go"))
				eq(t, "files.0.lines_added", get(t, doc, "files.0.lines_added"), any(float64(1)))
			},
		},
		{
			name: "cat a file",
			args: []string{"cat", "start:README.md"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "checkpoint", doc["checkpoint"], any(p.ids[0]))
				eq(t, "path", doc["path"], any("README.md"))
				eq(t, "content", doc["content"], any("# demo\n"))
				eq(t, "size", doc["size"], any(float64(7)))
			},
		},
		{
			name: "cat a binary file",
			setup: func(p *project) {
				p.write(map[string]string{"bin.dat": "\xff\xfe\x00\x01"})
				p.ok("checkpoint")
			},
			args: []string{"cat", ":bin.dat"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "content_base64", doc["content_base64"], any(base64.StdEncoding.EncodeToString([]byte("\xff\xfe\x00\x01"))))
				if _, ok := doc["content"]; ok {
					t.Errorf("content given for binary data")
				}
			},
		},
		{
			name: "cat a state document",
			args: []string{"cat", "msg:msg_1", "--state", "conversation"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "state", doc["state"], any("conversation"))
				eq(t, "content", doc["content"], any(convLine1+convLine2))
			},
		},
		{
			name: "conversation page",
			args: []string{"conversation", "--offset", "1", "--limit", "2"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "checkpoint", doc["checkpoint"], any(p.ids[1]))
				eq(t, "format", doc["format"], any("jsonl"))
				eq(t, "total", doc["total"], any(float64(4)))
				eq(t, "offset", doc["offset"], any(float64(1)))
				eq(t, "messages.0.index", get(t, doc, "messages.0.index"), any(float64(1)))
				eq(t, "messages.0.tool_calls.0.name", get(t, doc, "messages.0.tool_calls.0.name"), any("Edit"))
				if n := len(get(t, doc, "messages").([]any)); n != 2 {
					t.Errorf("%d messages", n)
				}
			},
		},
		{
			name: "rewind with uncheckpointed work",
			setup: func(p *project) {
				p.write(map[string]string{"main.go": "uncheckpointed\n", "scratch.txt": "new\n"})
			},
			args: []string{"rewind", "#1"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "target", doc["target"], any(p.ids[0]))
				safety, _ := doc["safety_checkpoint"].(string)
				if len(safety) != 64 || safety == p.ids[1] {
					t.Errorf("safety_checkpoint = %v, want a new checkpoint", doc["safety_checkpoint"])
				}
				sameStrings(t, "restored", strs(t, doc["restored"]), "README.md", "main.go")
				sameStrings(t, "deleted", strs(t, doc["deleted"]), "scratch.txt", "util.go")
				eq(t, "errors", len(doc["errors"].([]any)), 0)
				eq(t, "skipped", len(doc["skipped"].([]any)), 0)
				eq(t, "dry_run", doc["dry_run"], any(false))
				eq(t, "state.0.name", get(t, doc, "state.0.name"), any("conversation"))
				eq(t, "transcript", p.readConv(), convLine1+convLine2)
				eq(t, "build artefact kept", p.read("build/out.bin"), "artefact")
			},
		},
		{
			name:  "rewind --dry-run changes nothing",
			setup: func(p *project) { p.write(map[string]string{"main.go": "uncheckpointed\n"}) },
			args:  []string{"rewind", "#1", "--dry-run"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "dry_run", doc["dry_run"], any(true))
				eq(t, "safety_checkpoint", doc["safety_checkpoint"], nil)
				sameStrings(t, "restored", strs(t, doc["restored"]), "README.md", "main.go")
				eq(t, "main.go", p.read("main.go"), "uncheckpointed\n")
				eq(t, "head", get(t, p.json("status"), "head"), any(p.ids[1]))
			},
		},
		{
			name:  "rewind --files-only --path",
			setup: func(p *project) { p.write(map[string]string{"main.go": "x\n"}) },
			args:  []string{"rewind", "@", "--files-only", "--path", "main.go"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				sameStrings(t, "restored", strs(t, doc["restored"]), "main.go")
				eq(t, "state", len(doc["state"].([]any)), 0)
			},
		},
		{
			name: "undo a rewind",
			setup: func(p *project) {
				p.write(map[string]string{"main.go": "uncheckpointed\n"})
				p.ok("rewind", "#1")
			},
			args: []string{"undo"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "op.kind", get(t, doc, "op.kind"), any("rewind"))
				sameStrings(t, "rewind.restored", strs(t, get(t, doc, "rewind.restored")), "main.go", "util.go")
				eq(t, "main.go", p.read("main.go"), "uncheckpointed\n")
				eq(t, "head", get(t, p.json("status"), "head"), any(p.ids[1]))
			},
		},
		{
			name: "undo a checkpoint",
			args: []string{"undo"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "op.kind", get(t, doc, "op.kind"), any("checkpoint"))
				eq(t, "op.checkpoint", get(t, doc, "op.checkpoint"), any(p.ids[1]))
				eq(t, "rewind", doc["rewind"], nil)
				eq(t, "head", get(t, p.json("status"), "head"), any(p.ids[0]))
			},
		},
		{
			name: "redo",
			setup: func(p *project) {
				p.ok("rewind", "#1")
				p.ok("undo")
			},
			args: []string{"redo"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "op.kind", get(t, doc, "op.kind"), any("rewind"))
				eq(t, "head", get(t, p.json("status"), "head"), any(p.ids[0]))
				eq(t, "README.md", p.read("README.md"), "# demo\n")
			},
		},
		{
			name: "label",
			args: []string{"label", "#1", "good"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "label", doc["label"], any("good"))
				eq(t, "id", doc["id"], any(p.ids[0]))
				eq(t, "show good", get(t, p.json("show", "good"), "id"), any(p.ids[0]))
			},
		},
		{
			name: "op log",
			args: []string{"op", "log", "-n", "2"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				ops := doc["ops"].([]any)
				if len(ops) != 2 {
					t.Fatalf("%d ops", len(ops))
				}
				eq(t, "ops.0.kind", get(t, doc, "ops.0.kind"), any("checkpoint"))
				eq(t, "ops.0.checkpoint", get(t, doc, "ops.0.checkpoint"), any(p.ids[1]))
			},
		},
		{
			name:  "sessions",
			setup: func(p *project) { p.ok("checkpoint", "-s", "other") },
			args:  []string{"sessions"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "current", doc["current"], any("default"))
				eq(t, "sessions.0.name", get(t, doc, "sessions.0.name"), any("default"))
				eq(t, "sessions.0.head", get(t, doc, "sessions.0.head"), any(p.ids[1]))
				eq(t, "sessions.1.name", get(t, doc, "sessions.1.name"), any("other"))
			},
		},
		{
			name:  "session archive",
			setup: func(p *project) { p.ok("checkpoint", "-s", "other") },
			args:  []string{"session", "archive", "other"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "session", doc["session"], any("other"))
				eq(t, "archived", doc["archived"], any(true))
				eq(t, "listed as archived", get(t, p.json("sessions"), "sessions.1.archived"), any(true))
			},
		},
		{
			name:  "session rm",
			setup: func(p *project) { p.ok("checkpoint", "-s", "other") },
			args:  []string{"session", "rm", "other"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "removed", doc["removed"], any(true))
				eq(t, "sessions left", len(get(t, p.json("sessions"), "sessions").([]any)), 1)
			},
		},
		{
			name: "fsck",
			args: []string{"fsck", "--full"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "problems", len(doc["problems"].([]any)), 0)
				eq(t, "checkpoints", doc["checkpoints"], any(float64(2)))
			},
		},
		{
			name: "gc --dry-run",
			args: []string{"gc", "--dry-run", "--grace", "0"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "dry_run", doc["dry_run"], any(true))
				if n, _ := doc["reachable"].(float64); n == 0 {
					t.Errorf("reachable = %v", doc["reachable"])
				}
			},
		},
		{
			name: "gc with retention flags",
			args: []string{"gc", "--keep-last", "5", "--keep-within", "7d"},
			check: func(t *testing.T, p *project, doc map[string]any) {
				eq(t, "keep_last", doc["keep_last"], any(float64(5)))
				eq(t, "keep_within", doc["keep_within"], any("168h0m0s"))
				eq(t, "expired", doc["expired"], any(float64(0))) // everything is younger than 7d
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t)
			if tt.setup != nil {
				tt.setup(p)
			}
			r := p.runIn(tt.stdin, append([]string{"--json"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
			tt.check(t, p, decode(t, r.stdout))
		})
	}
}

// TestExitCodes checks the exit code and the JSON error document of each
// failure class.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(p *project) []string // returns extra args, if any
		args     []string
		stdin    string
		exit     int
		code     string // JSON error code
		stdoutOK bool   // the command prints its result too (partial, corrupt)
	}{
		{name: "unknown flag", args: []string{"log", "--bogus"}, exit: exitUsage, code: "usage"},
		{name: "unknown command", args: []string{"frobnicate"}, exit: exitUsage, code: "usage"},
		{name: "unknown subcommand", args: []string{"session", "frob", "x"}, exit: exitUsage, code: "usage"},
		{name: "missing argument", args: []string{"rewind"}, exit: exitUsage, code: "usage"},
		{name: "extra argument", args: []string{"label", "@", "a", "b"}, exit: exitUsage, code: "usage"},
		{name: "bad REF syntax", args: []string{"show", "#0"}, exit: exitUsage, code: "usage"},
		{name: "bad label name", args: []string{"label", "@", "-x-"}, exit: exitUsage, code: "usage"},
		{name: "bad size", args: []string{"checkpoint", "--max-file-size", "lots"}, exit: exitUsage, code: "usage"},
		{name: "two documents from stdin", args: []string{"checkpoint", "--conversation", "-", "--state", "ctx=-"}, exit: exitUsage, code: "usage"},
		{name: "missing state file", args: []string{"checkpoint", "--conversation", "nope.jsonl"}, exit: exitUsage, code: "usage"},
		{name: "files-only and conversation-only", args: []string{"rewind", "@", "--files-only", "--conversation-only"}, exit: exitUsage, code: "usage"},
		{name: "path outside the project", args: []string{"rewind", "@", "--path", "/etc/passwd"}, exit: exitUsage, code: "usage"},
		{name: "cat without a path", args: []string{"cat", "@"}, exit: exitUsage, code: "usage"},
		{name: "unknown REF", args: []string{"show", "deadbeef00"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "unknown label", args: []string{"rewind", "nosuchlabel"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "REF past the first checkpoint", args: []string{"diff", "@~5"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "seq out of range", args: []string{"show", "#9"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "unknown message id", args: []string{"show", "msg:nope"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "empty session", args: []string{"show", "-s", "fresh"}, exit: exitNoCheckpoint, code: "no_checkpoint"},
		{name: "unknown session", args: []string{"session", "rm", "nope"}, exit: exitNoCheckpoint, code: "no_session"},
		{name: "no such path", args: []string{"cat", "@:nope.txt"}, exit: exitNoCheckpoint, code: "no_path"},
		{name: "no such state document", args: []string{"cat", "@", "--state", "tasks"}, exit: exitNoCheckpoint, code: "no_path"},
		{name: "nothing to undo", args: []string{"undo", "-s", "fresh"}, exit: exitError, code: "nothing_to_undo"},
		{name: "nothing to redo", args: []string{"redo"}, exit: exitError, code: "nothing_to_redo"},
		{
			name: "no store (--store)", args: []string{"log", "--store", "/nonexistent/snap-store"},
			exit: exitNoStore, code: "no_store",
		},
		{
			name: "partial rewind",
			setup: func(p *project) []string {
				// #1 has main.go as a file; now a directory holding only an
				// ignored file stands in its way.
				p.remove("main.go")
				p.write(map[string]string{"main.go/keep.log": "ignored, never touched"})
				return nil
			},
			args: []string{"rewind", "#1"}, exit: exitPartial, code: "partial", stdoutOK: true,
		},
		{
			name: "store busy",
			setup: func(p *project) []string {
				// A gc sweep holds the store (a stale lock file would just be
				// replaced: see refs).
				f, err := os.OpenFile(filepath.Join(p.dir, ".snap", gc.LockName), os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
					t.Fatal(err)
				}
				p.t.Setenv("SNAP_LOCK_TIMEOUT", "100ms")
				p.t.Cleanup(func() { f.Close() })
				return nil
			},
			args: []string{"checkpoint"}, exit: exitBusy, code: "store_busy",
		},
		{
			name: "store corrupt",
			setup: func(p *project) []string {
				p.corrupt = true
				packs, _ := filepath.Glob(filepath.Join(p.dir, ".snap", "packs", "*.pack"))
				for _, pk := range packs {
					f, err := os.OpenFile(pk, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteString("garbage")
					f.Close()
				}
				return nil
			},
			args: []string{"fsck"}, exit: exitCorrupt, code: "store_corrupt", stdoutOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t)
			if tt.setup != nil {
				tt.setup(p)
			}
			for _, asJSON := range []bool{false, true} {
				args := tt.args
				if asJSON {
					args = append(slices.Clone(args), "--json")
				}
				r := p.runIn(tt.stdin, args...)
				if r.code != tt.exit {
					t.Fatalf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, tt.exit, r.stdout, r.stderr)
				}
				if !tt.stdoutOK && r.stdout != "" {
					t.Errorf("%q: stdout not empty on error: %s", args, r.stdout)
				}
				if !asJSON {
					if !strings.HasPrefix(r.stderr, "snap: ") || strings.Count(r.stderr, "\n") != 1 {
						t.Errorf("%q: stderr = %q, want one line \"snap: ...\"", args, r.stderr)
					}
					continue
				}
				var doc struct {
					Error *struct {
						Code    string `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(r.stderr), &doc); err != nil || doc.Error == nil {
					t.Fatalf("%q: stderr is not a JSON error: %v\n%s", args, err, r.stderr)
				}
				eq(t, "error.code", doc.Error.Code, tt.code)
				if doc.Error.Message == "" {
					t.Errorf("empty error message")
				}
				if tt.stdoutOK {
					decode(t, r.stdout) // the result, as one JSON document
				}
			}
		})
	}
}

// TestNoStore runs in an empty directory with no store above it.
func TestNoStore(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".snap")); err == nil {
			t.Skipf("%s has a store above it", dir)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	for _, args := range [][]string{{"log"}, {"checkpoint"}, {"status", "--json"}, {"fsck"}} {
		r := runCLI(t, "", append([]string{"-C", dir}, args...)...)
		eq(t, fmt.Sprint(args, " exit"), r.code, exitNoStore)
	}
	if _, err := os.Stat(filepath.Join(dir, ".snap")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a command other than init created the store")
	}
}

// TestFlagPlacement: global flags before or after the command, flags after
// positional arguments.
func TestFlagPlacement(t *testing.T) {
	p := newProject(t)
	for _, args := range [][]string{
		{"--json", "-C", p.dir, "log"},
		{"log", "--json", "-C", p.dir},
		{"-C", p.dir, "log", "--json", "-n", "1"},
		{"--json", "-C", p.dir, "op", "log"},
		{"op", "--json", "log", "-C", p.dir},
		{"-C", p.dir, "show", "#1", "--json"},
		{"-C", p.dir, "--json", "show", "--session", "default", "@"},
		{"-C", p.dir, "rewind", "#1", "--dry-run", "--json"},
		{"-C", p.dir, "cat", "@", "--json", "--state", "conversation"},
		{"-C", p.dir, "checkpoint", "--json", "-m", "m"},
	} {
		r := runCLI(t, "", args...)
		if r.code != 0 {
			t.Errorf("%q: exit %d: %s", args, r.code, r.stderr)
			continue
		}
		decode(t, r.stdout)
	}
	// -s after the command selects the session.
	r := runCLI(t, "", "checkpoint", "-C", p.dir, "-s", "side", "--json")
	eq(t, "session", get(t, decode(t, r.stdout), "session"), any("side"))
	// $SNAP_SESSION is the default; -s wins over it.
	t.Setenv("SNAP_SESSION", "side")
	eq(t, "$SNAP_SESSION", get(t, p.json("log"), "session"), any("side"))
	eq(t, "-s over $SNAP_SESSION", get(t, p.json("log", "-s", "default"), "session"), any("default"))
}

// TestRewindUndoHuman checks the human output of the core loop: a rewind
// prints its safety checkpoint, and undo brings uncheckpointed work back.
func TestRewindUndoHuman(t *testing.T) {
	p := newProject(t)
	p.write(map[string]string{"main.go": "uncheckpointed\n", "scratch.txt": "untracked\n"})

	out := p.ok("rewind", "#1")
	for _, want := range []string{"safety checkpoint ", "restored main.go", "deleted  scratch.txt", "state    conversation -> "} {
		if !strings.Contains(out, want) {
			t.Errorf("rewind output lacks %q:\n%s", want, out)
		}
	}
	if p.exists("scratch.txt") {
		t.Errorf("scratch.txt still there after the rewind")
	}
	log := p.ok("log")
	if !strings.Contains(log, "(abandoned)") || !strings.Contains(log, "(head)") {
		t.Errorf("log lacks markers:\n%s", log)
	}

	p.ok("undo")
	eq(t, "main.go after undo", p.read("main.go"), "uncheckpointed\n")
	eq(t, "scratch.txt after undo", p.read("scratch.txt"), "untracked\n")
	eq(t, "conversation after undo", p.readConv(), convLine1+convLine2+convLine3+convLine4)

	out = p.ok("checkpoint", "-m", "msg_9", "--summary", "after undo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines[0]) != 64 {
		t.Errorf("first line of checkpoint is not the id: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "+1 ~1 -0 files, ") || !strings.HasSuffix(lines[1], "conversation 4 messages") {
		t.Errorf("summary line = %q", lines[1])
	}

	diff := p.ok("diff", "#1", "#2")
	for _, want := range []string{"--- a/main.go", "+++ b/main.go", "+\tprintln(\"b\")", "+++ b/util.go", "@@ message 2 @@", "+ assistant: Done."} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	stat := p.ok("diff", "#1", "#2", "--stat")
	if !strings.Contains(stat, "3 files changed") || !strings.Contains(stat, "state conversation") {
		t.Errorf("diff --stat:\n%s", stat)
	}
	conv := p.ok("conversation", "#2", "--limit", "2")
	for _, want := range []string{"[0] user  2025-01-01T10:00:00Z", "    Please fix main.go", "→ Edit {\"file_path\":\"main.go\"", "(2 more; --offset 2"} {
		if !strings.Contains(conv, want) {
			t.Errorf("conversation lacks %q:\n%s", want, conv)
		}
	}
	if got := p.ok("cat", "#1:README.md"); got != "# demo\n" {
		t.Errorf("cat = %q", got)
	}
}

// TestHelp: every command explains itself.
func TestHelp(t *testing.T) {
	isolate(t)
	app := newApp(&invocation{})
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			if c.Usage == "" || c.Description == "" {
				t.Errorf("%s: no Usage or Description", name)
			}
			r := runCLI(t, "", append(strings.Fields(name), "--help")...)
			if r.code != 0 || !strings.Contains(r.stdout, "DESCRIPTION:") {
				t.Errorf("snap %s --help: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
			}
			walk(name, c.Subcommands)
		}
	}
	walk("", app.Commands)
	r := runCLI(t, "", "help", "rewind")
	if r.code != 0 || !strings.Contains(r.stdout, "safety checkpoint") || !strings.Contains(r.stdout, "Examples:") {
		t.Errorf("snap help rewind: exit %d\n%s", r.code, r.stdout)
	}
}

// TestRunVerbDirect calls run<Verb> functions directly, as library users of
// this package's tests would.
func TestRunVerbDirect(t *testing.T) {
	p := newProject(t)
	g := globalOptions{Dir: p.dir, JSON: true}
	var out strings.Builder
	if err := runStatus(context.Background(), statusOptions{g}, &out); err != nil {
		t.Fatal(err)
	}
	eq(t, "clean", decode(t, out.String())["clean"], any(true))
	out.Reset()
	err := runRewind(context.Background(), rewindOptions{globalOptions: g, Ref: "nope"}, &out)
	eq(t, "exit", func() int { c, _ := classify(err); return c }(), exitNoCheckpoint)
	eq(t, "stdout on error", out.String(), "")
	err = runShow(context.Background(), showOptions{globalOptions: g, Ref: p.ids[0][:5]}, &out)
	eq(t, "short prefix exit", func() int { c, _ := classify(err); return c }(), exitNoCheckpoint)
}
