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
