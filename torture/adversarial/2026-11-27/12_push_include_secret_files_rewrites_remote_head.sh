#!/usr/bin/env bash
# A12: `snap push` and `snap push --include-secret-files` export the same
# checkpoint as two different commits (with or without the held-back .env),
# and each push force-moves the remote session head to its own version (not a
# fast-forward; the README says "a session head moves forward only"). A
# teammate who pulled before gets "conflict: session default moved here"
# although nothing moved in their store.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
git init -q --bare remote.git
mkdir a && cd a && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
echo code > main.go; echo 'API_TOKEN=dev-only-value' > .env
$SNAP checkpoint -m 1 >/dev/null
$SNAP push | tail -1
h1=$(git --git-dir=../remote.git rev-parse refs/snap/sessions/default)
mkdir ../b && cd ../b && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
$SNAP pull origin | tail -1
cd ../a; $SNAP push --include-secret-files | tail -1
h2=$(git --git-dir=../remote.git rev-parse refs/snap/sessions/default)
echo "remote head: $h1 -> $h2; fast-forward: $(git --git-dir=../remote.git merge-base --is-ancestor $h1 $h2 && echo yes || echo NO)"
cd ../b; echo "== teammate (changed nothing) pulls again:"; $SNAP pull origin; echo "exit $?"
cd ../a; $SNAP push | tail -1
h3=$(git --git-dir=../remote.git rev-parse refs/snap/sessions/default)
echo "plain push again: $h2 -> $h3; fast-forward: $(git --git-dir=../remote.git merge-base --is-ancestor $h2 $h3 && echo yes || echo NO)"
