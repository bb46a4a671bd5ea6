#!/usr/bin/env bash
# One directory reachable at two paths of the project (a bind mount): inotify
# gives both the same watch descriptor, fsnotify keeps one path for it, so
# changes show up under one path only and the other keeps its old content in
# a monitored checkpoint. (Needs root.)
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (mount)"; exit 0; }
snapc init >/dev/null
mkdir -p a b; echo x > a/f
mount --bind a b || exit 3
trap 'umount "$P/b"; cleanup' EXIT
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
echo y > a/f
echo "checkpoint: $(ck)"
verify
