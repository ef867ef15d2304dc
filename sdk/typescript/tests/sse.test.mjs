// The Server-Sent Events reader (dist/sse.js), fed in arbitrary pieces.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readSse } from "../dist/sse.js";

function streamOf(pieces) {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of pieces) c.enqueue(typeof p === "string" ? enc.encode(p) : p);
      c.close();
    },
  });
}

async function collect(pieces, cap) {
  const out = [];
  for await (const ev of readSse(streamOf(pieces), cap)) out.push(ev);
  return out;
}

test("LF, CRLF and CR line ends, comments, default event type, multi-line data", async () => {
  const evs = await collect([
    ": keepalive\n\n",
    "event: a\r\ndata: 1\r\n\r\n",
    "event: b\rdata: x\rdata: y\r\r",
    "data: plain\n\n",
    "data:nospace\n\n",
  ]);
  assert.deepEqual(evs, [
    { event: "a", data: "1" },
    { event: "b", data: "x\ny" },
    { event: "message", data: "plain" },
    { event: "message", data: "nospace" },
  ]);
});

test("every split point of a stream gives the same events (CRLF split, UTF-8 split)", async () => {
  const text = 'event: stdout\r\ndata: {"data": "é€😀"}\r\n\r\nevent: exit\ndata: {}\n\n';
  const bytes = new TextEncoder().encode(text);
  const want = [
    { event: "stdout", data: '{"data": "é€😀"}' },
    { event: "exit", data: "{}" },
  ];
  for (let i = 0; i <= bytes.length; i++) {
    assert.deepEqual(await collect([bytes.subarray(0, i), bytes.subarray(i)]), want, `split at ${i}`);
  }
  assert.deepEqual(await collect([...bytes].map((b) => new Uint8Array([b]))), want, "byte by byte");
});

test("an event not ended by a blank line is dropped; empty events are not dispatched", async () => {
  assert.deepEqual(await collect(["event: x\n\n", "data: a\n\n", "data: cut"]), [{ event: "message", data: "a" }]);
});

test("an event over the cap is an invalid_response error, not unbounded memory", async () => {
  await assert.rejects(collect(["data: " + "x".repeat(100) + "\n", "data: y\n\n"], 50), (e) => e.code === "invalid_response");
  await assert.rejects(collect(["data: " + "x".repeat(100)], 50), (e) => e.code === "invalid_response");
});
