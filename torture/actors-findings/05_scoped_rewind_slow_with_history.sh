#!/usr/bin/env bash
# A5: a scoped rewind reads and diffs every checkpoint recorded since its
# target, twice (pathChanges othersOnly, then all): its cost grows with the
# op log, not with the change. Measured (5 sessions, 2000 files):
#   1000 checkpoints since target: 3.4 s scoped vs 0.6 s --all
#   4000 checkpoints since target: 19.5 s scoped vs 0.7 s --all (7.4 s vs 0.5 s after snap gc)
# N (default 400) checkpoints are made here through the CLI, which is slow.
SNAP=${SNAP:-/tmp/snapbin/snap}; export SNAP_NO_AUTO_GC=1
N=${N:-400}
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
mkdir src; for i in $(seq 0 1999); do echo "line $i" > src/f$i.txt; done
"$SNAP" -s S0 checkpoint -m base >/dev/null
for i in $(seq 1 $N); do
  S=S$((i % 5)); echo "$S $i" >> src/f$(( (i*7919) % 2000 )).txt
  "$SNAP" -s $S checkpoint --actor agent >/dev/null
done
for v in "" --all; do
  s=$(date +%s.%N); "$SNAP" -s S0 rewind '#1' --dry-run $v | tail -1 | cut -c1-70; e=$(date +%s.%N)
  echo "rewind --dry-run $v: $(echo "$e - $s" | bc) s"
done
