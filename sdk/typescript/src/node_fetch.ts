/**
 * Sends one request over `node:http` / `node:https` and answers a standard
 * `Response`, like `fetch`. The SDK uses it where the runtime's `fetch` cannot
 * do the job:
 *
 * - Large or streamed bodies go with `Expect: 100-continue` (RFC 9110,
 *   section 10.1.1). The daemon refuses some uploads before reading their
 *   body (413 body_too_large from the announced Content-Length, 409
 *   is_a_directory, 404, 401) and then stops reading. Node's `fetch` (undici)
 *   rejects the `Expect` header and, when the server answers early, fails with
 *   EPIPE instead of returning the answer. With `Expect: 100-continue` the body
 *   is sent only after the daemon's `100 Continue` (or after 1 s, for a server
 *   that ignores Expect), and an early final answer is returned as it is, body
 *   unsent; the connection is closed after that answer.
 * - Every call of a client given its own CA certificates (`caFile`): Node's
 *   `fetch` takes no CA per call, an `https.Agent` does.
 */

import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";

/** What `nodeFetch` needs: a subset of fetch's RequestInit. */
export interface NodeRequest {
  method: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The body, if any: bytes, or a stream read as the socket drains (backpressure kept). */
  body?: Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** Aborting destroys the request and its answer; the promise rejects with the signal's reason. */
  signal: AbortSignal;
  /** Send the body only after `100 Continue` (or a 1 s wait), and close the connection after the answer. */
  expectContinue: boolean;
  /**
   * The agent of the connection: one that keeps connections alive and holds the
   * TLS settings (CA certificates), or undefined for a connection of this call
   * alone with Node's default TLS settings. With `expectContinue` the
   * connection is closed after the answer either way.
   */
  agent?: http.Agent | undefined;
}

/** How long to wait for `100 Continue` before sending the body anyway, ms (curl waits 1 s too). */
const CONTINUE_WAIT_MS = 1000;

/**
 * Sends `req` to `url` and resolves to the answer (any status) once its
 * headers arrive; the body of the answer streams from the socket. Rejects with
 * the socket's error (with its `code`, e.g. ECONNREFUSED or
 * DEPTH_ZERO_SELF_SIGNED_CERT) if no answer came, or with the signal's reason
 * when aborted. The caller owns the answer's body.
 */
export function nodeFetch(url: string, req: NodeRequest): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    if (req.signal.aborted) {
      reject(req.signal.reason);
      return;
    }
    const target = new URL(url);
    const mod = target.protocol === "https:" ? https : http;
    let answered = false;
    let bodyStarted = false;
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      reject(req.signal.aborted ? req.signal.reason : e);
    };

    const out = mod.request(target, {
      method: req.method,
      headers: req.expectContinue ? { ...req.headers, expect: "100-continue" } : req.headers,
      agent: req.agent ?? false,
    });
    const onAbort = () => out.destroy(req.signal.reason instanceof Error ? req.signal.reason : new Error("aborted"));
    req.signal.addEventListener("abort", onAbort, { once: true });
    out.on("close", () => req.signal.removeEventListener("abort", onAbort));
    out.on("error", fail);

    const sendBody = async () => {
      if (bodyStarted || answered) return;
      bodyStarted = true;
      clearTimeout(waitTimer);
      try {
        if (req.body === undefined || req.body instanceof Uint8Array) {
          out.end(req.body);
          return;
        }
        const reader = req.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (answered || out.destroyed) {
              await reader.cancel().catch(() => undefined);
              return;
            }
            if (!out.write(value)) {
              await new Promise<void>((r) => {
                const go = () => {
                  out.off("drain", go);
                  out.off("close", go);
                  r();
                };
                out.on("drain", go);
                out.on("close", go);
              });
            }
          }
        } finally {
          reader.releaseLock();
        }
        if (!out.destroyed) out.end();
      } catch (e) {
        out.destroy(e instanceof Error ? e : new Error(String(e)));
      }
    };
    const waitTimer = req.expectContinue ? setTimeout(() => void sendBody(), CONTINUE_WAIT_MS) : undefined;
    if (req.expectContinue) out.on("continue", () => void sendBody());

    out.on("response", (res) => {
      answered = true;
      clearTimeout(waitTimer);
      if (settled) {
        res.destroy();
        return;
      }
      settled = true;
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (Array.isArray(v)) for (const x of v) headers.append(k, x);
        else if (v !== undefined) headers.set(k, v);
      }
      if (req.expectContinue) {
        // The request may be unfinished (an early answer): close the connection once the answer is read.
        res.on("end", () => out.destroy());
        res.on("error", () => out.destroy());
      }
      const status = res.statusCode ?? 500;
      const body = status === 204 || status === 304 ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>);
      if (body === null) res.resume();
      resolve(new Response(body, { status: status >= 200 && status <= 599 ? status : 500, statusText: res.statusMessage ?? "", headers }));
    });
    if (req.expectContinue) out.flushHeaders();
    else void sendBody();
  });
}
