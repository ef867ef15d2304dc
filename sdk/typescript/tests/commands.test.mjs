// Background commands: sandbox.exec(cmd, { background: true }) and the Command handle
// against a fake daemon: the requests sent, output read by offset until the end, kill, stdin.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, Command, TimeoutError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const CID = "cmd_0123456789abcdef0123";
const CP = `/v1/sandboxes/${ID}/commands/${CID}`;

function cmd(running = true, extra = {}) {
  return { id: CID, pid: 42, cmd: "sleep 9", cwd: "/workspace", started_at: "2026-12-01T18:00:00.000Z",
    running, ended_at: null, exit_code: null, signal: null, timed_out: false, stdout_bytes: 0,
    stderr_bytes: 0, stdin_open: running, ...extra };
}

function out(stdout, at, total, running, extra = {}) {
  return { stdout, stderr: "", stdout_offset: at, next_stdout_offset: at + Buffer.byteLength(stdout),
    stdout_dropped: 0, stdout_total: total, stderr_offset: 0, next_stderr_offset: 0, stderr_dropped: 0,
    stderr_total: 0, command: cmd(running, extra) };
}

async function fakeDaemon(reads) {
  return startFake(async (req, res, rec) => {
    const key = `${rec.method} ${rec.path}`;
    if (key === "POST /v1/sandboxes") return sendJson(res, 201, sandboxJson(ID));
    if (key === `POST /v1/sandboxes/${ID}/exec`) return sendJson(res, 201, cmd());
    if (key === `GET /v1/sandboxes/${ID}/commands`) return sendJson(res, 200, { commands: [cmd(), 5] });
    if (key === `GET ${CP}/output`) return sendJson(res, 200, reads.length > 1 ? reads.shift() : reads[0]);
    if (key === `POST ${CP}/kill`) return sendJson(res, 200, cmd(false, { exit_code: 143, signal: 15 }));
    if (key === `POST ${CP}/stdin`) return sendJson(res, 200, { written: 3, stdin_open: false });
    sendError(res, 404, "not_found", `no route ${key}`);
  });
}

const json = (rec) => JSON.parse(rec.body.toString("utf8"));

test("exec with background: true returns a Command; wait reads by offset until the end", async () => {
  const fake = await fakeDaemon([out("a\n", 0, 2, true), out("b\n", 2, 4, true), out("", 4, 4, false, { exit_code: 3 })]);
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    const c = await sb.exec("sleep 9", { background: true, cwd: "/tmp", timeoutSeconds: 5 });
    assert.ok(c instanceof Command);
    assert.equal(c.id, CID);
    assert.equal(c.pid, 42);
    const start = fake.requests.find((r) => r.path.endsWith("/exec"));
    assert.deepEqual(json(start), { cmd: "sleep 9", cwd: "/tmp", timeout_seconds: 5, background: true });
    const r = await c.wait({ timeoutSeconds: 60 });
    assert.equal(r.stdout, "a\nb\n");
    assert.equal(r.exit_code, 3);
    const offsets = fake.requests.filter((q) => q.path === `${CP}/output`)
      .map((q) => q.query.get("stdout_offset"));
    assert.deepEqual(offsets, ["0", "2", "4"]);
    assert.equal(c.info.running, false);
    assert.equal((await c.kill("SIGTERM")).signal, 15);
    assert.deepEqual(json(fake.requests.find((q) => q.path === `${CP}/kill`)), { signal: "SIGTERM" });
    assert.equal(await c.sendStdin("hi\n", { eof: true }), 3);
    assert.deepEqual(json(fake.requests.find((q) => q.path === `${CP}/stdin`)), { data: "hi\n", eof: true });
    const listed = await sb.listCommands().catch((e) => e);
    assert.ok(listed instanceof Error, "a listing with an entry without an id is an invalid response");
  } finally {
    await fake.close();
  }
});

test("wait past its timeout throws TimeoutError and leaves the command running", async () => {
  const fake = await fakeDaemon([out("", 0, 0, true)]);
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    const c = await sb.exec("sleep 9", { background: true });
    await assert.rejects(c.wait({ timeoutSeconds: 0.2 }), (e) => e instanceof TimeoutError && e.code === "client_timeout");
    await assert.rejects(c.output({ waitSeconds: 61 }), RangeError);
  } finally {
    await fake.close();
  }
});
