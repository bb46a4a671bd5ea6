// The official TypeScript MCP SDK's client spawns `snap mcp` over stdio,
// lists the tools, runs a whole staged-edit task (needs_match → match_id →
// preview → commit) and a dry-run then confirmed rewind. Usage:
//   node client.mjs SNAP_BINARY PROJECT_DIR
// Exits 0 when every step answered as expected, 1 otherwise (saying which).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [snap, project] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };

const transport = new StdioClientTransport({ command: snap, args: ["mcp", "-C", project, "-s", "ts"], env: { ...process.env, SNAP_NO_AUTO_GC: "1" } });
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
console.log(`ok: ${names.length} tools; staged-edit task, dry-run and confirmed rewind, undo, tool error`);
