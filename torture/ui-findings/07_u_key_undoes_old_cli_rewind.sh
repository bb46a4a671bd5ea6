#!/bin/bash
# U7: one stray "u" keystroke anywhere in the app (here: the Sessions page,
# nothing focused) undoes the session's last operation, whatever and however
# old it is (here a rewind made from the CLI), moving files on disk with no
# confirmation and no word of what will be undone.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null
echo v1 > a.txt; "$SNAP" checkpoint >/dev/null; echo v2 > a.txt; echo new > b.txt; "$SNAP" checkpoint >/dev/null
"$SNAP" rewind '#1' >/dev/null 2>&1   # yesterday, from the terminal
echo "before: a.txt=$(cat a.txt) b.txt=$(cat b.txt 2>/dev/null || echo absent)"
start_ui "$T/p"
drive <<CMDS
tab a
nav $URL
wait document.querySelector('#main table')
key u
sleep 1500
eval document.getElementById('notice').innerText
CMDS
echo "after:  a.txt=$(cat a.txt) b.txt=$(cat b.txt 2>/dev/null || echo absent)"
if [ "$(cat a.txt)" = v2 ]; then echo "BUG: a single 'u' on the Sessions page reverted the CLI rewind (files moved, no confirmation)"; else echo OK; fi
