// One sandbox: its details (status polled every 2 s), extend or kill it,
// and three tabs: the console (a notebook over a code context), a shell
// (exec_stream) and the files.

import { api, Sandbox } from '../api';
import { h, replace } from '../dom';
import { duration, when } from '../format';
import { Page } from '../page';
import { consoleTab } from '../sandbox/console';
import { filesTab } from '../sandbox/files';
import { shellTab } from '../sandbox/shell';
import { extendTtl, kill, killed } from '../sandbox_actions';
import { badge, errorBox, poll, statusLine, tabs } from '../ui';
import { metadataChips, POLL_MS, ttlLeft } from './sandboxes';

export function sandboxPage(id: string): Page {
  const status = statusLine();
  const details = h('dl', { class: 'details' });
  const statusCell = h('span', { id: 'sandbox-status' }, badge('loading'));
  const extendBtn = h('button', { type: 'button', disabled: true }, 'Extend TTL');
  const killBtn = h('button', { type: 'button', class: 'danger', disabled: true }, 'Kill');
  let row: Sandbox | null = null;
  let gone = false;

  function render(): void {
    const shown = gone ? 'deleted' : row ? row.status : 'loading';
    replace(statusCell, badge(shown));
    statusCell.dataset.status = shown;
    const live = !gone && !!row && (row.status === 'running' || row.status === 'paused');
    extendBtn.disabled = killBtn.disabled = !live;
    if (!row) return;
    const now = Date.now();
    replace(details,
      h('dt', null, 'Template'), h('dd', null, row.template),
      h('dt', null, 'Status'), h('dd', null, statusCell, row.reason ? ` ${row.reason}` : gone ? ' killed from this dashboard' : ''),
      h('dt', null, 'Age'), h('dd', { title: when(row.created_at) }, duration((row.ended_at ? Date.parse(row.ended_at) : now) - Date.parse(row.created_at))),
      h('dt', null, 'TTL left'), h('dd', { title: `expires ${when(row.expires_at)}` }, gone ? '—' : ttlLeft(row, now)),
      h('dt', null, 'Size'), h('dd', null, `${row.vcpus} vCPU, ${row.memory_mib} MiB`),
      h('dt', null, 'Metadata'), h('dd', null, metadataChips(row.metadata)));
  }

  // The list, not GET /v1/sandboxes/{id}: a killed sandbox's row is gone,
  // and the list says so without a 404.
  const poller = poll(POLL_MS, async () => {
    try {
      const r = (await api.sandboxes()).find((s) => s.id === id) ?? null;
      if (r) row = r;
      else {
        gone = true;
        row = row ?? killed.get(id) ?? null;
        if (!row) replace(details, errorBox(new Error(`no sandbox ${id} for this key (deleted, expired long ago, or another team's)`)));
      }
    } catch (e) {
      status.say(`Could not refresh: ${(e as Error).message}`, true);
    }
    render();
  });

  extendBtn.addEventListener('click', async () => {
    if (!row) return;
    const m = await extendTtl(row, extendBtn);
    if (m) status.say(m.text, m.error);
    poller.now();
  });
  killBtn.addEventListener('click', async () => {
    if (!row) return;
    const m = await kill(row, killBtn);
    if (m) status.say(m.text, m.error);
    if (m && !m.error) {
      gone = true;
      for (const t of Object.values(panes)) t.stop?.();
    }
    render();
    poller.now();
  });

  const panes = { console: consoleTab(id), shell: shellTab(id), files: filesTab(id) };
  const panel = h('div', { id: 'tabpanel', attrs: { role: 'tabpanel' } }, panes.console.el, panes.shell.el, panes.files.el);
  const tabArea = tabs([{ id: 'console', label: 'Console' }, { id: 'shell', label: 'Shell' }, { id: 'files', label: 'Files' }], 'console', (t) => {
    for (const [name, p] of Object.entries(panes)) p.el.hidden = name !== t;
    panel.setAttribute('aria-labelledby', `tab-${t}`);
  });

  return {
    el: h('main', null,
      h('p', { class: 'crumbs' }, h('a', { href: '#/sandboxes' }, 'Sandboxes'), ' / '),
      h('div', { class: 'title-row' }, h('h1', { tabIndex: -1 }, h('code', null, id)), h('span', { class: 'spacer' }), extendBtn, killBtn),
      status,
      details,
      tabArea,
      panel),
    stop: () => {
      poller.stop();
      for (const p of Object.values(panes)) p.stop?.();
    },
  };
}
