#!/usr/bin/env bash
# A4: a --path rewind whose every path is kept changes nothing, yet records a
# safety checkpoint, a 'rewind ..., keeping' checkpoint that shows in the
# session's log as (abandoned) although it never was the head, and an op that
# 'snap undo' then "undoes" (0 files restored).
SNAP=${SNAP:-/tmp/snapbin/snap}; export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
echo a > a.txt; echo l > link.target; ln -s link.target link
"$SNAP" -s A checkpoint -m base >/dev/null
echo A1 > a.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null
rm link; ln -s elsewhere link; "$SNAP" -s B checkpoint >/dev/null
"$SNAP" -s A rewind '#1' --path link
"$SNAP" -s A log
"$SNAP" -s A undo
echo "EXPECTED: nothing to restore -> no checkpoints/op recorded (or at least no log entry for an end that never was the head)"
