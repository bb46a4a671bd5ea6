#!/bin/bash
# 02: Ctrl-C/SIGTERM received by the core build before it execs snap-full is swallowed
#
# main() installs signal.NotifyContext first; execFull (core.go) never looks
# at ctx, so a SIGINT/SIGTERM that arrives after that and before execve only
# cancels a context that the exec throws away: snap-full then runs the whole
# command as if nothing happened.
# Expected (snap-full run directly, same signal at the same point): exit 130
#   "snap: context canceled", nothing done.
# Actual (core build): snap-full runs anyway: `snap mcp` keeps serving until its
#   stdin closes and exits 0; `snap task commit --git-commit --conversation -`
#   interrupted while reading stdin commits the task AND makes the git commit
#   (exit 0).
# The window is normally a few ms; this repro widens it deterministically by
# delaying the core build's stat of snap-full under strace (mcp case). Without
# strace (or with SPLIT_NO_STRACE=1) it uses the task commit case (stdin read
# before the exec, see 01).
# Usage: 02-signal-before-exec-swallowed.sh /path/to/core/snap
set -u
SNAP=$(realpath "$1"); FULL=$(dirname "$SNAP")/snap-full
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export HOME=$T/home; mkdir -p "$HOME" "$T/p"; cd "$T/p"
if [ -z "${SPLIT_NO_STRACE:-}" ] && command -v strace >/dev/null && strace -qq -o /dev/null true 2>/dev/null; then
  echo a > a.txt; "$FULL" init >/dev/null
  ( sleep 4 | { timeout 20 strace -f -qq -o /dev/null -P "$FULL" -e trace=newfstatat,statx \
        -e inject=newfstatat,statx:delay_exit=1500000 "$SNAP" mcp >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; } ) &
  job=$!
  for _ in $(seq 50); do pid=$(pgrep -f -x "$SNAP mcp" | head -1); [ -n "$pid" ] && break; sleep 0.05; done
  sleep 0.4; kill -INT "$pid"; wait $job
  rc=$(cat "$T/rc")
  [ "$rc" = 130 ] && { echo "OK: interrupted snap mcp exits 130"; exit 0; }
  echo "DEFECT: SIGINT sent to the core build's 'snap mcp' before its exec: exit $rc (want 130); snap-full served on until stdin closed"
  exit 1
fi
git init -q -b main; git config user.name u; git config user.email u@e
echo a > a.txt; git add -A; git commit -qm base
"$FULL" init >/dev/null; "$FULL" checkpoint -m m1 >/dev/null; "$FULL" task begin goal >/dev/null; echo b > a.txt
( (echo '{"role":"user","content":"x"}'; sleep 1.5) | { timeout 20 "$SNAP" task commit done --git-commit --conversation - >"$T/out" 2>&1; echo $? >"$T/rc"; } ) &
job=$!
sleep 0.7; pid=$(pgrep -f "$SNAP task commit" | head -1); kill -INT "$pid"; wait $job
rc=$(cat "$T/rc"); commits=$(git rev-list --count HEAD)
[ "$rc" = 130 ] && [ "$commits" = 1 ] && { echo "OK: interrupted task commit exits 130, no git commit"; exit 0; }
echo "DEFECT: SIGINT during the core build's task commit: exit $rc (want 130), git commits $commits (want 1)"
exit 1
