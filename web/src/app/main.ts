// The dashboard's entry point: the header, the hash router and sign-out.
//
// Routes (after "#"): /sandboxes, /sandboxes/<id>, /keys, /metrics.
// Without a key in this tab's sessionStorage every route shows the sign-in
// page.  An API answer of 401 (a revoked key) signs out.

import { UNAUTHORIZED_EVENT } from './api';
import { h, replace } from './dom';
import { go, Page } from './page';
import { keysPage } from './pages/keys';
import { metricsPage } from './pages/metrics';
import { sandboxPage } from './pages/sandbox';
import { sandboxesPage } from './pages/sandboxes';
import { signInPage } from './pages/signin';
import { apiKey, role, signOut } from './session';

const root = document.getElementById('app')!;
let current: Page | null = null;
let pendingMessage: string | undefined;

function header(active: string): HTMLElement {
  const link = (hash: string, label: string) =>
    h('a', { href: hash, attrs: active === hash ? { 'aria-current': 'page' } : {} }, label);
  const out = h('button', { type: 'button', class: 'link', id: 'sign-out' }, 'Sign out');
  out.addEventListener('click', () => {
    signOut();
    pendingMessage = 'Signed out.';
    go('#/sign-in');
  });
  return h('header', { class: 'top' },
    h('a', { class: 'brand', href: '#/sandboxes' }, 'PandaStack'),
    h('nav', { attrs: { 'aria-label': 'Main' } }, link('#/sandboxes', 'Sandboxes'), link('#/keys', 'Keys'), link('#/metrics', 'Metrics')),
    h('span', { class: 'spacer' }),
    h('span', { class: 'who muted' }, role() === 'admin' ? 'admin key' : 'team key'),
    out);
}

function route(): void {
  current?.stop?.();
  current = null;
  const hash = location.hash || '#/sandboxes';
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  let page: Page;
  let active = '#/sandboxes';
  if (!apiKey()) {
    page = signInPage(pendingMessage);
    pendingMessage = undefined;
    replace(root, page.el);
    current = page;
    document.title = 'Sign in · PandaStack';
    return;
  }
  if (parts[0] === 'keys') {
    page = keysPage();
    active = '#/keys';
  } else if (parts[0] === 'metrics') {
    page = metricsPage();
    active = '#/metrics';
  } else if (parts[0] === 'sandboxes' && parts[1]) {
    page = sandboxPage(decodeURIComponent(parts[1]));
  } else {
    if (parts[0] !== 'sandboxes') history.replaceState(null, '', '#/sandboxes');
    page = sandboxesPage();
  }
  replace(root, header(active), page.el);
  current = page;
  document.title = `${page.el.querySelector('h1')?.textContent ?? 'Dashboard'} · PandaStack`;
  page.el.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
}

window.addEventListener(UNAUTHORIZED_EVENT, (ev) => {
  if (!apiKey()) return;
  signOut();
  pendingMessage = `The daemon refused this key (${(ev as CustomEvent<string>).detail}). Sign in again.`;
  go('#/sign-in');
});
window.addEventListener('hashchange', route);
route();
