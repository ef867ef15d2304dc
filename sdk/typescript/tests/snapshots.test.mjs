// Snapshots, forks, pause and resume: what the SDK sends and how it reads the answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, SandboxError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const SNAP = "snap_0123456789abcdef0123";
const FORKS = ["sbx_aaaaaaaaaaaaaaaaaaaa", "sbx_bbbbbbbbbbbbbbbbbbbb"];
const snapJson = { id: SNAP, sandbox_id: ID, template: "code-interpreter", created_at: "2026-11-30T02:20:11.481Z",
  size_bytes: 54788096, name: "warm", parent: null };

async function fakeDaemon(inUse = false) {
  return startFake(async (req, res, rec) => {
    const key = `${rec.method} ${rec.path}`;
    const sb = `/v1/sandboxes/${ID}`;
    if (key === "POST /v1/sandboxes") return sendJson(res, 201, sandboxJson(ID));
    if (key === `POST ${sb}/snapshots`) return sendJson(res, 201, snapJson);
    if (key === `POST ${sb}/fork`) return sendJson(res, 201, { sandboxes: FORKS.map((f) => sandboxJson(f)) });
    if (key === `POST ${sb}/pause`) return sendJson(res, 200, { ...sandboxJson(ID), status: "paused" });
    if (key === `POST ${sb}/resume`) return sendJson(res, 200, sandboxJson(ID));
    if (key.startsWith("GET /v1/snapshots")) return sendJson(res, 200, { snapshots: [snapJson] });
    if (key === `DELETE /v1/snapshots/${SNAP}`) {
      if (inUse) return sendError(res, 409, "snapshot_in_use", "a paused sandbox needs it");
      res.writeHead(204);
      return res.end();
    }
    sendError(res, 404, "not_found", `no route ${key}`);
  });
}

const body = (rec) => (rec.body.length ? JSON.parse(rec.body.toString("utf8")) : null);

test("snapshot, fork, pause, resume, list and delete send their routes", async () => {
  const fake = await fakeDaemon();
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    const snap = await sb.snapshot({ name: "warm" });
    assert.deepEqual(snap, snapJson);
    const forks = await sb.fork(2, { ttlSeconds: 60 });
    assert.deepEqual(forks.map((f) => f.id), FORKS);
    assert.ok(forks[0] instanceof Sandbox);
    assert.equal((await sb.pause()).status, "paused");
    assert.equal(sb.status, "paused");
    assert.equal((await sb.resume()).status, "running");
    assert.equal((await sb.resume({ ttlSeconds: 120 })).status, "running");
    assert.equal((await Sandbox.listSnapshots({ ...sdkOpts(fake), sandboxId: ID }))[0].id, SNAP);
    await Sandbox.deleteSnapshot(SNAP, sdkOpts(fake));
    await Sandbox.create({ ...sdkOpts(fake), snapshot: SNAP, onTimeout: "pause" });
    assert.equal(fake.requests[6].query.get("sandbox_id"), ID);
    const sent = fake.requests.slice(1).map((r) => [r.method, r.path, body(r)]);
    assert.deepEqual(sent, [
      ["POST", `/v1/sandboxes/${ID}/snapshots`, { name: "warm" }],
      ["POST", `/v1/sandboxes/${ID}/fork`, { count: 2, ttl_seconds: 60 }],
      ["POST", `/v1/sandboxes/${ID}/pause`, null],
      ["POST", `/v1/sandboxes/${ID}/resume`, null],
      ["POST", `/v1/sandboxes/${ID}/resume`, { ttl_seconds: 120 }],
      ["GET", "/v1/snapshots", null],
      ["DELETE", `/v1/snapshots/${SNAP}`, null],
      ["POST", "/v1/sandboxes", { snapshot: SNAP, on_timeout: "pause" }],
    ]);
  } finally {
    await fake.close();
  }
});

test("a snapshot a paused sandbox needs is a typed 409; a bad count is refused before sending", async () => {
  const fake = await fakeDaemon(true);
  try {
    await assert.rejects(Sandbox.deleteSnapshot(SNAP, sdkOpts(fake)),
      (e) => e instanceof SandboxError && e.code === "snapshot_in_use" && e.status === 409);
    const sb = await Sandbox.create(sdkOpts(fake));
    const before = fake.requests.length;
    await assert.rejects(sb.fork(1.5), TypeError);
    assert.equal(fake.requests.length, before);
  } finally {
    await fake.close();
  }
});
