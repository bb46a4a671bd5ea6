#!/bin/bash
# 01: 'snap mcp' started in a project with no store makes one
# (agent.OpenProject -> snap.Init) without Options.LongRunning, so the
# long-running MCP server keeps its session indexes (Repo.kept) and checks
# the op log's bytes before a mark only once (refs.Store.RememberMarks).
# A record damaged in place after the server first listed the session is
# then never noticed by the server: its 'log' tool keeps listing the
# damaged record's checkpoint, while a fresh 'snap log' (and an MCP server
# started on the existing store, which runs LongRunning) skips it.
# Exit 1 while the server's answer differs from the fresh command's.
SNAP=${1:-/work/main/bin/snap}
HERE=$(cd "$(dirname "$0")" && pwd)
export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); trap 'exec {MIN}>&- 2>/dev/null; rm -rf "$T"' EXIT

run_case() { # $1: "new" (mcp makes the store) or "existing"
  local P="$T/$1"; mkdir -p "$P"; cd "$P" && git init -q || return 2
  [ "$1" = existing ] && { "$SNAP" init >/dev/null || return 2; }
  mkfifo "$T/in.$1" "$T/out.$1"
  python3 "$HERE/mcp_log_client.py" "$SNAP" "$P" <"$T/in.$1" >"$T/out.$1" 2>&1 &
  exec {MIN}>"$T/in.$1"; exec {MOUT}<"$T/out.$1"
  read -t 20 -u $MOUT l; [ "$l" = READY ] || { echo "mcp did not start: $l"; return 2; }
  [ -d .snap ] || return 2
  for i in 1 2 3; do echo $i > a; "$SNAP" checkpoint -m m$i >/dev/null || return 2; done
  echo log >&$MIN; read -t 20 -u $MOUT before
  echo log >&$MIN; read -t 20 -u $MOUT before   # (a second read: OpsAfter checks the mark and remembers it)
  python3 - <<'PY'
p = '.snap/oplog'
b = bytearray(open(p, 'rb').read())
# flip one bit inside the 'time' of the second-to-last checkpoint record
ends = [i for i, c in enumerate(b) if c == 10]
off = ends[-3] + 1 + 20
b[off] ^= 1
open(p, 'wb').write(b)
PY
  echo log >&$MIN; read -t 20 -u $MOUT after
  exec {MIN}>&- {MOUT}<&-; wait
  fresh="LOG $("$SNAP" log --json | python3 -c 'import json,sys; print(" ".join(c["id"][:12] for c in json.load(sys.stdin)["checkpoints"]))')"
  echo "[$1 store] mcp before damage: $before"
  echo "[$1 store] mcp after damage:  $after"
  echo "[$1 store] fresh snap log:    $fresh"
  [ "$after" = "$fresh" ]
}
run_case existing; rc1=$?
run_case new; rc2=$?
[ $rc1 = 2 -o $rc2 = 2 ] && exit 2
if [ $rc2 != 0 ]; then
  echo "DEFECT: the MCP server that made the store answers from what it kept (not LongRunning); a fresh command answers otherwise"
  exit 1
fi
echo ok; exit 0
