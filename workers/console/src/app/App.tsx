/** The console: the sign-in screen when signed out, otherwise the role's view for the current location. */
import { Suspense, useEffect } from 'react';
import { Layout } from './Layout.tsx';
import { navigate, useRoute } from './router.ts';
import { SessionProvider, useSession } from './session.tsx';
import { SignIn } from './SignIn.tsx';
import { ThemeProvider } from './theme.tsx';
import { Loading } from './ui/parts.tsx';
import { findView } from './views/registry.ts';

function Routed() {
  const { session } = useSession();
  const path = useRoute();
  const view = session ? findView(session.role, path) : undefined;
  useEffect(() => {
    if (session && !path.startsWith(`/${session.role}`)) navigate(`/${session.role}`);
  }, [session, path]);
  useEffect(() => {
    document.title = view ? `${view.label} · Faucet console` : 'Faucet console';
  }, [view]);
  if (!session) return <SignIn />;
  const Component = view?.component;
  return (
    <Layout current={view}>
      <Suspense fallback={<Loading what="view" />}>{Component ? <Component key={path} /> : <p>No views for this role yet.</p>}</Suspense>
    </Layout>
  );
}

export function App() {
  return (
    <ThemeProvider>
      <SessionProvider>
        <Routed />
      </SessionProvider>
    </ThemeProvider>
  );
}
