#!/usr/bin/env bash
# demo.sh — a scripted agent session with snap, from the first checkpoint to
# rewind, undo and redo. Usage: scripts/demo.sh [path/to/snap]  (default
# bin/snap). Everything happens in a temporary directory, which is kept at
# the end so that 'snap ui' can show it (the last lines say how), and
# removed when the demo fails.
set -euo pipefail

bin=${1:-bin/snap}
if [[ ! -x $bin ]]; then
	echo "demo: $bin is not an executable; build it first: make build" >&2
	exit 1
fi
SNAP=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
unset SNAP_SESSION SNAP_STORE

work=$(mktemp -d "${TMPDIR:-/tmp}/snap-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT # (until the end: kept when the demo succeeds)
project=$work/project
# The agent keeps its transcript outside the project, as Claude Code does
# (~/.claude/projects/...): snap records it as the "conversation" state
# document and rewinds it together with the files.
transcript=$work/transcript.jsonl
mkdir -p "$project/src"
cd "$project"

snap() { "$SNAP" "$@"; }
bold='' plain=''
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
# run prints a command as one would type it, then runs it.
run() {
	local a line='$'
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@~+,-]+$ ]]; then
			line+=" $a"
		else
			line+=" '${a//\'/\'\\\'\'}'"
		fi
	done
	printf '%s\n' "$line"
	"$@"
}
fail() {
	echo "demo: FAILED: $*" >&2
	exit 1
}

# Transcript lines in Claude Code's JSONL shape.
user_says() { # uuid text
	printf '{"type":"user","uuid":"%s","timestamp":"2025-06-01T10:%02d:00Z","message":{"role":"user","content":"%s"}}\n' \
		"$1" "$((n++))" "$2" >>"$transcript"
}
assistant_edits() { # msg-id tool-id text file old new
	printf '{"type":"assistant","uuid":"a-%s","timestamp":"2025-06-01T10:%02d:00Z","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"%s"},{"type":"tool_use","id":"%s","name":"Edit","input":{"file_path":"%s","old_string":"%s","new_string":"%s"}}]}}\n' \
		"$1" "$((n++))" "$1" "$3" "$2" "$4" "$5" "$6" >>"$transcript"
}
assistant_runs() { # msg-id tool-id text command
	printf '{"type":"assistant","uuid":"a-%s","timestamp":"2025-06-01T10:%02d:00Z","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"%s"},{"type":"tool_use","id":"%s","name":"Bash","input":{"command":"%s"}}]}}\n' \
		"$1" "$((n++))" "$1" "$3" "$2" "$4" >>"$transcript"
}
tool_result() { # tool-id text
	printf '{"type":"user","uuid":"r-%s","timestamp":"2025-06-01T10:%02d:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"%s","content":"%s"}]}}\n' \
		"$1" "$((n++))" "$1" "$2" >>"$transcript"
}
n=0

step "A small project, with a .gitignore"
cat >src/app.py <<'EOF'
from util import shout

def main():
    print("hello")

main()
EOF
cat >src/util.py <<'EOF'
def shout(s):
    return s.upper()
EOF
printf '# demo\n\nA tiny app.\n' >README.md
printf 'build/\n__pycache__/\n*.pyc\n' >.gitignore
run ls -A . src

step "Create the store (.snap/ beside the project)"
run snap init

step "Checkpoint 1: the user's prompt, before the agent touches anything"
user_says u-01 "Greet the user by name, and clean up what is unused."
run snap checkpoint -m u-01 --summary "user prompt" --kind prompt --conversation "$transcript"

step "Checkpoint 2: the agent edits src/app.py"
sed -i.bak 's/print("hello")/print(f"hello, {name}")/; s/def main():/def main(name="world"):/' src/app.py && rm src/app.py.bak
assistant_edits msg_02 toolu_02 "I will greet by name." src/app.py 'print(\"hello\")' 'print(f\"hello, {name}\")'
tool_result toolu_02 "The file src/app.py has been updated."
run snap checkpoint -m msg_02 --summary "greet by name" --kind post-tool --conversation "$transcript"

step "Checkpoint 3: a new file, and a build artefact that .gitignore keeps out"
cat >src/greet.py <<'EOF'
def greet(name):
    return f"hello, {name}"
EOF
mkdir -p build && head -c 4096 /dev/urandom >build/app.bin
assistant_edits msg_03 toolu_03 "Moving the greeting into greet.py." src/greet.py "" "def greet(name): ..."
tool_result toolu_03 "File created successfully at: src/greet.py"
run snap checkpoint -m msg_03 --summary "add greet.py" --kind post-tool --conversation "$transcript"
run snap show @

step "Checkpoint 4: the agent deletes src/util.py through the shell"
rm src/util.py
sed -i.bak '/^from util import shout$/d' src/app.py && rm src/app.py.bak
assistant_runs msg_04 toolu_04 "util.py is unused; removing it." "rm src/util.py"
tool_result toolu_04 "(no output)"
run snap checkpoint -m msg_04 --summary "remove unused util.py" --kind post-tool --conversation "$transcript"

step "The session so far: #seq, id, time, kind, message id, summary, changes, messages"
run snap log

step "What checkpoints 2 and 3 changed, files and conversation"
run snap diff '#1' '#3'
run snap diff '#1' '#3' --stat

step "The conversation at the head, first three messages"
run snap conversation @ --limit 3

step "The user edits src/app.py and adds notes.txt, without a checkpoint"
echo '# my own tweak, never checkpointed' >>src/app.py
echo 'remember to ask about the greeting' >notes.txt
cp src/app.py "$work/app.py.expected"
cp notes.txt "$work/notes.txt.expected"
cp "$transcript" "$work/transcript.expected"
run snap status

step "Rewind to #2: a safety checkpoint first, then files and transcript go back"
run snap rewind '#2' --dry-run
run snap rewind '#2'

step "The files after the rewind: util.py is back, greet.py and notes.txt are gone, build/ untouched"
run ls -A . src build
run cat src/app.py
echo "transcript: $(wc -l <"$transcript") lines (was $(wc -l <"$work/transcript.expected"))"
[[ ! -e notes.txt && -e src/util.py && ! -e src/greet.py ]] || fail "rewind did not restore #2"
run snap log

step "Undo the rewind: everything is back, the uncheckpointed edit and notes.txt included"
run snap undo
run cat src/app.py notes.txt
diff -u "$work/app.py.expected" src/app.py || fail "src/app.py is not as it was before the rewind"
diff -u "$work/notes.txt.expected" notes.txt || fail "notes.txt is not as it was before the rewind"
diff -u "$work/transcript.expected" "$transcript" || fail "the transcript is not as it was before the rewind"
echo "ok: src/app.py, notes.txt and the transcript are exactly as before the rewind"

step "Redo the rewind (and see every operation in the op log)"
run snap redo
[[ ! -e notes.txt ]] || fail "redo did not rewind again"
run snap op log

step "Check the store's integrity"
run snap fsck

step "See it all in the web app"
trap - EXIT
echo "The demo project stays in $project. Open its history, conversation, compare and rewind views with:"
echo
echo "    $SNAP -C $project ui --open"
echo
echo "(it prints the URL to open; interrupt to stop). Remove the demo with: rm -rf $work"
