#!/usr/bin/env bash
# A7: `snap revert REF --dry-run` predicts success (exit 0, "would revert
# k.log") when the path the revert must write is now ignored and exists on
# disk; the real run then fails on it (exit 3) after changing .gitignore and
# recording a revert. The real run prints nothing on stdout (not even the
# path it did revert), and its checkpoint records k.log with the old content
# while the disk keeps the user's, so `snap status` says "D k.log" for a file
# that is there.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); O=$(mktemp -d); trap 'rm -rf "$T" "$O"' EXIT; cd "$T"
$SNAP init >/dev/null
echo keep > k.log; echo a > a; $SNAP checkpoint -m 1 >/dev/null
rm k.log; echo '*.log' > .gitignore; $SNAP checkpoint -m 2 >/dev/null   # change #2: k.log deleted, .gitignore added
echo PRECIOUS > k.log                                                  # ignored now, never checkpointed
echo "== dry run"; $SNAP revert '#2' --dry-run; echo "exit $?"
$SNAP revert '#2' --dry-run --json | tr -d '\n '; echo
echo "== real run"; $SNAP revert '#2' >"$O/out" 2>"$O/err"; rc=$?
echo "stdout: [$(cat "$O/out")]"; echo "stderr: $(cat "$O/err")"; echo "exit $rc  (dry run said 0)"
echo "k.log: $(cat k.log)   .gitignore: $(cat .gitignore 2>/dev/null || echo '(gone)')"
echo "== head records k.log as: $($SNAP cat @:k.log)"; $SNAP status
