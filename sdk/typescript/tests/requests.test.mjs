// Request shapes: what the SDK sends for each call, and how it reads the answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import {
  Sandbox, CommandFailed, NotFoundError, TimeoutError, SandboxError, SDK_VERSION,
} from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const KEY = "pds_" + "ab".repeat(24);

/** A fake daemon with a sandbox ID and per-route answers: routes["POST /exec"] etc. */
async function fakeDaemon(routes = {}) {
  return startFake(async (req, res, rec) => {
    const sub = rec.path.startsWith(`/v1/sandboxes/${ID}`) ? rec.path.slice(`/v1/sandboxes/${ID}`.length) : rec.path;
    const key = `${rec.method} ${sub}`;
    if (routes[key]) return routes[key](req, res, rec);
    if (key === "GET ") return sendJson(res, 200, sandboxJson(ID));
    if (key === "POST /v1/sandboxes") return sendJson(res, 201, sandboxJson(ID));
    sendError(res, 404, "not_found", `no route ${key}`);
  });
}

const json = (rec) => JSON.parse(rec.body.toString("utf8"));

test("create sends template and ttl_seconds, with the key and a user agent", async () => {
  const fake = await fakeDaemon();
  try {
    const sb = await Sandbox.create({ ...sdkOpts(fake), template: "code-interpreter", ttlSeconds: 3600 });
    assert.equal(sb.id, ID);
    assert.equal(sb.template, "code-interpreter");
    assert.equal(sb.info.status, "running");
    const rec = fake.requests[0];
    assert.equal(rec.method, "POST");
    assert.equal(rec.path, "/v1/sandboxes");
    assert.deepEqual(json(rec), { template: "code-interpreter", ttl_seconds: 3600 });
    assert.equal(rec.headers.authorization, `Bearer ${KEY}`);
    assert.equal(rec.headers["content-type"], "application/json");
    assert.equal(rec.headers["user-agent"], `pandastack-sdk-typescript/${SDK_VERSION}`);
  } finally {
    await fake.close();
  }
});

test("create without options: default template, no ttl (the daemon's default), env and metadata passed", async () => {
  const fake = await fakeDaemon();
  try {
    await Sandbox.create(sdkOpts(fake));
    await Sandbox.create({ ...sdkOpts(fake), template: "base", env: { A: "1" }, metadata: { user: "alice" } });
    assert.deepEqual(json(fake.requests[0]), { template: "code-interpreter" });
    assert.deepEqual(json(fake.requests[1]), { template: "base", env: { A: "1" }, metadata: { user: "alice" } });
  } finally {
    await fake.close();
  }
});

test("configuration comes from PANDASTACK_API_KEY and PANDASTACK_API_URL", async () => {
  const fake = await fakeDaemon();
  const saved = [process.env.PANDASTACK_API_KEY, process.env.PANDASTACK_API_URL];
  process.env.PANDASTACK_API_KEY = "pds_fromenv";
  process.env.PANDASTACK_API_URL = fake.url + "/";
  try {
    const sb = await Sandbox.connect(ID);
    assert.equal(sb.id, ID);
    assert.equal(fake.requests[0].headers.authorization, "Bearer pds_fromenv");
    assert.equal(fake.requests[0].path, `/v1/sandboxes/${ID}`, "no double slash from a trailing one");
  } finally {
    for (const [k, v] of [["PANDASTACK_API_KEY", saved[0]], ["PANDASTACK_API_URL", saved[1]]]) {
      if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
    await fake.close();
  }
});

test("exec sends cmd and options and returns the API's fields", async () => {
  const fake = await fakeDaemon({
    "POST /exec": (req, res) => sendJson(res, 200, {
      stdout: "1024\n", stderr: "", exit_code: 0, duration_ms: 41, timed_out: false, signal: null,
      stdout_truncated: false, stderr_truncated: false,
    }),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const r = await sb.exec("python -c 'print(2 ** 10)'", {
      timeoutSeconds: 30, env: { X: "y" }, cwd: "/tmp", stdin: "in",
    });
    assert.deepEqual(r, {
      stdout: "1024\n", stderr: "", exit_code: 0, duration_ms: 41, timed_out: false, signal: null,
      stdout_truncated: false, stderr_truncated: false,
    });
    assert.deepEqual(json(fake.requests[1]), {
      cmd: "python -c 'print(2 ** 10)'", timeout_seconds: 30, env: { X: "y" }, cwd: "/tmp", stdin: "in",
    });
  } finally {
    await fake.close();
  }
});

test("exec: a non-zero exit is a result; with check it throws CommandFailed carrying it", async () => {
  const fake = await fakeDaemon({
    "POST /exec": (req, res, rec) => json(rec).cmd === "true"
      ? sendJson(res, 200, { stdout: "", stderr: "", exit_code: 0, duration_ms: 1 })
      : sendJson(res, 200, { stdout: "", stderr: "oops\n", exit_code: 3, duration_ms: 5 }),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const r = await sb.exec("sh -c 'exit 3'");
    assert.equal(r.exit_code, 3);
    assert.equal(r.stderr, "oops\n");
    const err = await sb.exec("sh -c 'exit 3'", { check: true }).catch((e) => e);
    assert.ok(err instanceof CommandFailed, `got ${err}`);
    assert.equal(err.result.exit_code, 3);
    assert.equal(err.result.stderr, "oops\n");
    assert.equal(err.code, "command_failed");
    assert.equal((await sb.exec("true", { check: true })).exit_code, 0, "check passes a zero exit");
  } finally {
    await fake.close();
  }
});

/** Writes SSE text in pieces of `step` bytes, to test reassembly. */
function writeSse(res, text, step) {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const buf = Buffer.from(text, "utf8");
  let off = 0;
  const next = () => {
    if (off >= buf.length) return res.end();
    res.write(buf.subarray(off, off + step));
    off += step;
    setTimeout(next, 1);
  };
  next();
}

const STREAM =
  'event: started\ndata: {"pid": 1234}\n\n' +
  ': keepalive\n\n' +
  'event: stdout\ndata: {"data": "line 1\\n"}\n\n' +
  'event: stderr\r\ndata: {"data": "warn é\\n"}\r\n\r\n' +
  'event: stdout\ndata: {"data": "line 2\\n"}\n\n' +
  'event: exit\ndata: {"exit_code": 2, "duration_ms": 812, "timed_out": false, "signal": null, ' +
  '"stdout_truncated": false, "stderr_truncated": false}\n\n';

for (const step of [1, 7, 100000]) {
  test(`execStream calls back per chunk and returns the result (pieces of ${step} bytes)`, async () => {
    const fake = await fakeDaemon({ "POST /exec_stream": (req, res) => writeSse(res, STREAM, step) });
    try {
      const sb = await Sandbox.connect(ID, sdkOpts(fake));
      const seen = [];
      const r = await sb.execStream("cmd", {
        timeoutSeconds: 10,
        onStart: (pid) => seen.push(["start", pid]),
        onStdout: (d) => seen.push(["out", d]),
        onStderr: async (d) => { await new Promise((r) => setTimeout(r, 2)); seen.push(["err", d]); },
      });
      assert.deepEqual(seen, [["start", 1234], ["out", "line 1\n"], ["err", "warn é\n"], ["out", "line 2\n"]]);
      assert.equal(r.stdout, "line 1\nline 2\n");
      assert.equal(r.stderr, "warn é\n");
      assert.equal(r.exit_code, 2);
      assert.equal(r.duration_ms, 812);
      assert.deepEqual(json(fake.requests[1]), { cmd: "cmd", timeout_seconds: 10 });
      assert.equal(fake.requests[1].headers.accept, "text/event-stream");
    } finally {
      await fake.close();
    }
  });
}

const CELL_STREAM =
  'event: stdout\ndata: {"text": "0\\n"}\n\n' +
  ': keepalive\n\n' +
  'event: result\ndata: {"is_main_result": false, "png": "iVBORw0KGgo="}\n\n' +
  'event: stderr\ndata: {"text": "warn\\n"}\n\n' +
  'event: result\ndata: {"is_main_result": true, "text": "42"}\n\n' +
  'event: done\ndata: {"error": null, "execution_count": 4, "exit_code": 0, "duration_ms": 1616}\n\n';

for (const step of [3, 100000]) {
  test(`ctx.runCode with callbacks streams the cell (pieces of ${step} bytes)`, async () => {
    const fake = await fakeDaemon({
      "POST /contexts": (req, res) => sendJson(res, 201, { id: "ctx_5", language: "python" }),
      "POST /contexts/ctx_5/run_code_stream": (req, res) => writeSse(res, CELL_STREAM, step),
    });
    try {
      const sb = await Sandbox.connect(ID, sdkOpts(fake));
      const ctx = await sb.createCodeContext();
      const seen = [];
      const ex = await ctx.runCode("loop()", {
        timeoutSeconds: 3,
        onStdout: (d) => seen.push(["out", d]),
        onStderr: async (d) => { await new Promise((r) => setTimeout(r, 2)); seen.push(["err", d]); },
        onResult: (r) => seen.push(["result", r.png ?? r.text]),
      });
      assert.deepEqual(seen, [["out", "0\n"], ["result", "iVBORw0KGgo="], ["err", "warn\n"], ["result", "42"]]);
      assert.equal(ex.stdout, "0\n");
      assert.equal(ex.stderr, "warn\n");
      assert.equal(ex.text, "42");
      assert.equal(ex.png, "iVBORw0KGgo=");
      assert.equal(ex.execution_count, 4);
      assert.equal(ex.duration_ms, 1616);
      assert.equal(ex.error, null);
      const req = fake.requests.find((r) => r.path.endsWith("/run_code_stream"));
      assert.deepEqual(json(req), { code: "loop()", timeout_seconds: 3 });
      assert.equal(req.headers.accept, "text/event-stream");
    } finally {
      await fake.close();
    }
  });
}

test("ctx.runCode stream: an error event is typed, a cut stream is a ConnectionError", async () => {
  const fake = await fakeDaemon({
    "POST /contexts": (req, res) => sendJson(res, 201, { id: "ctx_6", language: "python" }),
    "POST /contexts/ctx_6/run_code_stream": (req, res, rec) => json(rec).code === "cut"
      ? writeSse(res, 'event: stdout\ndata: {"text": "x"}\n\n', 1000)
      : writeSse(res, 'event: error\ndata: {"error": {"code": "context_not_found", "message": "gone"}}\n\n', 1000),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const ctx = await sb.createCodeContext();
    await assert.rejects(ctx.runCode("1", { onStdout: () => {} }), (e) => e instanceof NotFoundError && e.code === "context_not_found");
    await assert.rejects(ctx.runCode("cut", { onResult: () => {} }), (e) => e.code === "connection_failed");
  } finally {
    await fake.close();
  }
});

test("execStream: an error event becomes the typed error", async () => {
  const fake = await fakeDaemon({
    "POST /exec_stream": (req, res) => writeSse(res,
      'event: stdout\ndata: {"data": "a"}\n\nevent: error\ndata: {"error": {"code": "agent_timeout", "message": "slow"}}\n\n', 1000),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const err = await sb.execStream("cmd").catch((e) => e);
    assert.ok(err instanceof TimeoutError, `got ${err}`);
    assert.equal(err.code, "agent_timeout");
    assert.equal(err.message, "slow");
  } finally {
    await fake.close();
  }
});

test("execStream: check=True raises CommandFailed; a stream without exit is an error", async () => {
  const fake = await fakeDaemon({
    "POST /exec_stream": (req, res, rec) => json(rec).cmd === "cut"
      ? writeSse(res, 'event: stdout\ndata: {"data": "a"}\n\n', 1000)
      : writeSse(res, STREAM, 1000),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const err = await sb.execStream("cmd", { check: true }).catch((e) => e);
    assert.ok(err instanceof CommandFailed);
    assert.equal(err.result.exit_code, 2);
    assert.equal(err.result.stdout, "line 1\nline 2\n");
    await assert.rejects(sb.execStream("cut"), (e) => e.name === "ConnectionError");
  } finally {
    await fake.close();
  }
});

test("execStream: an error before the stream starts is an ordinary typed error", async () => {
  const fake = await fakeDaemon({
    "POST /exec_stream": (req, res) => sendError(res, 409, "sandbox_not_running", "stopped"),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    await assert.rejects(sb.execStream("cmd"), (e) => e instanceof SandboxError && e.status === 409);
  } finally {
    await fake.close();
  }
});

test("runCode posts code and language to /run_code", async () => {
  const fake = await fakeDaemon({
    "POST /run_code": (req, res) => sendJson(res, 200, { stdout: "42 84\n", stderr: "", exit_code: 0, duration_ms: 9 }),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const out = await sb.runCode("x = 42\nprint(x, x * 2)\n", "python");
    assert.equal(out.stdout, "42 84\n");
    assert.equal(out.exit_code, 0);
    await sb.runCode("python --version", "shell", { timeoutSeconds: 5 });
    await sb.runCode("1", { language: "shell", timeoutSeconds: 2 });
    await sb.runCode("2");
    assert.deepEqual(fake.requests.slice(1).map(json), [
      { code: "x = 42\nprint(x, x * 2)\n", language: "python" },
      { code: "python --version", language: "shell", timeout_seconds: 5 },
      { code: "1", language: "shell", timeout_seconds: 2 },
      { code: "2", language: "python" },
    ]);
  } finally {
    await fake.close();
  }
});

test("code contexts: create, runCode into an Execution, list, close", async () => {
  const png = Buffer.from("\x89PNG\r\n\x1a\nfake", "latin1").toString("base64");
  const fake = await fakeDaemon({
    "POST /contexts": (req, res) => sendJson(res, 201, { id: "ctx_1", language: "python" }),
    "GET /contexts": (req, res) => sendJson(res, 200, { contexts: [{ id: "ctx_1", language: "python" }, { bad: 1 }] }),
    "POST /contexts/ctx_1/run_code": (req, res, rec) => {
      const { code } = json(rec);
      if (code === "sum(range(101))") {
        return sendJson(res, 200, {
          results: [{ is_main_result: true, text: "5050" }], stdout: "", stderr: "", error: null,
          execution_count: 1, exit_code: 0, duration_ms: 3,
        });
      }
      if (code === "plot") {
        return sendJson(res, 200, {
          results: [
            { is_main_result: false, png, text: "<Figure>" },
            { is_main_result: false, html: "<table></table>", text: "df", extra: { "application/vnd.plotly.v1+json": { a: 1 } } },
            { is_main_result: true, text: "7", json: { k: [1, 2] } },
          ],
          stdout: "hi\n", stderr: "", error: null, execution_count: 2, exit_code: 0, duration_ms: 30,
        });
      }
      sendJson(res, 200, {
        results: [], stdout: "", stderr: "", execution_count: 3, exit_code: 1, duration_ms: 1,
        error: { name: "ZeroDivisionError", value: "division by zero", traceback: "Traceback...\nZeroDivisionError: division by zero" },
      });
    },
    "DELETE /contexts/ctx_1": (req, res) => { res.writeHead(204); res.end(); },
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const ctx = await sb.createCodeContext({ cwd: "/workspace" });
    assert.equal(ctx.id, "ctx_1");
    assert.equal(ctx.language, "python");
    assert.deepEqual(json(fake.requests[1]), { language: "python", cwd: "/workspace" });

    const a = await ctx.runCode("sum(range(101))", { timeoutSeconds: 10 });
    assert.equal(a.text, "5050");
    assert.equal(a.stdout, "");
    assert.equal(a.error, null);
    assert.equal(a.png, undefined);
    assert.deepEqual(a.results[0].extra, {});
    assert.deepEqual(json(fake.requests[2]), { code: "sum(range(101))", timeout_seconds: 10 });

    const b = await ctx.runCode("plot");
    assert.equal(b.png, png);
    assert.equal(b.text, "7", "text is the main result's, not the first");
    assert.equal(b.mainResult, b.results[2]);
    assert.equal(b.results.length, 3);
    assert.equal(b.results[0].chart, png);
    assert.equal(b.results[0].is_main_result, false);
    assert.equal(b.results[1].html, "<table></table>");
    assert.equal(b.results[1].chart, undefined);
    assert.deepEqual(b.results[1].extra, { "application/vnd.plotly.v1+json": { a: 1 } });
    assert.deepEqual(b.results[2].json, { k: [1, 2] });
    assert.deepEqual(b.results[0].formats(), ["text", "png"]);
    assert.equal(b.execution_count, 2);

    const c = await ctx.runCode("1/0");
    assert.equal(c.error.name, "ZeroDivisionError");
    assert.equal(c.error.value, "division by zero");
    assert.match(String(c.error), /^ZeroDivisionError: division by zero\nTraceback/);
    assert.equal(c.exit_code, 1);
    assert.equal(c.text, undefined);

    const list = await sb.listCodeContexts();
    assert.deepEqual(list.map((x) => x.id), ["ctx_1"]);
    assert.equal(typeof list[0].runCode, "function", "listed contexts are handles");
    await ctx.close();
    assert.equal(fake.requests.at(-1).method, "DELETE");
    assert.equal(fake.requests.at(-1).path, `/v1/sandboxes/${ID}/contexts/ctx_1`);
  } finally {
    await fake.close();
  }
});

test("ctx.close() of a context already gone is not an error; Symbol.asyncDispose closes", async () => {
  const fake = await fakeDaemon({
    "POST /contexts": (req, res) => sendJson(res, 201, { id: "ctx_2", language: "python" }),
    "DELETE /contexts/ctx_2": (req, res) => sendError(res, 404, "context_not_found", "gone"),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const ctx = await sb.createCodeContext();
    await ctx.close();
    await ctx[Symbol.asyncDispose]();
    assert.equal(fake.requests.filter((r) => r.method === "DELETE").length, 2);
  } finally {
    await fake.close();
  }
});

test("ctx.interrupt() and ctx.restart() post {} to their routes; a gone context is NotFoundError", async () => {
  const fake = await fakeDaemon({
    "POST /contexts": (req, res) => sendJson(res, 201, { id: "ctx_3", language: "python" }),
    "POST /contexts/ctx_3/interrupt": (req, res) => { res.writeHead(204); res.end(); },
    "POST /contexts/ctx_3/restart": (req, res) => { res.writeHead(204); res.end(); },
    "POST /contexts/ctx_4/interrupt": (req, res) => sendError(res, 404, "context_not_found", "gone"),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const ctx = await sb.createCodeContext();
    assert.equal(await ctx.interrupt(), undefined);
    assert.equal(await ctx.restart(), undefined);
    const posted = fake.requests.filter((r) => r.method === "POST" && r.path.startsWith(`/v1/sandboxes/${ID}/contexts/ctx_3/`));
    assert.deepEqual(posted.map((r) => [r.path.split("/").at(-1), json(r)]), [["interrupt", {}], ["restart", {}]]);
    const gone = await sb.createCodeContext();
    Object.defineProperty(gone, "id", { value: "ctx_4" });
    await assert.rejects(gone.interrupt(), (e) => e instanceof NotFoundError && e.code === "context_not_found");
  } finally {
    await fake.close();
  }
});

test("bad timeoutSeconds and an empty sandbox id are refused before anything is sent", async () => {
  const fake = await fakeDaemon();
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const before = fake.requests.length;
    for (const bad of [NaN, Infinity, -1]) {
      await assert.rejects(sb.exec("true", { timeoutSeconds: bad }), RangeError);
      await assert.rejects(sb.runCode("1", "python", { timeoutSeconds: bad }), RangeError);
    }
    assert.equal(fake.requests.length, before);
    await assert.rejects(Sandbox.connect("", sdkOpts(fake)), TypeError);
    assert.equal(fake.requests.length, before);
  } finally {
    await fake.close();
  }
});

test("setTtl, getInfo, kill and list send the documented requests", async () => {
  const fake = await fakeDaemon({
    "POST /ttl": (req, res) => sendJson(res, 200, sandboxJson(ID, { expires_at: "2026-11-30T05:00:00.000Z" })),
    "DELETE ": (req, res) => { res.writeHead(204); res.end(); },
    "GET /v1/sandboxes": (req, res) => sendJson(res, 200, { sandboxes: [sandboxJson(ID), sandboxJson("sbx_ffffffffffffffffffff", { status: "stopped" })] }),
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const info = await sb.setTtl(7200);
    assert.equal(info.expires_at, "2026-11-30T05:00:00.000Z");
    assert.equal(sb.info.expires_at, "2026-11-30T05:00:00.000Z");
    assert.deepEqual(json(fake.requests[1]), { ttl_seconds: 7200 });
    assert.equal((await sb.getInfo()).status, "running");
    const list = await Sandbox.list({ ...sdkOpts(fake), status: "running", metadata: { user: "alice", "a.b": "c d" } });
    assert.deepEqual(list.map((s) => s.status), ["running", "stopped"]);
    const lreq = fake.requests.at(-1);
    assert.equal(lreq.query.get("status"), "running");
    assert.equal(lreq.query.get("metadata.user"), "alice");
    assert.equal(lreq.query.get("metadata.a.b"), "c d");
    await sb.kill();
    assert.equal(fake.requests.at(-1).method, "DELETE");
    assert.equal(fake.requests.at(-1).path, `/v1/sandboxes/${ID}`);
  } finally {
    await fake.close();
  }
});

test("filesystem: write, read, stat, list, mkdir, remove, exists", async () => {
  const files = new Map();
  const fake = await fakeDaemon({
    "PUT /fs": (req, res, rec) => {
      files.set(rec.query.get("path"), rec.body);
      sendJson(res, 200, { path: rec.query.get("path"), size: rec.body.length });
    },
    "GET /fs": (req, res, rec) => {
      const b = files.get(rec.query.get("path"));
      if (!b) return sendError(res, 404, "file_not_found", "ENOENT");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": b.length });
      res.end(b);
    },
    "GET /fs/stat": (req, res, rec) => files.has(rec.query.get("path"))
      ? sendJson(res, 200, { name: "x", path: rec.query.get("path"), type: "file", size: 3, mode: 420, mtime_ms: 1 })
      : sendError(res, 404, "file_not_found", "ENOENT"),
    "GET /fs/list": (req, res, rec) => sendJson(res, 200, { path: rec.query.get("path"), entries: [{ name: "a", path: "/w/a", type: "file", size: 1, mode: 420, mtime_ms: 2 }], truncated: false }),
    "POST /fs/mkdir": (req, res, rec) => sendJson(res, 201, { name: "d", path: json(rec).path, type: "dir", size: 0, mode: 493, mtime_ms: 3 }),
    "DELETE /fs": (req, res) => { res.writeHead(204); res.end(); },
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const p = "/workspace/dir with space/ü&x=1.csv";
    assert.deepEqual(await sb.filesystem.write(p, "a,b\nç\n"), { path: p, size: 7 });
    assert.equal(files.get(p).toString("utf8"), "a,b\nç\n", "the path survives query encoding");
    assert.equal(await sb.filesystem.read(p), "a,b\nç\n");
    const bytes = await sb.filesystem.read(p, { format: "bytes" });
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(bytes.length, 7);
    await sb.filesystem.write("/w/bin", new Uint8Array([0, 255, 1]));
    assert.deepEqual([...files.get("/w/bin")], [0, 255, 1]);
    const stream = await sb.filesystem.read("/w/bin", { format: "stream" });
    const got = [];
    for await (const c of stream) got.push(...c);
    assert.deepEqual(got, [0, 255, 1]);
    await sb.filesystem.write("/w/s", new ReadableStream({
      start(c) { c.enqueue(new Uint8Array([1, 2])); c.enqueue(new Uint8Array([3])); c.close(); },
    }));
    assert.deepEqual([...files.get("/w/s")], [1, 2, 3]);
    assert.equal((await sb.filesystem.stat(p)).type, "file");
    assert.equal(await sb.filesystem.exists(p), true);
    assert.equal(await sb.filesystem.exists("/nope"), false);
    await assert.rejects(sb.filesystem.read("/nope"), NotFoundError);
    const l = await sb.filesystem.list("/w");
    assert.deepEqual(l.entries.map((e) => e.name), ["a"]);
    assert.equal(l.truncated, false);
    assert.equal((await sb.filesystem.mkdir("/w/d", { parents: false })).type, "dir");
    assert.deepEqual(json(fake.requests.at(-1)), { path: "/w/d", parents: false });
    await sb.filesystem.remove("/w/d", { recursive: true });
    assert.equal(fake.requests.at(-1).query.get("recursive"), "true");
    assert.equal(fake.requests.at(-1).query.get("path"), "/w/d");
  } finally {
    await fake.close();
  }
});

test("upload streams the file with its Content-Length; download writes it atomically", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-"));
  const data = Buffer.alloc(3 * 1024 * 1024 + 13);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + 7) & 0xff;
  writeFileSync(join(dir, "up.bin"), data);
  let stored = null;
  const fake = await fakeDaemon({
    "PUT /fs": (req, res, rec) => {
      stored = rec.body;
      sendJson(res, 200, { path: rec.query.get("path"), size: rec.body.length });
    },
    "GET /fs": (req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": stored.length });
      res.end(stored);
    },
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const up = await sb.filesystem.upload(join(dir, "up.bin"), "/workspace/up.bin");
    assert.deepEqual(up, { path: "/workspace/up.bin", size: data.length });
    const put = fake.requests.find((r) => r.method === "PUT");
    assert.equal(put.headers["content-length"], String(data.length));
    assert.equal(put.headers["content-type"], "application/octet-stream");
    assert.ok(stored.equals(data));
    const down = await sb.filesystem.download("/workspace/up.bin", join(dir, "down.bin"));
    assert.deepEqual(down, { path: join(dir, "down.bin"), size: data.length });
    assert.ok(readFileSync(join(dir, "down.bin")).equals(data));
    assert.deepEqual(readdirSync(dir).sort(), ["down.bin", "up.bin"], "no temporary file left");
    // an existing directory receives the file under the guest file's name
    const sub = join(dir, "sub");
    mkdirSync(sub);
    const intoDir = await sb.filesystem.download("/workspace/up.bin", sub);
    assert.deepEqual(intoDir, { path: join(sub, "up.bin"), size: data.length });
    assert.ok(readFileSync(join(sub, "up.bin")).equals(data));
    await assert.rejects(sb.filesystem.upload(join(dir, "missing.bin"), "/w/x"), (e) => e.code === "local_file_error");
  } finally {
    await fake.close();
  }
});
