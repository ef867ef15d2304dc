/**
 * A Server-Sent Events reader (the "event stream interpretation" of the HTML
 * standard): lines end with CRLF, LF or CR; `:` starts a comment (the daemon's
 * `: keepalive`); `event:` and `data:` fields (several `data:` lines join with
 * "\n"); a blank line ends an event. `id` and `retry` are ignored (the SDK
 * never reconnects a stream: reconnecting would run the command again).
 */

import { PandaStackError } from "./errors.js";

/** One event of a stream. */
export interface SseEvent {
  /** The `event:` field, "message" when absent. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
}

/** The largest event (or line) accepted, characters: well above the daemon's 64 KiB chunks. */
export const SSE_EVENT_CAP = 16 * 1024 * 1024;

/**
 * Yields the events of `body` in order. Throws PandaStackError("invalid_response")
 * for an event over `cap` characters; errors of the body pass through.
 * The caller owns `body`; breaking out of the loop cancels it.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  cap: number = SSE_EVENT_CAP,
): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buf = "";
  let eventType = "";
  let data: string[] = [];
  let dataLen = 0;
  let lastWasCR = false;
  let finished = false;

  const take = (line: string): SseEvent | undefined => {
    if (line === "") {
      const ev = dataLen > 0 || data.length > 0 ? { event: eventType || "message", data: data.join("\n") } : undefined;
      eventType = "";
      data = [];
      dataLen = 0;
      return ev;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") eventType = value;
    else if (field === "data") {
      dataLen += value.length + 1;
      if (dataLen > cap) throw new PandaStackError(`an event of the stream is over ${cap} characters`, {
        code: "invalid_response",
      });
      data.push(value);
    }
    return undefined;
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        buf += decoder.decode();
        finished = true;
      } else {
        buf += decoder.decode(value, { stream: true });
      }
      let start = 0;
      for (let i = 0; i < buf.length; i++) {
        const c = buf.charCodeAt(i);
        if (c !== 10 && c !== 13) continue;
        if (c === 10 && lastWasCR && i === start) {
          /* the LF of a CRLF split from its CR */
          start = i + 1;
          lastWasCR = false;
          continue;
        }
        const ev = take(buf.slice(start, i));
        if (ev) yield ev;
        lastWasCR = c === 13;
        if (c === 13 && i + 1 < buf.length && buf.charCodeAt(i + 1) === 10) {
          i++;
          lastWasCR = false;
        }
        start = i + 1;
      }
      buf = buf.slice(start);
      if (buf.length > 0) lastWasCR = false;
      if (buf.length > cap) {
        throw new PandaStackError(`a line of the stream is over ${cap} characters`, { code: "invalid_response" });
      }
      if (finished) {
        /* the standard drops an event not ended by a blank line */
        return;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** The JSON object an event carries; anything else (bad JSON, not an object) gives {}. */
export function parseJsonEvent(data: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(data);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
