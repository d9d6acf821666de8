/**
 * What the API tells wallet objects (docs/edge.md), best effort: after sessions are revoked in
 * Postgres, each object that may have them cached forgets what it read and refuses the hashes named
 * at once; an object that cannot be reached reads the session again within its cache's bound
 * (seconds). The API never creates an object: an object lives where it is first called, next to the
 * end user's first gateway call, not next to the developer's backend.
 */
import type { WalletObjectContract } from '../durable-objects.ts';
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

/**
 * An end user's byok keys changed (added or disabled): their wallet object reads the routing of its
 * calls again, so the next call takes a new key, and never one disabled. Best effort: an object that
 * cannot be reached reads it again within its cache's bound (seconds).
 */
export function pushKeyChange(env: Env, endUserId: string, logger?: Logger): Promise<void> {
  return tellWalletObject(env, endUserId, (object) => object.forgetContexts(), 'a wallet object was not told of a key change', logger);
}

/**
 * Read your own writes: before an end user's wallet or usage is read, their wallet object books what
 * it settled (nothing to do, no statement), so the balance and the calls listed include every call
 * already answered. Best effort: an object that cannot be reached books them within a second anyway.
 */
export function bookOwnCalls(env: Env, endUserId: string, logger?: Logger): Promise<void> {
  return tellWalletObject(env, endUserId, (object) => object.flush(), 'a wallet object was not asked to book before a read', logger);
}

/** One message to an end user's wallet object when leases are on; a failure is logged, never thrown. */
async function tellWalletObject(
  env: Env,
  endUserId: string,
  message: (object: DurableObjectStub<WalletObjectContract>) => Promise<unknown>,
  warning: string,
  logger?: Logger,
): Promise<void> {
  const namespace = env.WALLET;
  if (namespace === undefined || env.WALLET_LEASES === 'off') return;
  try {
    const name = await walletName(env.SESSION_HASH_SECRET, endUserId);
    await message(namespace.get(namespace.idFromName(name)));
  } catch {
    logger?.warn(warning);
  }
}
