#!/bin/bash
# Finding 03: after a pack is lost (deleted, or unindexable) while a later
# pack still holds a directory's tree, the content of an unchanged file is
# no longer read again from the working tree: a capture finds the tree
# stored and trusts the stat cache. Before d8b7a34 the next checkpoint asked
# the store for each cached id, re-read d/f and so re-stored its blob,
# which also repaired every older checkpoint naming it (fsck went back to
# one error, the lost checkpoint itself). Now every new checkpoint, and a
# rewind's safety capture, names the missing blob; rewind --all + undo
# loses the file.
#
# Usage: 03-lost-pack-content-not-reread.sh /path/to/snap
# Exit: 0 = defect absent, 1 = defect present, 2 = could not set up.
set -u
S=$(readlink -f "$1")
export SNAP_NO_AUTO_GC=1
ROOT=$(mktemp -d); trap 'rm -rf "$ROOT"' EXIT
cd "$ROOT"
"$S" init >/dev/null || exit 2
echo x > x.txt
"$S" checkpoint -m m1 >/dev/null || exit 2
mkdir d; echo "precious" > d/f; echo g1 > d/g
sleep 1.1
"$S" checkpoint -m m2 >/dev/null || exit 2     # pack P2: blob of d/f, tree d v1, checkpoint m2
P2=$(ls -t .snap/packs | head -1)
sleep 1.1
echo g2 > d/g
"$S" checkpoint -m m3 >/dev/null || exit 2     # pack P3: tree d v2 naming d/f's blob
rm ".snap/packs/$P2"                            # the damage: one pack lost
echo "after losing a pack:"; "$S" fsck 2>&1 | grep -c '^error' | sed 's/^/errors: /'
echo y > x.txt
"$S" checkpoint -m m4 >/dev/null; echo "checkpoint m4 rc=$?"
echo "after m4:"; "$S" fsck 2>&1 | grep '^error'
defect=0
if "$S" fsck 2>&1 | grep -q 'missing content.*"d/f"'; then echo "DEFECT: d/f's content is still missing after a capture of the intact working tree"; defect=1; fi
if ! cmp -s <("$S" cat @:d/f 2>/dev/null) d/f; then echo "DEFECT: snap cat @:d/f (checkpoint m4) does not give d/f back"; defect=1; fi
"$S" rewind --all '#1' >/dev/null 2>&1
"$S" undo >/dev/null 2>&1
if [ "$(cat d/f 2>/dev/null)" != "precious" ]; then echo "DEFECT: rewind --all + undo lost d/f"; defect=1; fi
[ $defect = 0 ] && echo "held"
exit $defect
