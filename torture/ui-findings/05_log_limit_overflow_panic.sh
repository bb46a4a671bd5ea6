#!/bin/bash
# U5: /api/log?offset=1&limit=<max int64> overflows offset+limit: the
# handler panics (slice bounds out of range), the connection is dropped
# without an answer and the server's stderr gets a goroutine dump.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null
for i in 1 2; do echo $i > f; "$SNAP" checkpoint >/dev/null; done
start_ui "$T/p"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Snap-Token: $TOKEN" "$BASE/api/log?offset=1&limit=9223372036854775807")
echo "HTTP status: $code"; sleep 0.2; head -3 "$UI_ERR"
if grep -q panic "$UI_ERR"; then echo "BUG: the server panicked (want 200 with the entries from offset 1, or 400)"; else echo OK; fi
