/**
 * What the API tells wallet objects (docs/edge.md), best effort — an object that cannot be reached
 * finds out from Postgres on its own:
 * - a new session: the object learns whose wallet it is, so its first call reads the session and
 *   takes its lease in one statement;
 * - revoked sessions: each object forgets what it read and refuses the hashes named at once (else it
 *   reads the session again within its cache's bound, seconds).
 */
import type { Env } from '../env.ts';
import type { Logger } from '../logger.ts';
import { walletName } from './session-token.ts';

/** After a session was minted for `endUserId`, whose token names `wallet`. */
export async function introduceSession(env: Env, wallet: string, endUserId: string, logger?: Logger): Promise<void> {
  const namespace = env.WALLET;
  if (namespace === undefined) return;
  try {
    await namespace.get(namespace.idFromName(wallet)).introduce(wallet, endUserId);
  } catch {
    logger?.warn('a wallet object was not told of a new session');
  }
}

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
