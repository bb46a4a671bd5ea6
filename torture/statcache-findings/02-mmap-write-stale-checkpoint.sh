#!/bin/bash
# A file written through a shared mmap: Linux updates mtime/ctime only when a
# clean page is first written (page_mkwrite). A second write to a page that
# is still dirty moves no timestamp, so the file's stat is the one the stat
# cache recorded with the first write's content: every later checkpoint
# trusts the cache and records the stale content, `snap status` says
# "nothing changed", and a rewind replaces the file without comparing its
# content (restore's "unchanged" test trusts the same cache entry): the
# second write is in no checkpoint and is gone. The full scan that the watch
# help promises for mmap writes does not help: it uses the same cache.
# Usage: 02-mmap-write-stale-checkpoint.sh /path/to/snap   (exit 1: defect present)
set -u
S=$(realpath "$1")
export SNAP_NO_AUTO_GC=1
# (A sync(1) or writeback by anything else on the machine between the two
# writes cleans the page and the second write then moves the times: the
# attempt is repeated up to 5 times.)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for attempt in 1 2 3 4 5; do
cd "$T" && rm -rf p && mkdir p && cd p
"$S" init >/dev/null
head -c 8192 /dev/zero | tr '\0' 'x' > data.bin
echo other > other
sync data.bin; sleep 0.1
"$S" checkpoint -m c0 >/dev/null || exit 2
python3 - "$S" <<'PY' || exit 2
import mmap, os, subprocess, sys, time
S = sys.argv[1]
fd = os.open("data.bin", os.O_RDWR)
m = mmap.mmap(fd, 8192)
m[0:5] = b"AAAAA"                 # first write to a clean page: times move
time.sleep(0.2)
subprocess.run([S, "checkpoint", "-m", "c1"], check=True, capture_output=True)
m[0:5] = b"BBBBB"                 # the page is still dirty: no time moves
m.flush()                         # msync: on disk now, times still unchanged
m.close(); os.close(fd)
time.sleep(0.2)
subprocess.run([S, "checkpoint", "-m", "c2"], check=True, capture_output=True)
PY
disk=$(head -c 5 data.bin)
rec=$("$S" cat :data.bin | head -c 5)
echo "on disk: $disk   recorded by the last checkpoint: $rec"
status=$("$S" status | tail -1)
echo "status: $status"
"$S" rewind '#1' >/dev/null 2>&1          # back to c0 ("xxxxx"); the safety checkpoint should hold BBBBB
found=0
for i in $(seq 1 6); do "$S" cat "#$i:data.bin" 2>/dev/null | head -c 5 | grep -q BBBBB && found=1; done
echo "after rewind: disk=$(head -c 5 data.bin); BBBBB in some checkpoint: $found"
if [ "$disk" != "$rec" ] || [ $found = 0 ]; then echo "DEFECT: stale content recorded for an mmap-written file"; exit 1; fi
done
echo ok; exit 0
