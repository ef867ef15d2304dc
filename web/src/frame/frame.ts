// The output frame (frame.html): shows one piece of untrusted HTML from a
// sandbox.  pandastackd serves this page with CSP "sandbox allow-scripts"
// (an opaque origin, whatever embeds it) that runs only this script, allows
// the page's inline styles and data: images, and loads nothing else.  The
// dashboard posts the HTML; this script puts it in the page and reports the
// page's height so the dashboard can size the frame.

const RENDER = 'pandastack-render';
const HEIGHT = 'pandastack-frame-height';

function reportHeight(): void {
  // the body's own height: the frame's viewport would never let it shrink
  const height = Math.ceil(document.body.getBoundingClientRect().height);
  window.parent.postMessage({ type: HEIGHT, height }, '*');
}

window.addEventListener('message', (ev: MessageEvent) => {
  if (ev.source !== window.parent || window.parent === window) return;
  const d = ev.data as { type?: unknown; html?: unknown };
  if (!d || d.type !== RENDER || typeof d.html !== 'string') return;
  const doc = new DOMParser().parseFromString(d.html, 'text/html');
  // Scripts could not run here anyway (this page's CSP): drop them.
  doc.querySelectorAll('script').forEach((s) => s.remove());
  const styles = Array.from(doc.head.querySelectorAll('style'));
  document.body.replaceChildren(...styles, ...Array.from(doc.body.childNodes));
  reportHeight();
});

new ResizeObserver(reportHeight).observe(document.body);
