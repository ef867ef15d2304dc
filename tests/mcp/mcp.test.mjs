// The MCP server, tested with the official MCP TypeScript SDK's client over
// both transports: `pandastack mcp` (stdio) and the daemon's POST /mcp
// (Streamable HTTP).  Needs a live daemon with the code-interpreter template:
// PANDASTACK_API_URL and PANDASTACK_API_KEY (make test-mcp starts one), and
// the CLI at PANDASTACK_CLI (default build/pandastack of this repository).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const API_URL = process.env.PANDASTACK_API_URL;
const API_KEY = process.env.PANDASTACK_API_KEY;
const CLI = process.env.PANDASTACK_CLI ?? resolve(here, "../../build/pandastack");
if (!API_URL || !API_KEY) throw new Error("set PANDASTACK_API_URL and PANDASTACK_API_KEY");

const LONG = { timeout: 600_000 }; // cells and creates are slow on emulated guests
const CELL_S = 300; // a cell's own limit: a fresh kernel imports matplotlib slowly under TCG
const TOOLS = ["create_sandbox", "exec", "kill_sandbox", "list_sandboxes", "read_file",
  "run_code", "write_file"];
const PLOT = [
  "import matplotlib.pyplot as plt",
  "fig = plt.figure(figsize=(4, 2), dpi=50)",
  "plt.plot([1, 2, 3], [1, 4, 9])",
  "plt.show()",
].join("\n");

// Width and height from a PNG's signature and IHDR chunk; throws on anything else.
function pngSize(buf) {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buf.length < 24 || !buf.subarray(0, 8).equals(sig)) throw new Error("no PNG signature");
  if (buf.toString("latin1", 12, 16) !== "IHDR") throw new Error("no IHDR chunk first");
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

test("the PNG probe refuses what is not a PNG (positive control)", () => {
  assert.throws(() => pngSize(Buffer.from("<Figure size 200x100 with 1 Axes>")));
  const fake = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(fake);
  assert.throws(() => pngSize(fake)); // a signature without IHDR
});

// The same session of tool calls on either transport.
async function exercise(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  for (const t of tools) assert.equal(t.inputSchema.type, "object");

  const created = await client.callTool({ name: "create_sandbox", arguments: { ttl_seconds: 600 } },
    undefined, LONG);
  assert.ok(!created.isError, text(created));
  const id = created.structuredContent.id;
  assert.match(id, /^sbx_[0-9a-f]+$/);
  try {
    // a chart comes back as an MCP image that decodes to a PNG
    const plot = await client.callTool({ name: "run_code", arguments: { sandbox_id: id, code: PLOT, timeout_seconds: CELL_S } },
      undefined, LONG);
    assert.ok(!plot.isError, text(plot));
    const images = plot.content.filter((c) => c.type === "image");
    assert.equal(images.length, 1, JSON.stringify(plot.content).slice(0, 500));
    assert.equal(images[0].mimeType, "image/png");
    const size = pngSize(Buffer.from(images[0].data, "base64"));
    assert.ok(size.width > size.height && size.width <= 400 && size.height >= 20,
      JSON.stringify(size));

    // state persists between cells of one sandbox
    await client.callTool({ name: "run_code", arguments: { sandbox_id: id, code: "x = 41" } },
      undefined, LONG);
    const val = await client.callTool({ name: "run_code", arguments: { sandbox_id: id, code: "x + 1" } },
      undefined, LONG);
    assert.equal(text(val), "42");

    // a table: HTML and text
    const table = await client.callTool({ name: "run_code", arguments: {
      sandbox_id: id, code: "import pandas as pd\npd.DataFrame({'a': [1, 2]})", timeout_seconds: CELL_S } }, undefined, LONG);
    const html = table.content.find((c) => c.type === "resource");
    assert.equal(html?.resource.mimeType, "text/html");
    assert.match(html.resource.text, /<table/);
    assert.match(text(table), /a\s*\n0\s+1/);

    // an exception is an isError result with its traceback
    const boom = await client.callTool({ name: "run_code", arguments: { sandbox_id: id, code: "1/0" } },
      undefined, LONG);
    assert.equal(boom.isError, true);
    assert.match(text(boom), /ZeroDivisionError/);
    assert.match(text(boom), /Traceback|1\/0/);

    const ex = await client.callTool({ name: "exec", arguments: {
      sandbox_id: id, cmd: "echo out; echo err >&2; exit 3" } }, undefined, LONG);
    assert.ok(!ex.isError, text(ex));
    assert.equal(ex.structuredContent.stdout, "out\n");
    assert.equal(ex.structuredContent.stderr, "err\n");
    assert.equal(ex.structuredContent.exit_code, 3);

    const note = "h\u00e9llo from MCP\n";
    const w = await client.callTool({ name: "write_file", arguments: {
      sandbox_id: id, path: "/workspace/mcp/note.txt", content: note } }, undefined, LONG);
    assert.ok(!w.isError, text(w));
    assert.equal(w.structuredContent.size, Buffer.byteLength(note));
    const r = await client.callTool({ name: "read_file", arguments: {
      sandbox_id: id, path: "/workspace/mcp/note.txt" } }, undefined, LONG);
    assert.equal(r.content[0].type, "text");
    assert.equal(r.content[0].text, note);
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    await client.callTool({ name: "write_file", arguments: {
      sandbox_id: id, path: "/workspace/mcp/b.bin", content_base64: bytes.toString("base64") } },
    undefined, LONG);
    const rb = await client.callTool({ name: "read_file", arguments: {
      sandbox_id: id, path: "/workspace/mcp/b.bin" } }, undefined, LONG);
    assert.equal(rb.content[0].type, "resource");
    assert.ok(Buffer.from(rb.content[0].resource.blob, "base64").equals(bytes));
    // a file the cell saved, read back as an image
    await client.callTool({ name: "run_code", arguments: { sandbox_id: id,
      code: "fig.savefig('/workspace/mcp/chart.png')" } }, undefined, LONG);
    const img = await client.callTool({ name: "read_file", arguments: {
      sandbox_id: id, path: "/workspace/mcp/chart.png" } }, undefined, LONG);
    assert.equal(img.content[0].type, "image");
    pngSize(Buffer.from(img.content[0].data, "base64"));

    // bad arguments: a tool execution error the model can read (2025-11-25)
    const bad = await client.callTool({ name: "exec", arguments: { sandbox_id: id } });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /Invalid arguments for tool exec: cmd is required/);
    const wrong = await client.callTool({ name: "exec", arguments: { sandbox_id: id, cmd: 7 } });
    assert.equal(wrong.isError, true);
    // an unknown tool and a malformed call are protocol errors
    await assert.rejects(client.callTool({ name: "format_disk", arguments: {} }),
      (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
    const { CallToolResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
    await assert.rejects(
      client.request({ method: "tools/call", params: { name: "exec", arguments: 5 } },
        CallToolResultSchema),
      (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
    await assert.rejects(client.request({ method: "prompts/list" }, CallToolResultSchema),
      (e) => e instanceof McpError && e.code === ErrorCode.MethodNotFound);
    // a sandbox that is not there is a tool error naming the API's code
    const gone = await client.callTool({ name: "exec", arguments: {
      sandbox_id: "sbx_00000000000000000000", cmd: "true" } });
    assert.equal(gone.isError, true);
    assert.match(text(gone), /sandbox_not_found/);
    await client.ping();
  } finally {
    const killed = await client.callTool({ name: "kill_sandbox", arguments: { sandbox_id: id } },
      undefined, LONG);
    assert.ok(!killed.isError, text(killed));
    assert.deepEqual(killed.structuredContent, { id, killed: true });
  }
  const list = await client.callTool({ name: "list_sandboxes", arguments: {} });
  assert.ok(!list.structuredContent.sandboxes.some((s) => s.id === id && s.status === "running"));
}

describe("stdio: pandastack mcp", () => {
  let client;
  let transport;
  before(async () => {
    transport = new StdioClientTransport({
      command: CLI, args: ["mcp"], stderr: "inherit",
      env: { PANDASTACK_API_URL: API_URL, PANDASTACK_API_KEY: API_KEY, PATH: process.env.PATH },
    });
    client = new Client({ name: "pandastack-test", version: "1.0.0" });
    await client.connect(transport);
  });
  after(async () => { await client?.close(); });

  test("negotiates the latest revision", () => {
    assert.equal(client.getServerVersion().name, "pandastack");
    assert.ok(client.getServerCapabilities().tools);
  });
  test("tools: create, plot, exec, files, errors, kill", async () => { await exercise(client); });
});

describe("stdio: raw lines", () => {
  // Talks to the server without the SDK, to send what the SDK never would.
  async function session(lines) {
    const child = spawn(CLI, ["mcp"], {
      env: { PANDASTACK_API_URL: API_URL, PANDASTACK_API_KEY: API_KEY },
      stdio: ["pipe", "pipe", "inherit"],
    });
    const answers = [];
    const rl = createInterface({ input: child.stdout });
    rl.on("line", (l) => answers.push(JSON.parse(l)));
    for (const l of lines) child.stdin.write(l + "\n");
    child.stdin.end();
    const [code] = await once(child, "exit");
    return { code, answers };
  }
  const init = (v) => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: v, capabilities: {}, clientInfo: { name: "raw", version: "1" } } });

  test("survives garbage lines and answers the messages around them", async () => {
    const { code, answers } = await session([
      "this is not json", "", "\u0000\u0001{{{", init("2025-11-25"), "[1, 2, 3]",
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"", // cut short
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
      JSON.stringify({ jsonrpc: "2.0", id: null, method: "ping" }),
      JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" }),
    ]);
    assert.equal(code, 0);
    assert.deepEqual(answers.map((a) => a.error?.code ?? "ok"),
      [-32700, -32700, "ok", -32600, -32700, "ok", -32600, "ok"]);
    assert.equal(answers[2].result.protocolVersion, "2025-11-25");
    assert.equal(answers[5].result.tools.length, 7);
    assert.equal(answers[7].id, 4);
  });

  test("2025-06-18: arguments that fail the schema are -32602", async () => {
    const { answers } = await session([
      init("2025-06-18"),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call",
        params: { name: "run_code", arguments: { sandbox_id: "sbx_1" } } }),
    ]);
    assert.equal(answers[0].result.protocolVersion, "2025-06-18");
    assert.equal(answers[1].error.code, -32602);
    assert.match(answers[1].error.message, /code is required/);
  });
});

describe("Streamable HTTP: POST /mcp", () => {
  const url = new URL("/mcp", API_URL);
  const auth = { Authorization: `Bearer ${API_KEY}` };
  let client;
  let transport;
  before(async () => {
    transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: auth } });
    client = new Client({ name: "pandastack-test", version: "1.0.0" });
    await client.connect(transport);
  });
  after(async () => { await client?.close(); });

  test("gives a session id and speaks the latest revision", () => {
    assert.match(transport.sessionId, /^mcp_[0-9a-f]{32}$/);
    assert.equal(transport.protocolVersion, "2025-11-25");
  });
  test("tools: create, plot, exec, files, errors, kill", async () => { await exercise(client); });

  test("refuses a request without a key, a foreign Origin, GET, unknown sessions", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const json = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    let r = await fetch(url, { method: "POST", headers: json, body });
    assert.equal(r.status, 401);
    r = await fetch(url, { method: "POST", body,
      headers: { ...json, ...auth, "Mcp-Session-Id": transport.sessionId, Origin: "http://evil.example" } });
    assert.equal(r.status, 403);
    r = await fetch(url, { headers: { ...auth, Accept: "text/event-stream" } });
    assert.equal(r.status, 405);
    r = await fetch(url, { method: "POST", headers: { ...json, ...auth }, body });
    assert.equal(r.status, 400); // no session id
    r = await fetch(url, { method: "POST", headers: { ...json, ...auth, "Mcp-Session-Id": "mcp_nope" }, body });
    assert.equal(r.status, 404);
    r = await fetch(url, { method: "POST", body, headers: { ...json, ...auth,
      "Mcp-Session-Id": transport.sessionId, "MCP-Protocol-Version": "1999-01-01" } });
    assert.equal(r.status, 400);
    r = await fetch(url, { method: "POST", body: "{oops",
      headers: { ...json, ...auth, "Mcp-Session-Id": transport.sessionId } });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32700);
    // the same session still answers
    await client.ping();
  });

  test("a session belongs to its key and ends with DELETE", async () => {
    const made = await fetch(new URL("/v1/keys", API_URL), { method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "mcp-other", team: "mcp-other" }) });
    assert.equal(made.status, 201);
    const { id: keyId, key: other } = await made.json();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const r = await fetch(url, { method: "POST", body, headers: { "Content-Type": "application/json",
      Authorization: `Bearer ${other}`, "Mcp-Session-Id": transport.sessionId } });
    assert.equal(r.status, 404);
    const del = await fetch(new URL(`/v1/keys/${keyId}`, API_URL), { method: "DELETE", headers: auth });
    assert.equal(del.status, 204);
    await transport.terminateSession();
    await assert.rejects(client.ping());
  });
});
