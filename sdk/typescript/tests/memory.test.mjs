// A 200 MiB upload and download through the SDK keep the client's memory flat:
// the client's peak RSS grows by far less than the file's size. The fake API
// runs in a child process, so only the client is measured.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, openSync, writeSync, closeSync, createReadStream, rmSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { Sandbox } from "../dist/index.js";

const SIZE = 200 * 1024 * 1024;
const MiB = 1024 * 1024;
const here = dirname(fileURLToPath(import.meta.url));

/** The same bytes as bulk_server.mjs's block(). */
function block(i, n) {
  const b = Buffer.alloc(n);
  for (let j = 0; j < n; j += 4) b.writeUInt32LE(((i * 2654435761) ^ (j * 40503)) >>> 0, j);
  return b;
}

async function sha256File(path) {
  const h = createHash("sha256");
  for await (const c of createReadStream(path)) h.update(c);
  return h.digest("hex");
}

/** Runs `fn` while sampling RSS every 10 ms; returns the peak growth over the RSS before, bytes. */
async function peakRssGrowth(fn) {
  const before = process.memoryUsage.rss();
  let peak = before;
  const t = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 10);
  try {
    await fn();
  } finally {
    clearInterval(t);
  }
  peak = Math.max(peak, process.memoryUsage.rss());
  return peak - before;
}

test("200 MiB upload and download keep the client's memory flat", { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "pandastack-ts-mem-"));
  const server = spawn(process.execPath, [join(here, "helpers", "bulk_server.mjs"), String(SIZE)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  try {
    const [line] = await once(server.stdout, "data");
    const port = Number(/PORT (\d+)/.exec(String(line))[1]);
    const url = `http://127.0.0.1:${port}`;

    // The file to upload: 200 MiB written block by block (never whole in memory).
    const src = join(dir, "src.bin");
    const fd = openSync(src, "w");
    const h = createHash("sha256");
    for (let i = 0; i < SIZE / MiB; i++) {
      const b = block(i + 7, MiB);
      h.update(b);
      writeSync(fd, b);
    }
    closeSync(fd);
    const srcSha = h.digest("hex");

    const sb = await Sandbox.connect("sbx_0123456789abcdef0123", { apiKey: "pds_x", apiUrl: url });

    const upGrowth = await peakRssGrowth(async () => {
      const info = await sb.filesystem.upload(src, "/workspace/big.bin");
      assert.equal(info.size, SIZE);
    });
    const last = await (await fetch(`${url}/last-upload`)).json();
    assert.deepEqual(last, { size: SIZE, sha256: srcSha }, "the daemon got the file intact");

    const dst = join(dir, "dst.bin");
    const downGrowth = await peakRssGrowth(async () => {
      const info = await sb.filesystem.download("/workspace/big.bin", dst);
      assert.equal(info.size, SIZE);
    });
    assert.equal(statSync(dst).size, SIZE);
    const want = createHash("sha256");
    for (let i = 0; i < SIZE / MiB; i++) want.update(block(i, MiB));
    assert.equal(await sha256File(dst), want.digest("hex"), "the download is intact");

    console.log(`rss growth: upload ${(upGrowth / MiB).toFixed(1)} MiB, download ${(downGrowth / MiB).toFixed(1)} MiB, file ${SIZE / MiB} MiB`);
    // Buffering the file would grow RSS by >= 200 MiB. Streaming stays at a few
    // tens of MiB whatever the size (chunks in flight, and garbage that V8
    // collects once about 32 MiB of it has piled up).
    assert.ok(upGrowth < 96 * MiB, `upload grew RSS by ${(upGrowth / MiB).toFixed(1)} MiB`);
    assert.ok(downGrowth < 96 * MiB, `download grew RSS by ${(downGrowth / MiB).toFixed(1)} MiB`);
  } finally {
    server.stdin.end();
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
