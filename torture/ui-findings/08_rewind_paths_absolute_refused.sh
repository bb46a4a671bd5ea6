#!/bin/bash
# U8: the rewind dialog's "Only these paths" refuses an absolute path (what
# editors, agents and `pwd` show) with "no such path", which
# `snap rewind --path /abs/path` accepts.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null
echo v1 > a.txt; "$SNAP" checkpoint >/dev/null; echo v2 > a.txt; "$SNAP" checkpoint >/dev/null
echo "CLI: $("$SNAP" rewind '#1' --path "$T/p/a.txt" --dry-run 2>&1 | tail -1)"
start_ui "$T/p"
r=$(post rewind "{\"target\":\"#1\",\"paths\":[\"$T/p/a.txt\"],\"dry_run\":true}")
echo "UI:  $r"
if echo "$r" | grep -q no_path; then echo "BUG: the UI refuses the absolute path the CLI accepts"; else echo OK; fi
