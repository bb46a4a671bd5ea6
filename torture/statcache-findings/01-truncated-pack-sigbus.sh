#!/bin/bash
# A pack file truncated in place (a backup restored with `cp -r` over the
# store, rsync --inplace, a full disk on a copy...) while a long-running snap
# process (snap ui here; snap mcp is the same) has its index mmap'd: the next
# lookup touches a page past the new end of file and the process dies of
# SIGBUS ("unexpected fault address", a fatal error, not a recoverable panic).
# Before 6163320 (index read, not mapped) the process answers with an error
# and keeps running.
# Usage: 01-truncated-pack-sigbus.sh /path/to/snap   (exit 1: defect present)
set -u
S=$(realpath "$1")
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); UIPID=; trap '[ -n "$UIPID" ] && kill $UIPID 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" && mkdir p && cd p
"$S" init >/dev/null
for d in $(seq 1 20); do mkdir d$d; for f in $(seq 1 100); do echo "file $d $f" > d$d/f$f; done; done
"$S" checkpoint -m a >/dev/null || exit 2          # one pack, ~2,000 objects: index > 64 KiB
"$S" ui --url-file "$T/url" >"$T/ui.log" 2>&1 & UIPID=$!
for i in $(seq 50); do [ -s "$T/url" ] && break; sleep 0.1; done
U=$(cat "$T/url"); B=${U%%/?token*}; TOK=${U##*token=}
curl -s -o /dev/null "$B/api/status?token=$TOK"       # loads (maps) the pack index
P=$(ls .snap/packs/*.pack)
truncate -s $(( $(stat -c %s "$P") / 2 )) "$P"         # damage in place
echo changed > d1/f1
curl -s -o /dev/null "$B/api/status?token=$TOK"
sleep 0.5
if ! kill -0 $UIPID 2>/dev/null; then
  grep -m3 -E "SIGBUS|fault" "$T/ui.log"
  echo "DEFECT: snap ui died after a pack was truncated under it"; exit 1
fi
echo "ok: snap ui survived"; exit 0
