#!/bin/bash
# 04: a snap-full that is not the matching complete snap is run blindly
#
# execFull checks only that the file exists and that it is not a core build
# (the SNAP_FULL_RUN_BY_CORE mark, which only a core build reacts to). Any
# other executable is exec'd as is: a stale snap-full from an earlier version
# (bin/snap upgraded, snap-full not), a half-copied one, or an unrelated
# program. The promise is that the core build "fails clearly when snap-full
# is missing or wrong".
# Expected: exit != 0 with a message naming snap-full (as for a missing one,
#   a directory, or a core build).
# Actual: with SNAP_FULL naming an executable that is not snap (here a script
#   standing in for a stale or foreign snap-full), `snap --json trace export` exits 0
#   and prints nothing; a truncated copy of snap-full dies with SIGSEGV
#   (exit 139), no error document.
# Usage: 04-wrong-snap-full-not-detected.sh /path/to/core/snap
set -u
SNAP=$(realpath "$1"); FULL=$(dirname "$SNAP")/snap-full
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export HOME=$T/home; mkdir -p "$HOME" "$T/p"; cd "$T/p"
echo a > a.txt; "$FULL" init >/dev/null; "$FULL" checkpoint >/dev/null
printf '#!/bin/sh\nexit 0\n' > "$T/not-snap"; chmod +x "$T/not-snap"
head -c 200000 "$FULL" > "$T/truncated"; chmod +x "$T/truncated"
bad=0
for f in "$T/not-snap" "$T/truncated"; do
  SNAP_FULL=$f "$SNAP" --json trace export >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q 'snap-full\|complete snap' "$T/err"; then
    echo "OK: $(basename "$f"): exit $rc, $(head -c 200 "$T/err")"
  else
    echo "DEFECT: SNAP_FULL=$(basename "$f"): exit $rc, stdout $(wc -c <"$T/out") bytes, stderr: $(head -c 200 "$T/err")"; bad=1
  fi
done
exit $bad
