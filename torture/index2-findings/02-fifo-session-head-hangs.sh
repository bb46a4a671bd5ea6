#!/bin/bash
# 02 (pre-existing: the previous engine 4a10752 does the same): a FIFO
# where a session's head ref should be (.snap/refs/sessions/<s>/head)
# makes every command that reads the head (log, status, show, sessions,
# checkpoint, gc, fsck) block for ever in open(2): storage/fsstore
# ReadRef opens the ref O_RDONLY|O_NOFOLLOW without O_NONBLOCK and checks
# the file's type only after the open returns. SIGTERM does not end it
# (the process catches it and waits); only SIGKILL does. Every other store
# file replaced by a FIFO is refused without blocking ("not a regular file").
# Exit 1 while 'snap log' is still running after 5 seconds.
SNAP=${1:-/work/main/bin/snap}
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" && mkdir p && cd p
"$SNAP" init >/dev/null || exit 2
echo 1 > a; "$SNAP" checkpoint -m m1 >/dev/null || exit 2
h=.snap/refs/sessions/default/head
[ -f $h ] || { echo "no head ref at $h"; exit 2; }
rm $h && mkfifo $h
"$SNAP" log >"$T/out" 2>&1 &
pid=$!
for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then
  kill -TERM $pid; sleep 1
  if kill -0 $pid 2>/dev/null; then term="and SIGTERM did not end it"; kill -KILL $pid; else term="(SIGTERM ended it)"; fi
  wait $pid 2>/dev/null
  echo "DEFECT: 'snap log' blocked for 5 s on a FIFO at $h $term"
  exit 1
fi
wait $pid; echo "snap log returned: $(head -c 300 "$T/out")"
echo ok; exit 0
