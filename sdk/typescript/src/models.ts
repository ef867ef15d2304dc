/**
 * Plain data objects of the API (docs/api.md, "Objects") and their parsers.
 *
 * Field names are the API's own (snake_case: `exit_code`, `duration_ms`), as
 * the product documents use them (`result.exit_code`). Parsers take untrusted
 * JSON and never throw on odd fields: a missing or mistyped field gets a
 * neutral default, except the few that identify an object (a sandbox's `id`),
 * whose absence is a `PandaStackError` with code "invalid_response".
 */

import { PandaStackError } from "./errors.js";
import type { ExecResult } from "./exec_result.js";

export type { ExecResult } from "./exec_result.js";

/** Status of a sandbox. */
export type SandboxStatus = "running" | "paused" | "stopped" | "error" | "lost";

/** A sandbox as the API describes it (`GET /v1/sandboxes/{id}`). Times are RFC 3339 strings. */
export interface SandboxInfo {
  /** `sbx_` + 20 hex digits. */
  id: string;
  /** The template it was restored from. */
  template: string;
  /** `running`, `paused`, `stopped` or `error` (other strings are passed through). */
  status: SandboxStatus | string;
  /** Why it is not running, or null. */
  reason: string | null;
  created_at: string;
  /** When the sandbox stops by itself; moves with `setTtl`. */
  expires_at: string;
  ended_at: string | null;
  vcpus: number | null;
  memory_mib: number | null;
  metadata: Record<string, string>;
  /** Its network settings (docs/network.md): `public_ports`, and the egress policy. */
  network: Record<string, unknown>;
  /** The token of its private ports (the `X-Access-Token` header); only from a create or a get of this sandbox, else null. */
  access_token: string | null;
  /** The daemon's `--proxy-domain` (ports at `PORT-sbx-....DOMAIN`); only from a create or a get, else null. */
  proxy_domain: string | null;
  /** `stop` (the default) or `pause`: what happens at `expires_at`. */
  on_timeout: string;
}

/** A snapshot of a sandbox (docs/api.md, "Snapshot"). */
export interface SnapshotInfo {
  /** `snap_` + 20 hex digits: `Sandbox.create({ snapshot })` restores it. */
  id: string;
  /** The sandbox it was taken of. */
  sandbox_id: string;
  template: string;
  created_at: string;
  /** Bytes its own files take on the host. */
  size_bytes: number;
  name: string | null;
  /** The team's snapshot it was taken on top of, or null. */
  parent: string | null;
}

/** One file or directory in the guest (`fs/stat`, `fs/list`, `fs/mkdir`). */
export interface FileEntry {
  name: string | null;
  path: string | null;
  type: "file" | "dir" | "symlink" | "other" | string;
  /** Bytes. */
  size: number | null;
  /** Permission bits, e.g. 420 (0644). */
  mode: number | null;
  /** Modification time, milliseconds since the epoch. */
  mtime_ms: number | null;
}

/** The answer of a file write or upload. */
export interface WriteInfo {
  path: string;
  /** Bytes written. */
  size: number;
}

/** A directory listing (`fs/list`). */
export interface DirListing {
  path: string;
  entries: FileEntry[];
  /** True when the directory had more than 10000 entries. */
  truncated: boolean;
}

/** A code context as the API describes it (`POST/GET .../contexts`). */
export interface CodeContextInfo {
  /** `ctx_...`. */
  id: string;
  /** The kernel language, "python". */
  language: string;
  [field: string]: unknown;
}

/** A JSON object from outside: anything may be in it. */
export type JsonObject = Record<string, unknown>;

/** True when `v` is a JSON object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `v` if it is a string, else `dflt`. */
export function str(v: unknown, dflt: string): string;
export function str(v: unknown, dflt: null): string | null;
export function str(v: unknown, dflt: string | null): string | null {
  return typeof v === "string" ? v : dflt;
}

/** `v` if it is a finite number, else `dflt`. */
export function num(v: unknown, dflt: number): number;
export function num(v: unknown, dflt: null): number | null;
export function num(v: unknown, dflt: number | null): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : dflt;
}

function bool(v: unknown): boolean {
  return v === true;
}

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isObject(v)) return out;
  for (const [k, val] of Object.entries(v)) if (typeof val === "string") out[k] = val;
  return out;
}

/** Throws the SDK's "invalid_response" error: the daemon answered something unexpected. */
export function invalidResponse(what: string): never {
  throw new PandaStackError(`unexpected response from the API: ${what}`, { code: "invalid_response" });
}

/** Parses a sandbox object; throws PandaStackError("invalid_response") if it has no id. */
export function parseSandboxInfo(v: unknown): SandboxInfo {
  if (!isObject(v) || typeof v.id !== "string" || v.id === "") invalidResponse("a sandbox without an id");
  return {
    id: v.id,
    template: str(v.template, ""),
    status: str(v.status, ""),
    reason: str(v.reason, null),
    created_at: str(v.created_at, ""),
    expires_at: str(v.expires_at, ""),
    ended_at: str(v.ended_at, null),
    vcpus: num(v.vcpus, null),
    memory_mib: num(v.memory_mib, null),
    metadata: stringMap(v.metadata),
    network: isObject(v.network) ? { ...v.network } : {},
    access_token: str(v.access_token, null),
    proxy_domain: str(v.proxy_domain, null),
    on_timeout: str(v.on_timeout, "stop"),
  };
}

/** Parses a snapshot object; throws an invalid_response PandaStackError without an id. */
export function parseSnapshotInfo(v: unknown): SnapshotInfo {
  if (!isObject(v) || typeof v.id !== "string" || v.id === "") invalidResponse("a snapshot without an id");
  return {
    id: v.id,
    sandbox_id: str(v.sandbox_id, ""),
    template: str(v.template, ""),
    created_at: str(v.created_at, ""),
    size_bytes: num(v.size_bytes, 0),
    name: str(v.name, null),
    parent: str(v.parent, null),
  };
}

/**
 * Parses an exec result (`exec`, `run_code`) or the `exit` event of a stream
 * (then stdout/stderr are absent and come from `stdout`/`stderr` arguments).
 */
export function parseExecResult(v: unknown, stdout?: string, stderr?: string): ExecResult {
  const o = isObject(v) ? v : {};
  return {
    stdout: stdout ?? str(o.stdout, ""),
    stderr: stderr ?? str(o.stderr, ""),
    exit_code: num(o.exit_code, -1),
    duration_ms: num(o.duration_ms, 0),
    timed_out: bool(o.timed_out),
    signal: num(o.signal, null),
    stdout_truncated: bool(o.stdout_truncated),
    stderr_truncated: bool(o.stderr_truncated),
  };
}

/** Parses a file entry. */
export function parseFileEntry(v: unknown): FileEntry {
  const o = isObject(v) ? v : {};
  return {
    name: str(o.name, null),
    path: str(o.path, null),
    type: str(o.type, "other"),
    size: num(o.size, null),
    mode: num(o.mode, null),
    mtime_ms: num(o.mtime_ms, null),
  };
}

/** Parses the answer of a write (`{path, size}`); `path` defaults to the path asked for. */
export function parseWriteInfo(v: unknown, path: string): WriteInfo {
  const o = isObject(v) ? v : {};
  return { path: str(o.path, path), size: num(o.size, 0) };
}

/** Parses a directory listing. */
export function parseDirListing(v: unknown, path: string): DirListing {
  const o = isObject(v) ? v : {};
  const entries = Array.isArray(o.entries) ? o.entries.map(parseFileEntry) : [];
  return { path: str(o.path, path), entries, truncated: bool(o.truncated) };
}

/** Parses a code context object; throws PandaStackError("invalid_response") without an id. */
export function parseCodeContextInfo(v: unknown): CodeContextInfo {
  if (!isObject(v) || typeof v.id !== "string" || v.id === "") invalidResponse("a code context without an id");
  return { ...v, id: v.id, language: str(v.language, "python") };
}
