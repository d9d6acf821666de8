/**
 * Who is signed in: a role (developer or operator) and its credential, kept in memory and in this
 * tab's session storage only (never in a URL, a cookie or a log). Signing in checks the credential
 * against the API: a developer key must read the developer's wallet, the admin token the developer list.
 */
import { createContext, type ReactNode, useCallback, useContext, useMemo, useState } from 'react';
import { type ApiClient, ApiError, createApiClient } from './api.ts';

export type Role = 'developer' | 'operator';

export interface Session {
  role: Role;
  client: ApiClient;
}

interface SessionState {
  session: Session | null;
  signIn(role: Role, credential: string): Promise<void>;
  signOut(): void;
}

const storageKey = 'faucet-console-session';
const SessionContext = createContext<SessionState | null>(null);

/** The call that proves a credential holds the role. */
const probe: Record<Role, string> = { developer: '/v1/developer/wallet', operator: '/v1/admin/developers' };

function restore(): Session | null {
  try {
    const saved = JSON.parse(sessionStorage.getItem(storageKey) ?? 'null') as { role?: Role; credential?: string } | null;
    if ((saved?.role === 'developer' || saved?.role === 'operator') && typeof saved.credential === 'string')
      return { role: saved.role, client: createApiClient(saved.credential) };
  } catch {
    // A damaged entry means signed out.
  }
  return null;
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(restore);
  const signIn = useCallback(async (role: Role, credential: string) => {
    const client = createApiClient(credential.trim());
    try {
      await client.get(probe[role]);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403))
        throw new ApiError(
          error.status,
          error.code,
          role === 'developer' ? `Not a valid developer key: ${error.message}` : `Not the admin token: ${error.message}`,
          error.requestId,
        );
      throw error;
    }
    sessionStorage.setItem(storageKey, JSON.stringify({ role, credential: credential.trim() }));
    setSession({ role, client });
  }, []);
  const signOut = useCallback(() => {
    sessionStorage.removeItem(storageKey);
    setSession(null);
  }, []);
  const value = useMemo(() => ({ session, signIn, signOut }), [session, signIn, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}

/** The API client of the signed-in user (views render only when signed in). */
export function useApi(): ApiClient {
  const { session } = useSession();
  if (!session) throw new Error('useApi while signed out');
  return session.client;
}
