// Client deadlines: ordinary calls, exec (timeoutSeconds + margin), transfers (idle limit), aborts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Sandbox, TimeoutError, PandaStackError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";

test("a call with no answer fails with TimeoutError(client_timeout) at requestTimeoutMs", async () => {
  const fake = await startFake(() => { /* never answers */ });
  try {
    const t0 = Date.now();
    const err = await Sandbox.connect(ID, sdkOpts(fake, { requestTimeoutMs: 300, maxRetries: 2 })).catch((e) => e);
    const ms = Date.now() - t0;
    assert.ok(err instanceof TimeoutError, `got ${err}`);
    assert.ok(err instanceof PandaStackError);
    assert.equal(err.code, "client_timeout");
    assert.equal(err.status, undefined);
    assert.ok(ms >= 250 && ms < 3000, `took ${ms} ms`);
    assert.equal(fake.requests.length, 1, "a timed-out call is not repeated");
  } finally {
    await fake.close();
  }
});

test("a body that stalls after the headers also hits the deadline", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"id": "sbx_');
  });
  try {
    const err = await Sandbox.connect(ID, sdkOpts(fake, { requestTimeoutMs: 300 })).catch((e) => e);
    assert.ok(err instanceof TimeoutError, `got ${err}`);
    assert.equal(err.code, "client_timeout");
  } finally {
    await fake.close();
  }
});

test("exec waits past requestTimeoutMs: its deadline follows timeoutSeconds", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.method === "GET") return sendJson(res, 200, sandboxJson(ID));
    setTimeout(() => sendJson(res, 200, { stdout: "late\n", stderr: "", exit_code: 0, duration_ms: 600 }), 600);
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { requestTimeoutMs: 200 }));
    const r = await sb.exec("sleep 0.6", { timeoutSeconds: 5 });
    assert.equal(r.stdout, "late\n");
  } finally {
    await fake.close();
  }
});

test("create and createCodeContext wait past requestTimeoutMs (a restore may take the daemon's 30 s)", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.method === "POST" && rec.path === "/v1/sandboxes") {
      return setTimeout(() => sendJson(res, 201, sandboxJson(ID)), 500);
    }
    if (rec.method === "POST" && rec.path.endsWith("/contexts")) {
      return setTimeout(() => sendJson(res, 201, { id: "ctx_1", language: "python" }), 500);
    }
    if (rec.method === "GET") return; // never answers
    sendError(res, 404, "not_found", "no");
  });
  try {
    const sb = await Sandbox.create({ ...sdkOpts(fake, { requestTimeoutMs: 200 }), template: "base" });
    const ctx = await sb.createCodeContext();
    assert.equal(ctx.id, "ctx_1");
    const t0 = Date.now();
    await assert.rejects(sb.getInfo(), TimeoutError, "ordinary calls keep requestTimeoutMs");
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    await fake.close();
  }
});

test("a download that stalls mid-body fails with TimeoutError and leaves no file", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.path.endsWith("/fs")) {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 1000 });
      res.write(Buffer.alloc(100, 65)); // then silence
      return;
    }
    sendJson(res, 200, sandboxJson(ID));
  });
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-"));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { requestTimeoutMs: 300 }));
    const err = await sb.filesystem.download("/workspace/big", join(dir, "big")).catch((e) => e);
    assert.ok(err instanceof TimeoutError, `got ${err}`);
    assert.equal(existsSync(join(dir, "big")), false);
    assert.deepEqual(readdirSync(dir), [], "the temporary file is removed");
  } finally {
    await fake.close();
  }
});

test("a slow but steady download is not cut by the idle limit", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.path.endsWith("/fs")) {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 10 });
      let i = 0;
      const t = setInterval(() => {
        res.write("x");
        if (++i === 10) { clearInterval(t); res.end(); }
      }, 60); // 600 ms in all, never 200 ms of silence
      return;
    }
    sendJson(res, 200, sandboxJson(ID));
  });
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-"));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake, { requestTimeoutMs: 250 }));
    const info = await sb.filesystem.download("/workspace/slow", join(dir, "slow"));
    assert.equal(info.size, 10);
  } finally {
    await fake.close();
  }
});

test("a download whose connection ends early is an error and leaves no file", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.path.endsWith("/fs")) {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 1000 });
      res.write(Buffer.alloc(100, 65), () => res.destroy());
      return;
    }
    sendJson(res, 200, sandboxJson(ID));
  });
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-"));
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const err = await sb.filesystem.download("/workspace/cut", join(dir, "cut")).catch((e) => e);
    assert.ok(err instanceof PandaStackError, `got ${err}`);
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    await fake.close();
  }
});

test("the caller's AbortSignal cancels a call with the caller's reason", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.method === "GET") return sendJson(res, 200, sandboxJson(ID));
    /* the exec never answers */
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("user gave up")), 100);
    await assert.rejects(sb.exec("sleep 100", { signal: ac.signal }), /user gave up/);
  } finally {
    await fake.close();
  }
});
