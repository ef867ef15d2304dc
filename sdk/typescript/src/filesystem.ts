/**
 * `sandbox.filesystem`: files in the guest over the API's file routes
 * (docs/api.md, "Files"): write/read in memory, upload/download streamed from
 * and to local files (any size: memory stays flat), and stat/list/mkdir/remove.
 * Guest paths are absolute; the daemon checks them. Large and streamed bodies
 * go with `Expect: 100-continue` (http.ts, node_fetch.ts).
 */

import { createReadStream, createWriteStream } from "node:fs";
import { open, rename, stat as localStat, unlink } from "node:fs/promises";
import { basename, dirname, join, posix } from "node:path";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

import { NotFoundError, PandaStackError } from "./errors.js";
import { type HttpClient, seg } from "./http.js";
import {
  type DirListing,
  type FileEntry,
  type WriteInfo,
  parseDirListing,
  parseFileEntry,
  parseWriteInfo,
} from "./models.js";

/** Data `write` accepts: text (written as UTF-8), bytes, or a stream of bytes. */
export type WriteData = string | Uint8Array | ArrayBuffer | ReadableStream<Uint8Array>;

/** Options of `read`. */
export interface ReadOptions {
  /** "text" (UTF-8, the default), "bytes" (a Uint8Array) or "stream" (a ReadableStream). */
  format?: "text" | "bytes" | "stream";
  signal?: AbortSignal;
}

/** Options shared by the file calls. */
export interface FileCallOptions {
  signal?: AbortSignal;
}

/** Chunk size of an upload read from disk, bytes. */
const UPLOAD_CHUNK = 256 * 1024;

/** The files of one sandbox. Get it as `sandbox.filesystem`; safe to use from concurrent calls. */
export class Filesystem {
  /** @internal */
  constructor(
    private readonly http: HttpClient,
    private readonly sandboxId: string,
  ) {}

  private fsPath(sub = ""): string {
    return `/v1/sandboxes/${seg(this.sandboxId)}/fs${sub}`;
  }

  /**
   * Writes `data` to the guest file `path` (created or replaced atomically,
   * parents created). Strings are written as UTF-8. A stream is sent as it is
   * read. Resolves to `{path, size}` (bytes written).
   */
  async write(path: string, data: WriteData, opts: FileCallOptions = {}): Promise<WriteInfo> {
    let body: Uint8Array | (() => ReadableStream<Uint8Array>);
    let oneShot = false;
    if (typeof data === "string") body = new TextEncoder().encode(data);
    else if (data instanceof Uint8Array) body = data;
    else if (data instanceof ArrayBuffer) body = new Uint8Array(data);
    else if (data instanceof ReadableStream) {
      body = () => data;
      oneShot = true;
    } else {
      throw new PandaStackError("write: data must be a string, bytes or a ReadableStream", {
        code: "invalid_argument",
      });
    }
    const raw = await this.http.json({
      method: "PUT",
      path: this.fsPath(),
      query: [["path", path]],
      body,
      oneShotBody: oneShot,
      idle: true,
      signal: opts.signal,
    });
    return parseWriteInfo(raw, path);
  }

  /** Reads the guest file `path` as UTF-8 text (the default). */
  read(path: string, opts?: ReadOptions & { format?: "text" }): Promise<string>;
  /** Reads the guest file `path` as bytes. */
  read(path: string, opts: ReadOptions & { format: "bytes" }): Promise<Uint8Array>;
  /** Opens the guest file `path` as a stream of bytes (the caller reads or cancels it). */
  read(path: string, opts: ReadOptions & { format: "stream" }): Promise<ReadableStream<Uint8Array>>;
  async read(path: string, opts: ReadOptions = {}): Promise<string | Uint8Array | ReadableStream<Uint8Array>> {
    const format = opts.format ?? "text";
    const res = await this.http.stream({
      method: "GET",
      path: this.fsPath(),
      query: [["path", path]],
      idle: true,
      signal: opts.signal,
    });
    if (format === "stream") return res.body;
    const chunks: Uint8Array[] = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    if (format === "bytes") return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return new TextDecoder("utf-8").decode(bytes);
  }

  /**
   * Uploads the local file `localPath` to the guest path `remotePath`, streamed
   * in 256 KiB chunks (memory stays flat whatever the size). Resolves to `{path, size}`.
   */
  async upload(localPath: string, remotePath: string, opts: FileCallOptions = {}): Promise<WriteInfo> {
    let size: number;
    try {
      const st = await localStat(localPath);
      if (!st.isFile()) throw new PandaStackError(`upload: ${localPath} is not a file`, { code: "invalid_argument" });
      size = st.size;
    } catch (e) {
      if (e instanceof PandaStackError) throw e;
      throw new PandaStackError(`upload: cannot read ${localPath}: ${(e as Error).message}`, {
        code: "local_file_error",
        cause: e,
      });
    }
    const raw = await this.http.json({
      method: "PUT",
      path: this.fsPath(),
      query: [["path", remotePath]],
      body: () => fileStream(localPath),
      contentLength: size,
      idle: true,
      signal: opts.signal,
    });
    return parseWriteInfo(raw, remotePath);
  }

  /**
   * Downloads the guest file `remotePath` to the local path `localPath`,
   * streamed to a temporary file beside it that is renamed into place when
   * complete (an interrupted download leaves no partial file). An existing
   * directory as `localPath` receives the file under the guest file's name.
   * Resolves to `{path, size}` (where it was written, bytes written).
   */
  async download(remotePath: string, localPath: string, opts: FileCallOptions = {}): Promise<WriteInfo> {
    // An existing directory receives the file under the guest file's name, as `cp` does.
    const isDir = await localStat(localPath).then((s) => s.isDirectory(), () => false);
    if (isDir) localPath = join(localPath, posix.basename(remotePath.replace(/\/+$/, "")) || "download");
    const tmp = join(dirname(localPath), `.${basename(localPath)}.${randomBytes(6).toString("hex")}.part`);
    const res = await this.http.stream({
      method: "GET",
      path: this.fsPath(),
      query: [["path", remotePath]],
      idle: true,
      signal: opts.signal,
    });
    const expected = Number(res.headers.get("content-length") ?? NaN);
    let size = 0;
    const counted = async function* (body: ReadableStream<Uint8Array>) {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        yield chunk;
      }
    };
    try {
      await pipeline(Readable.from(counted(res.body)), createWriteStream(tmp, { flags: "wx", mode: 0o644 }));
      if (Number.isFinite(expected) && expected !== size) {
        throw new PandaStackError(`download: got ${size} of ${expected} bytes`, { code: "incomplete_transfer" });
      }
      const fh = await open(tmp, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, localPath);
    } catch (e) {
      await res.body.cancel().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      if (e instanceof PandaStackError) throw e;
      if ((e as { name?: string })?.name === "AbortError" && opts.signal?.aborted) throw e;
      throw new PandaStackError(`download to ${localPath} failed: ${(e as Error).message}`, {
        code: "local_file_error",
        cause: e,
      });
    }
    return { path: localPath, size };
  }

  /** Describes the guest path `path`. Throws NotFoundError when it does not exist. */
  async stat(path: string, opts: FileCallOptions = {}): Promise<FileEntry> {
    const raw = await this.http.json({
      method: "GET",
      path: this.fsPath("/stat"),
      query: [["path", path]],
      signal: opts.signal,
    });
    return parseFileEntry(raw);
  }

  /** True when the guest path `path` exists (a stat that is not 404). */
  async exists(path: string, opts: FileCallOptions = {}): Promise<boolean> {
    try {
      await this.stat(path, opts);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  /** Lists the guest directory `path` (sorted by name, at most 10000 entries). */
  async list(path: string, opts: FileCallOptions = {}): Promise<DirListing> {
    const raw = await this.http.json({
      method: "GET",
      path: this.fsPath("/list"),
      query: [["path", path]],
      signal: opts.signal,
    });
    return parseDirListing(raw, path);
  }

  /** Creates the guest directory `path` (with its parents unless `parents: false`). */
  async mkdir(path: string, opts: FileCallOptions & { parents?: boolean } = {}): Promise<FileEntry> {
    const body: Record<string, unknown> = { path };
    if (opts.parents !== undefined) body.parents = opts.parents;
    const raw = await this.http.json({ method: "POST", path: this.fsPath("/mkdir"), json: body, signal: opts.signal });
    return parseFileEntry(raw);
  }

  /** Removes the guest file or directory `path` (a non-empty directory only with `recursive: true`). */
  async remove(path: string, opts: FileCallOptions & { recursive?: boolean } = {}): Promise<void> {
    const query: Array<[string, string]> = [["path", path]];
    if (opts.recursive) query.push(["recursive", "true"]);
    await this.http.empty({ method: "DELETE", path: this.fsPath(), query, signal: opts.signal });
  }
}

/**
 * A web stream of a local file, read in UPLOAD_CHUNK pieces as the consumer
 * pulls. The file is opened at the first pull, so a stream that is never read
 * (an attempt that failed before sending) holds no descriptor.
 */
function fileStream(localPath: string): ReadableStream<Uint8Array> {
  let nodeStream: ReturnType<typeof createReadStream> | undefined;
  let it: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctrl) {
        if (!it) {
          nodeStream = createReadStream(localPath, { highWaterMark: UPLOAD_CHUNK });
          it = nodeStream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
        }
        const { done, value } = await it.next();
        if (done) ctrl.close();
        else ctrl.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      },
      cancel() {
        nodeStream?.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}
