#!/bin/bash
# Replaces each store file (and a few names that may be read) by a FIFO in
# turn and runs read and write commands under a 5 s timeout; prints HANG or
# PANIC lines. usage: fifosweep.sh SNAP LABEL   (a tool, not a finding)
B=${1:-/work/main/bin/snap}; L=${2:-x}; export SNAP_NO_AUTO_GC=1 SNAP_LOCK_TIMEOUT=3s
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir $W/base && cd $W/base && "$B" init >/dev/null && for i in 1 2 3 4; do echo $i > a$i; "$B" checkpoint -m m$i >/dev/null; done && "$B" log >/dev/null || exit 2
for f in $(find .snap -type f | sort) .snap/packs/zz.pack .snap/packs/zz .snap/cache/opcache .snap/expired; do
  for cmd in "log" "status" "checkpoint -m x --allow-empty" "show #2" "sessions" "gc" "fsck"; do
    rm -rf $W/fs; cp -a $W/base $W/fs; cd $W/fs
    rm -f "$f"; mkfifo "$f"
    out=$(timeout -k 1 5 "$B" $cmd 2>&1 </dev/null); rc=$?
    [ $rc = 124 -o $rc = 137 ] && echo "HANG $L [$f] $cmd"
    echo "$out" | grep -q "internal error\|panic" && echo "PANIC $L [$f] $cmd"
    cd $W/base
  done
done
