/**
 * The signed-in frame: a skip link, the header (role, theme toggle, sign out), the nav of the role's
 * views (the current one marked with aria-current) and the view itself in <main>.
 */
import type { ReactNode } from 'react';
import { href } from './router.ts';
import { useSession } from './session.tsx';
import { useTheme } from './theme.tsx';
import { type View, viewPath, viewsByRole } from './views/registry.ts';

export function Layout({ current, children }: { current: View | undefined; children: ReactNode }) {
  const { session, signOut } = useSession();
  const { theme, toggle } = useTheme();
  if (!session) return null;
  const views = viewsByRole[session.role];
  return (
    <>
      {/* A button, not a link: the location's hash is the router's. */}
      <button type="button" className="skip" onClick={() => document.getElementById('content')?.focus()}>
        Skip to content
      </button>
      <header className="top">
        <span className="brand">Faucet console</span>
        <span className="muted">{session.role === 'developer' ? 'Developer' : 'Operator'}</span>
        <span className="spacer" />
        <button type="button" className="ghost" onClick={toggle} aria-pressed={theme === 'dark'}>
          Dark theme
        </button>
        <button type="button" className="ghost" onClick={signOut}>
          Sign out
        </button>
      </header>
      <div className="frame">
        <nav aria-label="Console">
          <ul>
            {views.map((view) => (
              <li key={view.path}>
                <a href={href(viewPath(session.role, view))} aria-current={view === current ? 'page' : undefined}>
                  {view.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="content" tabIndex={-1}>
          {children}
        </main>
      </div>
    </>
  );
}
