// The package as users get it: resolvable as "@pandastack/sdk", ESM with type declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { SDK_VERSION } from "../dist/index.js";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));

test("SDK_VERSION equals package.json's version; no runtime dependency", () => {
  assert.equal(SDK_VERSION, pkg.version);
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.type, "module");
});

test("the built package has its declarations", () => {
  for (const f of ["index.js", "index.d.ts", "sandbox.d.ts", "errors.d.ts", "execution.d.ts"]) {
    assert.ok(existsSync(join(pkgDir, "dist", f)), f);
  }
  const dts = readFileSync(join(pkgDir, "dist", "index.d.ts"), "utf8");
  for (const name of ["Sandbox", "CodeContext", "Execution", "Result", "CommandFailed", "PandaStackError", "ExecResult"]) {
    assert.match(dts, new RegExp(`\\b${name}\\b`), name);
  }
});

test('a script in another folder imports "@pandastack/sdk" by name through node_modules', () => {
  const root = mkdtempSync(join(tmpdir(), "pandastack-ts-pkg-"));
  mkdirSync(join(root, "node_modules", "@pandastack"), { recursive: true });
  symlinkSync(pkgDir, join(root, "node_modules", "@pandastack", "sdk"), "dir");
  mkdirSync(join(root, "typescript"));
  writeFileSync(
    join(root, "typescript", "x.mjs"),
    'import * as sdk from "@pandastack/sdk";\n' +
      "console.log(Object.keys(sdk).sort().join(','));\n",
  );
  const out = execFileSync(process.execPath, [join(root, "typescript", "x.mjs")], { cwd: tmpdir(), encoding: "utf8" });
  const names = out.trim().split(",");
  for (const n of [
    "Sandbox", "CodeContext", "Execution", "Result", "ExecutionError", "Filesystem",
    "PandaStackError", "AuthenticationError", "NotFoundError", "TimeoutError", "RateLimitError",
    "SandboxError", "ConnectionError", "CommandFailed",
  ]) assert.ok(names.includes(n), `${n} is exported (got ${names})`);
});
