// What a page is for the router: its element and how to stop it (polls,
// streams) when the user leaves.

export interface Page {
  el: HTMLElement;
  stop?: () => void;
}

/** Go to a route of the dashboard ("#/sandboxes/sbx_..."). */
export function go(hash: string): void {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}
