#!/usr/bin/env bash
# The project's store lives outside it (--store). A directory above the
# project is renamed away and another tree put at the same path: no event
# reaches the daemon (its watches follow the old inodes), which notices only
# on its next 2 s tick. A checkpoint in that window builds on the old tree.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/x/proj"; P=$T/x/proj; cd "$P"
snapc() { "$SNAP" -C "$P" --store "$T/store" "$@"; }
snapc init >/dev/null
mkdir -p a; echo original > a/f
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
mv "$T/x" "$T/x.old"; cp -a "$T/x.old" "$T/x"     # e.g. a re-clone / restore from backup
echo "new content" > "$P/a/f"
echo "checkpoint: $(ck)"
verify
