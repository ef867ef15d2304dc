// Sandboxes: a live list (polled every 2 s), create from a template, extend
// a TTL, kill.

import { api, describe, Sandbox, Template } from '../api';
import { h, replace } from '../dom';
import { duration, when } from '../format';
import { go, Page } from '../page';
import { extendTtl, kill, killed } from '../sandbox_actions';
import { badge, busy, errorBox, loading, poll, statusLine } from '../ui';

export const POLL_MS = 2000;

/** key=value lines into an object; throws on a malformed line. */
function parseMetadata(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`metadata line "${line}" is not key=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export function metadataChips(m: Record<string, string>): HTMLElement {
  const entries = Object.entries(m);
  if (!entries.length) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'chips' }, ...entries.map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`)));
}

/** "4m 10s" left, or why it ended. */
export function ttlLeft(s: Sandbox, now = Date.now()): string {
  if (s.status !== 'running' && s.status !== 'paused') return s.reason ?? '—';
  return duration(Date.parse(s.expires_at) - now);
}

export function sandboxesPage(): Page {
  const status = statusLine();
  const listArea = h('div', { class: 'table-wrap', attrs: { 'aria-live': 'off' } }, loading('Loading sandboxes…'));
  const updated = h('span', { class: 'muted updated' });
  const filter = h('select', { id: 'status-filter', attrs: { 'aria-label': 'Show' } },
    ...['all', 'running', 'stopped', 'error'].map((s) => h('option', { value: s }, s === 'all' ? 'all statuses' : s)));
  let rows: Sandbox[] = [];
  let listError: unknown = null;

  function render(): void {
    if (listError) {
      replace(listArea, errorBox(listError, 'Could not list the sandboxes'));
      return;
    }
    const now = Date.now();
    const seen = new Set(rows.map((r) => r.id));
    const all: { s: Sandbox; shown: string }[] = rows.map((s) => ({ s, shown: s.status }));
    for (const [id, s] of killed) if (!seen.has(id)) all.push({ s, shown: 'deleted' });
    const want = filter.value;
    const visible = all.filter((r) => want === 'all' || r.shown === want || (want === 'stopped' && r.shown === 'deleted'));
    if (!visible.length) {
      replace(listArea, h('p', { class: 'muted' }, rows.length ? 'No sandbox with this status.' : 'No sandboxes yet: create one above.'));
      return;
    }
    replace(listArea, h('table', { class: 'sandboxes' },
      h('caption', { class: 'offscreen' }, 'Sandboxes'),
      h('thead', null, h('tr', null, ...['Sandbox', 'Template', 'Status', 'Age', 'TTL left', 'Metadata', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, ...visible.map(({ s, shown }) => {
        const live = shown === 'running' || shown === 'paused';
        const extend = h('button', { type: 'button', attrs: { 'aria-label': `Extend the TTL of ${s.id}` } }, 'Extend');
        const killBtn = h('button', { type: 'button', class: 'danger', attrs: { 'aria-label': `Kill ${s.id}` } }, 'Kill');
        extend.addEventListener('click', async () => report(await extendTtl(s, extend)));
        killBtn.addEventListener('click', async () => report(await kill(s, killBtn)));
        return h('tr', { attrs: { 'data-sandbox-id': s.id, 'data-status': shown } },
          h('td', { attrs: { 'data-label': 'Sandbox' } }, live ? h('a', { href: `#/sandboxes/${s.id}` }, h('code', null, s.id)) : h('code', null, s.id)),
          h('td', { attrs: { 'data-label': 'Template' } }, s.template),
          h('td', { attrs: { 'data-label': 'Status' }, title: s.reason ?? '' }, badge(shown)),
          h('td', { attrs: { 'data-label': 'Age' }, title: `created ${when(s.created_at)}` }, duration((s.ended_at ? Date.parse(s.ended_at) : now) - Date.parse(s.created_at))),
          h('td', { attrs: { 'data-label': 'TTL left' }, title: `expires ${when(s.expires_at)}` }, shown === 'deleted' ? '—' : ttlLeft(s, now)),
          h('td', { attrs: { 'data-label': 'Metadata' } }, metadataChips(s.metadata)),
          h('td', { class: 'actions' }, live ? extend : null, live ? killBtn : null));
      }))));
  }

  function report(m: { text: string; error: boolean } | null): void {
    if (!m) return;
    status.say(m.text, m.error);
    poller.now();
  }

  const poller = poll(POLL_MS, async () => {
    try {
      rows = await api.sandboxes();
      listError = null;
      updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      listError = e;
    }
    render();
  });
  filter.addEventListener('change', render);

  // ---- create ----
  const template = h('select', { id: 'template', required: true }, h('option', { value: '' }, 'Loading templates…'));
  const ttl = h('input', { type: 'number', id: 'ttl', min: '1', max: '86400', value: '600', required: true });
  const metadata = h('textarea', { id: 'metadata', rows: 2, placeholder: 'user=alice', spellcheck: false });
  const createBtn = h('button', { type: 'submit', class: 'primary' }, 'Create sandbox');
  const createStatus = statusLine();
  api.templates().then(
    (ts: Template[]) => {
      const ready = ts.filter((t) => t.status === 'ready');
      replace(template,
        ...ts.map((t) => h('option', { value: t.name, disabled: t.status !== 'ready' }, t.status === 'ready' ? `${t.name} (${t.vcpus} vCPU, ${t.memory_mib} MiB)` : `${t.name} (${t.status})`)));
      const preferred = ready.find((t) => t.name === 'code-interpreter') ?? ready[0];
      if (preferred) template.value = preferred.name;
      else createStatus.say('No template is ready: bake one with `make templates`.', true);
    },
    (e) => {
      replace(template, h('option', { value: '' }, 'unavailable'));
      createStatus.say(`Could not list the templates: ${describe(e)}`, true);
    });
  const form = h('form', { class: 'card inline-form', id: 'create-sandbox' },
    h('h2', null, 'New sandbox'),
    h('div', { class: 'fields' },
      h('label', null, 'Template', template),
      h('label', null, 'TTL (seconds)', ttl),
      h('label', { class: 'grow' }, 'Metadata (key=value per line)', metadata),
      createBtn),
    createStatus);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let meta: Record<string, string>;
    try {
      meta = parseMetadata(metadata.value);
    } catch (e) {
      createStatus.say((e as Error).message, true);
      metadata.focus();
      return;
    }
    createStatus.say('Restoring the template snapshot…');
    try {
      const s = await busy(createBtn, 'Creating…', () => api.createSandbox(template.value, Number(ttl.value), meta));
      createStatus.say(`Created ${s.id}.`);
      go(`#/sandboxes/${s.id}`);
    } catch (e) {
      createStatus.say(`Could not create the sandbox: ${describe(e)}`, true);
    }
  });

  return {
    el: h('main', null,
      h('h1', { tabIndex: -1 }, 'Sandboxes'),
      form,
      h('div', { class: 'list-head' }, h('h2', null, 'Your sandboxes'), h('label', { class: 'inline' }, 'Show ', filter), updated),
      status,
      listArea),
    stop: () => poller.stop(),
  };
}
