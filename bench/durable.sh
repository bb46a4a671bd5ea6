#!/usr/bin/env bash
# The cost of a restore's durability step (docs/design.md §4, "Durable
# restores"), A/B in one run: snap built four ways (-ldflags -X
# worktree.syncPolicy=auto|none|fsync|syncfs), each rewinding N files of a
# 5,000-file project (50 directories of 100), alternating, R rounds; the
# median of each. Usage: bash bench/durable.sh [N...] (default 10 1000);
# R=9 by default. Needs go; writes only under a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-9}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
variants="none auto fsync syncfs"
for v in $variants; do
  go build -tags urfave_cli_no_docs,netgo,osusergo -ldflags "-X github.com/snapcore-dev/snap/worktree.syncPolicy=$v" -o "$W/snap-$v" ./cmd/snap
done
for N in "${@:-10 1000}"; do
  for N1 in $N; do
    P="$W/p"; rm -rf "$P"; mkdir "$P"; cd "$P"
    "$W/snap-auto" init >/dev/null
    for d in $(seq 50); do mkdir d$d; for f in $(seq 100); do echo "file $d $f" > d$d/f$f; done; done
    "$W/snap-auto" checkpoint >/dev/null
    declare -A T=()
    for r in $(seq "$R"); do
      for v in $variants; do
        i=0
        for d in $(seq 50); do for f in $(seq 100); do i=$((i+1)); [ $i -le "$N1" ] && echo "round $r $v" >> d$d/f$f; done; done
        sync; sleep 0.2
        s=$(date +%s%N); SNAP_NO_AUTO_GC=1 "$W/snap-$v" rewind @ >/dev/null; e=$(date +%s%N)
        T[$v]+="$(( (e-s)/100000 )) "
      done
    done
    for v in $variants; do
      echo "rewind of $N1 files, durability $v: median $(echo ${T[$v]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (n=%d)", a[int((NR+1)/2)]/10, NR}')"
    done
    cd - >/dev/null
  done
done
