#!/bin/bash
# 03: a git-committing task/edit commit prints the "was interrupted" warning twice
#
# With a rewind left interrupted (a move-journal in the store), every command
# that opens the store warns once on stderr ("snap: warning: a rewind of
# session ... was interrupted ..."). runTask/runEdit open the store
# (globalOptions.open prints the warning) BEFORE newGitCommitter reaches
# execFull, and snap-full then opens it again and prints it again.
# Expected (snap-full): the warning once. Actual (core build): twice.
# (design.md §6: the hand-over happens "before anything is done".)
# Usage: 03-interrupted-warning-printed-twice.sh /path/to/core/snap
set -u
SNAP=$(realpath "$1"); FULL=$(dirname "$SNAP")/snap-full
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export HOME=$T/home; mkdir -p "$HOME" "$T/t"; cd "$T/t"
git init -q -b main; git config user.name u; git config user.email u@e
echo a > a.txt; git add -A; git commit -qm base
"$FULL" init >/dev/null; "$FULL" checkpoint -m m1 >/dev/null; "$FULL" task begin goal >/dev/null; echo b > a.txt
H=$("$FULL" status --json | sed -n 's/.*"head": *"\([0-9a-f]\{64\}\)".*/\1/p' | head -1)
[ -n "$H" ] || { echo "setup: no head"; exit 2; }
# a rewind "killed" after its safety checkpoint: the journal names the head
printf '{"kind":"rewind","session":"default","target":"%s","new_head":"%s","safety":"%s","current":"%s","old_head":"%s"}' \
  "$H" "$H" "$H" "$H" "$H" > .snap/move-journal
cp -a "$T/t" "$T/u"
(cd "$T/t" && "$SNAP" task commit done --git-commit >/dev/null 2>"$T/err.core")
(cd "$T/u" && "$FULL" task commit done --git-commit >/dev/null 2>"$T/err.full")
c=$(grep -c 'was interrupted' "$T/err.core"); f=$(grep -c 'was interrupted' "$T/err.full")
if [ "$c" = "$f" ]; then echo "OK: warning printed $c time(s), as snap-full"; exit 0; fi
echo "DEFECT: core build printed the interrupted-rewind warning $c times, snap-full $f"; cat "$T/err.core"
exit 1
