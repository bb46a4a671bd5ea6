#!/usr/bin/env bash
# A3: a private key caught half-written by a checkpoint (BEGIN line and the
# first lines of the body, no END line yet) is not redacted: gitleaks'
# private-key rule needs the END line. `snap push` sends the first 9 lines of
# the key body to the remote in the earlier checkpoint's state commit, although
# the later checkpoint (whole key) is redacted.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
git init -q --bare remote.git
mkdir p && cd p && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
openssl genrsa 2048 2>/dev/null > ../key.pem
{ echo "# deploy plan"; echo "the deploy key:"; head -n 10 ../key.pem; } > ../plan.md
$SNAP checkpoint --state plan=../plan.md -m 1 >/dev/null         # the agent is writing the plan
{ tail -n +11 ../key.pem; echo "done"; } >> ../plan.md
$SNAP checkpoint -m 2 >/dev/null
echo "== snap redact --check on each checkpoint"
$SNAP redact --check '#1'; $SNAP redact --check '#2'
$SNAP push
cd ../remote.git
git cat-file --batch-all-objects --batch > ../dump
n=0; for i in $(seq 2 10); do l=$(sed -n ${i}p ../key.pem); grep -a -q -F -- "$l" ../dump && n=$((n+1)); done
echo "lines 2-10 of the private key found in the remote: $n of 9 (expected 0)"
grep -a -F -- "-----BEGIN" ../dump | head -2
