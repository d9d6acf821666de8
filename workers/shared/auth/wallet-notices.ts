/**
 * After sessions are revoked in Postgres, the wallet objects that may have them cached are told at
 * once (docs/edge.md): each forgets what it read and refuses the hashes named. Best effort: an object
 * that cannot be reached reads the session again within its cache's bound (seconds) anyway.
 */
import type { Env } from '../env.ts';
import type { Logger } from '../logger.ts';
import { walletName } from './session-token.ts';

export async function pushRevocations(
  env: Env,
  revoked: ReadonlyArray<{ endUserId: string; tokenHash: string }>,
  logger?: Logger,
): Promise<void> {
  const namespace = env.WALLET;
  if (namespace === undefined || revoked.length === 0) return;
  const byUser = new Map<string, string[]>();
  for (const session of revoked) byUser.set(session.endUserId, [...(byUser.get(session.endUserId) ?? []), session.tokenHash]);
  await Promise.all(
    [...byUser].map(async ([endUserId, hashes]) => {
      try {
        const name = await walletName(env.SESSION_HASH_SECRET, endUserId);
        await namespace.get(namespace.idFromName(name)).revokeSessions(hashes);
      } catch {
        logger?.warn('a wallet object was not told of a revocation', { sessions: hashes.length });
      }
    }),
  );
}
