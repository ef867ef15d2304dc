// Sign in: an API key, checked against the daemon, kept in this tab's
// sessionStorage.  An admin key is recognised by GET /metrics answering.

import { api, ApiError, describe } from '../api';
import { h } from '../dom';
import { Page, go } from '../page';
import { signIn, wellFormed, Role } from '../session';
import { busy, statusLine } from '../ui';

async function roleOf(key: string): Promise<Role> {
  // Only a key that sees admin keys or several teams may be an admin: ask
  // /metrics (admin only) just then, so that a team key never gets a 403.
  const keys = await api.keysWith(key);
  if (!keys.some((k) => k.admin) && new Set(keys.map((k) => k.team)).size < 2) return 'member';
  return (await api.isAdmin(key)) ? 'admin' : 'member';
}

export function signInPage(message?: string): Page {
  const status = statusLine();
  const input = h('input', {
    type: 'password',
    id: 'api-key',
    name: 'api-key',
    autocomplete: 'off',
    spellcheck: false,
    required: true,
    placeholder: 'pds_…',
    attrs: { 'aria-describedby': 'key-help' },
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'card signin' },
    h('h1', { tabIndex: -1 }, 'Sign in to PandaStack'),
    h('label', { htmlFor: 'api-key' }, 'API key'),
    input,
    h('p', { id: 'key-help', class: 'muted' },
      'The key stays in this browser tab only (session storage) and is sent with each call to this daemon. ',
      'The first admin key is in <data-dir>/admin.key.'),
    button,
    status);
  if (message) status.say(message, true);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!wellFormed(key)) {
      status.say('A key is pds_ followed by 48 lowercase hex digits.', true);
      input.focus();
      return;
    }
    status.say('Checking the key…');
    try {
      await busy(button, 'Signing in…', async () => {
        await api.healthz(key);
        signIn(key, await roleOf(key));
      });
      input.value = '';
      go('#/sandboxes');
    } catch (e) {
      status.say(e instanceof ApiError && e.status === 401 ? `This key is not valid: ${e.message}` : describe(e), true);
      input.focus();
    }
  });
  queueMicrotask(() => input.focus());
  return { el: h('main', { class: 'narrow' }, form) };
}
