#!/usr/bin/env bash
# A14: undo is not exact when .git/info/exclude (not versioned, so not part of
# any checkpoint's rules) changed between a rewind and its undo: a file F the
# rewind left alone because it was excluded, and that existed before the
# rewind, is deleted by the undo once the exclusion is removed. F is then only
# in the undo's safety checkpoint; a redo and a second undo do not bring it
# back (the redo/undo pair moves between states that never had F).
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); O=$(mktemp -d); trap 'rm -rf "$T" "$O"' EXIT; cd "$T"
git init -q; $SNAP init >/dev/null
echo 1 > a; $SNAP checkpoint -m 1 >/dev/null
echo 2 > a; $SNAP checkpoint -m 2 >/dev/null
echo F >> .git/info/exclude; echo PRECIOUS > F          # the user's file, excluded: never checkpointed
echo "before the rewind: $(ls | tr '\n' ' ')  F=$(cat F)"
$SNAP rewind '#1' >/dev/null; echo "after rewind '#1': $(ls | tr '\n' ' ')  F=$(cat F)"
sed -i '/^F$/d' .git/info/exclude                        # the user stops excluding it
$SNAP undo > "$O/u" 2>&1; cat "$O/u" | sed 's/^/  | /'
echo "after undo: $(ls | tr '\n' ' ')  F=$(cat F 2>&1)   (expected: F=PRECIOUS, as before the rewind)"
$SNAP redo >/dev/null 2>&1; $SNAP undo >/dev/null 2>&1
echo "after redo+undo: $(ls | tr '\n' ' ')"
sc=$(grep -oE 'safety checkpoint [0-9a-f]{64}' "$O/u" | awk '{print $3}')
echo "F survives only in the undo's safety checkpoint: $($SNAP cat "$sc:F" 2>&1)"
