// Parsers of API answers never throw on odd shapes: the daemon (and the guest
// behind it) is outside input. Deterministic pseudo-random JSON values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Execution, Result, ExecutionError } from "../dist/index.js";
import { parseExecResult, parseSandboxInfo, parseFileEntry, parseDirListing } from "../dist/models.js";

function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const KEYS = ["results", "stdout", "stderr", "error", "execution_count", "exit_code", "duration_ms",
  "is_main_result", "text", "png", "html", "json", "extra", "name", "value", "traceback", "id",
  "status", "metadata", "entries", "size", "__proto__", "constructor"];

function randomValue(r, depth) {
  const k = Math.floor(r() * (depth > 3 ? 6 : 8));
  switch (k) {
    case 0: return null;
    case 1: return r() < 0.5;
    case 2: return Math.floor(r() * 1e6) - 5e5;
    case 3: return r() < 0.1 ? NaN : r() * 10;
    case 4: return "s" + Math.floor(r() * 100);
    case 5: return "";
    case 6: return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const o = {};
      for (let i = Math.floor(r() * 6); i > 0; i--) o[KEYS[Math.floor(r() * KEYS.length)]] = randomValue(r, depth + 1);
      return o;
    }
  }
}

test("Execution, Result and ExecutionError accept any JSON value without throwing", () => {
  const r = rng(12345);
  for (let i = 0; i < 5000; i++) {
    const v = randomValue(r, 0);
    const ex = new Execution(v);
    assert.ok(Array.isArray(ex.results));
    assert.equal(typeof ex.stdout, "string");
    assert.equal(typeof ex.exit_code, "number");
    void ex.png; void ex.text; void ex.mainResult;
    for (const res of ex.results) {
      assert.ok(res instanceof Result);
      assert.ok(res.text === undefined || typeof res.text === "string");
      assert.equal(typeof res.extra, "object");
      res.formats();
      void res.chart;
    }
    if (ex.error) {
      assert.ok(ex.error instanceof ExecutionError);
      assert.equal(typeof String(ex.error), "string");
    }
    parseExecResult(v);
    parseFileEntry(v);
    parseDirListing(v, "/p");
    try {
      parseSandboxInfo(v);
    } catch (e) {
      assert.equal(e.code, "invalid_response", "the only error is a typed invalid_response");
    }
  }
});

test("field types are checked, not trusted", () => {
  const ex = new Execution({
    results: [{ is_main_result: "yes", text: 5, png: ["x"], extra: [1] }, "junk", null],
    stdout: 7, error: { name: 3, traceback: ["a", 2, "b"] }, execution_count: "4",
  });
  assert.equal(ex.results.length, 1);
  assert.equal(ex.results[0].is_main_result, false);
  assert.equal(ex.results[0].text, undefined);
  assert.equal(ex.results[0].png, undefined);
  assert.deepEqual(ex.results[0].extra, {});
  assert.equal(ex.stdout, "");
  assert.equal(ex.error.name, "Error");
  assert.equal(ex.error.traceback, "a\nb");
  assert.equal(ex.execution_count, null);
  assert.equal(ex.exit_code, 1, "an error without exit_code means exit 1");
  const r = parseExecResult({ exit_code: "0", stdout: null, signal: 9, timed_out: "true" });
  assert.deepEqual(r, {
    stdout: "", stderr: "", exit_code: -1, duration_ms: 0, timed_out: false, signal: 9,
    stdout_truncated: false, stderr_truncated: false,
  });
});
