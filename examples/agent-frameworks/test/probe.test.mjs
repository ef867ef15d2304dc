// The probes the recipe tests rely on, shown to fail where they should.
import assert from "node:assert/strict";
import { test } from "node:test";

import { assertChart, pngSize } from "./helpers.mjs";

test("the PNG probe refuses text and a signature without IHDR", () => {
  assert.throws(() => pngSize(Buffer.from("285\n").toString("base64")));
  const fake = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(fake);
  assert.throws(() => pngSize(fake.toString("base64")));
  const tall = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(tall);
  tall.write("IHDR", 12, "latin1");
  tall.writeUInt32BE(10, 16);
  tall.writeUInt32BE(100, 20);
  assert.throws(() => assertChart(tall.toString("base64"))); // not the 4:2 chart
});
