#!/usr/bin/env bash
# agent-workflow.sh — an agent working *through* snap: nested tasks, staged
# edits chosen among candidates (A/B/C), an atomic multi-file commit, a task
# reverted with a reason and brought back by undo, a compacted conversation,
# an API-call context restored for a retry, and one checkpoint's change
# reverted while later edits stay. Every step checks its outcome; the script
# exits non-zero at the first surprise. Usage: scripts/agent-workflow.sh
# [path/to/snap] (default bin/snap). Runs in a temporary directory.
set -euo pipefail

bin=${1:-bin/snap}
if [[ ! -x $bin ]]; then
	echo "agent-workflow: $bin is not an executable; build it first: go build -o bin/snap ./cmd/snap" >&2
	exit 1
fi
SNAP=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
unset SNAP_SESSION SNAP_STORE
export SNAP_NO_AUTO_GC=1

work=$(mktemp -d "${TMPDIR:-/tmp}/snap-workflow.XXXXXX")
trap 'rc=$?; [[ $rc == 0 ]] || echo "agent-workflow: failed (exit $rc); work dir kept: $work" >&2; [[ $rc != 0 ]] || rm -rf "$work"' EXIT
project=$work/project
chat=$work/chat.jsonl
mkdir -p "$project/y"
cd "$project"

snap() { "$SNAP" "$@"; }
step() { printf '\n==> %s\n' "$*"; }
run() { printf '$ snap %s\n' "$*"; snap "$@"; }
fail() { echo "agent-workflow: FAILED: $*" >&2; exit 1; }
expect() { # expect FILE CONTENT
	[[ "$(cat "$1")" == "$2" ]] || fail "$1 holds $(printf %q "$(cat "$1" 2>/dev/null)"), want $(printf %q "$2")"
}
say() { # say ROLE TEXT: the agent's transcript grows
	printf '{"type":"%s","message":{"role":"%s","content":"%s"}}\n' "$1" "$1" "$2" >>"$chat"
}
jsonfield() { # jsonfield KEY < json: the first string or number value of KEY
	grep -o "\"$1\": *\"\?[^\",}]*" | head -1 | sed 's/.*: *"\{0,1\}//'
}

printf '# service configuration\n\nserver:\n  timeout: 30\nclient:\n  timeout: 30\ndb:\n  timeout: 30\n' >config.yaml
printf 'package main\n\nfunc main() {}\n' >main.go
say user "add module Y"

step "a baseline checkpoint, the transcript recorded as the conversation"
run init
run checkpoint --conversation "$chat" --summary baseline

step "a nested task: 'add module Y' -> 'check dependency versions'"
run task begin "add module Y"
say assistant "starting module Y; first the dependencies"
run task begin "check dependency versions"
run edit write deps.txt --content "yaml v3.0.1"
say assistant "pinned yaml to v3.0.1"
run task commit "dependencies pinned"        # commits the staged edit with the task
expect deps.txt "yaml v3.0.1"

step "three 'timeout: 30' lines changed one by one through the candidates"
out=$(run edit replace config.yaml --old 'timeout: 30' --new 'timeout: 60')
echo "$out"
grep -q 'occurs 3 times' <<<"$out" || fail "no needs_match answer"
for letter in A B C; do
	run edit replace config.yaml --old 'timeout: 30' --new 'timeout: 60' --match "$letter"
done
grep -q 'timeout: 30' config.yaml || fail "a staged edit touched the file before the commit"

step "a second file, then one atomic commit of both"
run edit write y/module.go --content "package y"
run edit preview --mode stats
run edit commit "module Y: code and timeouts"
expect y/module.go "package y"
[[ $(grep -c 'timeout: 60' config.yaml) == 3 ]] || fail "not every timeout changed"
say assistant "module Y written, timeouts raised"

step "a risky attempt, reverted with a reason, then brought back by undo"
run task begin "rewrite main.go"
printf 'package main // rewritten, broken\n' >main.go
run checkpoint --summary "the rewrite"
run task revert "the rewrite breaks the build"
expect main.go $'package main\n\nfunc main() {}'
run undo
expect main.go "package main // rewritten, broken"
run task --json | grep -q '"current": 3' || fail "the undo did not reopen task 3"
run task revert "the rewrite breaks the build"   # and abandon it for good
run task commit "module Y added"
run task

step "the conversation compacted: each finished task's messages become one summary"
say user "thanks"
run checkpoint --summary "after module Y"
out=$(run conversation --compact --json)
removed=$(jsonfield messages_removed <<<"$out")
[[ $removed -ge 1 ]] || fail "compaction removed no message: $out"
echo "messages removed: $removed, tokens saved: $(jsonfield tokens_saved <<<"$out")"
run conversation --compact --raw >"$work/compacted.jsonl"
grep -q 'snap: task #1' "$work/compacted.jsonl" || fail "the raw compacted transcript lacks the summary"

step "an API-call context saved before the call, restored for a retry"
printf '{"config":{"model":"m1","temperature":0.2},"messages":[],"call":{"attempt":1}}\n' >"$work/context.json"
run checkpoint --kind pre-call --state context="$work/context.json"
printf '{"config":{"model":"m1","temperature":0.9},"messages":[],"call":{"attempt":2}}\n' >"$work/context.json"
run checkpoint --summary "the call failed"
precall=$(snap log --kind pre-call --json | jsonfield id)
run rewind "$precall" --state context
grep -q '"attempt":1' "$work/context.json" || fail "the context was not restored"
expect y/module.go "package y"

step "one checkpoint's change reverted while later edits stay"
sed -i 's/^# service configuration$/# service configuration, reviewed/' config.yaml
run checkpoint --summary "a later edit"
commit=$(snap log --kind edit-commit --json | jsonfield id)
run revert "$commit"
[[ $(grep -c 'timeout: 30' config.yaml) == 3 ]] || fail "the timeouts were not reverted"
grep -q '^# service configuration, reviewed$' config.yaml || fail "the later edit was lost"
[[ ! -e y/module.go ]] || fail "the module file the commit created is still there"

step "the whole history"
run log -n 12
echo
echo "agent-workflow: every step behaved as promised"
