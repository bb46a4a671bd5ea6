#!/usr/bin/env bash
# A1: Ctrl-C while a rewind waits for .snap/refs.lock (held by another process)
# is not honoured: the wait goes on until the holder lets go, then the rewind
# writes its move journal and exits 130. The rewind the user cancelled is
# "interrupted", and the user's next `snap checkpoint` performs it (overwrites
# the uncheckpointed edit, says "unchanged"). If the holder keeps the lock
# longer, the rewind exits 11 (store busy) after ~5 s instead of 130.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); O=$(mktemp -d); trap 'rm -rf "$T" "$O"' EXIT; cd "$T"
$SNAP init >/dev/null
echo one > a; $SNAP checkpoint -m 1 >/dev/null
echo two > a; $SNAP checkpoint -m 2 >/dev/null
echo "uncheckpointed edit" > a

echo "== case 1: refs.lock held 3 s, Ctrl-C after 1 s"
flock .snap/refs.lock sleep 3 & H=$!; sleep 0.3
start=$(date +%s.%N)
$SNAP rewind '#1' >"$O/out" 2>&1 & P=$!
sleep 1; kill -INT $P; wait $P; rc=$?
echo "exit $rc after $(echo "$(date +%s.%N) - $start" | bc) s (expected: 130 at once, nothing recorded)"
sed 's/^/  | /' "$O/out"
wait $H
echo "move journal left: $(ls .snap/move-journal 2>/dev/null || echo none)"
echo "a on disk now: $(cat a)"
echo "== the user's next command: snap checkpoint -m mine"
$SNAP checkpoint -m mine 2>&1 | sed 's/^/  | /'
echo "a on disk now: $(cat a)   (expected: 'uncheckpointed edit'; the cancelled rewind was carried out)"
$SNAP log | sed 's/^/  | /'

echo "== case 2: refs.lock held 12 s, Ctrl-C after 1 s"
echo "another edit" > a
flock .snap/refs.lock sleep 12 & H=$!; sleep 0.3
start=$(date +%s.%N)
$SNAP rewind '#2' >"$O/out" 2>&1 & P=$!
sleep 1; kill -INT $P; wait $P; rc=$?
echo "exit $rc after $(echo "$(date +%s.%N) - $start" | bc) s (expected 130 after ~1 s)"
sed 's/^/  | /' "$O/out"
kill $H 2>/dev/null; wait $H 2>/dev/null
$SNAP fsck | tail -1
