#!/usr/bin/env bash
# A6: the hold-back of untracked secret files is case-sensitive and misses
# common credential files: .ENV, server.PEM, ID_RSA, .aws/credentials, .pgpass,
# terraform.tfstate, secrets.yaml are pushed (held back: .env, server.pem).
# File contents are never scanned: an untracked config.py holding an AWS key
# is pushed too (the README headline says "No secret leaves the machine").
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
git init -q --bare remote.git
mkdir p && cd p && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
for f in .env server.pem .ENV server.PEM ID_RSA .aws/credentials .pgpass terraform.tfstate secrets.yaml config.py; do
  mkdir -p "$(dirname "$f")"; echo "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9 # $f" > "$f"
done
$SNAP checkpoint -m 1 >/dev/null
$SNAP redact --check
$SNAP push
cd ../remote.git
echo "== files that reached the remote with the secret:"
git ls-tree -r --name-only refs/snap/sessions/default | while read -r f; do
  git show "refs/snap/sessions/default:$f" | grep -q wJalrXUtnFEMI && echo "  $f"
done
