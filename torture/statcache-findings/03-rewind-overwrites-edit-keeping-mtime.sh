#!/bin/bash
# Edits made while a rewind runs, in place (same inode), same size, with the
# mtime put back (cp -p / rsync -t / tar x style): restore's "unchanged since
# the capture" test (worktree/restore.go: size, mtime and inode against the
# stat cache's recorded stat; ctime not compared) passes, so the file is
# replaced without comparing its content, and the edit is in no checkpoint
# (not on disk, not in the rewind's safety checkpoint; only a copy in
# .snap/trash/ until the next gc). Pre-existing (f45e52d), not today's change.
# Usage: 03-rewind-overwrites-edit-keeping-mtime.sh /path/to/snap [rounds]
# (exit 1: defect present; racy by nature, 4 rounds of 60 edits each)
S=$(realpath "$1"); N=${2:-4}
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; mkdir -p $T/p; cd $T/p
$S init >/dev/null
gen() { python3 -c "
import os
for d in range(40):
    os.makedirs(f'd{d:02d}',exist_ok=True)
    for f in range(100): open(f'd{d:02d}/f{f:03d}','w').write('v$1 file %02d %03d ' % (d,f) + 'x'*2000 + '\n')"; }
gen 1; $S checkpoint -m v1 >/dev/null; sleep 0.06; gen 2; $S checkpoint -m v2 >/dev/null; sleep 0.1
lost=0
for i in $(seq 1 $N); do
  tgt=v$(( (i%2)+1 )); [ $((i%2)) = 1 ] && tgt=v1 || tgt=v2
  $S rewind --json msg:$tgt > $T/rw.json 2>$T/rw.err &
  R=$!
  python3 - $i > $T/edits <<'PY'
import os, sys, time, random
i=int(sys.argv[1]); random.seed(i)
time.sleep(0.03*random.random())
for k in range(60):
    d=random.randrange(40); f=random.randrange(100); p=f'd{d:02d}/f{f:03d}'
    try:
        st=os.stat(p); fd=os.open(p, os.O_WRONLY)
        os.pwrite(fd, b'E%03d%03d' % (i,k), 20); os.close(fd)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        print(p, 'E%03d%03d' % (i,k))
    except FileNotFoundError: pass
    time.sleep(0.002)
PY
  wait $R
  safety=$(python3 -c 'import json;print(json.load(open("'$T/rw.json'")).get("safety_checkpoint",""))' 2>/dev/null)
  while read p m; do
    grep -q "$m" $p && continue
    [ -n "$safety" ] && $S cat "$safety:$p" 2>/dev/null | grep -q "$m" && continue
    # a later edit of the same file may have overwritten the marker region: only the last edit per file counts
    last=$(grep "^$p " $T/edits | tail -1 | cut -d' ' -f2); [ "$last" = "$m" ] || continue
    echo "round $i: edit $m of $p lost (not on disk, not in safety $safety)"; lost=1
  done < $T/edits
  sleep 0.1
done
exit $lost
