#!/usr/bin/env bash
# A11: `snap help`'s "A typical session", typed as written in a new project,
# fails at its second line (transcript.jsonl does not exist: exit 2), then
# `snap diff '#1' '#2'` fails (exit 4: only one checkpoint). The README's
# block was fixed today (it makes its own transcript); the help was not.
# `snap help` also lists exit codes without 130 (interrupted), which the
# README now documents; `snap help checkpoint`'s example has the same problem
# (session.jsonl).
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
$SNAP help | sed -n '/A typical session/,/snap undo/p' | grep -E '^\s+snap ' | sed 's/^ *//' > session.sh
cat session.sh | sed 's/^/  script: /'
while read -r line; do echo "\$ $line"; eval "${line/snap /$SNAP }" >/dev/null 2>err; rc=$?; echo "  exit $rc $(cat err)"; done < session.sh
echo "== exit codes in 'snap help':"; $SNAP help | grep -A1 'Exit codes'
