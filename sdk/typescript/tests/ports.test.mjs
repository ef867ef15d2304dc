// Exposed ports and network settings: the network object at create,
// updateNetwork's request, getHost/getUrl by host name and by path, and the
// access token kept across answers that do not carry it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, PandaStackError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const TOKEN = "pdt_" + "ab".repeat(24);
const json = (rec) => JSON.parse(rec.body.toString("utf8"));

async function fakeDaemon(extra = {}) {
  return startFake(async (req, res, rec) => {
    if (rec.method === "POST" && rec.path === "/v1/sandboxes")
      return sendJson(res, 201, sandboxJson(ID, { network: { public_ports: false }, access_token: TOKEN, ...extra }));
    if (rec.method === "POST" && rec.path === `/v1/sandboxes/${ID}/ttl`) return sendJson(res, 200, sandboxJson(ID));
    if (rec.method === "PUT" && rec.path === `/v1/sandboxes/${ID}/network`) return sendJson(res, 200, { egress: "deny", allow_out: ["pypi.org"], deny_out: [] });
    sendError(res, 404, "not_found", "no route");
  });
}

test("create sends the network object; the answer's token and network are kept", async () => {
  const fake = await fakeDaemon();
  try {
    const sb = await Sandbox.create({ ...sdkOpts(fake), template: "base", network: { public_ports: true, egress: "deny" } });
    assert.deepEqual(json(fake.requests[0]), { template: "base", network: { public_ports: true, egress: "deny" } });
    assert.equal(sb.accessToken, TOKEN);
    assert.deepEqual(sb.info.network, { public_ports: false });
    await assert.rejects(Sandbox.create({ ...sdkOpts(fake), network: ["x"] }), TypeError);
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});

test("updateNetwork sends PUT .../network and returns the settings", async () => {
  const fake = await fakeDaemon();
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    const got = await sb.updateNetwork({ egress: "deny", allow_out: ["pypi.org"] });
    const req = fake.requests.at(-1);
    assert.equal(req.method, "PUT");
    assert.equal(req.path, `/v1/sandboxes/${ID}/network`);
    assert.deepEqual(json(req), { egress: "deny", allow_out: ["pypi.org"] });
    assert.deepEqual(got.allow_out, ["pypi.org"]);
  } finally {
    await fake.close();
  }
});

test("getUrl by path without a proxy domain; getHost null", async () => {
  const fake = await fakeDaemon({ proxy_domain: null });
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    const base = sdkOpts(fake).apiUrl.replace(/\/$/, "");
    assert.equal(sb.getHost(8000), null);
    assert.equal(sb.getUrl(8000), `${base}/v1/sandboxes/${ID}/ports/8000/`);
    assert.equal(sb.getUrl(8000, { path: "/a/b?c=1" }), `${base}/v1/sandboxes/${ID}/ports/8000/a/b?c=1`);
    assert.equal(sb.getUrl(8000, { path: "x", withToken: true }), `${base}/v1/sandboxes/${ID}/ports/8000/x?access_token=${TOKEN}`);
    assert.ok(sb.getUrl(1, { path: "x?y=1", withToken: true }).endsWith(`/ports/1/x?y=1&access_token=${TOKEN}`));
    for (const bad of [0, 65536, -1, 8.5, NaN]) {
      assert.throws(() => sb.getUrl(bad), RangeError);
      assert.throws(() => sb.getHost(bad), RangeError);
    }
  } finally {
    await fake.close();
  }
});

test("getHost and getUrl by host name with a proxy domain, kept after setTtl", async () => {
  const fake = await fakeDaemon({ proxy_domain: "sbx.example.com" });
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    await sb.setTtl(60); // its answer has no token and no domain
    const host = `8000-${ID.replace("_", "-")}.sbx.example.com`;
    assert.equal(sb.getHost(8000), host);
    const port = new URL(sdkOpts(fake).apiUrl).port;
    assert.equal(sb.getUrl(8000, { path: "index.html" }), `http://${host}:${port}/index.html`);
    assert.equal(sb.accessToken, TOKEN);
  } finally {
    await fake.close();
  }
});

test("withToken without a token is a client error", async () => {
  const fake = await startFake(async (req, res, rec) => sendJson(res, 201, sandboxJson(ID)));
  try {
    const sb = await Sandbox.create(sdkOpts(fake));
    assert.equal(sb.accessToken, null);
    assert.throws(() => sb.getUrl(80, { withToken: true }), (e) => e instanceof PandaStackError && e.code === "no_access_token");
  } finally {
    await fake.close();
  }
});
