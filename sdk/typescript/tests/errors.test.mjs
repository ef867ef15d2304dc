// Error mapping: the API's status and {"error": {code, message}} become typed errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Sandbox, PandaStackError, AuthenticationError, NotFoundError, TimeoutError,
  RateLimitError, SandboxError, ConnectionError,
} from "../dist/index.js";
import { startFake, sendError, sdkOpts, freePort } from "./helpers/fake_server.mjs";

const cases = [
  [400, "invalid_field", SandboxError],
  [401, "unauthorized", AuthenticationError],
  [403, "forbidden", SandboxError],
  [404, "template_not_found", NotFoundError],
  [408, "request_timeout", TimeoutError],
  [409, "template_stale", SandboxError],
  [413, "body_too_large", SandboxError],
  [429, "too_many_sandboxes", RateLimitError],
  [500, "vm_start_failed", SandboxError],
  [502, "agent_unavailable", SandboxError],
  [503, "agent_busy", SandboxError],
  [504, "agent_timeout", TimeoutError],
  [507, "no_space", SandboxError],
];

for (const [status, code, Cls] of cases) {
  test(`HTTP ${status} ${code} -> ${Cls.name} carrying code, message and status`, async () => {
    const fake = await startFake((req, res) => sendError(res, status, code, `the message for ${status}`));
    try {
      const err = await Sandbox.create({ ...sdkOpts(fake), template: "base" }).then(
        () => assert.fail("create did not throw"),
        (e) => e,
      );
      assert.ok(err instanceof Cls, `got ${err?.constructor?.name}: ${err}`);
      assert.ok(err instanceof PandaStackError);
      assert.equal(err.name, Cls.name);
      assert.equal(err.code, code);
      assert.equal(err.status, status);
      assert.equal(err.message, `the message for ${status}`);
      assert.equal(fake.requests.length, 1, "a POST is never retried after an answer");
    } finally {
      await fake.close();
    }
  });
}

test("an error body that is not JSON still maps by status", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(500, { "content-type": "text/html" });
    res.end("<html>proxy exploded</html>");
  });
  try {
    const err = await Sandbox.connect("sbx_0123456789abcdef0123", sdkOpts(fake, { maxRetries: 0 })).catch((e) => e);
    assert.ok(err instanceof SandboxError);
    assert.equal(err.status, 500);
    assert.equal(err.code, "http_500");
    assert.match(err.message, /proxy exploded/);
  } finally {
    await fake.close();
  }
});

// An error event inside a stream has no status of its own: the API's error
// table (generated from the daemon's) gives the status its code is sent with.
const streamCases = [
  ["too_many_contexts", RateLimitError],
  ["file_not_found", NotFoundError],
  ["agent_timeout", TimeoutError],
  ["sandbox_not_running", SandboxError],
  ["unauthorized", AuthenticationError],
  ["vm_start_failed", SandboxError],
  // not API codes: a name that merely looks like one, and an Object.prototype key
  ["thing_not_found", SandboxError],
  ["constructor", SandboxError],
];

for (const [code, Cls] of streamCases) {
  test(`an exec_stream error event ${code} -> ${Cls.name}`, async () => {
    const fake = await startFake((req, res) => {
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ id: "sbx_0123456789abcdef0123", status: "running" }));
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`event: error\ndata: {"error": {"code": "${code}", "message": "m"}}\n\n`);
    });
    try {
      const sb = await Sandbox.connect("sbx_0123456789abcdef0123", sdkOpts(fake));
      const err = await sb.execStream("true").catch((e) => e);
      assert.equal(err.constructor, Cls, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.code, code);
      assert.equal(err.status, undefined);
    } finally {
      await fake.close();
    }
  });
}

test("a huge error body is read only up to its cap", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(404, { "content-type": "application/json" });
    res.write('{"error": {"code": "sandbox_not_found", "message": "');
    res.end("x".repeat(2 * 1024 * 1024) + '"}}');
  });
  try {
    const err = await Sandbox.connect("sbx_0123456789abcdef0123", sdkOpts(fake)).catch((e) => e);
    assert.ok(err instanceof NotFoundError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "http_404", "the cut body is not JSON, so the status decides");
    assert.ok(err.message.length < 1000);
  } finally {
    await fake.close();
  }
});

test("connection refused -> ConnectionError after the bounded retries", async () => {
  const port = await freePort();
  const t0 = Date.now();
  const err = await Sandbox.create({
    apiKey: "pds_x", apiUrl: `http://127.0.0.1:${port}`, template: "base", maxRetries: 2,
  }).catch((e) => e);
  assert.ok(err instanceof ConnectionError, `got ${err}`);
  assert.ok(err instanceof PandaStackError);
  assert.equal(err.code, "connection_failed");
  assert.equal(err.status, undefined);
  assert.match(err.message, /ECONNREFUSED/);
  assert.ok(Date.now() - t0 < 5000, "the backoff is bounded");
});

test("no API key -> AuthenticationError before any request", async () => {
  const saved = process.env.PANDASTACK_API_KEY;
  delete process.env.PANDASTACK_API_KEY;
  try {
    const err = await Sandbox.create({ apiUrl: "http://127.0.0.1:9", template: "base" }).catch((e) => e);
    assert.ok(err instanceof AuthenticationError);
    assert.equal(err.code, "missing_api_key");
  } finally {
    if (saved !== undefined) process.env.PANDASTACK_API_KEY = saved;
  }
});

test("a bad API URL -> PandaStackError invalid_config", async () => {
  const err = await Sandbox.list({ apiKey: "k", apiUrl: "ftp://example.invalid" }).catch((e) => e);
  assert.ok(err instanceof PandaStackError);
  assert.equal(err.code, "invalid_config");
});

test("a 2xx answer that is not JSON -> invalid_response", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{not json");
  });
  try {
    const err = await Sandbox.connect("sbx_0123456789abcdef0123", sdkOpts(fake)).catch((e) => e);
    assert.ok(err instanceof PandaStackError);
    assert.equal(err.code, "invalid_response");
  } finally {
    await fake.close();
  }
});

test("a sandbox answer without an id -> invalid_response, not a crash", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(201, { "content-type": "application/json" });
    res.end('{"template": 7, "id": null}');
  });
  try {
    const err = await Sandbox.create({ ...sdkOpts(fake), template: "base" }).catch((e) => e);
    assert.ok(err instanceof PandaStackError);
    assert.equal(err.code, "invalid_response");
  } finally {
    await fake.close();
  }
});
