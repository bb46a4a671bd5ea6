#!/usr/bin/env bash
# A4: `snap push` redacts summaries, goals and state documents, but not the
# other strings a checkpoint carries: the message id (Snap-Message-Id trailer
# and the record), labels, the session name (ref name, trailer, record), file
# names in the tree, and the absolute paths state documents were read from
# ("state_sources" in the exported record: here a directory named after a
# token; in general the user's home path). `snap redact --check` reports none
# of them.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
AWS=AKIAQYLPMN5HFIQR7XYZ
git init -q --bare remote.git
mkdir -p "tok-$AWS" p && cd p && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
echo '{"role":"user","content":"hi"}' > "../tok-$AWS/conv.jsonl"
echo x > "notes-$AWS.txt"
$SNAP checkpoint --conversation "../tok-$AWS/conv.jsonl" -m "msg_$AWS" --label "lbl-$AWS" --summary "summary $AWS" >/dev/null
$SNAP -s "sess-$AWS" checkpoint --allow-empty -m x >/dev/null
echo "== snap redact --check"; $SNAP redact --check
$SNAP push --all
cd ../remote.git
echo "== the secret in the remote (expected: nowhere):"
git for-each-ref --format='  ref: %(refname)' | grep -F "$AWS"
git cat-file --batch-all-objects --batch | grep -a -o -E ".{0,40}$AWS.{0,10}" | sed 's/^/  object: /' | sort -u
