// Keys: the team's keys (every team's for an admin), create one (its secret
// shown once, with a copy button), revoke one after a confirmation.

import { api, describe, Key, NewKey } from '../api';
import { h, replace } from '../dom';
import { ago, when } from '../format';
import { Page } from '../page';
import { role } from '../session';
import { busy, confirmAction, copyButton, errorBox, loading, statusLine } from '../ui';

export function keysPage(): Page {
  const admin = role() === 'admin';
  const list = h('div', { class: 'table-wrap' }, loading('Loading keys…'));
  const created = h('div', { attrs: { 'aria-live': 'polite' } });
  const status = statusLine();

  async function refresh(): Promise<void> {
    try {
      const keys = await api.keys();
      replace(list, table(keys));
    } catch (e) {
      replace(list, errorBox(e, 'Could not list the keys'));
    }
  }

  function table(keys: Key[]): HTMLElement {
    if (!keys.length) return h('p', { class: 'muted' }, 'No keys.');
    return h('table', { class: 'keys' },
      h('caption', { class: 'offscreen' }, 'API keys'),
      h('thead', null, h('tr', null, ...['Name', 'Team', 'Created', 'Last used', 'Id', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, ...keys.map((k) =>
        h('tr', { attrs: { 'data-key-id': k.id, 'data-key-name': k.name } },
          h('td', { attrs: { 'data-label': 'Name' } }, k.name, k.admin ? h('span', { class: 'badge badge-admin' }, 'admin') : null),
          h('td', { attrs: { 'data-label': 'Team' } }, k.team),
          h('td', { attrs: { 'data-label': 'Created' } }, when(k.created_at)),
          h('td', { attrs: { 'data-label': 'Last used' }, title: when(k.last_used_at) }, k.last_used_at ? ago(k.last_used_at) : 'never'),
          h('td', { attrs: { 'data-label': 'Id' } }, h('code', null, k.id)),
          h('td', { class: 'actions' }, k.admin
            ? h('span', { class: 'muted', title: 'Admin keys cannot be revoked through the API' }, '—')
            : h('button', { type: 'button', class: 'danger', attrs: { 'aria-label': `Revoke key ${k.name}` }, on: { click: (ev) => revoke(k, ev.currentTarget as HTMLButtonElement) } }, 'Revoke'))))));
  }

  async function revoke(k: Key, button: HTMLButtonElement): Promise<void> {
    const ok = await confirmAction('Revoke this key?', `Key "${k.name}" (${k.id}, team ${k.team}) stops working at once: every call with it answers 401.`, 'Revoke key');
    if (!ok) return button.focus();
    try {
      await busy(button, 'Revoking…', () => api.deleteKey(k.id));
      status.say(`Revoked key "${k.name}".`);
    } catch (e) {
      status.say(`Could not revoke "${k.name}": ${describe(e)}`, true);
    }
    await refresh();
  }

  function showNew(k: NewKey): void {
    const field = h('input', { type: 'text', readOnly: true, value: k.key, class: 'secret', id: 'new-key-secret', attrs: { 'aria-label': 'The new key' } });
    const done = h('button', { type: 'button', on: { click: () => replace(created) } }, 'Done');
    replace(created, h('section', { class: 'card new-key', attrs: { 'aria-labelledby': 'new-key-title' } },
      h('h2', { id: 'new-key-title' }, `Key "${k.name}" created for team ${k.team}`),
      h('p', null, h('strong', null, 'Copy it now: '), 'it is shown only once, and the daemon keeps only its hash.'),
      h('div', { class: 'row' }, field, copyButton(k.key)),
      done));
    field.focus();
    field.select();
  }

  const name = h('input', { type: 'text', id: 'key-name', required: true, maxLength: 64, autocomplete: 'off', placeholder: 'ci-deploy' });
  const team = h('input', { type: 'text', id: 'key-team', maxLength: 64, autocomplete: 'off', placeholder: 'the admin team', pattern: '[a-z0-9][a-z0-9._\\-]{0,63}' });
  const createBtn = h('button', { type: 'submit', class: 'primary' }, 'Create key');
  const form = h('form', { class: 'card inline-form' },
    h('h2', null, 'New key'),
    h('div', { class: 'fields' },
      h('label', null, 'Name', name),
      admin ? h('label', null, 'Team', team, h('small', { class: 'muted' }, 'Admins may name any team')) : null,
      createBtn),
    status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const k = await busy(createBtn, 'Creating…', () => api.createKey(name.value.trim(), admin ? team.value.trim() || undefined : undefined));
      name.value = '';
      status.say('');
      showNew(k);
      await refresh();
    } catch (e) {
      status.say(`Could not create the key: ${describe(e)}`, true);
    }
  });

  void refresh();
  return {
    el: h('main', null,
      h('h1', { tabIndex: -1 }, 'API keys'),
      h('p', { class: 'muted' }, admin ? 'Every team\'s keys (admin key).' : 'Your team\'s keys.', ' Secrets are never listed: a key is shown once, when it is made.'),
      form, created, list),
  };
}
