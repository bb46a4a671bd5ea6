#!/usr/bin/env bash
# A write through a shared mmap raises no inotify event (IN_MODIFY comes from
# write(2) and friends only), though it changes the file's content and mtime:
# a full scan sees the change, a monitored checkpoint keeps the old content.
# (Editors, databases such as SQLite/LMDB in the project, and compilers that
# mmap their outputs write this way.)
. "$(dirname "$0")/lib.sh"
snapc init >/dev/null
mkdir -p a; echo original > a/f
start_watch
ck >/dev/null; [ "$(ck)" = monitored ] || { echo "no monitored checkpoint" >&2; exit 2; }
python3 - a/f <<'PY'
import mmap, sys
with open(sys.argv[1], 'r+b') as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:7] = b'CHANGED'
    m.flush(); m.close()
PY
echo "a/f now: $(cat a/f); checkpoint: $(ck)"
verify
