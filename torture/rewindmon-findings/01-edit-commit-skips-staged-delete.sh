#!/usr/bin/env bash
# 01 An edit commit does not perform an explicitly staged deletion when the same
#    commit stages an ignore file that ignores the deleted path, yet reports it applied.
#
# Introduced by 7b7cf30 (RestoreOptions.SpareIgnored: "a move whose end is made from
# the present (revert, edit commit) spares, when it deletes, what the end's own rules
# ignore"). For a revert the deletion is implicit; for 'snap edit' it is the user's
# (agent's) explicit request.
#
# Steps: secret.txt is tracked; stage `edit write .gitignore --content secret.txt`
# and `edit delete secret.txt`; `edit commit`.
# Expected (as before 7b7cf30): secret.txt is deleted (applied_changes 2, paths lists
#   it, rewind.deleted lists it), i.e. the end the commit records is what is on disk.
# Actual: applied_changes 2 and paths include secret.txt, but rewind.deleted is []
#   and secret.txt stays on disk; no pending change remains and `snap status` says
#   "nothing changed" (the file is now ignored), so the staged delete silently
#   vanished. (A typical agent edit: "remove the generated/secret file and ignore it".)
# Exit 1 while the defect shows, 0 when fixed.
set -u
S=$(realpath "${1:?usage: $0 path/to/snap}"); export SNAP_NO_AUTO_GC=1
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT; cd "$D"
$S init >/dev/null
echo 'API_KEY=123' > secret.txt; echo a > a.txt
$S checkpoint -m one >/dev/null
$S edit write .gitignore --content 'secret.txt' >/dev/null
$S edit delete secret.txt >/dev/null
out=$($S edit commit 'drop and ignore secret.txt' --json)
echo "$out" | jq -c '{applied_changes, paths, deleted: .rewind.deleted}'
if [ -e secret.txt ]; then
  echo "DEFECT: staged deletion of secret.txt reported applied but the file is still on disk"
  exit 1
fi
echo "ok: secret.txt deleted"; exit 0
