# Sourced by the ui-findings scripts: SNAP, a temp dir, start_ui, drive, cleanup.
set -u
SNAP=${SNAP:-/tmp/adv/snap}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d /tmp/uifind.XXXXXX)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
# start_ui DIR: serve DIR's store; sets URL BASE TOKEN UI_PID UI_ERR.
start_ui() {
  local f=$T/url.$RANDOM
  ( cd "$1" && exec "$SNAP" ui --url-file "$f" >/dev/null 2>"$f.err" ) &
  UI_PID=$!; PIDS="$PIDS $UI_PID"; UI_ERR=$f.err
  for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done
  URL=$(cat "$f"); BASE=${URL%%/\?*}; TOKEN=${URL##*token=}
}
api() { curl -s -H "X-Snap-Token: $TOKEN" "$BASE/api/$1"; }
post() { curl -s -H "X-Snap-Token: $TOKEN" -H "Origin: $BASE" -H "Content-Type: application/json" -d "$2" "$BASE/api/$1"; }
# drive: headless Chromium reading drive.go's commands on stdin.
drive() {
  [ -x "$T/drive" ] || (cd "$REPO" && go build -o "$T/drive" torture/ui-findings/drive.go) || exit 2
  "$T/drive"
}
