#!/bin/bash
# 01: a task commit that makes a git commit loses a state document read from stdin
#
#   snap task commit SUMMARY --git-commit --conversation -   (transcript on stdin)
#
# Expected (what snap-full does): the task-commit checkpoint records the
#   transcript read from stdin; `snap cat @ --state conversation` prints it.
# Actual (core build): the core build reads stdin (docFlags.stateDocs, in
#   runTask before newGitCommitter) and only then execs snap-full, which
#   finds stdin at EOF and records an EMPTY conversation, exit 0, no warning.
#   docs/design.md §6 says the hand-over happens "before anything is done".
#   The same holds for --state NAME=- and for git.commit-on=task-commit.
# Usage: 01-git-commit-stdin-doc-lost.sh /path/to/core/snap   (snap-full beside it)
set -u
SNAP=$(realpath "$1"); FULL=$(dirname "$SNAP")/snap-full
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export HOME=$T/home; mkdir -p "$HOME" "$T/p"; cd "$T/p"
git init -q -b main; git config user.name u; git config user.email u@e
echo a > a.txt; git add -A; git commit -qm base
"$FULL" init >/dev/null; "$FULL" checkpoint -m m1 >/dev/null
"$FULL" task begin goal >/dev/null; echo b > a.txt
echo '{"role":"user","content":"keep me"}' > "$T/conv.jsonl"
"$SNAP" task commit done --git-commit --conversation - < "$T/conv.jsonl" > "$T/out" 2>&1 || { cat "$T/out"; echo "task commit failed"; exit 1; }
got=$("$FULL" cat @ --state conversation 2>&1)
if [ "$got" = '{"role":"user","content":"keep me"}' ]; then echo "OK: conversation recorded"; exit 0; fi
echo "DEFECT: conversation recorded by the core build's task commit --git-commit is [$got], want the transcript from stdin"
exit 1
