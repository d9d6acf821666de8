/**
 * Holds: the platform route reserves the worst-case cost before it calls the upstream, so
 * concurrent calls can never spend the same money. Available = balance − active unexpired holds.
 * Settling is `bookUsage` with the same request id; releasing frees the whole hold.
 */
import { sql } from 'drizzle-orm';
import { callLimits } from '../calls/call-limits.ts';
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import { queryOne, queryRows, requireUuid, type SqlDatabase } from '../query.ts';

export interface ReserveHoldInput {
  endUserId: string;
  /** The call's request id; the booking that settles the hold uses the same one. */
  requestId: string;
  amount: Usd;
  ttlSeconds?: number;
}

export type ReserveHoldResult =
  | {
      /** `duplicate`: a hold for this request id exists already; it is returned unchanged. */
      outcome: 'reserved' | 'duplicate';
      holdId: string;
      walletId: string;
      amount: Usd;
      expiresAt: Date;
      availableUsd: Usd;
    }
  | { outcome: 'insufficient_balance'; walletId: string; availableUsd: Usd };

interface ReserveRow {
  outcome: 'reserved' | 'duplicate' | 'insufficient_balance';
  hold_id: string | null;
  wallet_id: string;
  amount: string;
  expires_at: Date | string | null;
  available_usd: string;
}

/** One statement: locks the user's wallet row, counts its active holds, inserts the hold if it fits. */
export async function reserveHold(db: SqlDatabase, input: ReserveHoldInput): Promise<ReserveHoldResult> {
  // One definition of a hold's lifetime: the gateway's (a hold outlives its call; call-limits.ts).
  const ttl = input.ttlSeconds ?? callLimits({}).holdTtlSeconds;
  const row = await queryOne<ReserveRow>(
    db,
    sql`select * from faucet_reserve_hold(${requireUuid(input.endUserId, 'end user')}::uuid, ${input.requestId},
      ${formatUsd(input.amount)}::numeric, ${ttl}::integer)`,
  );
  if (row.outcome === 'insufficient_balance') {
    return { outcome: 'insufficient_balance', walletId: row.wallet_id, availableUsd: parseDatabaseAmount(row.available_usd) };
  }
  return {
    outcome: row.outcome,
    holdId: row.hold_id as string,
    walletId: row.wallet_id,
    amount: parseDatabaseAmount(row.amount),
    expiresAt: new Date(row.expires_at as string),
    availableUsd: parseDatabaseAmount(row.available_usd),
  };
}

/** Release a request's active hold (the upstream call failed). True if a hold was released. */
export async function releaseHold(db: SqlDatabase, requestId: string): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`update balance_holds set status = 'released', closed_at = now()
        where request_id = ${requestId} and status = 'active' returning id`,
  );
  return rows.length > 0;
}

/**
 * Mark holds past their expiry as `expired`. Housekeeping only: an expired hold stops counting
 * against the balance at its `expires_at` whether or not this ran.
 */
export async function expireHolds(db: SqlDatabase): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`update balance_holds set status = 'expired', closed_at = now()
        where status = 'active' and expires_at <= now() returning id`,
  );
  return rows.length;
}
