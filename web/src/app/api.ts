// The dashboard's client of the REST API (docs/api.md): same origin, the
// signed-in key in the Authorization header of every call, errors as
// ApiError carrying the API's own code and message.

import { apiKey } from './session';
import { sseEvents, SseEvent } from './sse';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Fired on window when the API answers 401: the key is gone or revoked. */
export const UNAUTHORIZED_EVENT = 'pandastack:unauthorized';

export interface Key {
  id: string;
  name: string;
  team: string;
  admin: boolean;
  created_at: string;
  last_used_at: string | null;
}
export interface NewKey extends Key {
  key: string;
}
export interface Template {
  name: string;
  status: 'ready' | 'stale' | 'invalid' | 'missing';
  vcpus: number | null;
  memory_mib: number | null;
  pool_ready: number;
  error: string | null;
}
export interface Sandbox {
  id: string;
  template: string;
  status: 'running' | 'paused' | 'stopped' | 'error' | 'lost';
  reason: string | null;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  vcpus: number;
  memory_mib: number;
  metadata: Record<string, string>;
}
export interface Context {
  id: string;
  language: string;
  cwd: string;
  kernel: string;
  busy: boolean;
  created_at: string;
}
export interface FileEntry {
  name: string;
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  mode: number;
  mtime_ms: number;
}
export interface CellError {
  name: string;
  value: string;
  traceback: string | string[];
}
/** One rich result of a cell: a field per MIME type present. */
export interface Result {
  is_main_result?: boolean;
  text?: string;
  html?: string;
  markdown?: string;
  svg?: string;
  png?: string;
  jpeg?: string;
  json?: unknown;
  latex?: string;
  javascript?: string;
  extra?: Record<string, unknown>;
}

interface CallOptions {
  json?: unknown;
  body?: BodyInit;
  signal?: AbortSignal;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { ...extra };
  const k = apiKey();
  if (k) h['Authorization'] = `Bearer ${k}`;
  return h;
}

async function errorOf(r: Response): Promise<ApiError> {
  let code = 'http_' + r.status;
  let message = `${r.status} ${r.statusText}`.trim();
  try {
    const j = await r.json();
    if (j && j.error && typeof j.error.code === 'string') {
      code = j.error.code;
      message = String(j.error.message ?? message);
    }
  } catch {
    /* not JSON: keep the status line */
  }
  if (r.status === 401) window.dispatchEvent(new CustomEvent(UNAUTHORIZED_EVENT, { detail: message }));
  return new ApiError(r.status, code, message);
}

/** fetch path with the key; a failed connection is ApiError(0, "network"). */
async function send(method: string, path: string, opts: CallOptions = {}, key?: string): Promise<Response> {
  const h = headers(opts.json !== undefined ? { 'Content-Type': 'application/json' } : {});
  if (key) h['Authorization'] = `Bearer ${key}`;
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers: h,
      body: opts.json !== undefined ? JSON.stringify(opts.json) : opts.body,
      signal: opts.signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network', `cannot reach pandastackd: ${(e as Error).message}`);
  }
  if (!r.ok) throw await errorOf(r);
  return r;
}

async function call<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const r = await send(method, path, opts);
  if (r.status === 204) return undefined as T;
  return (await r.json()) as T;
}

/** POST json to a streaming route and hand each SSE event to onEvent. */
async function stream(path: string, json: unknown, onEvent: (e: SseEvent) => void, signal?: AbortSignal): Promise<void> {
  const r = await send('POST', path, { json, signal });
  if (!r.body || !(r.headers.get('Content-Type') ?? '').startsWith('text/event-stream'))
    throw new ApiError(r.status, 'bad_stream', 'the answer is not an event stream');
  for await (const e of sseEvents(r.body)) onEvent(e);
}

const enc = encodeURIComponent;
const sbx = (id: string) => `/v1/sandboxes/${enc(id)}`;
const fsq = (path: string) => `?path=${enc(path)}`;

export const api = {
  /** GET /healthz with an explicit key (sign-in). */
  async healthz(key: string): Promise<{ status: string; version: string; accelerator: string }> {
    return (await send('GET', '/healthz', {}, key)).json();
  },
  async metrics(): Promise<string> {
    return (await send('GET', '/metrics')).text();
  },
  /** Whether key may read /metrics, i.e. is an admin key (403 otherwise). */
  async isAdmin(key: string): Promise<boolean> {
    try {
      await send('GET', '/metrics', {}, key);
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) return false;
      throw e;
    }
  },
  keys: () => call<{ keys: Key[] }>('GET', '/v1/keys').then((r) => r.keys),
  keysWith: async (key: string) => ((await (await send('GET', '/v1/keys', {}, key)).json()) as { keys: Key[] }).keys,
  createKey: (name: string, team?: string) => call<NewKey>('POST', '/v1/keys', { json: team ? { name, team } : { name } }),
  deleteKey: (id: string) => call<void>('DELETE', `/v1/keys/${enc(id)}`),

  templates: () => call<{ templates: Template[] }>('GET', '/v1/templates').then((r) => r.templates),

  sandboxes: () => call<{ sandboxes: Sandbox[] }>('GET', '/v1/sandboxes').then((r) => r.sandboxes),
  createSandbox: (template: string, ttl_seconds: number, metadata: Record<string, string>) =>
    call<Sandbox>('POST', '/v1/sandboxes', { json: { template, ttl_seconds, metadata } }),
  killSandbox: (id: string) => call<void>('DELETE', sbx(id)),
  setTtl: (id: string, ttl_seconds: number) => call<Sandbox>('POST', `${sbx(id)}/ttl`, { json: { ttl_seconds } }),

  createContext: (id: string) => call<Context>('POST', `${sbx(id)}/contexts`, { json: {} }),
  interrupt: (id: string, ctx: string) => call<void>('POST', `${sbx(id)}/contexts/${enc(ctx)}/interrupt`, { json: {} }),
  restart: (id: string, ctx: string) => call<void>('POST', `${sbx(id)}/contexts/${enc(ctx)}/restart`, { json: {} }),
  runCell: (id: string, ctx: string, code: string, onEvent: (e: SseEvent) => void, signal?: AbortSignal) =>
    stream(`${sbx(id)}/contexts/${enc(ctx)}/run_code_stream`, { code }, onEvent, signal),
  execStream: (id: string, cmd: string, onEvent: (e: SseEvent) => void, signal?: AbortSignal) =>
    stream(`${sbx(id)}/exec_stream`, { cmd }, onEvent, signal),

  list: (id: string, path: string) =>
    call<{ path: string; entries: FileEntry[]; truncated: boolean }>('GET', `${sbx(id)}/fs/list${fsq(path)}`),
  download: async (id: string, path: string) => (await send('GET', `${sbx(id)}/fs${fsq(path)}`)).blob(),
  upload: (id: string, path: string, body: Blob) => call<{ path: string; size: number }>('PUT', `${sbx(id)}/fs${fsq(path)}`, { body }),
  mkdir: (id: string, path: string) => call<FileEntry>('POST', `${sbx(id)}/fs/mkdir`, { json: { path } }),
  remove: (id: string, path: string) => call<void>('DELETE', `${sbx(id)}/fs${fsq(path)}&recursive=true`),
};

/** A one-line description of any error for the page. */
export function describe(e: unknown): string {
  if (e instanceof ApiError) return e.status ? `${e.message} (${e.status} ${e.code})` : e.message;
  return e instanceof Error ? e.message : String(e);
}
