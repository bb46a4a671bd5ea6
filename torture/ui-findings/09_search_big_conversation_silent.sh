#!/bin/bash
# U9: search reads a session's conversation only up to 32 MiB; past that it
# finds none of its prompts and the page says "No checkpoint matches" with
# no hint that the conversation was not searched (likewise path matches
# stop after 5 s without a word).
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null; echo x > f
python3 - "$T/conv.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], 'w') as f:
    i = 0
    while f.tell() < 40 << 20:
        f.write(json.dumps({"type": "user", "uuid": "u%d" % i, "timestamp": "2026-02-14T15:17:46.705Z", "message": {"role": "user", "content": "prompt %d %s" % (i, "x" * 4000)}}) + "\n")
        i += 1
    f.write(json.dumps({"type": "user", "uuid": "last", "timestamp": "2026-02-14T15:17:46.705Z", "message": {"role": "user", "content": "please refactor the zebra parser"}}) + "\n")
PY
"$SNAP" checkpoint --conversation "$T/conv.jsonl" --summary "work" >/dev/null
start_ui "$T/p"
r=$(api 'search?q=zebra'); echo "search zebra: $r"
api 'conversation?offset=0&limit=1' >/dev/null
if echo "$r" | grep -q '"hits":\[\]'; then echo "BUG: the prompt 'please refactor the zebra parser' is in the conversation (40 MiB) but search answers no hit, and says nothing of what it skipped"; else echo OK; fi
