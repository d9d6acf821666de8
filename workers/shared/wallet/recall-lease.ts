/**
 * Money that leaves an end user's wallet outside the gateway — an operator's debit, a refund, a
 * chargeback — first recalls the wallet object's lease (docs/edge.md): the object books every call it
 * has settled and gives back all of its hold but the worst cases of calls in flight, so the debit
 * meets the wallet as it really is. A developer's or a platform wallet has no lease. An object that
 * cannot be reached is not waited for: the debit then respects the lease (its hold is not available
 * money) and the object's next flush books what it kept, a receivable if the debit took the money.
 */
import { sql } from 'drizzle-orm';
import type { WalletObjectContract } from '../durable-objects.ts';
import type { Env } from '../env.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import type { Logger } from '../logger.ts';
import { walletName } from '../auth/session-token.ts';
import { tellWalletObjects, walletFanOutMax } from './wallet-notices.ts';

/**
 * Runs `debit` (which takes money from the wallet: `walletId`, or the Stripe payment intent of a
 * top-up, whose wallet is the one it credited) with the wallet object's lease recalled first; the
 * object takes no new lease until the debit is written (then told to resume) or 3 s have passed.
 */
export async function withLeaseRecalled<T>(
  env: Env,
  db: SqlDatabase,
  wallet: { walletId: string } | { paymentIntentId: string },
  logger: Logger | undefined,
  debit: () => Promise<T>,
): Promise<T> {
  const object = await recall(env, db, wallet, logger);
  try {
    return await debit();
  } finally {
    await object?.resume().catch(() => undefined);
  }
}

/** The recalled object (null: no lease to recall, or it could not be reached). */
async function recall(
  env: Env,
  db: SqlDatabase,
  wallet: { walletId: string } | { paymentIntentId: string },
  logger: Logger | undefined,
): Promise<DurableObjectStub<WalletObjectContract> | null> {
  const namespace = env.WALLET;
  if (namespace === undefined) return null;
  const rows = await queryRows<{ end_user_id: string }>(
    db,
    'walletId' in wallet
      ? sql`select end_user_id from wallets where id::text = ${wallet.walletId} and end_user_id is not null`
      : sql`select w.end_user_id from checkout_sessions c join wallets w on w.id = c.wallet_id
             where c.stripe_payment_intent_id = ${wallet.paymentIntentId} and w.end_user_id is not null`,
  );
  const endUserId = rows[0]?.end_user_id;
  if (endUserId === undefined) return null;
  try {
    const object = namespace.get(namespace.idFromName(await walletName(env.SESSION_HASH_SECRET, endUserId)));
    // Once more on a failure: a debit that meets a lease it could not recall may be refused.
    await object.recall().catch(() => object.recall());
    return object;
  } catch {
    logger?.warn('a wallet lease could not be recalled before a debit');
    return null;
  }
}

/**
 * An app's per-end-user limits changed: every wallet object of its end users holding a lease books
 * what it settled and gives back all of it but its calls in flight, so its next call takes a lease
 * within the new limits (a lease is capped by a limit only when granted, docs/gateway.md). Objects
 * whose lease ended hold nothing to give back. Past `walletFanOutMax` leases, or for an object that
 * cannot be reached, the lease is only used up: an idle object gives it back within two minutes.
 */
export async function recallAppLeases(env: Env, db: SqlDatabase, appId: string, logger?: Logger): Promise<number> {
  if (env.WALLET === undefined) return 0;
  const rows = await queryRows<{ wallet_object: string }>(
    db,
    sql`select u.wallet_object from end_users u join balance_holds h on h.request_id = 'lease:' || u.wallet_object
         where u.app_id = ${appId}::uuid and h.status = 'active' and h.expires_at > now()
         limit ${walletFanOutMax}`,
  );
  return tellWalletObjects(
    env,
    rows.map((row) => row.wallet_object),
    async (object) => {
      await object.recall();
      // Nothing is debited: new leases may be taken at once (within the new limits).
      await object.resume();
    },
    'a wallet lease could not be recalled after an app limit changed',
    logger,
  );
}
