/**
 * Client configuration: the API key and base URL come from the options, else
 * from the environment (`PANDASTACK_API_KEY`, `PANDASTACK_API_URL`), else the
 * daemon's default address (docs/api.md: `http://127.0.0.1:8080`).
 */

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
  /** A `fetch` to use instead of the global one (proxies, tests). */
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
}

/**
 * Resolves options against the environment. Throws AuthenticationError
 * ("missing_api_key") without a key, and PandaStackError ("invalid_config")
 * for a URL that is not http(s) or a negative number.
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
  return {
    apiKey,
    apiUrl: url.href.replace(/\/+$/, ""),
    requestTimeoutMs,
    maxRetries,
    fetch: f,
    customFetch: opts.fetch !== undefined,
  };
}
