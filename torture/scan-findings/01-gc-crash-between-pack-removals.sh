#!/bin/bash
# Finding 01: a gc killed between removing two dead packs leaves a tree
# whose content is gone; fsck says "ok", and the next capture trusts the
# stat cache (d8b7a34: no per-file Has when the directory's tree is stored)
# and records a checkpoint naming the missing blob. A rewind --all then
# deletes the file and `snap undo` cannot bring it back.
#
# Usage: 01-gc-crash-between-pack-removals.sh /path/to/snap
# Exit: 0 = defect absent, 1 = defect present, 2 = could not set up.
# Needs strace (the kill is injected at the unlink of one pack: SIGKILL
# with the unlink skipped, i.e. the process dies right before it).
set -u
S=$(readlink -f "$1")
command -v strace >/dev/null || { echo "needs strace" >&2; exit 2; }
export SNAP_NO_AUTO_GC=1
ROOT=$(mktemp -d); trap 'rm -rf "$ROOT"' EXIT
ok=
for try in $(seq 1 12); do
  W=$ROOT/p$try; mkdir -p "$W"; cd "$W"
  "$S" init >/dev/null || exit 2
  echo x > x.txt
  "$S" -s keep checkpoint -m m0 >/dev/null || exit 2        # a session that stays
  mkdir d; echo "precious $try" > d/f; echo g1 > d/g
  "$S" -s s1 checkpoint -m m1 >/dev/null || exit 2          # pack A: blob of d/f, tree d v1
  A=$(ls -t .snap/packs | head -1)
  sleep 1.1
  echo g2 > d/g
  "$S" -s s1 checkpoint -m m2 >/dev/null || exit 2          # pack B: tree d v2 (names d/f's blob), blob g2
  B=$(ls -t .snap/packs | head -1)
  # gc removes dead packs in name order: we need A removed before B.
  [[ "$A" < "$B" ]] || continue
  touch -d '3 hours ago' .snap/packs/*                      # time passes: every pack is past the grace period
  "$S" session rm s1 >/dev/null || exit 2                   # s1's checkpoints become garbage
  strace -f -qq -o /dev/null -P "$W/.snap/packs/$B" -e trace=unlinkat \
    -e inject=unlinkat:error=EIO:signal=SIGKILL \
    "$S" gc --keep-last 0 --keep-within 0s >/dev/null 2>&1
  [ -e ".snap/packs/$B" ] && [ ! -e ".snap/packs/$A" ] || { echo "kill did not land between the removals" >&2; exit 2; }
  ok=1; break
done
[ -n "$ok" ] || { echo "could not get the pack order" >&2; exit 2; }
echo "after the killed gc:"; "$S" fsck; echo "fsck rc=$?"
# The working tree still has d/f and d/g as captured at m2 (stat cache hits).
"$S" -s keep rewind --all '#1' >/dev/null; echo "rewind rc=$? (its safety capture records d/)"
"$S" -s keep undo >/dev/null; echo "undo rc=$?"
defect=0
if ! "$S" fsck >/dev/null 2>&1; then echo "DEFECT: fsck fails after a capture"; "$S" fsck 2>&1 | grep error; defect=1; fi
if [ "$(cat d/f 2>/dev/null)" != "precious $try" ]; then echo "DEFECT: d/f lost (only a nameless copy in .snap/trash remains)"; defect=1; fi
[ $defect = 0 ] && echo "held"
exit $defect
