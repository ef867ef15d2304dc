// Small widgets every page uses: errors, loading states, dialogs, the copy
// button, tabs.  All keyboard-usable: dialogs are <dialog> elements (Escape
// closes, focus stays inside), tabs follow the ARIA tabs pattern.

import { describe } from './api';
import { Child, h, replace } from './dom';

/** An error line with the API's message (role=alert, read out at once). */
export function errorBox(e: unknown, what?: string): HTMLElement {
  return h('p', { class: 'error', attrs: { role: 'alert' } }, what ? `${what}: ${describe(e)}` : describe(e));
}

/** A loading line (aria-busy) until replaced. */
export function loading(text = 'Loading…'): HTMLElement {
  return h('p', { class: 'loading', attrs: { 'aria-busy': 'true', role: 'status' } }, h('span', { class: 'spinner', attrs: { 'aria-hidden': 'true' } }), text);
}

/** A status area for short messages (polite live region). */
export function statusLine(): HTMLElement & { say(text: string, isError?: boolean): void } {
  const el = h('p', { class: 'status', attrs: { role: 'status', 'aria-live': 'polite' } });
  return Object.assign(el, {
    say(text: string, isError = false) {
      el.classList.toggle('error', isError);
      replace(el, text);
    },
  });
}

/** Disable button while fn runs and show label meanwhile; returns fn's value. */
export async function busy<T>(button: HTMLButtonElement, label: string, fn: () => Promise<T>): Promise<T> {
  const old = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = label;
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = old;
  }
}

function modal(title: string, body: Child[], actions: (close: (v: string | null) => void) => HTMLElement[]): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const dialog = h('dialog', { class: 'dialog', attrs: { 'aria-label': title } });
    const close = (v: string | null) => {
      if (settled) return;
      settled = true;
      dialog.close();
      dialog.remove();
      resolve(v);
    };
    dialog.addEventListener('cancel', (ev) => {
      ev.preventDefault();
      close(null);
    });
    const form = h('form', { attrs: { method: 'dialog' } }, h('h2', null, title), ...body, h('div', { class: 'actions' }, ...actions(close)));
    dialog.appendChild(form);
    document.body.appendChild(dialog);
    dialog.showModal();
  });
}

/** Ask before a destructive action; resolves true only on the confirm button. */
export async function confirmAction(title: string, message: string, confirmLabel: string): Promise<boolean> {
  const v = await modal(title, [h('p', null, message)], (close) => {
    const cancel = h('button', { type: 'button', on: { click: () => close(null) } }, 'Cancel');
    const ok = h('button', { type: 'submit', class: 'danger', on: { click: (ev) => { ev.preventDefault(); close('yes'); } } }, confirmLabel);
    queueMicrotask(() => cancel.focus());
    return [cancel, ok];
  });
  return v === 'yes';
}

/** Ask for a number; resolves it, or null when cancelled. */
export async function askNumber(title: string, label: string, initial: number, min: number, max: number): Promise<number | null> {
  const input = h('input', { type: 'number', value: String(initial), min: String(min), max: String(max), required: true, attrs: { 'aria-label': label } });
  const v = await modal(title, [h('label', null, label, input)], (close) => {
    queueMicrotask(() => input.select());
    return [
      h('button', { type: 'button', on: { click: () => close(null) } }, 'Cancel'),
      h('button', {
        type: 'submit',
        class: 'primary',
        on: {
          click: (ev) => {
            ev.preventDefault();
            if (input.reportValidity()) close(input.value);
          },
        },
      }, 'Save'),
    ];
  });
  return v === null ? null : Number(v);
}

/** A button that copies text (the Clipboard API, else a selected field). */
export function copyButton(text: string, label = 'Copy'): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'copy' }, label);
  b.addEventListener('click', async () => {
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      const t = h('textarea', { value: text, readOnly: true, class: 'offscreen' });
      document.body.appendChild(t);
      t.select();
      ok = document.execCommand('copy');
      t.remove();
    }
    b.textContent = ok ? 'Copied' : 'Copy failed: select and copy by hand';
    setTimeout(() => (b.textContent = label), 2000);
  });
  return b;
}

export interface Tab {
  id: string;
  label: string;
}

/** ARIA tabs: arrow keys, Home and End move between them; onSelect(id). */
export function tabs(list: Tab[], selected: string, onSelect: (id: string) => void): HTMLElement {
  const bar = h('div', { class: 'tabs', attrs: { role: 'tablist' } });
  const select = (id: string) => {
    buttons.forEach((b, i) => {
      const on = list[i].id === id;
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
    });
    onSelect(id);
  };
  const buttons = list.map((t) =>
    h('button', {
      type: 'button',
      id: `tab-${t.id}`,
      attrs: { role: 'tab', 'aria-controls': 'tabpanel' },
      on: { click: () => select(t.id) },
    }, t.label),
  );
  bar.addEventListener('keydown', (ev) => {
    const i = buttons.findIndex((b) => b === document.activeElement);
    if (i < 0) return;
    let j = i;
    if (ev.key === 'ArrowRight') j = (i + 1) % buttons.length;
    else if (ev.key === 'ArrowLeft') j = (i - 1 + buttons.length) % buttons.length;
    else if (ev.key === 'Home') j = 0;
    else if (ev.key === 'End') j = buttons.length - 1;
    else return;
    ev.preventDefault();
    buttons[j].focus();
    select(list[j].id);
  });
  replace(bar, ...buttons);
  select(selected);
  return bar;
}

/** A status badge (running, stopped, error, deleted, ...). */
export function badge(status: string): HTMLElement {
  return h('span', { class: `badge badge-${status.replace(/[^a-z]/g, '')}` }, status);
}

/**
 * Poll fn every ms until stop() (also when the tab is hidden: paused then).
 * fn gets no overlap: the next run is scheduled when the last one ended.
 */
export function poll(ms: number, fn: () => Promise<void>): { stop(): void; now(): void } {
  let timer: number | undefined;
  let stopped = false;
  let running = false;
  const run = async () => {
    timer = undefined;
    if (stopped || running) return;
    if (document.hidden) {
      timer = window.setTimeout(run, ms);
      return;
    }
    running = true;
    try {
      await fn();
    } finally {
      running = false;
      if (!stopped) timer = window.setTimeout(run, ms);
    }
  };
  void run();
  return {
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
    now() {
      if (timer !== undefined) {
        clearTimeout(timer);
        void run();
      }
    },
  };
}
