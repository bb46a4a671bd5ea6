// The official TypeScript MCP SDK's client drives `snap mcp`: it lists the
// tools, runs a whole staged-edit task (needs_match → match_id → preview →
// commit) and a dry-run then confirmed rewind. Usage:
//   node client.mjs SNAP_BINARY PROJECT_DIR [--http]
// Without --http it spawns `snap mcp` over stdio; with it, it starts
// `snap mcp --http 127.0.0.1:0 --json` and connects over streamable HTTP
// with the bearer token from the file the server names (and checks that a
// request without the token is refused).
// Exits 0 when every step answered as expected, 1 otherwise (saying which).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [snap, project, mode] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); server?.kill("SIGKILL"); process.exit(1); };
const env = { ...process.env, SNAP_NO_AUTO_GC: "1" };

let server, transport;
if (mode === "--http") {
  delete env.SNAP_MCP_TOKEN;
  server = spawn(snap, ["mcp", "-C", project, "-s", "ts", "--http", "127.0.0.1:0", "--json"], { env, stdio: ["ignore", "pipe", "inherit"] });
  process.on("exit", () => server.kill("SIGKILL")); // never leave it running
  let printed = "";
  const ready = await new Promise((resolve) => {
    createInterface({ input: server.stdout }).on("line", (line) => {
      printed += line + "\n";
      try { resolve(JSON.parse(printed)); } catch { /* the object is not whole yet */ }
    });
    server.once("exit", (code) => fail(`snap mcp --http exited ${code} before printing its address`));
  });
  const { url, token_file } = ready;
  const token = readFileSync(token_file, "utf8").trim();
  const refused = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
  if (refused.status !== 401) fail(`a request without the token got ${refused.status}`);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
} else {
  transport = new StdioClientTransport({ command: snap, args: ["mcp", "-C", project, "-s", "ts"], env });
}
const client = new Client({ name: "ts-client-test", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
for (const want of ["checkpoint", "rewind", "undo", "memo_begin_task", "memo_replace", "memo_preview", "memo_commit", "memo_task_tree"]) {
  if (!names.includes(want)) fail(`tool ${want} missing from ${names}`);
}
for (const t of tools) if (!t.description || !t.inputSchema) fail(`tool ${t.name} has no description or schema`);

const call = async (name, args = {}) => {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) fail(`${name}: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
};
const file = () => readFileSync(join(project, "config.yaml"), "utf8");

const first = await call("checkpoint", { summary: "start" });
await call("memo_begin_task", { goal: "raise the timeouts" });
let ans = await call("memo_replace", { path: "config.yaml", old_text: "timeout: 30", new_text: "timeout: 60" });
if (ans.status !== "needs_match" || ans.candidates.length !== 2) fail(`needs_match expected: ${JSON.stringify(ans)}`);
ans = await call("memo_replace", { path: "config.yaml", old_text: "timeout: 30", new_text: "timeout: 60", match_id: ans.candidates[1].match_id });
if (ans.status !== "editing" || ans.pending_changes.length !== 1) fail(`editing expected: ${JSON.stringify(ans)}`);
const preview = await call("memo_preview", {});
if (!JSON.stringify(preview).includes("timeout: 60")) fail(`preview: ${JSON.stringify(preview)}`);
if (file().includes("60")) fail("a staged change touched the file");
const committed = await call("memo_commit", { summary: "b raised" });
if (committed.status !== "committed") fail(`commit: ${JSON.stringify(committed)}`);
if (file() !== "a:\n  timeout: 30\nb:\n  timeout: 60\n") fail(`after commit: ${JSON.stringify(file())}`);

const dry = await call("rewind", { ref: first.id });
if (dry.dry_run !== true || !file().includes("60")) fail(`dry run: ${JSON.stringify(dry)}`);
await call("rewind", { ref: first.id, confirm: true });
if (file().includes("60")) fail("the confirmed rewind did not restore the file");
await call("undo", {});
if (!file().includes("60")) fail("undo did not bring the commit back");

const bad = await client.callTool({ name: "rewind", arguments: { ref: "#99", confirm: true } });
if (!bad.isError) fail("a rewind to a missing checkpoint was not a tool error");

await client.close();
if (server) {
  server.removeAllListeners("exit");
  const code = await new Promise((resolve) => { server.once("exit", (c) => resolve(c)); server.kill("SIGINT"); });
  if (code !== 0) fail(`snap mcp --http exited ${code} on SIGINT`);
}
console.log(`ok (${mode === "--http" ? "streamable HTTP" : "stdio"}): ${names.length} tools; staged-edit task, dry-run and confirmed rewind, undo, tool error`);
