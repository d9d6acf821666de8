/**
 * A small hash router: the location after `#` is the view's path (`#/developer/keys`), so the
 * Worker serves one page for every view and a reload keeps the view. No credential ever goes in it.
 */
import { useEffect, useState } from 'react';

function currentPath(): string {
  const path = window.location.hash.replace(/^#/, '');
  return path.startsWith('/') ? path : '/';
}

export function useRoute(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return path;
}

export function navigate(path: string): void {
  window.location.hash = path;
}

export const href = (path: string) => `#${path}`;

/** The query after the view's path (`#/developer/calls?user_ref=…`): a view's initial filters, never a credential. */
export function routeQuery(): URLSearchParams {
  const hash = window.location.hash;
  const at = hash.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
}
