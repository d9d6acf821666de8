/**
 * What the API tells wallet objects (docs/edge.md), best effort: after sessions are revoked in
 * Postgres, each object that may have them cached forgets what it read and refuses the hashes named
 * at once; an object that cannot be reached reads the session again within its cache's bound
 * (seconds). The API never creates an object: an object lives where it is first called, next to the
 * end user's first gateway call, not next to the developer's backend.
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
