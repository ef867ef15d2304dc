/**
 * Client configuration: the API key, base URL and CA file come from the
 * options, else from the environment (`PANDASTACK_API_KEY`,
 * `PANDASTACK_API_URL`, `PANDASTACK_CA_FILE`), else the daemon's default
 * address (docs/api.md: `http://127.0.0.1:8080`) and Node's CA list.
 */

import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { AuthenticationError, PandaStackError } from "./errors.js";

/** The daemon's default listen address (docs/api.md, "Base URL"). */
export const DEFAULT_API_URL = "http://127.0.0.1:8080";
/** Deadline of an ordinary API call, and idle limit of a file transfer, milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Retries after the first attempt, where a retry is safe (see http.ts). */
export const DEFAULT_MAX_RETRIES = 2;

/** Options every entry point accepts (`Sandbox.create`, `Sandbox.connect`, `Sandbox.list`). */
export interface ConnectionOptions {
  /** API key (`pds_...`). Default: the `PANDASTACK_API_KEY` environment variable. */
  apiKey?: string;
  /** Base URL of the daemon. Default: `PANDASTACK_API_URL`, else `http://127.0.0.1:8080`. */
  apiUrl?: string;
  /**
   * Deadline of an ordinary call (create, list, set TTL, kill, stat...), milliseconds, and the
   * longest silence allowed during a file transfer. Default 60000.
   */
  requestTimeoutMs?: number;
  /** Retries where they are safe (idempotent calls, refused connections). Default 2; 0 turns them off. */
  maxRetries?: number;
  /**
   * For an https URL: the path of a PEM file of the CA certificates that the
   * daemon's certificate is checked against, instead of Node's CA list (e.g.
   * the certificate of a self-signed daemon). Read once, when the client is
   * made. Default: `PANDASTACK_CA_FILE`, else Node's CA list (plus
   * `NODE_EXTRA_CA_CERTS`). Cannot be combined with `fetch`.
   */
  caFile?: string;
  /** A `fetch` to use instead of the global one (proxies, tests); it owns its TLS settings. */
  fetch?: typeof fetch;
}

/** Resolved configuration (see ConnectionOptions). */
export interface ResolvedConfig {
  apiKey: string;
  /** Without a trailing slash. */
  apiUrl: string;
  requestTimeoutMs: number;
  maxRetries: number;
  fetch: typeof fetch;
  /** True when the caller gave its own `fetch`: then every call goes through it. */
  customFetch: boolean;
  /** The PEM text of the CA certificates trusted instead of Node's list, or null (https only). */
  ca: string | null;
}

/** The largest CA file read, bytes. */
const CA_FILE_CAP = 4 * 1024 * 1024;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/**
 * Reads a PEM file of CA certificates. Throws PandaStackError ("invalid_config")
 * when it cannot be read, is over 4 MiB, or holds no certificate or a broken one.
 */
function readCaFile(path: string): string {
  const bad = (why: string, cause?: unknown) =>
    new PandaStackError(`caFile ${JSON.stringify(path)} is not a readable PEM file of CA certificates: ${why}`, {
      code: "invalid_config",
      cause,
    });
  let pem: string;
  try {
    const raw = readFileSync(path);
    if (raw.byteLength > CA_FILE_CAP) throw bad(`over ${CA_FILE_CAP} bytes`);
    pem = raw.toString("latin1");
  } catch (e) {
    if (e instanceof PandaStackError) throw e;
    throw bad((e as Error)?.message ?? String(e), e);
  }
  const certs = pem.match(PEM_CERTIFICATE) ?? [];
  if (certs.length === 0) throw bad("no certificate in it");
  for (const c of certs) {
    try {
      new X509Certificate(c);
    } catch (e) {
      throw bad((e as Error)?.message ?? String(e), e);
    }
  }
  return certs.join("\n") + "\n";
}

/**
 * Resolves options against the environment. Throws AuthenticationError
 * ("missing_api_key") without a key, and PandaStackError ("invalid_config")
 * for a URL that is not http(s), a negative number, a CA file that cannot be
 * read, or `caFile` with `fetch`.
 */
export function resolveConfig(opts: ConnectionOptions = {}): ResolvedConfig {
  const env = typeof process !== "undefined" ? process.env : {};
  const apiKey = opts.apiKey ?? env.PANDASTACK_API_KEY ?? "";
  if (apiKey === "") {
    throw new AuthenticationError(
      "no API key: pass { apiKey } or set PANDASTACK_API_KEY",
      { code: "missing_api_key" },
    );
  }
  const rawUrl = opts.apiUrl ?? (env.PANDASTACK_API_URL || DEFAULT_API_URL);
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch (e) {
    throw new PandaStackError(`invalid API URL ${JSON.stringify(rawUrl)}`, { code: "invalid_config", cause: e });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new PandaStackError(`API URL must be http or https: ${JSON.stringify(rawUrl)}`, {
      code: "invalid_config",
    });
  }
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const maxRetries = opts.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!(requestTimeoutMs > 0) || !Number.isFinite(requestTimeoutMs)) {
    throw new PandaStackError("requestTimeoutMs must be a positive number", { code: "invalid_config" });
  }
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 10) {
    throw new PandaStackError("maxRetries must be an integer from 0 to 10", { code: "invalid_config" });
  }
  const f = opts.fetch ?? globalThis.fetch;
  if (typeof f !== "function") {
    throw new PandaStackError("no fetch: Node 18 or newer is needed", { code: "invalid_config" });
  }
  if (opts.caFile !== undefined && opts.fetch !== undefined) {
    throw new PandaStackError("caFile cannot be combined with a custom fetch: give that fetch the CA", {
      code: "invalid_config",
    });
  }
  // A custom fetch owns its TLS settings: the environment's CA file is not for it.
  const caFile = opts.fetch !== undefined ? "" : (opts.caFile ?? env.PANDASTACK_CA_FILE ?? "");
  return {
    apiKey,
    apiUrl: url.href.replace(/\/+$/, ""),
    requestTimeoutMs,
    maxRetries,
    fetch: f,
    customFetch: opts.fetch !== undefined,
    ca: caFile !== "" && url.protocol === "https:" ? readCaFile(caFile) : null,
  };
}
