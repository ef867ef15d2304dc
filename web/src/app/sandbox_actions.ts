// Extending a sandbox's TTL and killing it, as the list and the sandbox page
// both offer them.

import { api, describe, Sandbox } from './api';
import { askNumber, busy, confirmAction } from './ui';

/** Sandboxes killed from this tab (their rows are gone from the API): the
 * pages keep showing them, as "deleted". */
export const killed = new Map<string, Sandbox>();

/** Ask for a new TTL and set it; returns a message for the page. */
export async function extendTtl(s: Sandbox, button: HTMLButtonElement): Promise<{ text: string; error: boolean } | null> {
  const left = Math.max(0, Math.round((Date.parse(s.expires_at) - Date.now()) / 1000));
  const ttl = await askNumber(`Time to live of ${s.id}`, 'Seconds from now until the sandbox stops', Math.max(600, left), 1, 86400);
  if (ttl === null) {
    button.focus();
    return null;
  }
  try {
    const n = await busy(button, 'Saving…', () => api.setTtl(s.id, ttl));
    return { text: `${s.id} now stops at ${new Date(n.expires_at).toLocaleTimeString()}.`, error: false };
  } catch (e) {
    return { text: `Could not change the TTL of ${s.id}: ${describe(e)}`, error: true };
  }
}

/** Confirm and kill; returns a message for the page, null when cancelled. */
export async function kill(s: Sandbox, button: HTMLButtonElement): Promise<{ text: string; error: boolean } | null> {
  const ok = await confirmAction('Kill this sandbox?', `${s.id} (${s.template}) stops at once: its VM, files and running code are gone.`, 'Kill sandbox');
  if (!ok) {
    button.focus();
    return null;
  }
  try {
    await busy(button, 'Killing…', () => api.killSandbox(s.id));
    killed.set(s.id, s);
    return { text: `Killed ${s.id}.`, error: false };
  } catch (e) {
    return { text: `Could not kill ${s.id}: ${describe(e)}`, error: true };
  }
}
