/**
 * The HTTP layer: one `fetch` per attempt, typed errors, deadlines, and
 * retries only where they are safe.
 *
 * - Errors: a non-2xx answer becomes the typed error of errors.ts, built from
 *   the API's `{"error": {"code", "message"}}` body (read up to 64 KiB).
 * - Deadlines: every call has a watchdog. For an ordinary call it is the
 *   deadline of the whole call (request and answer); for a streamed transfer
 *   it is an idle limit, restarted by every chunk sent or received. When it
 *   fires the call is aborted and a TimeoutError ("client_timeout") is thrown.
 * - Retries (at most `maxRetries`, backoff 100-200 ms, doubling, capped at 2 s):
 *   any call whose connection was never made (refused, DNS failure), since
 *   nothing was sent; and idempotent calls (GET, DELETE) whose connection broke
 *   or that got 502/503. A POST or PUT that may have reached the daemon is never
 *   repeated. A streamed request body is rebuilt by its factory for each attempt.
 *
 * Calls go through the Node runtime's `fetch` (Node 18+), except raw bodies
 * over 1 MiB and streamed bodies, which go through `node:http` with
 * `Expect: 100-continue` (node_fetch.ts) so that an answer the daemon gives
 * before reading the body (413, 409, 404) reaches the caller, and every call
 * of a client given its own CA certificates (`caFile`), which goes through
 * `node:https` with a keep-alive agent that holds them (Node's `fetch` takes
 * no CA per call). A TLS handshake that failed (an untrusted certificate, a
 * server that does not speak TLS) is never retried. No runtime dependency.
 */

import https from "node:https";
import { ConnectionError, PandaStackError, TimeoutError, apiError } from "./errors.js";
import type { ResolvedConfig } from "./config.js";
import { nodeFetch } from "./node_fetch.js";
import { SDK_VERSION } from "./version.js";

/** HTTP methods the API uses. */
export type Method = "GET" | "POST" | "PUT" | "DELETE";

/** The largest error body read, bytes. */
const ERROR_BODY_CAP = 64 * 1024;
/** Raw bodies above this size, bytes, and every streamed body go with `Expect: 100-continue`. */
const EXPECT_CONTINUE_OVER = 1024 * 1024;
/** The largest JSON answer accepted, bytes (a listing of 10000 sandboxes, rich results). */
export const JSON_BODY_CAP = 256 * 1024 * 1024;
/** How long an idle kept-alive connection of a `caFile` client stays open, ms (as Node's fetch). */
const IDLE_CONNECTION_MS = 4000;

/** One API call. */
export interface HttpRequest {
  method: Method;
  /** Path below the base URL, starting with "/", each segment already encoded. */
  path: string;
  /** Query parameters, in order (repeatable names allowed). */
  query?: Array<[string, string]>;
  /** A JSON body (sent with Content-Type: application/json). */
  json?: unknown;
  /** A raw body: bytes, or a factory of a fresh stream for each attempt. */
  body?: Uint8Array | (() => ReadableStream<Uint8Array>);
  /** True when the body factory can be called only once (a caller's stream): then no retry. */
  oneShotBody?: boolean;
  /**
   * When true (for a DELETE), a 404 on a retry counts as success: the first
   * attempt, whose answer was lost, already removed the thing.
   */
  goneOnRetryOk?: boolean;
  /** Content-Length of a streamed body, bytes, when known (lets the daemon refuse early with 413). */
  contentLength?: number;
  /** Content-Type of a raw body. */
  contentType?: string;
  /**
   * Milliseconds: the deadline of the call (`idle: false`), or the longest silence
   * of a transfer (`idle: true`). null: no deadline. Default: the config's requestTimeoutMs.
   */
  timeoutMs?: number | null;
  /** When true, `timeoutMs` is an idle limit restarted by each chunk of either body. */
  idle?: boolean;
  /** The Accept header; default "application/json". */
  accept?: string;
  /** The caller's abort signal: aborting rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** A successful answer whose body is read as a stream. */
export interface StreamedResponse {
  status: number;
  headers: Headers;
  /** The body; reading it restarts the idle watchdog, and ends it at the end or on error. */
  body: ReadableStream<Uint8Array>;
}

/**
 * Aborts a call when its deadline passes, or when the caller's signal aborts.
 * `bump()` restarts the timer (idle mode). Not shared between calls.
 */
class Watchdog {
  readonly controller = new AbortController();
  /** True once the timer fired. */
  fired = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onUserAbort: () => void;

  constructor(
    private readonly ms: number | null,
    private readonly userSignal: AbortSignal | undefined,
  ) {
    this.onUserAbort = () => this.controller.abort(this.userSignal?.reason);
    if (userSignal) {
      if (userSignal.aborted) this.controller.abort(userSignal.reason);
      else userSignal.addEventListener("abort", this.onUserAbort, { once: true });
    }
    this.bump();
  }

  /** Restarts the timer. */
  bump(): void {
    if (this.ms === null || this.controller.signal.aborted) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fired = true;
      this.controller.abort(
        new TimeoutError(`no answer from the API within ${this.ms} ms`, { code: "client_timeout" }),
      );
    }, this.ms);
  }

  /** Disarms the timer and forgets the caller's signal. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.userSignal?.removeEventListener("abort", this.onUserAbort);
  }

  /** The error to throw for an abort: the client deadline, or the caller's reason. */
  abortError(): unknown {
    const reason: unknown = this.controller.signal.reason;
    if (this.fired && !(reason instanceof TimeoutError)) {
      return new TimeoutError(`no answer from the API within ${this.ms} ms`, { code: "client_timeout" });
    }
    return reason;
  }
}

/** Connection errors that happen before any byte of the request is sent. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Certificate checks that failed (OpenSSL's verify codes as Node names them).
 * These, `ERR_SSL_*` and `EPROTO` (a server that does not speak TLS) end a
 * handshake, which is never retried: it would fail the same way.
 */
const CERT_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_REVOKED",
  "INVALID_CA",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The system error under a fetch failure (`TypeError("fetch failed", {cause})`): its code and message. */
function networkError(err: unknown): { code: string; message: string } {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e; depth++) {
    const o = e as { code?: unknown; errors?: unknown; cause?: unknown; message?: unknown };
    if (typeof o.code === "string") return { code: o.code, message: String(o.message ?? "") };
    if (Array.isArray(o.errors) && o.errors.length > 0) {
      const first = o.errors[0] as { code?: unknown; message?: unknown };
      if (typeof first?.code === "string") return { code: first.code, message: String(first.message ?? "") };
    }
    e = o.cause;
  }
  return { code: "", message: "" };
}

function isIdempotent(method: Method): boolean {
  return method === "GET" || method === "DELETE";
}

/** Backoff before retry number `attempt` (0-based), milliseconds: 100-200, 200-400, ... at most 2000. */
export function backoffMs(attempt: number): number {
  const base = Math.min(200 * 2 ** attempt, 2000);
  return Math.round(base * (0.5 + Math.random() * 0.5));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Reads a whole body, at most `cap` bytes; past the cap it cancels the body and
 * throws PandaStackError("response_too_large"). `onChunk` sees each chunk.
 */
async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  cap: number,
  onChunk?: () => void,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onChunk?.();
    total += value.byteLength;
    if (total > cap) {
      await reader.cancel().catch(() => undefined);
      throw new PandaStackError(`the API's answer is over ${cap} bytes`, { code: "response_too_large" });
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/** Reads at most `cap` bytes of a body and drops the rest (for error bodies). */
async function readHead(body: ReadableStream<Uint8Array> | null, cap: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total < cap) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value.subarray(0, cap - total));
    total += Math.min(value.byteLength, cap - total);
  }
  await reader.cancel().catch(() => undefined);
  return Buffer.concat(chunks);
}

/** Builds the typed error of a non-2xx answer from its (capped) body. */
async function errorFromResponse(res: Response): Promise<PandaStackError> {
  let text = "";
  try {
    text = new TextDecoder().decode(await readHead(res.body, ERROR_BODY_CAP));
  } catch {
    /* the body broke: the status alone decides */
  }
  let code = `http_${res.status}`;
  let message = `HTTP ${res.status}${res.statusText ? " " + res.statusText : ""}`;
  try {
    const parsed: unknown = JSON.parse(text);
    const e = (parsed as { error?: { code?: unknown; message?: unknown } })?.error;
    if (e && typeof e.code === "string") code = e.code;
    if (e && typeof e.message === "string") message = e.message;
  } catch {
    if (text.trim() !== "") message = `${message}: ${text.trim().slice(0, 200)}`;
  }
  return apiError(res.status, code, message);
}

/** Wraps a stream so that each chunk restarts the watchdog; the wrapper keeps backpressure. */
function watched(
  src: ReadableStream<Uint8Array>,
  onChunk: () => void,
  onEnd: () => void,
  mapError: (e: unknown) => unknown,
): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          onEnd();
          ctrl.close();
          return;
        }
        onChunk();
        ctrl.enqueue(value);
      } catch (e) {
        onEnd();
        ctrl.error(mapError(e));
      }
    },
    async cancel(reason) {
      onEnd();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}

/** Sends API calls for one configuration. Safe to share between concurrent calls. */
export class HttpClient {
  /** The keep-alive agent holding the configured CA certificates; undefined without `caFile`. */
  private readonly agent: https.Agent | undefined;

  constructor(readonly config: ResolvedConfig) {
    this.agent =
      config.ca === null ? undefined : new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS, ca: config.ca });
  }

  /** The full URL of a call. */
  url(path: string, query?: Array<[string, string]>): string {
    const qs = query && query.length > 0 ? "?" + new URLSearchParams(query).toString() : "";
    return this.config.apiUrl + path + qs;
  }

  /** Sends a call and parses its JSON answer (null for an empty answer, e.g. 204). */
  async json(req: HttpRequest): Promise<unknown> {
    const { res, wd } = await this.send(req);
    try {
      const bytes = await readCapped(res.body, JSON_BODY_CAP, req.idle ? () => wd.bump() : undefined);
      if (bytes.byteLength === 0) return null;
      try {
        return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
      } catch (e) {
        throw new PandaStackError("the API's answer is not JSON", { code: "invalid_response", cause: e });
      }
    } catch (e) {
      throw this.mapAbort(e, wd);
    } finally {
      wd.stop();
    }
  }

  /** Sends a call and drops its answer's body (for 204 and answers of no interest). */
  async empty(req: HttpRequest): Promise<void> {
    const { res, wd } = await this.send(req);
    try {
      await res.body?.cancel().catch(() => undefined);
    } finally {
      wd.stop();
    }
  }

  /**
   * Sends a call and returns its answer as a stream. With `idle`, every chunk
   * read restarts the watchdog; the watchdog ends with the stream.
   */
  async stream(req: HttpRequest): Promise<StreamedResponse> {
    const { res, wd } = await this.send(req);
    const src = res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
    const body = watched(
      src,
      () => {
        if (req.idle) wd.bump();
      },
      () => wd.stop(),
      (e) => this.mapAbort(e, wd),
    );
    return { status: res.status, headers: res.headers, body };
  }

  private mapAbort(e: unknown, wd: Watchdog): unknown {
    if (wd.controller.signal.aborted) return wd.abortError();
    if (e instanceof PandaStackError) return e;
    const { code } = networkError(e);
    return new ConnectionError(`the connection to the API broke: ${code || String(e)}`, {
      code: "connection_failed",
      cause: e,
    });
  }

  /** One call with its retries: returns a 2xx answer whose body is not read yet. */
  private async send(req: HttpRequest): Promise<{ res: Response; wd: Watchdog }> {
    const timeoutMs = req.timeoutMs === undefined ? this.config.requestTimeoutMs : req.timeoutMs;
    const url = this.url(req.path, req.query);
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.config.apiKey}`,
        accept: req.accept ?? "application/json",
        "user-agent": `pandastack-sdk-typescript/${SDK_VERSION}`,
      };
      const wd = new Watchdog(timeoutMs, req.signal);
      const init: RequestInit & { duplex?: "half" } = { method: req.method, headers, signal: wd.controller.signal };
      if (req.json !== undefined) {
        headers["content-type"] = "application/json";
        init.body = JSON.stringify(req.json);
      } else if (req.body instanceof Uint8Array) {
        headers["content-type"] = req.contentType ?? "application/octet-stream";
        init.body = req.body;
      } else if (typeof req.body === "function") {
        headers["content-type"] = req.contentType ?? "application/octet-stream";
        if (req.contentLength !== undefined) headers["content-length"] = String(req.contentLength);
        init.body = watched(
          req.body(),
          () => {
            if (req.idle) wd.bump();
          },
          () => undefined,
          (e) => e,
        ) as unknown as RequestInit["body"];
        init.duplex = "half";
        // A stream body cannot follow a redirect anyway; "error" also keeps undici
        // from holding every chunk sent for a possible replay (nodejs/undici#4058).
        init.redirect = "error";
      }

      let res: Response;
      try {
        const rawBody = init.body as Uint8Array | ReadableStream<Uint8Array> | undefined;
        const viaContinue =
          !this.config.customFetch &&
          (typeof req.body === "function" ||
            (req.body instanceof Uint8Array && req.body.byteLength > EXPECT_CONTINUE_OVER));
        if (viaContinue || this.agent !== undefined) {
          const body = typeof init.body === "string" ? Buffer.from(init.body) : rawBody;
          if (body instanceof Uint8Array) headers["content-length"] = String(body.byteLength);
          else if (body === undefined && (req.method === "POST" || req.method === "PUT")) headers["content-length"] = "0";
          res = await nodeFetch(url, {
            method: req.method,
            headers,
            body,
            signal: wd.controller.signal,
            expectContinue: viaContinue,
            agent: this.agent,
          });
        } else {
          res = await this.config.fetch(url, init);
        }
      } catch (err) {
        wd.stop();
        if (wd.controller.signal.aborted) throw wd.abortError();
        const { code, message } = networkError(err);
        const notSent = NOT_SENT_CODES.has(code);
        const replayable = !req.oneShotBody;
        const handshake = CERT_CODES.has(code) || code.startsWith("ERR_SSL_") || code === "EPROTO";
        if (!handshake && replayable && (notSent || isIdempotent(req.method)) && attempt < this.config.maxRetries) {
          await sleep(backoffMs(attempt), req.signal);
          continue;
        }
        const why = CERT_CODES.has(code)
          ? `the server's TLS certificate is not trusted (${code}: ${message}): ` +
            "pass { caFile } or set PANDASTACK_CA_FILE to the PEM file of its CA"
          : handshake
            ? `TLS handshake failed (${code}: ${message})`
            : code || (err as Error)?.message || String(err);
        throw new ConnectionError(`cannot reach the API at ${this.config.apiUrl}: ${why}`, {
          code: "connection_failed",
          cause: err,
        });
      }
      if (res.ok || (res.status === 404 && attempt > 0 && req.goneOnRetryOk)) return { res, wd };

      let error: PandaStackError;
      try {
        error = await errorFromResponse(res);
      } finally {
        wd.stop();
      }
      if (
        isIdempotent(req.method) &&
        (res.status === 502 || res.status === 503) &&
        attempt < this.config.maxRetries
      ) {
        await sleep(backoffMs(attempt), req.signal);
        continue;
      }
      throw error;
    }
  }
}

/** Encodes one path segment (an id) for a URL. */
export function seg(s: string): string {
  return encodeURIComponent(s);
}
