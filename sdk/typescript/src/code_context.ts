/**
 * Code contexts: a persistent kernel in the sandbox (issue 4's routes):
 *   POST   /v1/sandboxes/{id}/contexts                  -> 201 {"id": "ctx_...", "language"}
 *   GET    /v1/sandboxes/{id}/contexts                  -> {"contexts": [...]}
 *   DELETE /v1/sandboxes/{id}/contexts/{ctx}            -> 204
 *   POST   /v1/sandboxes/{id}/contexts/{ctx}/run_code   -> an Execution
 *   POST   /v1/sandboxes/{id}/contexts/{ctx}/interrupt  -> 204
 *   POST   /v1/sandboxes/{id}/contexts/{ctx}/restart    -> 204
 * Variables and imports persist across `runCode` calls of one context.
 */

import { ConnectionError, NotFoundError, apiError } from "./errors.js";
import { Execution, Result } from "./execution.js";
import { parseJsonEvent, readSse } from "./sse.js";
import { type HttpClient, seg } from "./http.js";
import { type CodeContextInfo, isObject, parseCodeContextInfo } from "./models.js";

/** Options of `ctx.runCode`. */
export interface RunCodeOptions {
  /**
   * Seconds the cell may run; at the limit the kernel is interrupted and the
   * context keeps its state. Default: the daemon's. 0: no limit.
   */
  timeoutSeconds?: number;
  signal?: AbortSignal;
  /**
   * Called with each chunk the cell prints, as it is printed. With any of the
   * three callbacks the cell is streamed (`POST .../run_code_stream`); a
   * callback that throws (or rejects) cancels the cell, and the error propagates.
   */
  onStdout?: (chunk: string) => unknown;
  onStderr?: (chunk: string) => unknown;
  /** Called with each Result (a chart, a table, the cell's value) as the kernel produces it. */
  onResult?: (result: Result) => unknown;
}

/** Longest silence of a stream (a cell's or an exec's), milliseconds (the daemon sends a keepalive every 15 s). @internal */
export const STREAM_IDLE_MIN_MS = 45_000;

/** Options of `sandbox.createCodeContext`. */
export interface CodeContextOptions {
  /** Kernel language: "python" (the default). */
  language?: string;
  /** Working directory of the kernel (absolute guest path). */
  cwd?: string;
  /** Environment variables of the kernel. */
  env?: Record<string, string>;
  /**
   * The notebook file its cells are kept in (absolute guest path; "": none).
   * Default: /workspace/notebook.ipynb, or /workspace/notebook-<id>.ipynb when
   * another context has that one.
   */
  notebook?: string;
  signal?: AbortSignal;
}

/**
 * Client deadline of an exec or code run without `timeoutSeconds`, milliseconds
 * (the daemon's own default limit applies first). The same as the Python SDK.
 */
export const DEFAULT_RUN_DEADLINE_MS = 600_000;
/** Margin added to `timeoutSeconds` for the client deadline of a run, milliseconds (the daemon answers 504 at the limit + 30 s). */
export const RUN_DEADLINE_MARGIN_MS = 60_000;
/** Client deadline of a create (sandbox or code context), milliseconds: the daemon's create deadline is 30 s. */
export const CREATE_DEADLINE_MS = 90_000;

/**
 * The client deadline of a call that runs code or a command for at most
 * `timeoutSeconds`: 600 s when undefined, none (null) when 0, else the limit
 * plus 60 s; never below `requestTimeoutMs`. Throws RangeError for NaN,
 * infinities and negative values (before anything is sent).
 */
export function runDeadlineMs(timeoutSeconds: number | undefined, requestTimeoutMs: number): number | null {
  if (timeoutSeconds !== undefined && (typeof timeoutSeconds !== "number" || !Number.isFinite(timeoutSeconds) || timeoutSeconds < 0)) {
    throw new RangeError(`timeoutSeconds must be a finite number >= 0 (0: no limit), not ${String(timeoutSeconds)}`);
  }
  if (timeoutSeconds === 0) return null;
  const t = timeoutSeconds === undefined ? DEFAULT_RUN_DEADLINE_MS : timeoutSeconds * 1000 + RUN_DEADLINE_MARGIN_MS;
  return Math.max(t, requestTimeoutMs);
}


/**
 * A persistent kernel in a sandbox. Made by `sandbox.createCodeContext()`.
 * Calls on one context run one at a time in the guest (a call made while it is
 * busy waits its turn). Close it with `close()` (or `await using`).
 */
export class CodeContext {
  /** `ctx_...`. */
  readonly id: string;
  /** The kernel language, "python". */
  readonly language: string;
  /** The context as the API described it at creation. */
  readonly info: CodeContextInfo;

  /** @internal */
  constructor(
    private readonly http: HttpClient,
    /** The id of the sandbox the context lives in. */
    readonly sandboxId: string,
    info: CodeContextInfo,
  ) {
    this.info = info;
    this.id = info.id;
    this.language = info.language;
  }

  private path(sub = ""): string {
    return `/v1/sandboxes/${seg(this.sandboxId)}/contexts/${seg(this.id)}${sub}`;
  }

  /**
   * Runs `code` as one cell and resolves to its Execution: rich results, stdout,
   * stderr, and `error` when the cell raised (a raising cell is not an SDK error).
   */
  async runCode(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    const body: Record<string, unknown> = { code };
    if (opts.timeoutSeconds !== undefined) body.timeout_seconds = opts.timeoutSeconds;
    if (opts.onStdout || opts.onStderr || opts.onResult) return this.runStreamed(body, opts);
    const raw = await this.http.json({
      method: "POST",
      path: this.path("/run_code"),
      json: body,
      timeoutMs: runDeadlineMs(opts.timeoutSeconds, this.http.config.requestTimeoutMs),
      signal: opts.signal,
    });
    return new Execution(raw);
  }

  /** runCode through the event stream: callbacks as events come, then the Execution. */
  private async runStreamed(body: Record<string, unknown>, opts: RunCodeOptions): Promise<Execution> {
    runDeadlineMs(opts.timeoutSeconds, this.http.config.requestTimeoutMs); // the same argument checks
    const res = await this.http.stream({
      method: "POST",
      path: this.path("/run_code_stream"),
      json: body,
      accept: "text/event-stream",
      idle: true,
      timeoutMs: Math.max(this.http.config.requestTimeoutMs, STREAM_IDLE_MIN_MS),
      signal: opts.signal,
    });
    const out: string[] = [];
    const err: string[] = [];
    const results: Record<string, unknown>[] = [];
    for await (const ev of readSse(res.body)) {
      const data = parseJsonEvent(ev.data);
      switch (ev.event) {
        case "stdout":
        case "stderr": {
          if (typeof data.text !== "string") break;
          (ev.event === "stdout" ? out : err).push(data.text);
          const cb = ev.event === "stdout" ? opts.onStdout : opts.onStderr;
          if (cb) await cb(data.text);
          break;
        }
        case "result":
          results.push(data);
          if (opts.onResult) await opts.onResult(new Result(data));
          break;
        case "done":
          return new Execution({ ...data, results, stdout: out.join(""), stderr: err.join("") });
        case "error": {
          const e = isObject(data.error) ? data.error : {};
          throw apiError(
            undefined,
            typeof e.code === "string" ? e.code : "stream_error",
            typeof e.message === "string" ? e.message : "the run_code stream failed",
          );
        }
        default:
          break;
      }
    }
    throw new ConnectionError("the run_code stream ended before the cell did", { code: "connection_failed" });
  }

  /**
   * Interrupts the cell running in this context (SIGINT to the kernel and its
   * child processes, as Jupyter's interrupt). The cell ends with
   * `KeyboardInterrupt` in its Execution's `error`; variables stay. Nothing
   * running is not an error.
   */
  async interrupt(): Promise<void> {
    await this.http.empty({ method: "POST", path: this.path("/interrupt"), json: {} });
  }

  /**
   * Replaces this context's kernel with a fresh one: its variables are lost, a
   * running cell ends with an error, waiting cells run on the new kernel.
   */
  async restart(): Promise<void> {
    await this.http.empty({ method: "POST", path: this.path("/restart"), json: {} });
  }

  /** Shuts the kernel down. A context (or sandbox) that is already gone counts as closed. */
  async close(): Promise<void> {
    try {
      await this.http.empty({ method: "DELETE", path: this.path(), goneOnRetryOk: true });
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
  }

  /** `await using ctx = await sandbox.createCodeContext()` closes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** @internal Creates a context in a sandbox (POST .../contexts). */
export async function createCodeContext(
  http: HttpClient,
  sandboxId: string,
  opts: CodeContextOptions = {},
): Promise<CodeContext> {
  const body: Record<string, unknown> = { language: opts.language ?? "python" };
  if (opts.cwd !== undefined) body.cwd = opts.cwd;
  if (opts.env !== undefined) body.env = opts.env;
  if (opts.notebook !== undefined) body.notebook = opts.notebook;
  const raw = await http.json({
    method: "POST",
    path: `/v1/sandboxes/${seg(sandboxId)}/contexts`,
    json: body,
    timeoutMs: Math.max(http.config.requestTimeoutMs, CREATE_DEADLINE_MS),
    signal: opts.signal,
  });
  return new CodeContext(http, sandboxId, parseCodeContextInfo(raw));
}

/** @internal Lists the contexts of a sandbox (GET .../contexts), as handles. */
export async function listCodeContexts(http: HttpClient, sandboxId: string): Promise<CodeContext[]> {
  const raw = await http.json({ method: "GET", path: `/v1/sandboxes/${seg(sandboxId)}/contexts` });
  const list: unknown[] = isObject(raw) && Array.isArray(raw.contexts) ? raw.contexts : Array.isArray(raw) ? raw : [];
  return list
    .filter((c) => isObject(c) && typeof c.id === "string" && c.id !== "")
    .map((c) => new CodeContext(http, sandboxId, parseCodeContextInfo(c)));
}
