// A local fake of the PandaStack API for the SDK's unit tests: an HTTP server
// on 127.0.0.1 (a free port) that records every request and answers through a
// handler the test gives. Nothing here talks to a real daemon.
import http from "node:http";
import https from "node:https";

/**
 * Starts a fake API. `handler(req, res, rec)` answers; `rec` is the recorded
 * request ({method, path, query, headers, body: Buffer}) with the body already
 * read, unless `opts.readBody` is false (then `rec.body` is null and the handler
 * owns the request stream). With `opts.tls` ({cert, key}: PEM) it serves
 * HTTPS at https://localhost:PORT. Returns {url, port, requests, server,
 * connections (how many were accepted), close()}.
 */
export async function startFake(handler, opts = {}) {
  const readBody = opts.readBody ?? true;
  const requests = [];
  const listener = async (req, res) => {
    const u = new URL(req.url, "http://fake");
    const rec = {
      method: req.method,
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body: null,
    };
    requests.push(rec);
    try {
      if (readBody) {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        rec.body = Buffer.concat(chunks);
      }
      await handler(req, res, rec);
    } catch (e) {
      if (!res.headersSent) {
        res.writeHead(599);
        res.end(String(e));
      } else {
        res.destroy();
      }
    }
  };
  const server = opts.tls ? https.createServer(opts.tls, listener) : http.createServer(listener);
  const fake = { port: 0, url: "", requests, server, connections: 0 };
  server.on("connection", () => fake.connections++);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return Object.assign(fake, {
    url: opts.tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`,
    port,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  });
}

/** Answers JSON with a status. */
export function sendJson(res, status, obj) {
  const body = Buffer.from(JSON.stringify(obj));
  res.writeHead(status, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}

/** Answers the API's error shape. */
export function sendError(res, status, code, message) {
  sendJson(res, status, { error: { code, message } });
}

/** A sandbox object as the daemon returns it. */
export function sandboxJson(id = "sbx_0123456789abcdef0123", extra = {}) {
  return {
    id,
    template: "code-interpreter",
    status: "running",
    reason: null,
    created_at: "2026-11-30T02:18:52.123Z",
    expires_at: "2026-11-30T03:18:52.123Z",
    ended_at: null,
    vcpus: 1,
    memory_mib: 1024,
    metadata: {},
    ...extra,
  };
}

/** Options for the SDK pointing at a fake: key, URL, short timeouts. */
export function sdkOpts(fake, extra = {}) {
  return { apiKey: "pds_" + "ab".repeat(24), apiUrl: fake.url, requestTimeoutMs: 5000, ...extra };
}

/** A port on 127.0.0.1 with nothing listening (bound, read, released). */
export async function freePort() {
  const s = http.createServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}
