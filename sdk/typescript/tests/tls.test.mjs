// https: a client given a CA file (`caFile`, else PANDASTACK_CA_FILE) checks
// the daemon's certificate against it instead of Node's CA list, for every
// call (JSON, streams, small and large uploads, downloads); without one,
// Node's list (plus NODE_EXTRA_CA_CERTS) decides. An untrusted certificate, a
// server that does not speak TLS, or plain http to a TLS port fail at once
// with ConnectionError, never a hang and never a retry; a CA file that cannot
// be read fails before any request.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import net from "node:net";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { Sandbox, ConnectionError, PandaStackError } from "../dist/index.js";
import { startFake, sendJson, sendError, sandboxJson, sdkOpts } from "./helpers/fake_server.mjs";

const ID = "sbx_0123456789abcdef0123";
const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-tls-"));
const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
const skip = hasOpenssl ? false : "openssl is not installed";

/** A self-signed certificate for localhost: {cert, key} file paths. */
function selfSigned(name) {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
    "-keyout", key, "-out", cert], { stdio: "ignore", timeout: 60_000 });
  return { cert, key };
}

let server; // the fake's certificate: its own CA
let other; // a CA that did not sign it
before(() => {
  if (!hasOpenssl) return;
  server = selfSigned("server");
  other = selfSigned("other").cert;
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A fake daemon over TLS: sandbox, exec, an exec stream, files. */
async function tlsFake() {
  const files = new Map();
  return startFake(async (req, res, rec) => {
    const sub = rec.path.slice(`/v1/sandboxes/${ID}`.length);
    if (rec.method === "POST" && rec.path === "/v1/sandboxes") return sendJson(res, 201, sandboxJson(ID));
    if (rec.method === "GET" && rec.path === "/v1/sandboxes") return sendJson(res, 200, { sandboxes: [sandboxJson(ID)] });
    if (rec.method === "GET" && sub === "") return sendJson(res, 200, sandboxJson(ID));
    if (rec.method === "DELETE" && sub === "") return res.writeHead(204).end();
    if (rec.method === "POST" && sub === "/exec") {
      return sendJson(res, 200, { stdout: JSON.parse(rec.body).cmd, stderr: "", exit_code: 0, duration_ms: 1 });
    }
    if (rec.method === "POST" && sub === "/exec_stream") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('event: started\ndata: {"pid": 7}\n\nevent: stdout\ndata: {"data": "hi\\n"}\n\n');
      return setTimeout(() => res.end('event: exit\ndata: {"exit_code": 0, "duration_ms": 2}\n\n'), 20);
    }
    if (rec.method === "PUT" && sub === "/fs") {
      files.set(rec.query.get("path"), rec.body);
      return sendJson(res, 200, { path: rec.query.get("path"), size: rec.body.length });
    }
    if (rec.method === "GET" && sub === "/fs") {
      const b = files.get(rec.query.get("path"));
      if (!b) return sendError(res, 404, "file_not_found", "no such file");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": b.length });
      return res.end(b);
    }
    sendError(res, 404, "not_found", `no route ${rec.method} ${rec.path}`);
  }, { tls: { cert: readFileSync(server.cert), key: readFileSync(server.key) } });
}

/** Runs `fn(fake)` with a TLS fake and PANDASTACK_CA_FILE set to `envCa` (or unset), then cleans up. */
async function withFake(envCa, fn) {
  const saved = process.env.PANDASTACK_CA_FILE;
  if (envCa === undefined) delete process.env.PANDASTACK_CA_FILE;
  else process.env.PANDASTACK_CA_FILE = envCa;
  const fake = await tlsFake();
  try {
    await fn(fake);
  } finally {
    if (saved === undefined) delete process.env.PANDASTACK_CA_FILE;
    else process.env.PANDASTACK_CA_FILE = saved;
    await fake.close();
  }
}

/** Asserts that connecting fails with ConnectionError for an untrusted certificate; returns the error. */
async function refusedAsUntrusted(fake, opts) {
  const err = await Sandbox.connect(ID, sdkOpts(fake, opts)).catch((e) => e);
  assert.ok(err instanceof ConnectionError, `got ${err}`);
  assert.equal(err.code, "connection_failed");
  assert.match(err.message, /TLS certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT/);
  assert.match(err.message, /caFile/);
  assert.match(err.message, /PANDASTACK_CA_FILE/);
  return err;
}

test("without a CA file a self-signed daemon is refused at once, without retries", { skip }, async () => {
  await withFake(undefined, async (fake) => {
    await refusedAsUntrusted(fake, { maxRetries: 2 });
    assert.equal(fake.requests.length, 0);
    assert.equal(fake.connections, 1, "one handshake: a failed handshake is not retried");
  });
});

test("caFile: every kind of call goes over https with the given CA", { skip }, async () => {
  await withFake(undefined, async (fake) => {
    const opts = sdkOpts(fake, { caFile: server.cert });
    const sb = await Sandbox.create({ ...opts, template: "base" });
    assert.equal(sb.id, ID);
    assert.equal((await Sandbox.list(opts)).length, 1);
    assert.equal((await sb.getInfo()).status, "running");
    assert.equal((await sb.exec("echo over tls")).stdout, "echo over tls");
    const seen = [];
    const streamed = await sb.execStream("x", { onStdout: (d) => seen.push(d) });
    assert.deepEqual(seen, ["hi\n"]);
    assert.equal(streamed.exit_code, 0);
    await sb.filesystem.write("/w/small.txt", "small");
    assert.equal(await sb.filesystem.read("/w/small.txt"), "small");
    const big = Buffer.alloc(3 * 1024 * 1024 + 5);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + 3) & 0xff;
    writeFileSync(join(dir, "big.bin"), big);
    await sb.filesystem.upload(join(dir, "big.bin"), "/w/big.bin"); // a stream, Expect: 100-continue
    const put = fake.requests.find((r) => r.method === "PUT" && r.query.get("path") === "/w/big.bin");
    assert.equal(put.headers.expect, "100-continue");
    await sb.filesystem.download("/w/big.bin", join(dir, "back.bin"));
    assert.ok(readFileSync(join(dir, "back.bin")).equals(big));
    await sb.kill();
    assert.equal(fake.requests.at(-1).method, "DELETE");
    // Ordinary calls share kept-alive connections; an upload with Expect has its own.
    assert.ok(fake.connections <= 4, `${fake.connections} connections for ${fake.requests.length} calls`);
  });
});

test("PANDASTACK_CA_FILE is used when caFile is not given; caFile wins over it", { skip }, async () => {
  await withFake(server.cert, async (fake) => {
    assert.equal((await Sandbox.connect(ID, sdkOpts(fake))).id, ID);
  });
  await withFake("", async (fake) => {
    await refusedAsUntrusted(fake, { maxRetries: 0 }); // empty: unset
  });
  await withFake(other, async (fake) => {
    await refusedAsUntrusted(fake, { maxRetries: 0 });
    assert.equal((await Sandbox.connect(ID, sdkOpts(fake, { caFile: server.cert }))).id, ID);
  });
});

test("the CA file is used instead of Node's CA list (NODE_EXTRA_CA_CERTS)", { skip }, async () => {
  await withFake(undefined, async (fake) => {
    const sdk = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "index.js");
    const script = `
      import { Sandbox } from ${JSON.stringify(sdk)};
      const opts = { apiKey: "pds_${"ab".repeat(24)}", apiUrl: process.argv[1], maxRetries: 0 };
      if (process.argv[2]) opts.caFile = process.argv[2];
      try { await Sandbox.connect(${JSON.stringify(ID)}, opts); console.log("ok"); }
      catch (e) { console.log(e.name + ": " + e.message); }`;
    // Asynchronously: the fake serves from this process.
    const run = (caFile) => new Promise((resolve) => execFile(process.execPath,
      ["--input-type=module", "-e", script, fake.url, caFile],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: server.cert, PANDASTACK_CA_FILE: "" } },
      (e, stdout) => resolve(stdout.trim())));
    assert.equal(await run(""), "ok", "Node's list with NODE_EXTRA_CA_CERTS trusts the fake");
    assert.match(await run(other), /^ConnectionError: .*not trusted/, "the CA file replaces that list");
  });
});

test("a CA file that cannot be read fails before any request", { skip }, async () => {
  writeFileSync(join(dir, "junk.pem"), "not a certificate\n");
  writeFileSync(join(dir, "empty.pem"), "");
  writeFileSync(join(dir, "broken.pem"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  await withFake(undefined, async (fake) => {
    for (const name of ["missing.pem", "junk.pem", "empty.pem", "broken.pem"]) {
      const caFile = join(dir, name);
      const err = await Sandbox.connect(ID, sdkOpts(fake, { caFile })).catch((e) => e);
      assert.ok(err instanceof PandaStackError, `${name}: got ${err}`);
      assert.equal(err.code, "invalid_config", name);
      assert.ok(err.message.includes(caFile), err.message);
    }
    assert.equal(fake.connections, 0);
  });
});

test("caFile with a custom fetch is refused; PANDASTACK_CA_FILE leaves a custom fetch alone", { skip }, async () => {
  await withFake(join(dir, "missing.pem"), async (fake) => {
    const err = await Sandbox.connect(ID, sdkOpts(fake, { caFile: server.cert, fetch })).catch((e) => e);
    assert.equal(err.code, "invalid_config");
    let calls = 0;
    const myFetch = async () => {
      calls++;
      return new Response(JSON.stringify(sandboxJson(ID)), { status: 200 });
    };
    assert.equal((await Sandbox.connect(ID, sdkOpts(fake, { fetch: myFetch }))).id, ID);
    assert.equal(calls, 1);
  });
});

test("the CA file is not read for an http URL", async () => {
  const fake = await startFake((req, res) => sendJson(res, 200, sandboxJson(ID)));
  try {
    assert.equal((await Sandbox.connect(ID, sdkOpts(fake, { caFile: join(dir, "missing.pem") }))).id, ID);
  } finally {
    await fake.close();
  }
});

test("plain http to the TLS port fails cleanly", { skip }, async () => {
  await withFake(undefined, async (fake) => {
    const err = await Sandbox.connect(ID, { ...sdkOpts(fake, { maxRetries: 0 }), apiUrl: `http://127.0.0.1:${fake.port}` })
      .catch((e) => e);
    assert.ok(err instanceof ConnectionError, `got ${err}`);
    assert.equal(fake.requests.length, 0);
  });
});

test("https to a server that does not speak TLS fails once, without retries", { skip }, async () => {
  let accepted = 0;
  const plain = net.createServer((s) => {
    accepted++;
    s.once("data", () => s.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"));
    s.on("error", () => undefined);
  });
  await new Promise((r) => plain.listen(0, "127.0.0.1", r));
  try {
    const url = `https://localhost:${plain.address().port}`;
    for (const caFile of [undefined, server.cert]) {
      accepted = 0;
      const err = await Sandbox.connect(ID, { apiKey: "pds_" + "ab".repeat(24), apiUrl: url, maxRetries: 2, caFile })
        .catch((e) => e);
      assert.ok(err instanceof ConnectionError, `got ${err}`);
      assert.match(err.message, /TLS handshake failed .*wrong version number/);
      assert.equal(accepted, 1, `caFile ${caFile}: one connection`);
    }
  } finally {
    await new Promise((r) => plain.close(r));
  }
});
