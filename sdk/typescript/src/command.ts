/**
 * `Command`: a background command in a sandbox (docs/api.md, "Background
 * commands"), started with `sandbox.exec(cmd, { background: true })`. It keeps
 * running in the guest (a dev server, a training job) while the program goes
 * on; the handle reads its output so far, waits for its end, writes to its
 * stdin and kills it. No timeout applies unless one was asked for.
 */

import { TimeoutError } from "./errors.js";
import { HttpClient, seg } from "./http.js";
import { type ExecResult, invalidResponse, isObject, num, str } from "./models.js";

/** A background command as the API describes it (docs/api.md, "Command"). */
export interface CommandInfo {
  /** `cmd_` + 20 hex digits. */
  id: string;
  /** Its pid in the guest. */
  pid: number | null;
  /** The command line (its first 4096 bytes). */
  cmd: string;
  cwd: string | null;
  /** ISO 8601 times. */
  started_at: string | null;
  ended_at: string | null;
  running: boolean;
  /** `128 + N` (and `signal` N) when signal N ended it; null while it runs. */
  exit_code: number | null;
  signal: number | null;
  timed_out: boolean;
  /** Bytes written so far. */
  stdout_bytes: number;
  stderr_bytes: number;
  stdin_open: boolean;
}

/** One read of a command's output (`GET .../commands/{cid}/output`). */
export interface CommandOutput {
  stdout: string;
  stderr: string;
  /** Byte offset of the first byte returned (later than asked when older output was dropped). */
  stdout_offset: number;
  stderr_offset: number;
  /** The offsets to read from next. */
  next_stdout_offset: number;
  next_stderr_offset: number;
  /** Bytes between the offset asked for and the one returned that the guest dropped. */
  stdout_dropped: number;
  stderr_dropped: number;
  /** Bytes written so far. */
  stdout_total: number;
  stderr_total: number;
  command: CommandInfo;
}

/** Options of `Command.output`. */
export interface CommandOutputOptions {
  stdoutOffset?: number;
  stderrOffset?: number;
  /** When nothing new was written and the command runs, wait up to this many seconds (0-60). */
  waitSeconds?: number;
  /** Per stream; 0 or absent: all that is kept (1 MiB). */
  maxBytes?: number;
  signal?: AbortSignal;
}

/** The signals `Command.kill` can send. */
export type CommandSignal = "SIGKILL" | "SIGTERM" | "SIGINT" | "SIGHUP" | "SIGQUIT" | "SIGUSR1" | "SIGUSR2";

/** Parses a command object; throws PandaStackError("invalid_response") without an id. */
export function parseCommandInfo(v: unknown): CommandInfo {
  if (!isObject(v) || typeof v.id !== "string" || v.id === "") invalidResponse("a command without an id");
  return {
    id: v.id,
    pid: num(v.pid, null),
    cmd: str(v.cmd, ""),
    cwd: str(v.cwd, null),
    started_at: str(v.started_at, null),
    ended_at: str(v.ended_at, null),
    running: v.running === true,
    exit_code: num(v.exit_code, null),
    signal: num(v.signal, null),
    timed_out: v.timed_out === true,
    stdout_bytes: num(v.stdout_bytes, 0),
    stderr_bytes: num(v.stderr_bytes, 0),
    stdin_open: v.stdin_open === true,
  };
}

function parseCommandOutput(v: unknown): CommandOutput {
  const o = isObject(v) ? v : {};
  return {
    stdout: str(o.stdout, ""),
    stderr: str(o.stderr, ""),
    stdout_offset: num(o.stdout_offset, 0),
    stderr_offset: num(o.stderr_offset, 0),
    next_stdout_offset: num(o.next_stdout_offset, 0),
    next_stderr_offset: num(o.next_stderr_offset, 0),
    stdout_dropped: num(o.stdout_dropped, 0),
    stderr_dropped: num(o.stderr_dropped, 0),
    stdout_total: num(o.stdout_total, 0),
    stderr_total: num(o.stderr_total, 0),
    command: parseCommandInfo(o.command),
  };
}

/** True when a read shows the command ended and everything was read. */
function complete(o: CommandOutput): boolean {
  return !o.command.running && o.next_stdout_offset >= o.stdout_total && o.next_stderr_offset >= o.stderr_total;
}

function wholeNumber(name: string, v: number | undefined, max: number): number {
  const n = v ?? 0;
  if (!Number.isInteger(n) || n < 0 || n > max) throw new RangeError(`${name} must be a whole number from 0 to ${max}`);
  return n;
}

/** A background command in a sandbox. Methods may be called concurrently. */
export class Command {
  /** `cmd_...`. */
  readonly id: string;
  readonly sandboxId: string;
  /** The command as last seen (start, output, kill). */
  info: CommandInfo;
  private readonly http: HttpClient;
  private readonly path: string;

  /** @internal Made by `sandbox.exec(..., { background: true })` and `sandbox.listCommands()`. */
  constructor(http: HttpClient, sandboxId: string, info: CommandInfo) {
    this.http = http;
    this.sandboxId = sandboxId;
    this.info = info;
    this.id = info.id;
    this.path = `/v1/sandboxes/${seg(sandboxId)}/commands/${seg(info.id)}`;
  }

  /** Its pid in the guest. */
  get pid(): number | null {
    return this.info.pid;
  }

  /**
   * What the command wrote so far, from the given byte offsets (the guest keeps
   * the newest 1 MiB of each stream), and its state. NotFoundError
   * ("command_not_found") once the sandbox no longer keeps it.
   */
  async output(opts: CommandOutputOptions = {}): Promise<CommandOutput> {
    const wait = wholeNumber("waitSeconds", opts.waitSeconds, 60);
    const query: Array<[string, string]> = [
      ["stdout_offset", String(wholeNumber("stdoutOffset", opts.stdoutOffset, Number.MAX_SAFE_INTEGER))],
      ["stderr_offset", String(wholeNumber("stderrOffset", opts.stderrOffset, Number.MAX_SAFE_INTEGER))],
    ];
    if (wait) query.push(["wait_seconds", String(wait)]);
    const max = wholeNumber("maxBytes", opts.maxBytes, 1 << 20);
    if (max) query.push(["max_bytes", String(max)]);
    const raw = await this.http.json({
      method: "GET",
      path: `${this.path}/output`,
      query,
      timeoutMs: wait ? Math.max(wait * 1000 + 60_000, this.http.config.requestTimeoutMs) : undefined,
      signal: opts.signal,
    });
    const out = parseCommandOutput(raw);
    this.info = out.command;
    return out;
  }

  /**
   * Waits for the command to end and resolves with all its output (from the
   * start) and exit code. `timeoutSeconds`: past it TimeoutError
   * ("client_timeout"); the command keeps running.
   */
  async wait(opts: { timeoutSeconds?: number; signal?: AbortSignal } = {}): Promise<ExecResult> {
    const deadline = opts.timeoutSeconds === undefined ? null : Date.now() + opts.timeoutSeconds * 1000;
    const out: string[] = [];
    const err: string[] = [];
    let so = 0;
    let se = 0;
    for (;;) {
      const left = deadline === null ? 30 : Math.floor((deadline - Date.now()) / 1000);
      const r = await this.output({ stdoutOffset: so, stderrOffset: se, waitSeconds: Math.max(1, Math.min(30, left)), signal: opts.signal });
      out.push(r.stdout);
      err.push(r.stderr);
      so = Math.max(so, r.next_stdout_offset);
      se = Math.max(se, r.next_stderr_offset);
      if (complete(r)) {
        const c = r.command;
        return {
          stdout: out.join(""),
          stderr: err.join(""),
          exit_code: c.exit_code ?? -1,
          duration_ms: 0,
          timed_out: c.timed_out,
          signal: c.signal,
          stdout_truncated: r.stdout_dropped > 0,
          stderr_truncated: r.stderr_dropped > 0,
        };
      }
      if (deadline !== null && Date.now() >= deadline) {
        throw new TimeoutError(`command ${this.id} still runs after ${opts.timeoutSeconds} s`, { code: "client_timeout" });
      }
    }
  }

  /**
   * Sends `signal` (SIGKILL, the default, ends its whole process tree). Resolves
   * with the command once it ended, or after 2 s if it has not.
   */
  async kill(signal: CommandSignal = "SIGKILL", opts: { signal?: AbortSignal } = {}): Promise<CommandInfo> {
    this.info = parseCommandInfo(
      await this.http.json({ method: "POST", path: `${this.path}/kill`, json: { signal }, signal: opts.signal }),
    );
    return this.info;
  }

  /** Writes `data` to the command's stdin (and closes it with `eof`); resolves with the bytes written. */
  async sendStdin(data: string | undefined, opts: { eof?: boolean; signal?: AbortSignal } = {}): Promise<number> {
    const body: Record<string, unknown> = { eof: opts.eof === true };
    if (data !== undefined) body.data = data;
    const raw = await this.http.json({ method: "POST", path: `${this.path}/stdin`, json: body, signal: opts.signal });
    return isObject(raw) ? num(raw.written, 0) : 0;
  }
}
