/**
 * `Sandbox`: one microVM sandbox and everything done in it (docs/api.md,
 * "Routes"): create/connect/list, exec (whole or streamed), one-shot code
 * runs, code contexts, files, TTL and kill.
 */

import {
  CREATE_DEADLINE_MS,
  CodeContext,
  type CodeContextOptions,
  createCodeContext,
  listCodeContexts,
  runDeadlineMs,
  STREAM_IDLE_MIN_MS,
} from "./code_context.js";
import { Command, parseCommandInfo } from "./command.js";
import { type ConnectionOptions, resolveConfig } from "./config.js";
import { CommandFailed, ConnectionError, NotFoundError, PandaStackError, apiError } from "./errors.js";
import { Filesystem } from "./filesystem.js";
import { HttpClient, seg } from "./http.js";
import {
  type ExecResult,
  type SandboxInfo,
  type SandboxStatus,
  type SnapshotInfo,
  isObject,
  parseExecResult,
  parseSandboxInfo,
  parseSnapshotInfo,
  str,
} from "./models.js";
import { parseJsonEvent, readSse } from "./sse.js";

/** Throws RangeError unless port is an integer 1-65535. */
function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`port must be an integer from 1 to 65535, got ${String(port)}`);
}

/** The template `Sandbox.create` uses when none is named. */
export const DEFAULT_TEMPLATE = "code-interpreter";

/** Options of `Sandbox.create`. */
export interface SandboxCreateOptions extends ConnectionOptions {
  /** Template to restore. Default "code-interpreter" (none when `snapshot` is given). */
  template?: string;
  /** A snapshot id (`snap_...`) to restore instead: its processes, code contexts, files and environment. */
  snapshot?: string;
  /** What the TTL does at expiry: "stop" (the default) or "pause". */
  onTimeout?: "stop" | "pause";
  /** Seconds until the sandbox stops by itself. Default: the daemon's (300). */
  ttlSeconds?: number;
  /** Default environment of every exec in the sandbox. */
  env?: Record<string, string>;
  /** Labels to find the sandbox by (`Sandbox.list({ metadata })`). */
  metadata?: Record<string, string>;
  /**
   * The API's `network` object (docs/network.md): `{ public_ports: true }` serves
   * the sandbox's ports without credentials; `egress`, `allow_out`, `deny_out`
   * set its outbound policy.
   */
  network?: Record<string, unknown>;
  signal?: AbortSignal;
}

/** Options of `Sandbox.getUrl`. */
export interface PortUrlOptions {
  /** The path (and query) on the server; default "/". */
  path?: string;
  /** Put the access token in the query (`?access_token=`), e.g. for a browser. */
  withToken?: boolean;
}

/** Options of `Sandbox.list`. */
export interface SandboxListOptions extends ConnectionOptions {
  /** Only sandboxes with this status. */
  status?: SandboxStatus;
  /** Only sandboxes whose metadata has every one of these pairs. */
  metadata?: Record<string, string>;
  signal?: AbortSignal;
}

/** Options of `fork`. */
export interface ForkOptions {
  /** Seconds each fork lives. Default: the daemon's. */
  ttlSeconds?: number;
  signal?: AbortSignal;
}

/** Options of `Sandbox.listSnapshots`. */
export interface SnapshotListOptions extends ConnectionOptions {
  /** Only the snapshots of this sandbox. */
  sandboxId?: string;
  signal?: AbortSignal;
}

/** Options of `exec`. */
export interface ExecOptions {
  /** Seconds the command may run before its process tree is killed. Default: the daemon's (60). 0: no limit. */
  timeoutSeconds?: number;
  /** Throw CommandFailed (carrying the result) when the exit code is not 0. Default false. */
  check?: boolean;
  /** Added to the sandbox's environment (wins on conflicts). */
  env?: Record<string, string>;
  /** Working directory (absolute guest path). Default "/workspace". */
  cwd?: string;
  /** Sent to the command's stdin, then EOF (at most 1 MiB). Default: no stdin. */
  stdin?: string;
  /** `true`: start it in the background (see `BackgroundExecOptions`). */
  background?: false;
  signal?: AbortSignal;
}

/**
 * Options of `exec` with `background: true`: the command starts and `exec`
 * resolves at once with a `Command`. No timeout applies unless `timeoutSeconds`
 * is given; stdin is written with `Command.sendStdin`.
 */
export interface BackgroundExecOptions extends Omit<ExecOptions, "check" | "stdin" | "background"> {
  background: true;
}

/** Options of `execStream`: those of `exec` plus the output callbacks. */
export interface ExecStreamOptions extends ExecOptions {
  /** Called with each chunk of stdout (valid UTF-8) as it comes; awaited if it returns a promise. */
  onStdout?: (data: string) => void | Promise<void>;
  /** Called with each chunk of stderr. */
  onStderr?: (data: string) => void | Promise<void>;
  /** Called once the command started, with its guest pid. */
  onStart?: (pid: number) => void | Promise<void>;
}

/** Options of `Sandbox.runCode`. */
export interface SandboxRunCodeOptions {
  /** "python" (the default) or "shell". */
  language?: "python" | "shell" | string;
  /** Seconds the run may take. Default: the daemon's. 0: no limit. */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}


function execBody(cmd: string, opts: Pick<ExecOptions, "timeoutSeconds" | "env" | "cwd" | "stdin">): Record<string, unknown> {
  const body: Record<string, unknown> = { cmd };
  if (opts.timeoutSeconds !== undefined) body.timeout_seconds = opts.timeoutSeconds;
  if (opts.env !== undefined) body.env = opts.env;
  if (opts.cwd !== undefined) body.cwd = opts.cwd;
  if (opts.stdin !== undefined) body.stdin = opts.stdin;
  return body;
}

/**
 * A sandbox: a microVM restored from a template. Get one with `Sandbox.create`
 * or `Sandbox.connect`; stop it with `kill()` (or `await using`). Methods may be
 * called concurrently.
 */
export class Sandbox {
  /** `sbx_` + 20 hex digits. */
  readonly id: string;
  /** Files in the guest. */
  readonly filesystem: Filesystem;
  /** The sandbox as last seen (create, connect, getInfo, setTtl). */
  private current: SandboxInfo;
  private readonly http: HttpClient;
  /** Kept from the answers that carry them (create, connect, getInfo). */
  private token: string | null;
  private domain: string | null;

  private constructor(http: HttpClient, info: SandboxInfo) {
    this.http = http;
    this.current = info;
    this.token = info.access_token;
    this.domain = info.proxy_domain;
    this.id = info.id;
    this.filesystem = new Filesystem(http, info.id);
  }

  /** The sandbox as last seen (create, connect, getInfo, setTtl). */
  get info(): SandboxInfo {
    return this.current;
  }

  set info(v: SandboxInfo) {
    this.current = v;
    this.token = v.access_token ?? this.token;
    this.domain = v.proxy_domain ?? this.domain;
  }

  /** The token that opens the sandbox's private ports (send it as the `X-Access-Token` header), or null. */
  get accessToken(): string | null {
    return this.token;
  }

  /**
   * The host name serving `port` of the sandbox, `PORT-sbx-....DOMAIN`, when the
   * daemon runs with `--proxy-domain`; null otherwise (use `getUrl`). Throws
   * RangeError for a port outside 1-65535.
   */
  getHost(port: number): string | null {
    checkPort(port);
    if (!this.domain) return null;
    return `${port}-${this.id.replace("_", "-")}.${this.domain}`;
  }

  /**
   * A URL of `path` on the server listening on `port` in the sandbox:
   * `http(s)://PORT-sbx-....DOMAIN/path` with a proxy domain (the API URL's
   * scheme and port), else `API_URL/v1/sandboxes/ID/ports/PORT/path`. Private
   * ports need the `X-Access-Token` header (`accessToken`), or `withToken`.
   */
  getUrl(port: number, opts: PortUrlOptions = {}): string {
    const host = this.getHost(port);
    const rel = (opts.path ?? "").replace(/^\/+/, "");
    let url: string;
    if (host) {
      const api = new URL(this.http.config.apiUrl);
      url = `${api.protocol}//${host}${api.port ? `:${api.port}` : ""}/${rel}`;
    } else {
      url = `${this.http.config.apiUrl}/v1/sandboxes/${seg(this.id)}/ports/${port}/${rel}`;
    }
    if (opts.withToken) {
      if (!this.token) throw new PandaStackError("this sandbox has no access token (its ports are reached with the team's key)", { code: "no_access_token" });
      url += `${rel.includes("?") ? "&" : "?"}access_token=${encodeURIComponent(this.token)}`;
    }
    return url;
  }

  /**
   * Changes the sandbox's network settings at once (`PUT .../network`,
   * docs/network.md), e.g. `{ egress: "deny", allow_out: ["pypi.org"] }`.
   * Resolves to the settings now in force.
   */
  async updateNetwork(network: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!isObject(network)) throw new TypeError("network must be an object, e.g. { public_ports: true }");
    const raw = await this.http.json({ method: "PUT", path: `/v1/sandboxes/${seg(this.id)}/network`, json: network });
    return isObject(raw) ? { ...raw } : {};
  }

  /** The template the sandbox was restored from. */
  get template(): string {
    return this.info.template;
  }

  /** The status when last seen: running, paused, stopped or error (refresh with `getInfo`). */
  get status(): string {
    return this.info.status;
  }

  /**
   * Creates a sandbox by restoring a template snapshot, and resolves once its
   * guest answers. Throws NotFoundError (no such template), RateLimitError (the
   * team's sandbox limit), SandboxError (stale template, VM start failure).
   */
  static async create(opts: SandboxCreateOptions = {}): Promise<Sandbox> {
    const http = new HttpClient(resolveConfig(opts));
    const body: Record<string, unknown> = {};
    if (opts.template !== undefined || opts.snapshot === undefined) body.template = opts.template ?? DEFAULT_TEMPLATE;
    if (opts.snapshot !== undefined) body.snapshot = opts.snapshot;
    if (opts.onTimeout !== undefined) body.on_timeout = opts.onTimeout;
    if (opts.ttlSeconds !== undefined) body.ttl_seconds = opts.ttlSeconds;
    if (opts.env !== undefined) body.env = opts.env;
    if (opts.metadata !== undefined) body.metadata = opts.metadata;
    if (opts.network !== undefined) {
      if (!isObject(opts.network)) throw new TypeError("network must be an object, e.g. { public_ports: true }");
      body.network = opts.network;
    }
    const raw = await http.json({
      method: "POST",
      path: "/v1/sandboxes",
      json: body,
      timeoutMs: Math.max(http.config.requestTimeoutMs, CREATE_DEADLINE_MS),
      signal: opts.signal,
    });
    return new Sandbox(http, parseSandboxInfo(raw));
  }

  /** Attaches to an existing sandbox by id. Throws NotFoundError if the key's team has no such sandbox. */
  static async connect(sandboxId: string, opts: ConnectionOptions & { signal?: AbortSignal } = {}): Promise<Sandbox> {
    if (typeof sandboxId !== "string" || sandboxId === "") throw new TypeError("sandboxId must be a non-empty string (sbx_...)");
    const http = new HttpClient(resolveConfig(opts));
    const raw = await http.json({ method: "GET", path: `/v1/sandboxes/${seg(sandboxId)}`, signal: opts.signal });
    return new Sandbox(http, parseSandboxInfo(raw));
  }

  /** The team's sandboxes, oldest first (stopped ones stay listed for a while). */
  static async list(opts: SandboxListOptions = {}): Promise<SandboxInfo[]> {
    const http = new HttpClient(resolveConfig(opts));
    const query: Array<[string, string]> = [];
    if (opts.status !== undefined) query.push(["status", opts.status]);
    for (const [k, v] of Object.entries(opts.metadata ?? {})) query.push([`metadata.${k}`, v]);
    const raw = await http.json({ method: "GET", path: "/v1/sandboxes", query, signal: opts.signal });
    const list = isObject(raw) && Array.isArray(raw.sandboxes) ? raw.sandboxes : [];
    return list.map(parseSandboxInfo);
  }

  /** Fetches the sandbox's current state (and updates `info`). */
  async getInfo(): Promise<SandboxInfo> {
    const raw = await this.http.json({ method: "GET", path: `/v1/sandboxes/${seg(this.id)}` });
    this.info = parseSandboxInfo(raw);
    return this.info;
  }

  /** True when the API reports the sandbox as running (false once it is gone). */
  async isRunning(): Promise<boolean> {
    try {
      return (await this.getInfo()).status === "running";
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  /** Makes the sandbox expire `seconds` from now (1 to the daemon's max, 86400 by default). */
  async setTtl(seconds: number): Promise<SandboxInfo> {
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/ttl`,
      json: { ttl_seconds: seconds },
    });
    this.info = parseSandboxInfo(raw);
    return this.info;
  }

  /**
   * Captures the sandbox (memory, processes, code contexts, files); it keeps
   * running. `Sandbox.create({ snapshot: info.id })` makes sandboxes from it.
   * Throws SandboxError (sandbox_not_running, host_disk_full, snapshot_failed).
   */
  async snapshot(opts: { name?: string; signal?: AbortSignal } = {}): Promise<SnapshotInfo> {
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/snapshots`,
      json: opts.name !== undefined ? { name: opts.name } : {},
      timeoutMs: Math.max(this.http.config.requestTimeoutMs, CREATE_DEADLINE_MS),
      signal: opts.signal,
    });
    return parseSnapshotInfo(raw);
  }

  /**
   * `count` (1-16) new sandboxes from one capture of this one, each with its
   * variables, files and processes and its own entropy. All or none.
   */
  async fork(count = 1, opts: ForkOptions = {}): Promise<Sandbox[]> {
    if (!Number.isInteger(count)) throw new TypeError("count must be an integer (1 to 16)");
    const body: Record<string, unknown> = { count };
    if (opts.ttlSeconds !== undefined) body.ttl_seconds = opts.ttlSeconds;
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/fork`,
      json: body,
      timeoutMs: Math.max(this.http.config.requestTimeoutMs, CREATE_DEADLINE_MS),
      signal: opts.signal,
    });
    const list = isObject(raw) && Array.isArray(raw.sandboxes) ? raw.sandboxes : [];
    return list.map((s) => new Sandbox(this.http, parseSandboxInfo(s)));
  }

  /** Captures the sandbox and ends its VM; status "paused", TTL stopped. */
  async pause(opts: { signal?: AbortSignal } = {}): Promise<SandboxInfo> {
    return this.lifecycle("pause", opts.signal);
  }

  /**
   * Restores a paused sandbox under the same id, with its code contexts, and
   * a TTL of `ttlSeconds` (default: what it had left when paused; one paused
   * at its TTL gets the daemon's default TTL).
   */
  async resume(opts: { ttlSeconds?: number; signal?: AbortSignal } = {}): Promise<SandboxInfo> {
    return this.lifecycle("resume", opts.signal,
                          opts.ttlSeconds !== undefined ? { ttl_seconds: opts.ttlSeconds } : undefined);
  }

  private async lifecycle(op: "pause" | "resume", signal?: AbortSignal,
                          json?: Record<string, unknown>): Promise<SandboxInfo> {
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/${op}`,
      json,
      timeoutMs: Math.max(this.http.config.requestTimeoutMs, CREATE_DEADLINE_MS),
      signal,
    });
    this.info = parseSandboxInfo(raw);
    return this.info;
  }

  /** The team's snapshots, oldest first. */
  static async listSnapshots(opts: SnapshotListOptions = {}): Promise<SnapshotInfo[]> {
    const http = new HttpClient(resolveConfig(opts));
    const query: Array<[string, string]> = [];
    if (opts.sandboxId !== undefined) query.push(["sandbox_id", opts.sandboxId]);
    const raw = await http.json({ method: "GET", path: "/v1/snapshots", query, signal: opts.signal });
    const list = isObject(raw) && Array.isArray(raw.snapshots) ? raw.snapshots : [];
    return list.map(parseSnapshotInfo);
  }

  /** Deletes a snapshot; one already gone is not an error. Throws SandboxError (snapshot_in_use). */
  static async deleteSnapshot(snapshotId: string, opts: ConnectionOptions & { signal?: AbortSignal } = {}): Promise<void> {
    if (typeof snapshotId !== "string" || snapshotId === "") throw new TypeError("snapshotId must be a non-empty string (snap_...)");
    const http = new HttpClient(resolveConfig(opts));
    try {
      await http.empty({ method: "DELETE", path: `/v1/snapshots/${seg(snapshotId)}`, goneOnRetryOk: true, signal: opts.signal });
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
  }

  /** Stops the sandbox and deletes it. Killing a sandbox that is already gone is not an error. */
  async kill(): Promise<void> {
    try {
      await this.http.empty({ method: "DELETE", path: `/v1/sandboxes/${seg(this.id)}`, goneOnRetryOk: true });
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
  }

  /** `await using sandbox = await Sandbox.create(...)` kills it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.kill();
  }

  /**
   * Runs `/bin/sh -c cmd` in the guest and resolves when it ends, with
   * `{stdout, stderr, exit_code, duration_ms, ...}`. A non-zero exit code is a
   * normal result unless `check` is true (then CommandFailed). With
   * `background: true` it starts the command and resolves at once with a
   * `Command` (`output()`, `wait()`, `kill()`, `sendStdin()`).
   */
  async exec(cmd: string, opts: BackgroundExecOptions): Promise<Command>;
  async exec(cmd: string, opts?: ExecOptions): Promise<ExecResult>;
  async exec(cmd: string, opts: ExecOptions | BackgroundExecOptions = {}): Promise<ExecResult | Command> {
    if (opts.background === true) {
      const body = execBody(cmd, opts);
      body.background = true;
      const info = parseCommandInfo(
        await this.http.json({ method: "POST", path: `/v1/sandboxes/${seg(this.id)}/exec`, json: body, signal: opts.signal }),
      );
      return new Command(this.http, this.id, info);
    }
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/exec`,
      json: execBody(cmd, opts),
      timeoutMs: runDeadlineMs(opts.timeoutSeconds, this.http.config.requestTimeoutMs),
      signal: opts.signal,
    });
    const result = parseExecResult(raw);
    if (opts.check && result.exit_code !== 0) throw new CommandFailed(result);
    return result;
  }

  /** The sandbox's background commands (running, and the ended ones it still keeps), oldest first. */
  async listCommands(opts: { signal?: AbortSignal } = {}): Promise<Command[]> {
    const raw = await this.http.json({ method: "GET", path: `/v1/sandboxes/${seg(this.id)}/commands`, signal: opts.signal });
    const items = isObject(raw) && Array.isArray(raw.commands) ? raw.commands : [];
    return items.map((c) => new Command(this.http, this.id, parseCommandInfo(c)));
  }

  /**
   * Runs `cmd` like `exec`, calling `onStdout` / `onStderr` with each chunk of
   * output as it comes (Server-Sent Events), and resolves with the whole result
   * (the output is also collected, up to the daemon's cap). Aborting the signal
   * closes the stream, which makes the daemon kill the command.
   */
  async execStream(cmd: string, opts: ExecStreamOptions = {}): Promise<ExecResult> {
    const res = await this.http.stream({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/exec_stream`,
      json: execBody(cmd, opts),
      accept: "text/event-stream",
      idle: true,
      timeoutMs: Math.max(this.http.config.requestTimeoutMs, STREAM_IDLE_MIN_MS),
      signal: opts.signal,
    });
    const out: string[] = [];
    const err: string[] = [];
    for await (const ev of readSse(res.body)) {
      const data = parseJsonEvent(ev.data);
      switch (ev.event) {
        case "started":
          if (opts.onStart && typeof data.pid === "number") await opts.onStart(data.pid);
          break;
        case "stdout": {
          const chunk = str(data.data, "");
          out.push(chunk);
          if (opts.onStdout) await opts.onStdout(chunk);
          break;
        }
        case "stderr": {
          const chunk = str(data.data, "");
          err.push(chunk);
          if (opts.onStderr) await opts.onStderr(chunk);
          break;
        }
        case "exit": {
          const result = parseExecResult(data, out.join(""), err.join(""));
          if (opts.check && result.exit_code !== 0) throw new CommandFailed(result);
          return result;
        }
        case "error": {
          const e = isObject(data.error) ? data.error : {};
          throw apiError(undefined, str(e.code, "stream_error"), str(e.message, "the exec stream failed"));
        }
        default:
          break;
      }
    }
    throw new ConnectionError("the exec stream ended before the command's exit", { code: "connection_failed" });
  }

  /**
   * Runs `code` once in a fresh process: Python (the default) or a shell
   * snippet (`"shell"`). Nothing persists between calls; for state, use a code
   * context. Resolves to `{stdout, stderr, exit_code, duration_ms, ...}`.
   */
  runCode(code: string, language?: string, opts?: Omit<SandboxRunCodeOptions, "language">): Promise<ExecResult>;
  runCode(code: string, opts: SandboxRunCodeOptions): Promise<ExecResult>;
  async runCode(
    code: string,
    languageOrOpts?: string | SandboxRunCodeOptions,
    maybeOpts: Omit<SandboxRunCodeOptions, "language"> = {},
  ): Promise<ExecResult> {
    const opts: SandboxRunCodeOptions =
      typeof languageOrOpts === "object" && languageOrOpts !== null
        ? languageOrOpts
        : { ...maybeOpts, language: languageOrOpts ?? "python" };
    const body: Record<string, unknown> = { code, language: opts.language ?? "python" };
    if (opts.timeoutSeconds !== undefined) body.timeout_seconds = opts.timeoutSeconds;
    const raw = await this.http.json({
      method: "POST",
      path: `/v1/sandboxes/${seg(this.id)}/run_code`,
      json: body,
      timeoutMs: runDeadlineMs(opts.timeoutSeconds, this.http.config.requestTimeoutMs),
      signal: opts.signal,
    });
    return parseExecResult(raw);
  }

  /** Starts a persistent kernel in the sandbox (Python by default). Close it with `ctx.close()`. */
  createCodeContext(opts: CodeContextOptions = {}): Promise<CodeContext> {
    return createCodeContext(this.http, this.id, opts);
  }

  /** The sandbox's open code contexts, as handles (each can run code or be closed). */
  listCodeContexts(): Promise<CodeContext[]> {
    return listCodeContexts(this.http, this.id);
  }
}
