#!/usr/bin/env bash
# A10: "nothing to revert" exits 0 only when the change is already undone.
# Reverting a checkpoint whose change is empty (an --allow-empty checkpoint, a
# message-only one), an empty range ('#1..#1') or --path outside the change
# exits 4 with "no such path in checkpoint" (the code for a missing
# checkpoint/ref). Also a reversed range ('#3..#1') is accepted and
# re-applies changes instead of reverting them.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
$SNAP init >/dev/null
echo a > a; $SNAP checkpoint -m 1 >/dev/null
echo b > b; $SNAP checkpoint -m 2 >/dev/null
$SNAP checkpoint --allow-empty -m 3 >/dev/null
r() { echo "\$ snap $*"; $SNAP "$@" 2>&1 | sed 's/^/  /'; echo "  exit ${PIPESTATUS[0]}"; }
r revert @ --dry-run
r revert @
r revert '#1..#1'
r revert '#2' --path a
r revert '#2'            # works: b removed
r revert '#2'            # "nothing to revert", exit 0: the documented behaviour
r revert '#3..#1' --dry-run
