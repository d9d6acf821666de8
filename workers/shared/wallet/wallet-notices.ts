/**
 * What the API tells wallet objects (docs/edge.md), best effort: after sessions are revoked in
 * Postgres, each object that may have them cached forgets what it read and refuses the hashes named
 * at once; an object that cannot be reached reads the session again within its cache's bound
 * (seconds). The API never creates an object: an object lives where it is first called, next to the
 * end user's first gateway call, not next to the developer's backend.
 */
import { sql } from 'drizzle-orm';
import { readSettlingMs, type WalletObjectContract } from '../durable-objects.ts';
import type { Env } from '../env.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { leasingObjectNames } from './wallet-objects.ts';
import type { Logger } from '../logger.ts';
import { walletName } from '../auth/session-token.ts';

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
 * A developer key was disabled (in Postgres first): every wallet object holding part of its budget
 * (faucet_settle_lease's budget lease, unexpired) reads the routing of its calls again, so none
 * takes the key again. An object without such a lease cannot use the key without a renewal, which
 * grants nothing of a disabled key (the renewal and the disable lock the key's row, so one sees the
 * other). Best effort: past `walletFanOutMax` objects, or for one that cannot be reached, the key may
 * be used for as long as the object's cached routing lasts (seconds) within its budget lease. Returns
 * how many objects were told.
 */
export async function pushDeveloperKeyDisabled(env: Env, db: SqlDatabase, keyId: string, logger?: Logger): Promise<number> {
  if (env.WALLET === undefined) return 0;
  const rows = await queryRows<{ wallet_object: string }>(
    db,
    // A budget lease's key is 'lease:<object name>:<key id>' (36 characters).
    sql`select substring(r.request_id from 7 for length(r.request_id) - 43) as wallet_object
          from provider_credential_reservations r
         where r.credential_id = ${keyId}::uuid and r.request_id like 'lease:%' and r.expires_at > now()
         limit ${walletFanOutMax}`,
  );
  return tellWalletObjects(
    env,
    rows.map((row) => row.wallet_object),
    (object) => object.forgetContexts(),
    'a wallet object was not told of a developer key disabled',
    logger,
  );
}

/**
 * An app's features (a price, a policy, an alias or fallbacks, an archive), its default feature, its
 * archive, its developer's suspension or a new key of its developer (in Postgres first): every wallet
 * object of its end users that leased in the last minute or has a live session forgets its cached
 * contexts, so the change applies to their next call. Best effort: past `walletFanOutMax` objects, or for one that cannot be reached, the
 * cached context lasts its few seconds. Returns how many objects were told.
 */
export async function pushAppChange(
  env: Env,
  db: SqlDatabase,
  apps: { publicAppId: string } | { developerId: string },
  logger?: Logger,
): Promise<number> {
  if (env.WALLET === undefined) return 0;
  const owner = 'publicAppId' in apps ? sql`a.public_app_id = ${apps.publicAppId}` : sql`a.developer_id = ${apps.developerId}::uuid`;
  const rows = await queryRows<{ wallet_object: string }>(
    db,
    // Objects that leased in the last minute, and those of end users with a live session (an object
    // may cache a context, a refusal included, without holding a lease).
    sql`select distinct u.wallet_object from end_users u join apps a on a.id = u.app_id
         where ${owner} and u.wallet_object is not null
           and (exists (select 1 from balance_holds h where h.request_id = 'lease:' || u.wallet_object
                          and h.expires_at > now() - interval '1 minute')
                or exists (select 1 from virtual_sessions s where s.end_user_id = u.id and s.expires_at > now()
                             and s.revoked_at is null))
         limit ${walletFanOutMax}`,
  );
  return tellWalletObjects(
    env,
    rows.map((row) => row.wallet_object),
    (object) => object.forgetContexts(),
    'a wallet object was not told of an app change',
    logger,
  );
}

/**
 * Stored keys were re-encrypted under a new key version: every wallet object that leased in the last
 * day forgets its cached contexts, which hold the keys' former ciphertext, so none fails to open a
 * key once the old version is removed. Best effort: an object that cannot be reached reads its
 * context again within seconds (docs/provider-keys.md: remove the old version a minute after the last
 * batch). Returns how many objects were told.
 */
export async function pushKeysReEncrypted(env: Env, db: SqlDatabase, logger?: Logger): Promise<number> {
  if (env.WALLET === undefined) return 0;
  return tellWalletObjects(
    env,
    await leasingObjectNames(db),
    (object) => object.forgetContexts(),
    'a wallet object was not told of re-encrypted keys',
    logger,
  );
}

/** At most this many wallet objects are told at once, and this many in all, by one request of the API. */
const walletFanOutConcurrency = 25;
export const walletFanOutMax = 1_000;

/**
 * One message to each wallet object named (`end_users.wallet_object`), `walletFanOutConcurrency` at a
 * time, a failure is logged, never thrown. Returns how many took it.
 */
export async function tellWalletObjects(
  env: Env,
  names: readonly string[],
  message: (object: DurableObjectStub<WalletObjectContract>) => Promise<unknown>,
  warning: string,
  logger?: Logger,
): Promise<number> {
  const namespace = env.WALLET;
  if (namespace === undefined) return 0;
  let told = 0;
  for (let start = 0; start < names.length; start += walletFanOutConcurrency) {
    await Promise.all(
      names.slice(start, start + walletFanOutConcurrency).map(async (name) => {
        try {
          await message(namespace.get(namespace.idFromName(name)));
          told += 1;
        } catch {
          logger?.warn(warning);
        }
      }),
    );
  }
  return told;
}

/**
 * Read your own writes: before an end user's wallet or usage is read, their wallet object books what
 * it settled (nothing to do, no statement), so the balance and the calls listed include every call
 * already answered. Best effort: an object that cannot be reached books them within a second anyway.
 */
export function bookOwnCalls(env: Env, endUserId: string, logger?: Logger): Promise<void> {
  return tellWalletObject(
    env,
    endUserId,
    (object) => object.flush(readSettlingMs),
    'a wallet object was not asked to book before a read',
    logger,
  );
}

/** One message to an end user's wallet object a failure is logged, never thrown. */
async function tellWalletObject(
  env: Env,
  endUserId: string,
  message: (object: DurableObjectStub<WalletObjectContract>) => Promise<unknown>,
  warning: string,
  logger?: Logger,
): Promise<void> {
  if (env.WALLET === undefined) return;
  await tellWalletObjects(env, [await walletName(env.SESSION_HASH_SECRET, endUserId)], message, warning, logger);
}
