#!/usr/bin/env bash
# A5: a secret written with JSON escapes in a transcript is not redacted:
# "\u0041KIA..." (an AWS key id), "ghp\u005f..." (a GitHub token) decode to the
# secret (any JSON reader, `snap conversation` included, shows it), but the
# detector scans the raw text. Verified in the bare remote after `snap push`.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
git init -q --bare remote.git
mkdir p && cd p && git init -q && git remote add origin ../remote.git && $SNAP init >/dev/null
cat > ../conv.jsonl <<'J'
{"role":"user","content":"plain AKIAQYLPMN5HFIQR7XYZ"}
{"role":"user","content":"escaped \u0041KIAQYLPMN5HFIQR7XYZ"}
{"role":"user","content":"token ghp\u005fR8sTz4vQwX9yLmN2bC5dF7gH1jK3pA6eU0iO"}
J
$SNAP checkpoint --conversation ../conv.jsonl -m 1 >/dev/null
echo "== what the conversation says (decoded):"; $SNAP conversation | sed 's/^/  /'
echo "== snap redact --check:"; $SNAP redact --check
$SNAP push
echo "== the exported transcript in the remote:"
cd ../remote.git; git show refs/snap/state/default:conversation | sed 's/^/  /'
