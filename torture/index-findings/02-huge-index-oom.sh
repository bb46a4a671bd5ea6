#!/bin/bash
# 02: a session index file is read whole, whatever its size, before any
# check: a (sparse) 4 GiB file at cache/sessions/<hash> makes every history
# read ('snap log', 'show #N', 'sessions', a no-change checkpoint) allocate
# 4 GiB. Under a 1.5 GB address-space limit the process dies with "fatal
# error: out of memory"; without one it takes ~20 s per GB. The file is
# never replaced (the read dies first), so the store stays unusable until
# someone deletes the cache by hand. The old engine (0858ba9) never reads it.
# Exit 1 while 'snap log' fails or exceeds 15 s under 'ulimit -v 1500000'.
SNAP=${1:-/work/main/bin/snap}
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
"$SNAP" init >/dev/null || exit 2
for i in 1 2 3; do echo $i > a; "$SNAP" checkpoint -m m$i >/dev/null || exit 2; done
"$SNAP" log >/dev/null
f=$(ls .snap/cache/sessions/* 2>/dev/null | head -1)
[ -n "$f" ] || { echo "no index file written"; exit 0; }
want=$("$SNAP" log)
truncate -s 4G "$f"                         # sparse: costs no disk
out=$( (ulimit -v 1500000; timeout 15 "$SNAP" log) 2>&1 ); rc=$?
if [ $rc -ne 0 ] || [ "$out" != "$want" ]; then
  echo "DEFECT: 'snap log' with a 4 GiB index file: rc=$rc"
  echo "$out" | head -3
  exit 1
fi
echo ok; exit 0
