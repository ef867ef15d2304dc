// The signed-in key lives in this tab's sessionStorage only: never in a URL,
// a cookie or localStorage, so it leaves with the tab and no other site can
// make the browser send it.

const KEY = 'pandastack.apiKey';
const ROLE = 'pandastack.role';

export type Role = 'admin' | 'member';

export function apiKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function role(): Role {
  return sessionStorage.getItem(ROLE) === 'admin' ? 'admin' : 'member';
}

export function signIn(key: string, r: Role): void {
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(ROLE, r);
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(ROLE);
}

/** Well-formed key: pds_ and 48 lowercase hex digits (docs/api.md). */
export function wellFormed(key: string): boolean {
  return /^pds_[0-9a-f]{48}$/.test(key);
}
