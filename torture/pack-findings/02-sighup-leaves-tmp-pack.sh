#!/bin/bash
# Finding 02: an export interrupted by SIGHUP (the terminal or ssh session
# closing) leaves its whole temporary pack, objects/pack/tmp_pack_snap_*,
# in the repository, where SIGINT and SIGTERM remove it (context canceled,
# exit 130). A re-export does not remove it; git warns "garbage found" and
# keeps it until 'git prune' finds it two weeks old. No ref names anything
# missing: this is disk litter, not corruption.
# Exit 1 when the bug is present.
SNAP=${SNAP:-/tmp/pf/snap}
W=$(mktemp -d /tmp/pf02.XXXXXX); trap 'rm -rf "$W"' EXIT
mkdir "$W/p" && cd "$W/p" && git init -q . && "$SNAP" init >/dev/null || exit 2
for i in $(seq 1 12); do head -c $((6<<20)) /dev/urandom > big$i; "$SNAP" checkpoint >/dev/null || exit 2; done
try() { # signal -> leftover tmp files
  rm -rf "$W/r.git"; git init -q --bare "$W/r.git"
  "$SNAP" git export --repo "$W/r.git" >/dev/null 2>&1 & pid=$!
  for _ in $(seq 1 500); do ls "$W"/r.git/objects/pack/tmp_pack_snap_* >/dev/null 2>&1 && break; sleep 0.01; done
  sleep 0.2; kill -"$1" $pid; wait $pid; rc=$?
  n=$(ls "$W"/r.git/objects/pack/ | grep -c '^tmp_pack_snap_')
  echo "SIG$1: exit $rc, leftover tmp packs: $n ($(du -sh "$W/r.git/objects/pack" | cut -f1)), refs: $(git -C "$W/r.git" for-each-ref | wc -l)"
  return $n
}
try INT; int=$?
try TERM; term=$?
try HUP; hup=$?
"$SNAP" git export --repo "$W/r.git" >/dev/null || exit 2
echo "after a complete re-export: $(ls "$W"/r.git/objects/pack/ | grep -c '^tmp_pack_snap_') tmp pack(s) left; git count-objects -v says: $(git -C "$W/r.git" count-objects -v 2>&1 | grep -i garbage | tr '\n' ' ')"
[ $hup -eq 0 ]
