#!/usr/bin/env bash
# A3: the checkpoint recorded as a scoped rewind's end shows a wrong tree size
# ("tree 2 files, 0 B"; --json "bytes": 0).
SNAP=${SNAP:-/tmp/snapbin/snap}; export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
printf 'aaaaaaaaaa\n' > a.txt
"$SNAP" -s A checkpoint -m base >/dev/null
echo A1 > a.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null
printf 'bbbbbbbbbbbbbbbbbbbb\n' > b.txt; "$SNAP" -s B checkpoint >/dev/null
"$SNAP" -s A rewind '#1' >/dev/null
"$SNAP" -s A show @ | sed -n '1,8p'
"$SNAP" -s A show @ --json | grep -E '"(files|bytes)"'
echo "--- compare: the target #1 and the on-disk size ($(cat a.txt b.txt | wc -c) B):"
"$SNAP" -s A show '#1' | grep '^tree'
