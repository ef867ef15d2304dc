// Large and streamed bodies go with "Expect: 100-continue", so an answer the
// daemon gives before reading the body (413 from Content-Length, 409 for a
// directory, 404) reaches the caller as its typed error, and the body is not sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Sandbox, SandboxError, NotFoundError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-expect-"));
const big = join(dir, "big.bin");
writeFileSync(big, Buffer.alloc(8 * 1024 * 1024, 7));

/** A fake that answers PUTs with Expect at once with `status`, never sending 100 Continue. */
async function refusingFake(status, code) {
  const seen = { expect: [], bodyBytes: 0 };
  const fake = await startFake((req, res, rec) => {
    if (rec.method === "GET") return sendJson(res, 200, sandboxJson(ID));
    req.on("data", (c) => { seen.bodyBytes += c.length; });
    sendError(res, 500, "internal", "a PUT came without Expect");
  }, { readBody: false });
  fake.server.on("checkContinue", (req, res) => {
    seen.expect.push(req.headers.expect);
    req.on("data", (c) => { seen.bodyBytes += c.length; });
    sendError(res, status, code, `refused with ${status}`);
  });
  return { fake, seen };
}

for (const [status, code, Cls, what] of [
  [413, "body_too_large", SandboxError, "upload"],
  [409, "is_a_directory", SandboxError, "upload"],
  [404, "sandbox_not_found", NotFoundError, "upload"],
  [413, "body_too_large", SandboxError, "write of 8 MiB"],
]) {
  test(`${what} refused early with ${status} ${code} -> ${Cls.name}, body not sent`, async () => {
    const { fake, seen } = await refusingFake(status, code);
    try {
      const sb = await Sandbox.connect(ID, sdkOpts(fake));
      const p = what === "upload"
        ? sb.filesystem.upload(big, "/workspace/big.bin")
        : sb.filesystem.write("/workspace/big.bin", new Uint8Array(8 * 1024 * 1024));
      const err = await p.catch((e) => e);
      assert.ok(err instanceof Cls, `got ${err}`);
      assert.equal(err.status, status);
      assert.equal(err.code, code);
      assert.deepEqual(seen.expect, ["100-continue"]);
      assert.equal(seen.bodyBytes, 0, "the body was not sent");
    } finally {
      await fake.close();
    }
  });
}

test("a server that ignores Expect gets the body after a short wait", async () => {
  let got = 0;
  const fake = await startFake((req, res, rec) => sendJson(res, 200, sandboxJson(ID)), { readBody: false });
  fake.server.on("checkContinue", (req, res) => {
    // Never writes 100 Continue; reads whatever comes and answers at the end.
    req.on("data", (c) => { got += c.length; });
    req.on("end", () => sendJson(res, 200, { path: "/w/big.bin", size: got }));
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    const t0 = Date.now();
    const info = await sb.filesystem.upload(big, "/w/big.bin");
    assert.equal(info.size, 8 * 1024 * 1024);
    assert.equal(got, 8 * 1024 * 1024);
    assert.ok(Date.now() - t0 >= 900, "it waited for a 100 Continue first");
  } finally {
    await fake.close();
  }
});

test("small writes go without Expect (no extra round trip)", async () => {
  const fake = await startFake((req, res, rec) => {
    if (rec.method === "GET") return sendJson(res, 200, sandboxJson(ID));
    sendJson(res, 200, { path: rec.query.get("path"), size: rec.body.length, expect: rec.headers.expect ?? null });
  });
  try {
    const sb = await Sandbox.connect(ID, sdkOpts(fake));
    await sb.filesystem.write("/w/small.txt", "hello");
    const put = fake.requests.find((r) => r.method === "PUT");
    assert.equal(put.headers.expect, undefined);
    assert.equal(put.body.toString(), "hello");
  } finally {
    await fake.close();
  }
});
