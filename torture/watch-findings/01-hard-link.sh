#!/usr/bin/env bash
# A file with two names (a hard link) changed through the other name: inotify
# tells only the directory of the name written through, so a monitored
# checkpoint keeps the other name's old content. Covers a second name inside
# the project, one outside it, and a file bind-mounted in from outside.
. "$(dirname "$0")/lib.sh"
snapc init >/dev/null
mkdir -p a b c "$T/outside"
echo original > a/f; ln a/f b/f               # two names inside the project
echo original > c/g; ln c/g "$T/outside/g"    # one name outside
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
echo "changed through a/f" > a/f
echo "changed from outside" > "$T/outside/g"
echo "checkpoint: $(ck)"
verify
