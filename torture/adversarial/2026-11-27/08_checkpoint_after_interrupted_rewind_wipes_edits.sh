#!/usr/bin/env bash
# A8: after a Ctrl-C in the middle of a long rewind (20,000 files), the user
# edits files and runs `snap checkpoint -m mine`. That command completes the
# rewind first: it overwrites the user's new edits and deletes their new file,
# then prints "unchanged: nothing differs from the head, no checkpoint
# recorded". The edits are only in an abandoned "found when completing"
# checkpoint that no message names, and `snap undo` afterwards does not bring
# them back (it returns to the state before the rewind).
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); O=$(mktemp -d); trap 'rm -rf "$T" "$O"' EXIT; cd "$T"
$SNAP init >/dev/null
python3 - <<'P'
import os
for i in range(20000):
    d="d/%03d"%(i%200); os.makedirs(d,exist_ok=True); open("%s/f%05d"%(d,i),"w").write("v1 %d\n"%i)
P
$SNAP checkpoint -m 1 >/dev/null
python3 -c '
for i in range(20000): open("d/%03d/f%05d"%(i%200,i),"w").write("v2 %d\n"%i)'
$SNAP checkpoint -m 2 >/dev/null
for s in 0.8 1.0 1.2 1.5 1.8 2.1 2.5 3.0; do
  $SNAP rewind '#1' >"$O/out" 2>&1 & P=$!; sleep $s; kill -INT $P; wait $P; rc=$?
  [ -e .snap/move-journal ] && grep -q -l '^v1' -r d && break
done
echo "rewind: exit $rc"; tail -c 400 "$O/out"; echo
[ -e .snap/move-journal ] && grep -q -l '^v1' -r d || { echo "could not interrupt the rewind mid-way on this machine; rerun"; exit 0; }
f1=$(grep -l '^v1' -r d | head -1); f2=$(grep -l '^v2' -r d | head -1)
echo "MY EDIT 1" > "$f1"; echo "MY EDIT 2" > "$f2"; echo "my new file" > d/mine.txt
echo "== user edits $f1, $f2 and creates d/mine.txt, then: snap checkpoint -m mine"
$SNAP checkpoint -m mine 2>&1 | sed 's/^/  | /'
echo "$f1: $(cat "$f1")   $f2: $(cat "$f2")   d/mine.txt: $(cat d/mine.txt 2>&1)"
echo "== snap undo"; $SNAP undo 2>&1 | tail -1
echo "$f1: $(cat "$f1")   $f2: $(cat "$f2")   d/mine.txt: $(cat d/mine.txt 2>&1)"
$SNAP log | sed 's/^/  | /'
