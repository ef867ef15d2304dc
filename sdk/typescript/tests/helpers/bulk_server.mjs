// A fake API for the memory test, run as its own process so that the test
// measures only the client's memory. It consumes uploads (hashing them,
// keeping nothing) and serves downloads of SIZE bytes generated on the fly.
// Prints "PORT <n>" once listening; exits when its stdin closes.
import http from "node:http";
import { createHash } from "node:crypto";

const SIZE = Number(process.argv[2]);
const BLOCK = 1024 * 1024;
const ID = "sbx_0123456789abcdef0123";

/** Block i of the download: deterministic bytes (the test rebuilds them to check). */
function block(i, n) {
  const b = Buffer.alloc(n);
  for (let j = 0; j < n; j += 4) b.writeUInt32LE(((i * 2654435761) ^ (j * 40503)) >>> 0, j);
  return b;
}

let lastUpload = null;
const server = http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  const json = (status, obj) => {
    const body = JSON.stringify(obj);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  };
  if (req.method === "GET" && u.pathname === `/v1/sandboxes/${ID}`) {
    return json(200, { id: ID, template: "t", status: "running", metadata: {} });
  }
  if (req.method === "PUT" && u.pathname.endsWith("/fs")) {
    const h = createHash("sha256");
    let n = 0;
    req.on("data", (c) => { h.update(c); n += c.length; });
    req.on("end", () => {
      lastUpload = { size: n, sha256: h.digest("hex") };
      json(200, { path: u.searchParams.get("path"), size: n });
    });
    return;
  }
  if (req.method === "GET" && u.pathname === "/last-upload") return json(200, lastUpload);
  if (req.method === "GET" && u.pathname.endsWith("/fs")) {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": SIZE });
    let i = 0;
    let sent = 0;
    const pump = () => {
      while (sent < SIZE) {
        const n = Math.min(BLOCK, SIZE - sent);
        const ok = res.write(block(i++, n));
        sent += n;
        if (!ok) return res.once("drain", pump);
      }
      res.end();
    };
    return pump();
  }
  json(404, { error: { code: "not_found", message: "no route" } });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`PORT ${server.address().port}\n`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();

