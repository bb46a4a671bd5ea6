# Shared helpers for the watch-findings repros. Source it: . "$(dirname "$0")/lib.sh"
# SNAP: the binary under test (default /tmp/snapw).
set -u
SNAP=${SNAP:-/tmp/snapw}
T=$(mktemp -d /tmp/snapwatch.XXXXXX)
P=$T/proj
mkdir -p "$P"
cd "$P"
export SNAP_SESSION=default
cleanup() {
	cd /
	"$SNAP" -C "$P" watch --stop >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
snapc() { "$SNAP" -C "$P" "$@"; }
# ck: a checkpoint; prints "monitored" or "full"
ck() {
	local out
	out=$(snapc checkpoint --allow-empty --json "$@") || { echo "checkpoint failed" >&2; return 1; }
	if [ "$(echo "$out" | jq -r '.monitored // false')" = true ]; then echo monitored; else echo full; fi
}
tree() { snapc show "${1:-@}" --json | jq -r .tree; }
start_watch() { snapc watch >/dev/null || { echo "watch failed to start" >&2; exit 2; }; }
stop_watch() { snapc watch --stop >/dev/null 2>&1 || true; }
# verify: stop the daemon, take a full-scan checkpoint, compare its tree with the previous one's.
# Exits 1 (the bug) when they differ.
verify() {
	stop_watch
	local m f
	m=$(tree @)
	[ "$(ck)" = full ] || { echo "the verifying checkpoint was not a full scan" >&2; exit 2; }
	f=$(tree @)
	if [ "$m" != "$f" ]; then
		echo "BUG: the monitored checkpoint's tree differs from a full scan's:"
		snapc diff @~1 @ --stat
		exit 1
	fi
	echo "ok: monitored tree = full scan"
}
