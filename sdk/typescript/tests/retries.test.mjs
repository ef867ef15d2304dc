// Retries only where safe: idempotent calls and connections never made.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Sandbox, SandboxError, ConnectionError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts, freePort } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";

/** A fake whose handler for /v1/sandboxes/{ID} GET answers the sandbox, and `route` for the rest. */
function withSandbox(route) {
  return (req, res, rec) => {
    if (rec.method === "GET" && rec.path === `/v1/sandboxes/${ID}`) return route.get ? route.get(req, res, rec) : sendJson(res, 200, sandboxJson(ID));
    return route.other(req, res, rec);
  };
}

test("GET is retried after 503 and succeeds", async () => {
  let n = 0;
  const fake = await startFake((req, res) => {
    n++;
    if (n < 3) return sendError(res, 503, "agent_busy", "busy");
    sendJson(res, 200, sandboxJson(ID));
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 2 }));
    assert.equal(sb.id, ID);
    assert.equal(fake.requests.length, 3);
  } finally {
    await fake.close();
  }
});

test("GET retries are bounded by maxRetries, then the error is thrown", async () => {
  const fake = await startFake((req, res) => sendError(res, 502, "agent_unavailable", "lost"));
  try {
    const err = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 1 })).catch((e) => e);
    assert.ok(err instanceof SandboxError);
    assert.equal(err.status, 502);
    assert.equal(fake.requests.length, 2);
  } finally {
    await fake.close();
  }
});

test("maxRetries: 0 turns retries off", async () => {
  const fake = await startFake((req, res) => sendError(res, 503, "agent_busy", "busy"));
  try {
    await assert.rejects(Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 0 })), SandboxError);
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});

test("GET is not retried after 500, 404 or 429", async () => {
  for (const [status, code] of [[500, "internal"], [404, "sandbox_not_found"], [429, "too_many_sandboxes"]]) {
    const fake = await startFake((req, res) => sendError(res, status, code, "no"));
    try {
      await assert.rejects(Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 3 })));
      assert.equal(fake.requests.length, 1, `status ${status}`);
    } finally {
      await fake.close();
    }
  }
});

test("POST exec that got 503 is not retried (it may have run)", async () => {
  const fake = await startFake(withSandbox({ other: (req, res) => sendError(res, 503, "agent_busy", "busy") }));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 3 }));
    await assert.rejects(sb.exec("echo once"), SandboxError);
    assert.equal(fake.requests.filter((r) => r.path.endsWith("/exec")).length, 1);
  } finally {
    await fake.close();
  }
});

test("POST exec whose connection broke after sending is not retried", async () => {
  const fake = await startFake(withSandbox({ other: (req) => req.socket.destroy() }));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 3 }));
    const err = await sb.exec("echo once").catch((e) => e);
    assert.ok(err instanceof ConnectionError, `got ${err}`);
    assert.equal(err.code, "connection_failed");
    assert.equal(fake.requests.filter((r) => r.path.endsWith("/exec")).length, 1);
  } finally {
    await fake.close();
  }
});

test("GET whose connection broke is retried", async () => {
  let n = 0;
  const fake = await startFake((req, res) => {
    if (++n === 1) return req.socket.destroy();
    sendJson(res, 200, sandboxJson(ID));
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 2 }));
    assert.equal(sb.id, ID);
    assert.equal(fake.requests.length, 2);
  } finally {
    await fake.close();
  }
});

test("POST create is retried when the connection was refused (nothing was sent)", async () => {
  const port = await freePort();
  const received = [];
  const server = http.createServer((req, res) => {
    received.push(req.method + " " + req.url);
    req.resume();
    req.on("end", () => sendJson(res, 201, sandboxJson(ID)));
  });
  // The daemon comes up 50 ms after the first attempt was refused.
  setTimeout(() => server.listen(port, "127.0.0.1"), 50);
  try {
    const sb = await Sandbox.create({
      apiKey: "pds_x", apiUrl: `http://127.0.0.1:${port}`, template: "base", maxRetries: 4,
    });
    assert.equal(sb.id, ID);
    assert.deepEqual(received, ["POST /v1/sandboxes"], "exactly one request reached the server");
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test("kill: a retried DELETE that finds the sandbox gone counts as done", async () => {
  let deletes = 0;
  const fake = await startFake(withSandbox({
    other: (req, res) => {
      if (++deletes === 1) return req.socket.destroy(); // the answer of the first attempt is lost
      sendError(res, 404, "sandbox_not_found", "gone");
    },
  }));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 2 }));
    await sb.kill();
    assert.equal(deletes, 2);
  } finally {
    await fake.close();
  }
});

test("kill of a sandbox that is already gone resolves; other kill errors are thrown", async () => {
  let status = 404;
  const fake = await startFake(withSandbox({
    other: (req, res) => sendError(res, status, status === 404 ? "sandbox_not_found" : "internal", "x"),
  }));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    await sb.kill();
    await sb[Symbol.asyncDispose]();
    status = 500;
    await assert.rejects(sb.kill(), (e) => e instanceof SandboxError && e.status === 500);
  } finally {
    await fake.close();
  }
});

test("an upload (PUT with a streamed body) is not retried after the connection broke", async () => {
  const fake = await startFake(withSandbox({ other: (req) => req.socket.destroy() }), { readBody: false });
  const { mkdtempSync, writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-"));
  writeFileSync(join(dir, "f.bin"), Buffer.alloc(1024, 1));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { maxRetries: 3 }));
    await assert.rejects(sb.filesystem.upload(join(dir, "f.bin"), "/workspace/f.bin"), ConnectionError);
    assert.equal(fake.requests.filter((r) => r.method === "PUT").length, 1);
  } finally {
    await fake.close();
  }
});
