#!/bin/bash
# 03 (pre-existing, same class as 02): .snap/oplog.cache, the other
# disposable cache of the op log, is also read whole whatever its size: a
# sparse 4 GiB oplog.cache makes 'snap op log' (and every whole-log read:
# undo, a fresh index, gc) allocate 4 GiB: "fatal error: out of memory"
# under a 1.5 GB address-space limit. The old engine (0858ba9) fails too.
# Exit 1 while 'snap op log -n 1' fails under 'ulimit -v 1500000'.
SNAP=${1:-/work/main/bin/snap}
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
"$SNAP" init >/dev/null || exit 2
for i in 1 2 3; do echo $i > a; "$SNAP" checkpoint -m m$i >/dev/null || exit 2; done
want=$("$SNAP" op log -n 1)
truncate -s 4G .snap/oplog.cache            # sparse: costs no disk
out=$( (ulimit -v 1500000; timeout 15 "$SNAP" op log -n 1) 2>&1 ); rc=$?
if [ $rc -ne 0 ] || [ "$out" != "$want" ]; then
  echo "DEFECT: 'snap op log' with a 4 GiB oplog.cache: rc=$rc"
  echo "$out" | head -3
  exit 1
fi
echo ok; exit 0
