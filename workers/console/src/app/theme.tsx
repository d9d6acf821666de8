/**
 * Light and dark: the system's `prefers-color-scheme` unless the user picked one with the toggle
 * (kept in local storage, it holds no secret). The choice is the `data-theme` of <html>; charts read
 * it from this context to redraw in the theme's colours.
 */
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';

export type Theme = 'light' | 'dark';
const storageKey = 'faucet-console-theme';
const darkQuery = '(prefers-color-scheme: dark)';

interface ThemeState {
  theme: Theme;
  toggle(): void;
}

const ThemeContext = createContext<ThemeState>({ theme: 'light', toggle: () => {} });

export function ThemeProvider({ children }: { children: ReactNode }) {
  const [chosen, setChosen] = useState<Theme | null>(() => {
    const saved = localStorage.getItem(storageKey);
    return saved === 'light' || saved === 'dark' ? saved : null;
  });
  const [system, setSystem] = useState<Theme>(() => (window.matchMedia(darkQuery).matches ? 'dark' : 'light'));
  useEffect(() => {
    const query = window.matchMedia(darkQuery);
    const update = () => setSystem(query.matches ? 'dark' : 'light');
    query.addEventListener('change', update);
    return () => query.removeEventListener('change', update);
  }, []);
  const theme = chosen ?? system;
  // Set before children's effects run (charts read the colours in theirs).
  document.documentElement.dataset.theme = theme;
  const toggle = useCallback(() => {
    const next: Theme = theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem(storageKey, next);
    setChosen(next);
  }, [theme]);
  const value = useMemo(() => ({ theme, toggle }), [theme, toggle]);
  return <ThemeContext.Provider value={value}>{children}</ThemeContext.Provider>;
}

export const useTheme = (): ThemeState => useContext(ThemeContext);
