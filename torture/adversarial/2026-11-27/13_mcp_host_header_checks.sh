#!/usr/bin/env bash
# A13: `snap mcp --http` checks Origin case-insensitively (http://LOCALHOST:PORT
# and HTTP://127.0.0.1:PORT pass) but Host case-sensitively (Host:
# LOCALHOST:PORT gets 403, though host names are case-insensitive), and the Host
# check ignores the port (Host: 127.0.0.1:1 and Host: 127.0.0.1 pass). Not
# exploitable as far as found (IP literals only, bearer token needed), but the
# two checks disagree.
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); O=$(mktemp -d); cd "$T"
$SNAP init >/dev/null
$SNAP mcp --http 127.0.0.1:0 --json > "$O/mcp.out" 2>&1 & M=$!
trap 'kill $M 2>/dev/null; rm -rf "$T" "$O"' EXIT
for i in 1 2 3 4 5 6 7 8 9 10; do grep -q url "$O/mcp.out" 2>/dev/null && break; sleep 0.3; done
URL=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["url"])' "$O/mcp.out")
PORT=${URL##*:}; PORT=${PORT%/mcp}; TOK=$(cat .snap/mcp-token)
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}'
req(){ curl -s -o /dev/null -w "%{http_code}" -X POST "$URL" -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "$@" -d "$INIT"; }
for o in "http://LOCALHOST:$PORT" "HTTP://127.0.0.1:$PORT" "http://localhost.:$PORT" "null" "http://evil.example"; do echo "Origin: $o -> $(req -H "Origin: $o")"; done
for h in "LOCALHOST:$PORT" "localhost:$PORT" "127.0.0.1:1" "127.0.0.1" "evil.example:$PORT"; do echo "Host: $h -> $(req -H "Host: $h")"; done
