"""MCP stdio client for 01: prints READY, then for each line "log" on stdin
the ids (12 hex) the server's log tool lists. usage: SNAP PROJECT"""
import json, subprocess, sys, os
SNAP, PROJ = sys.argv[1], sys.argv[2]
env = dict(os.environ, SNAP_NO_AUTO_GC="1")
p = subprocess.Popen([SNAP, "mcp", "-C", PROJ], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
i = 0
def rpc(method, params, notify=False):
    global i
    i += 1
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if not notify: msg["id"] = i
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    if notify: return None
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit("mcp died")
        r = json.loads(line)
        if r.get("id") == i: return r
def log():
    r = rpc("tools/call", {"name": "log", "arguments": {}})
    sc = r["result"].get("structuredContent") or json.loads(r["result"]["content"][0]["text"])
    return [c["id"][:12] for c in sc["checkpoints"]]
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
rpc("notifications/initialized", {}, notify=True)
print("READY", flush=True)
for line in sys.stdin:
    if line.strip() == "log":
        print("LOG " + " ".join(log()), flush=True)
p.stdin.close(); p.wait()
