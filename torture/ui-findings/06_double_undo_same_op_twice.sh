#!/bin/bash
# U6: Undo is not disabled while its request runs; two clicks (a double
# click, two tabs, u pressed twice) send two undos at once and the op log
# records the same rewind undone twice (#5 and #6 both "undo of op #4").
# Two `snap undo` processes at once serialize correctly (the second undoes
# op #3): the race is between two requests on the one Repo of `snap ui`.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null
for v in v1 v2 v3; do echo $v > a.txt; "$SNAP" checkpoint --summary $v >/dev/null; done
"$SNAP" rewind '#1' >/dev/null 2>&1
start_ui "$T/p"
drive <<CMDS
tab a
nav $URL
wait document.querySelector('#main table')
eval (document.getElementById('undo').click(), document.getElementById('undo').click(), 1)
sleep 1500
eval document.getElementById('notice').innerText
CMDS
"$SNAP" op log | head -4
n=$("$SNAP" op log | grep -c 'undo of op #4')
if [ "$n" -gt 1 ]; then echo "BUG: op #4 was undone $n times (want one undo; the second click should wait, or undo op #3)"; else echo "OK: one undo of op #4"; fi
