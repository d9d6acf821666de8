/**
 * When a chargeback or refund takes money the user already spent, the developer keeps no revenue
 * earned from it: claw back `spent × (Σ developer_revenue_usd / Σ retail_usd)` over the user's
 * usage, rounded down like the developer's share in rating. Booked as a `revenue_clawback` (developer
 * wallet −amount, may go below zero as a receivable; platform adjustments +amount) with a
 * `revenue_clawbacks` row an operator reviews and may reverse.
 *
 * The proportion is computed here; the bound is kept where the booking is written: faucet_book_clawback
 * caps the amount, under the end user's wallet lock, at the developer revenue from that end user less
 * the clawbacks already booked and not reversed, so no sum of clawbacks exceeds what was earned.
 */
import { sql } from 'drizzle-orm';
import { compareUsd, formatUsd, isZeroUsd, multiplyByAmountRatio, parseDatabaseAmount, zeroUsd, type Usd } from '../money/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';

export interface ClawbackBasis {
  /** Σ developer_revenue_usd over the user's usage. */
  developerRevenue: Usd;
  /** Σ retail_usd over the same usage. */
  retail: Usd;
}

/** The clawback of `spent` at the user's observed developer share; zero when nothing was earned. */
export function clawbackAmount(spent: Usd, basis: ClawbackBasis): Usd {
  if (isZeroUsd(basis.retail) || isZeroUsd(spent)) return zeroUsd();
  const amount = multiplyByAmountRatio(spent, basis.developerRevenue, basis.retail, 'down');
  // The share can never exceed 1 (developer revenue is part of retail), but clamp against bad rows.
  return compareUsd(amount, spent) > 0 ? spent : amount;
}

export type ClawBackResult =
  | { outcome: 'booked' | 'duplicate'; clawbackId: string; amount: Usd }
  | { outcome: 'nothing_to_claw_back' | 'source_reversed' };

export async function clawBackRevenue(
  db: SqlDatabase,
  input: { sourceTransactionId: string; userWalletId: string; spent: Usd; requestId: string },
): Promise<ClawBackResult> {
  const row = await queryOne<{ kind: string | null; developer_revenue: string; retail: string }>(
    db,
    sql`select w.kind, coalesce(sum(u.developer_revenue_usd), 0)::numeric(20, 8)::text as developer_revenue,
               coalesce(sum(u.retail_usd), 0)::numeric(20, 8)::text as retail
        from wallets w left join usage_events u on u.end_user_id = w.end_user_id
        where w.id = ${requireUuid(input.userWalletId, 'wallet')}::uuid group by w.kind`,
  );
  if (row.kind !== 'user') return { outcome: 'nothing_to_claw_back' };
  const basis = { developerRevenue: parseDatabaseAmount(row.developer_revenue), retail: parseDatabaseAmount(row.retail) };
  const amount = clawbackAmount(input.spent, basis);
  if (isZeroUsd(amount)) return { outcome: 'nothing_to_claw_back' };
  const booked = await queryOne<{
    outcome: 'booked' | 'duplicate' | 'source_reversed' | 'nothing_to_claw_back';
    clawback_id: string | null;
    amount: string | null;
  }>(
    db,
    sql`select outcome, clawback_id, amount::numeric(20, 8)::text as amount from faucet_book_clawback(${requireUuid(input.sourceTransactionId, 'transaction')}::uuid,
      ${input.userWalletId}::uuid, ${formatUsd(input.spent)}::numeric, ${row.developer_revenue}::numeric, ${row.retail}::numeric,
      ${formatUsd(amount)}::numeric, ${input.requestId})`,
  );
  if (booked.outcome === 'source_reversed' || booked.outcome === 'nothing_to_claw_back') return { outcome: booked.outcome };
  // The amount booked: the first booking's on a duplicate, the capped one when the cap applied.
  return { outcome: booked.outcome, clawbackId: booked.clawback_id as string, amount: parseDatabaseAmount(booked.amount as string) };
}
