#!/bin/bash
# Finding 02: a store gc'd by a snap from before d8b7a34 (whose gc did not
# keep what young trees name) can hold a young unreachable tree whose old
# blob was swept. fsck says "ok" (nothing reachable is missing). The new
# capture finds that tree stored, trusts the stat cache, and records a
# checkpoint naming the missing blob; a rewind --all + undo loses the file.
# Nothing marks or migrates such stores.
#
# Usage: 02-store-gcd-by-older-snap.sh /path/to/snap [/path/to/old-snap]
#   old-snap: a snap built from d8b7a34~1 (or $OLD_SNAP); when absent the
#   script builds one from `git archive d8b7a34~1` of the repository it
#   lives in (needs go).
# Exit: 0 = defect absent, 1 = defect present, 2 = could not set up.
set -u
S=$(readlink -f "$1")
OLD=${2:-${OLD_SNAP:-}}
ROOT=$(mktemp -d); trap 'rm -rf "$ROOT"' EXIT
if [ -z "$OLD" ]; then
  REPO=$(git -C "$(dirname "$(readlink -f "$0")")" rev-parse --show-toplevel) || exit 2
  mkdir "$ROOT/src" && git -C "$REPO" archive d8b7a34~1 | tar -x -C "$ROOT/src" || exit 2
  (cd "$ROOT/src" && go build -tags urfave_cli_no_docs,netgo,osusergo -o "$ROOT/snap-old" ./cmd/snap) || exit 2
  OLD=$ROOT/snap-old
fi
OLD=$(readlink -f "$OLD")
export SNAP_NO_AUTO_GC=1
W=$ROOT/p; mkdir "$W"; cd "$W"
# --- history written and gc'd by the old snap
"$OLD" init >/dev/null || exit 2
echo x > x.txt
"$OLD" -s keep checkpoint -m m0 >/dev/null || exit 2
mkdir d; echo "precious" > d/f; echo g1 > d/g
"$OLD" -s s1 checkpoint -m m1 >/dev/null || exit 2   # blob of d/f
touch -d '3 hours ago' .snap/packs/*                  # time passes: that pack is past the 1h grace
sleep 1.1
echo g2 > d/g
"$OLD" -s s1 checkpoint -m m2 >/dev/null || exit 2   # young pack: tree of d naming d/f's blob
"$OLD" session rm s1 >/dev/null || exit 2
"$OLD" gc --keep-last 0 --keep-within 0s >/dev/null || exit 2   # old gc: sweeps the old pack, keeps the young one whole
echo "store as the old snap left it:"; "$S" fsck; echo "fsck rc=$?"
# --- the new snap takes over
"$S" -s keep rewind --all '#1' >/dev/null; echo "rewind rc=$?"
"$S" -s keep undo >/dev/null; echo "undo rc=$?"
defect=0
if ! "$S" fsck >/dev/null 2>&1; then echo "DEFECT: fsck fails after a capture"; "$S" fsck 2>&1 | grep error; defect=1; fi
if [ "$(cat d/f 2>/dev/null)" != "precious" ]; then echo "DEFECT: d/f lost (only a nameless copy in .snap/trash remains)"; defect=1; fi
[ $defect = 0 ] && echo "held"
exit $defect
