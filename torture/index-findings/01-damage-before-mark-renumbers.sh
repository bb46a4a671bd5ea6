#!/bin/bash
# 01: a record damaged in place before an index's mark is still counted by
# the index, but not by a read of the whole log: what '#N' names (and what
# 'snap log', 'snap sessions' say) then depends on whether the "disposable"
# cache/sessions/ file exists. Deleting the cache renumbers the session.
# The old engine (0858ba9) skips the damaged record everywhere.
# Exit 1 while '#2' / 'snap log' differ with and without the index file.
SNAP=${1:-/work/main/bin/snap}
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" && mkdir p && cd p
"$SNAP" init >/dev/null || exit 2
for i in 1 2 3; do echo $i > a; "$SNAP" checkpoint -m m$i --summary s$i >/dev/null || exit 2; done
"$SNAP" log >/dev/null                      # writes the session's index
ls .snap/cache/sessions/* >/dev/null 2>&1 || { echo "no index written"; exit 0; }
# flip one bit inside record 2 (the checkpoint m2), as disk damage would
python3 - <<'PY'
p = '.snap/oplog'
b = bytearray(open(p, 'rb').read())
off = b.index(b'\n') + 1 + 20       # inside record 2's "time" value
b[off] ^= 1
open(p, 'wb').write(b)
PY
with=$("$SNAP" show --json '#2' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
withlog=$("$SNAP" log | awk '{print $1, $2}')
cp -a . ../q && rm -rf ../q/.snap/cache/sessions
without=$("$SNAP" -C ../q show --json '#2' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
withoutlog=$("$SNAP" -C ../q log | awk '{print $1, $2}')
echo "with the index:    #2 = $with"; echo "$withlog" | sed 's/^/    /'
echo "without the index: #2 = $without"; echo "$withoutlog" | sed 's/^/    /'
if [ "$with" != "$without" ] || [ "$withlog" != "$withoutlog" ]; then
  echo "DEFECT: numbering depends on the presence of cache/sessions/ after in-place damage"
  exit 1
fi
echo ok; exit 0
