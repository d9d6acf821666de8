import { createContext, useContext, useMemo, type ReactNode } from 'react';
import { createFaucet, type FaucetClient, type FaucetOptions } from '@faucet/sdk';

/** Tells usage views that a call which may have cost money has finished. */
export interface UsageEvents {
  subscribe(listener: () => void): () => void;
  notify(): void;
}

function createUsageEvents(): UsageEvents {
  const listeners = new Set<() => void>();
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    notify: () => {
      for (const listener of listeners) listener();
    },
  };
}

interface FaucetContextValue {
  client: FaucetClient;
  usageEvents: UsageEvents;
}

const FaucetContext = createContext<FaucetContextValue | null>(null);

export interface FaucetProviderProps {
  publicAppId: string;
  /** The end user's id; not needed when `session`, `userToken` or `anonymous` is given. */
  userId?: string;
  /** A session from your backend (docs/identity.md); called again on expiry. */
  session?: FaucetOptions['session'];
  /** A user token your backend signed, for `signed` apps; called again on expiry. */
  userToken?: FaucetOptions['userToken'];
  /** For `anonymous` apps: a random device id kept on this device names the user. */
  anonymous?: FaucetOptions['anonymous'];
  /** Control API base URL. */
  baseUrl: string;
  /** Gateway base URL; defaults to `baseUrl`. */
  gatewayBaseUrl?: string;
  bridgeUrl?: string;
  /** Further client options (timeouts, retries); read when the client is created. */
  options?: Omit<
    FaucetOptions,
    'publicAppId' | 'user' | 'session' | 'userToken' | 'anonymous' | 'baseUrl' | 'gatewayBaseUrl' | 'bridgeUrl'
  >;
  /** Use this client instead of creating one (tests, or sharing a client outside React). */
  client?: FaucetClient;
  children?: ReactNode;
}

/** Creates the Faucet client for the components below it; a new one only when an ID or URL changes. */
export function FaucetProvider({
  publicAppId,
  userId,
  session,
  userToken,
  anonymous,
  baseUrl,
  gatewayBaseUrl,
  bridgeUrl,
  options,
  client,
  children,
}: FaucetProviderProps) {
  // biome-ignore lint/correctness/useExhaustiveDependencies: options, session, userToken and anonymous are read once per client (see below)
  const value = useMemo<FaucetContextValue>(
    () => ({
      client:
        client ??
        createFaucet({
          ...options,
          publicAppId,
          user: userId === undefined ? undefined : { id: userId },
          session,
          userToken,
          anonymous,
          baseUrl,
          gatewayBaseUrl,
          bridgeUrl,
        }),
      usageEvents: createUsageEvents(),
    }),
    // `options`, `session`, `userToken` and `anonymous` are read once per client on purpose: inline values would otherwise recreate it on every render.
    [client, publicAppId, userId, baseUrl, gatewayBaseUrl, bridgeUrl],
  );
  return <FaucetContext.Provider value={value}>{children}</FaucetContext.Provider>;
}

export function useFaucetContext(): FaucetContextValue {
  const value = useContext(FaucetContext);
  if (!value) throw new Error('Faucet components must be placed inside <FaucetProvider>');
  return value;
}

/** The client of the nearest `FaucetProvider`. */
export function useFaucet(): FaucetClient {
  return useFaucetContext().client;
}
