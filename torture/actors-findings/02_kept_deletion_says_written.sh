#!/usr/bin/env bash
# A2: a path another session DELETED is kept (correctly absent) but listed as
# "kept x: written by session B ... left as it is": the text (keptReason)
# says "written" whatever the change, so a reader looks for a file x.
SNAP=${SNAP:-/tmp/snapbin/snap}; export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
echo a > a.txt; echo x > x
"$SNAP" -s B checkpoint -m b0 >/dev/null
"$SNAP" -s A checkpoint -m base >/dev/null
echo A1 > a.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null
rm x; "$SNAP" -s B checkpoint --actor agent >/dev/null   # session B deletes x
"$SNAP" -s A rewind '#1'
ls x 2>/dev/null || echo "(x is absent, as B left it)"
echo "EXPECTED: 'kept x: deleted by session B's agent at #2, ...'"
