// What the recipe tests share: the cell the mock models ask for, its known
// answer, and a PNG probe.  Needs a live daemon: PANDASTACK_API_URL and
// PANDASTACK_API_KEY (scripts/run-agent-tests.sh starts one).
import assert from "node:assert/strict";

import { SandboxSession } from "../sandbox-tools.mjs";

// The cell a mock model "decides" to run: a chart and a number only Python
// in the sandbox computes (the sum of squares below 10 is 285).
export const CELL = [
  "import matplotlib.pyplot as plt",
  "xs = list(range(10))",
  "ys = [x * x for x in xs]",
  "plt.figure(figsize=(4, 2), dpi=50)",
  "plt.plot(xs, ys)",
  "plt.show()",
  "print(sum(ys))",
].join("\n");
export const ANSWER = "285";

// Width and height from a PNG's signature and IHDR chunk; throws on anything else.
export function pngSize(b64) {
  const buf = Buffer.from(b64, "base64");
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buf.length < 24 || !buf.subarray(0, 8).equals(sig)) throw new Error("no PNG signature");
  if (buf.toString("latin1", 12, 16) !== "IHDR") throw new Error("no IHDR chunk first");
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

export function assertChart(b64) {
  const { width, height } = pngSize(b64);
  assert.ok(width > height && width <= 400 && height >= 20, JSON.stringify({ width, height }));
}

// A sandbox for one test; the cell limit and the SDK's per-request deadline
// are raised for emulated guests (a fresh kernel imports matplotlib slowly).
export function newSession() {
  return SandboxSession.create({ ttlSeconds: 900, timeoutSeconds: 300, requestTimeoutMs: 600_000 });
}

// What a scripted model "reads" from a tool's text: its first line (the cell
// prints the sum first; the chart's text form follows).
export function firstLine(text) {
  return text.trim().split("\n")[0];
}
