// Notebook outputs of a code context: stdout/stderr, rich results and
// errors, rendered the way a notebook shows them.
//
// Everything here came out of a sandbox and is untrusted:
// - text (plain, Markdown, LaTeX, JSON, tracebacks) goes in as text nodes;
// - PNG and JPEG become data: URLs of an <img>; an SVG becomes an <img> too
//   (an image runs no script and loads nothing);
// - HTML goes to an iframe of frame.html with sandbox="allow-scripts" and no
//   allow-same-origin: an opaque origin that cannot reach this document or
//   its sessionStorage, whose own CSP (sent by pandastackd) runs no script
//   but the frame's own and loads nothing but data: images.  The HTML is
//   handed over with postMessage; the frame answers with its height.

import { CellError, Result } from './api';
import { h } from './dom';

export const FRAME_URL = '/ui/frame.html';
const RENDER = 'pandastack-render';
const HEIGHT = 'pandastack-frame-height';

const frames = new Map<Window, HTMLIFrameElement>();

window.addEventListener('message', (ev: MessageEvent) => {
  const frame = ev.source ? frames.get(ev.source as Window) : undefined;
  if (!frame || !frame.isConnected) return;
  const d = ev.data as { type?: unknown; height?: unknown };
  if (d && d.type === HEIGHT && typeof d.height === 'number' && Number.isFinite(d.height))
    frame.style.height = `${Math.min(Math.max(Math.ceil(d.height), 24), 800)}px`;
});

/** A sandboxed frame showing untrusted HTML. */
export function htmlFrame(html: string, title = 'HTML output (sandboxed)'): HTMLIFrameElement {
  const frame = h('iframe', {
    class: 'html-output',
    title,
    src: FRAME_URL,
    attrs: { sandbox: 'allow-scripts', referrerpolicy: 'no-referrer', loading: 'eager' },
  });
  frame.addEventListener('load', () => {
    const w = frame.contentWindow;
    if (!w) return;
    for (const [k, v] of frames) if (!v.isConnected) frames.delete(k);
    frames.set(w, frame);
    // the frame's origin is opaque: '*' is the only target that reaches it
    w.postMessage({ type: RENDER, html }, '*');
  });
  return frame;
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

function image(mime: string, b64: string, alt: string): HTMLElement {
  const clean = b64.replace(/\s+/g, '');
  if (!B64.test(clean)) return h('pre', { class: 'stderr' }, `[an ${mime} output that is not base64]`);
  return h('img', { class: 'image-output', alt, src: `data:${mime};base64,${clean}` });
}

function utf8Base64(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** One result, by the richest MIME type it has. */
export function renderResult(r: Result): HTMLElement {
  let body: HTMLElement;
  if (r.png) body = image('image/png', r.png, 'PNG output');
  else if (r.jpeg) body = image('image/jpeg', r.jpeg, 'JPEG output');
  else if (r.svg) body = image('image/svg+xml', utf8Base64(r.svg), 'SVG output');
  else if (r.html) body = htmlFrame(r.html);
  else if (r.markdown !== undefined) body = h('pre', { class: 'markdown' }, r.markdown);
  else if (r.json !== undefined) body = h('pre', { class: 'json' }, JSON.stringify(r.json, null, 2));
  else if (r.latex !== undefined) body = h('pre', { class: 'latex' }, r.latex);
  else if (r.text !== undefined) body = h('pre', { class: 'text' }, r.text);
  else {
    const kinds = Object.keys(r.extra ?? {}).concat(r.javascript !== undefined ? ['javascript'] : []);
    body = h('p', { class: 'muted' }, `[output not shown: ${kinds.join(', ') || 'empty'}]`);
  }
  return h('div', { class: `result${r.is_main_result ? ' main' : ''}` }, body);
}

/** The error of a cell: "Name: value" and its traceback. */
export function renderError(e: CellError): HTMLElement {
  const tb = Array.isArray(e.traceback) ? e.traceback.join('\n') : String(e.traceback ?? '');
  return h('div', { class: 'cell-error', attrs: { role: 'alert' } },
    h('strong', null, `${e.name}: ${e.value}`),
    tb ? h('pre', { class: 'traceback' }, tb) : null);
}

/** Append a stream chunk, joining consecutive chunks of the same stream. */
export function appendStream(out: HTMLElement, stream: 'stdout' | 'stderr', text: string): void {
  const last = out.lastElementChild;
  if (last && last.classList.contains(stream) && last.tagName === 'PRE') last.appendChild(document.createTextNode(text));
  else out.appendChild(h('pre', { class: stream }, text));
}
