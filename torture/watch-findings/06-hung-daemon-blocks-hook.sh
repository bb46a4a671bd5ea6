#!/usr/bin/env bash
# With watch.auto on, a hung daemon (SIGSTOP, or one stuck in a long walk)
# makes every hook and checkpoint wait ~2.5 s: the query's 500 ms bound, then
# autoWatch's WatchStatus (2 s timeout) to decide whether to start one.
# Expected: a checkpoint within about a second; the daemon never blocks a hook.
. "$(dirname "$0")/lib.sh"
snapc init >/dev/null
snapc config watch.auto true >/dev/null
mkdir -p a; echo x > a/f
hook() { printf '{"session_id":"s1","cwd":"%s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_%s","tool_input":{"command":"echo hi > a/f"},"tool_response":{}}' "$P" "$1" | (cd "$P" && "$SNAP" hook claude-code); }
hook 1
for i in $(seq 50); do snapc watch --status --json 2>/dev/null | jq -e .running >/dev/null && break; sleep 0.1; done
pid=$(snapc watch --status --json | jq -r .daemon.pid)
[ "$pid" -gt 0 ] 2>/dev/null || { echo "watch.auto started no daemon" >&2; exit 2; }
hook 2
kill -STOP "$pid"
trap 'kill -CONT '"$pid"'; cleanup' EXIT
echo y > a/f
s=$(date +%s%N); hook 3; e=$(date +%s%N)
ms=$(( (e - s) / 1000000 ))
echo "hook with a hung daemon: ${ms} ms"
s=$(date +%s%N); snapc checkpoint >/dev/null; e=$(date +%s%N)
ms2=$(( (e - s) / 1000000 ))
echo "checkpoint with a hung daemon: ${ms2} ms"
if [ "$ms" -gt 1500 ] || [ "$ms2" -gt 1500 ]; then echo "BUG: a hung daemon blocks the hook / checkpoint for over 1.5 s"; exit 1; fi
echo ok
