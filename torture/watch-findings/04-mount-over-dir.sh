#!/usr/bin/env bash
# A file system mounted over a directory of the project after the daemon
# watched it: mount(2) raises no inotify event, the daemon's watch stays on
# the covered directory, and a monitored checkpoint records the covered
# directory's files instead of what is now visible there. (Needs root.)
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (mount)"; exit 0; }
snapc init >/dev/null
mkdir -p a/sub "$T/other"; echo original > a/sub/f; echo other > "$T/other/f"; echo other2 > "$T/other/g"
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
mount --bind "$T/other" a/sub || exit 3
trap 'umount "$P/a/sub"; cleanup' EXIT
echo "checkpoint: $(ck)"
verify
