package model

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// shellScript translates a sequence into a bash script driving the real
// CLI (best effort: the Go replay is the reference). It runs the sequence
// once to learn which checkpoint each command creates, so later commands
// can name them ($P1_C3: the third checkpoint of project 1).
func shellScript(ops []Op, disabled map[string]bool) string {
	dir, err := os.MkdirTemp("", "snap-model-script-")
	if err != nil {
		return "# " + err.Error() + "\n"
	}
	defer func() {
		makeWritable(dir)
		os.RemoveAll(dir)
	}()
	d := map[string]bool{}
	for c := range disabled {
		d[c] = true
	}
	r, err := newRunner(dir, d, nil)
	if err != nil {
		return "# " + err.Error() + "\n"
	}
	defer r.close()
	var b strings.Builder
	b.WriteString(scriptPrelude)
	varOf := map[string]string{} // full id → variable
	hexRe := regexp.MustCompile(`[0-9a-f]{64}|[0-9a-f]{12}`)
	subst := func(s string) string {
		s = strings.ReplaceAll(s, dir, "$W")
		return hexRe.ReplaceAllStringFunc(s, func(h string) string {
			for id, v := range varOf {
				if id == h {
					return "${" + v + "}"
				}
				if len(h) == 12 && strings.HasPrefix(id, h) {
					return "${" + v + ":0:12}"
				}
			}
			return h
		})
	}
	quote := func(args []string) string {
		var out []string
		for _, a := range args {
			a = subst(a)
			if strings.ContainsAny(a, "$") {
				out = append(out, `"`+a+`"`)
			} else {
				out = append(out, shQuote(a))
			}
		}
		return strings.Join(out, " ")
	}
	cur := -1
	for i := range ops {
		op := ops[i]
		p := r.projs[op.Proj%len(r.projs)]
		if p.idx != cur {
			cur = p.idx
			fmt.Fprintf(&b, "cd \"$W/p%d\"; CONV=$CONV%d\n", cur+1, cur+1)
		}
		fmt.Fprintf(&b, "\n# %d. %s\n", i+1, strings.ReplaceAll(op.String(), "\n", " "))
		ref := ""
		if op.Kind == "rewind" || op.Kind == "label" {
			_, ref, _ = p.target(op.Target, op.Form, op.Session)
		}
		if op.Kind == "checkpoint" {
			t := fmt.Sprintf("$W/p%d-out/tasks.json", p.idx+1)
			fmt.Fprintf(&b, "CA=(); [ -f \"$CONV\" ] && CA=(--conversation \"$CONV\"); TA=(); [ -f \"%s\" ] && TA=(--state \"todo=%s\")\n", t, t)
		}
		if cmds := r.cmdOf(p, &op, ref); cmds != nil {
			for j, c := range cmds {
				if j == len(cmds)-1 {
					fmt.Fprintf(&b, "snap %s > \"$W/out.json\"; echo \"exit $?\"; cat \"$W/out.json\"\n", quote(c))
				} else {
					fmt.Fprintf(&b, "snap %s; echo \"exit $?\"\n", quote(c))
				}
			}
		} else {
			b.WriteString(fsScript(p, &op, dir))
		}
		before := len(p.cks)
		opNoCLI := op
		opNoCLI.CLI = nil
		r.apply(&opNoCLI)
		for _, c := range p.cks[before:] {
			v := fmt.Sprintf("P%d_C%d", p.idx+1, c.seq)
			field := ".id"
			switch {
			case c.kind == "safety" && op.Kind == "rewind":
				field = ".safety_checkpoint"
			case c.kind == "safety":
				field = ".rewind.safety_checkpoint"
			case agentKinds[op.Kind]:
				field = agentField(c.kind)
			case c.kind != "checkpoint":
				continue
			}
			varOf[c.id.String()] = v
			fmt.Fprintf(&b, "%s=$(jq -r '%s' \"$W/out.json\")\n", v, field)
		}
		if op.CLI != nil {
			r.runCLI(p, op.CLI)
			fmt.Fprintf(&b, "snap %s; echo \"exit $?\"\n", quote(r.lastCLI))
		}
		if len(r.fails) > 0 {
			fmt.Fprintf(&b, "\n# The Go replay failed here: [%s] %s\n", r.fails[0].Cat, strings.ReplaceAll(r.fails[0].Msg, "\n", "\n# "))
			break
		}
	}
	return b.String()
}

const scriptPrelude = `#!/usr/bin/env bash
# A failing sequence found by torture/model, as CLI commands (generated;
# the Go replay, SNAP_MODEL_REPLAY, is the reference). Needs jq.
#   SNAP=/path/to/snap bash THIS.sh        (scratch: $W, default a new temp dir)
set -u
SNAP=${SNAP:-snap}; W=${W:-$(mktemp -d)}; export SNAP_NO_AUTO_GC=1; unset SNAP_STORE SNAP_SESSION
echo "scratch: $W"
snap() { "$SNAP" "$@"; }
mkparent() { local d; d=$(dirname "$1"); [ "$d" = . ] && return 0; mkparent "$d"; if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then rm -f "$d"; fi; [ -d "$d" ] || mkdir "$d"; }
clear() { [ -e "$1" ] || [ -L "$1" ] && { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }; return 0; }
put() { mkparent "$1"; if [ -d "$1" ] && [ ! -L "$1" ] || [ -L "$1" ] || [ -p "$1" ]; then clear "$1"; fi; printf "$3" > "$1"; chmod "$2" "$1"; }
for i in 1 2; do
  mkdir -p "$W/p$i/src" "$W/p$i-out"; cd "$W/p$i"
  printf 'package main\n' > src/main.go; printf 'x1\n' > x; printf 'hello\n' > README
  if [ $i = 1 ]; then mkdir -p .git; printf 'ref: refs/heads/main\n' > .git/HEAD; printf '*.log\n' > .gitignore; fi
  if [ $i = 2 ]; then git init -q --template= -b main; git config user.name 'Model Harness'; git config user.email model@example.invalid; git add -A; git commit -q --no-verify -m 'the starting tree'; fi
  snap init >/dev/null; snap config capture.max-file-size 8192
done
CONV1=$W/p1-out/t.jsonl; CONV2=$W/p2-out/t.jsonl
`

// fsScript is the shell form of a file-system op.
func fsScript(p *project, op *Op, dir string) string {
	q := shQuote
	P := q(op.Path)
	mode := "644"
	if op.Exec {
		mode = "755"
	}
	switch op.Kind {
	case "write", "big":
		return fmt.Sprintf("put %s %s %s\n", P, mode, q(printfEscape(op.Data)))
	case "append":
		return fmt.Sprintf("[ -f %s ] && [ ! -L %s ] && printf %s >> %s\n", P, P, q(printfEscape(op.Data)), P)
	case "rm":
		return fmt.Sprintf("clear %s\n", P)
	case "mv":
		return fmt.Sprintf("mkparent %s; mv -T %s %s 2>/dev/null\n", q(op.Path2), P, q(op.Path2))
	case "chmod":
		if op.Exec {
			return fmt.Sprintf("[ -f %s ] && chmod +x %s\n", P, P)
		}
		return fmt.Sprintf("[ -f %s ] && chmod -x %s\n", P, P)
	case "symlink":
		return fmt.Sprintf("mkparent %s; clear %s; ln -s %s %s\n", P, P, q(op.Data), P)
	case "mkdir":
		return fmt.Sprintf("mkparent %s/x; [ -d %s ] || { rm -f %s; mkdir %s; }\n", P, P, P, P)
	case "swap":
		return fmt.Sprintf("if [ -d %s ] && [ ! -L %s ]; then put %s 644 %s; elif [ -e %s ] || [ -L %s ]; then put %s 644 %s; fi\n",
			P, P, P, q(printfEscape(op.Data)), P, P, q(op.Path+"/"+fileNames[len(op.Data)%len(fileNames)]), q(printfEscape(op.Data)))
	case "fifo":
		return fmt.Sprintf("mkparent %s; clear %s; mkfifo %s\n", P, P, P)
	case "unreadable":
		return fmt.Sprintf("[ -f %s ] && chmod 000 %s\n", P, P)
	case "readable":
		return fmt.Sprintf("[ -f %s ] && chmod u+r,go+r %s\n", P, P)
	case "ignore", "exclude", "gitfile":
		if op.Del {
			return fmt.Sprintf("[ -d %s ] || rm -f %s\n", P, P)
		}
		return fmt.Sprintf("put %s 644 %s\n", P, q(printfEscape(op.Data)))
	case "transcript":
		switch op.Path {
		case "append":
			return fmt.Sprintf("printf %s >> \"$CONV\"\n", q(printfEscape(op.Data)))
		case "replace":
			return fmt.Sprintf("printf %s > \"$CONV.new\"; mv \"$CONV.new\" \"$CONV\"\n", q(printfEscape(op.Data)))
		case "delete":
			return "rm -f \"$CONV\"\n"
		case "move":
			n := p.idx + 1
			in, out := fmt.Sprintf("$W/p%d/chat.jsonl", n), fmt.Sprintf("$W/p%d-out/t.jsonl", n)
			if p.convIn { // it moves out
				in, out = out, in
			}
			return fmt.Sprintf("OLD=\"$CONV\"; CONV=\"%s\"; CONV%d=\"$CONV\"; [ -f \"$OLD\" ] && { rm -f \"$CONV\"; mv \"$OLD\" \"$CONV\"; }\n", in, n)
		}
	case "tasks":
		t := filepath.Join("$W", fmt.Sprintf("p%d-out", p.idx+1), "tasks.json")
		if op.Del {
			return fmt.Sprintf("rm -f \"%s\"\n", t)
		}
		return fmt.Sprintf("printf %s > \"%s\"\n", q(printfEscape(op.Data)), t)
	}
	return agentScript(op)
}

func shQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printfEscape makes s a printf format printing s.
func printfEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '%':
			b.WriteString("%%")
		case c == '\n':
			b.WriteString(`\n`)
		case c < 32 || c > 126:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
