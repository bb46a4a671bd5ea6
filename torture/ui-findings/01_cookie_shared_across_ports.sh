#!/bin/bash
# U1: the token cookie is per host, not per port: every other web server on
# 127.0.0.1 receives it, and a second `snap ui` (another project) overwrites
# the first one's, whose open tab then gets 401 on every call.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/a" "$T/b"
for p in a b; do (cd "$T/$p" && "$SNAP" init >/dev/null && echo $p > f && "$SNAP" checkpoint >/dev/null); done
start_ui "$T/a"; UA=$URL; TA=$TOKEN
start_ui "$T/b"; UB=$URL
# Another local web app (a dev server, anything on loopback) that logs what it gets.
cat > "$T/other.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        sys.stderr.write("Cookie: %s\n" % self.headers.get('Cookie')); sys.stderr.flush()
        self.send_response(200); self.send_header('Content-Type', 'text/html'); self.end_headers()
        self.wfile.write(b"<p>some other local app</p>")
    def log_message(self, *a): pass

s = http.server.HTTPServer(('127.0.0.1', 0), H)
open(sys.argv[1], 'w').write(str(s.server_port)); s.serve_forever()
PY
python3 "$T/other.py" "$T/other.port" 2>"$T/other.log" & PIDS="$PIDS $!"
for _ in $(seq 50); do [ -s "$T/other.port" ] && break; sleep 0.1; done
OP=$(cat "$T/other.port")
out=$(drive <<CMDS
tab a
nav $UA
wait document.getElementById('project').textContent !== ''
tab other
nav http://127.0.0.1:$OP/
tab b
nav $UB
wait document.getElementById('project').textContent !== ''
use a
eval fetch('/api/info').then(r => r.status)
eval (location.hash = '#/s/default', new Promise(r => setTimeout(r, 1000))).then(() => document.getElementById('notice').innerText)
CMDS
)
echo "$out"
echo "--- what the other local server on port $OP received:"; cat "$T/other.log"
bug=0
grep -q "snap_ui_token=$TA" "$T/other.log" && { echo "BUG: project a's snap ui token was sent to an unrelated server on 127.0.0.1:$OP"; bug=1; }
echo "$out" | grep -q '^401$' && { echo "BUG: after opening project b's snap ui, project a's tab gets 401 (its cookie was overwritten)"; bug=1; }
[ $bug = 0 ] && echo "OK: cookie neither leaked nor overwritten"
exit 0
