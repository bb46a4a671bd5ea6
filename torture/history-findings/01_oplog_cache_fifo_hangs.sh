#!/bin/sh
# A FIFO at .snap/oplog.cache makes every history read (snap log) block
# forever in open(2)/read(2) of the "disposable" cache; SIGTERM does not
# end it (only SIGKILL). Expected: the cache is ignored (not a regular
# file) and snap log prints the history as it does with no cache.
SNAP=${SNAP:-/tmp/adv-snap}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cd "$d" || exit 2
"$SNAP" init >/dev/null 2>&1 || exit 2
for i in 1 2 3; do echo $i > f$i; "$SNAP" checkpoint -m m$i >/dev/null 2>&1 || exit 2; done
rm -f .snap/oplog.cache; mkfifo .snap/oplog.cache
timeout -s KILL 10 "$SNAP" log -n 2 >/dev/null 2>&1
rc=$?
if [ $rc -eq 137 ]; then echo "BUG: snap log hung on a FIFO oplog.cache (killed after 10s)"; exit 1; fi
echo "ok (rc=$rc)"; exit 0
