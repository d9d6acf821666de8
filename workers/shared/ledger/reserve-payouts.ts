/**
 * A mock payout run: one `pending` payout per developer wallet whose available balance is at least
 * the threshold and that has no open payout. Each payout reserves its whole amount as a balance hold
 * (`payout:<id>`, no expiry) in the same statement, so the developer's available balance drops by it
 * and nothing else can spend it; no money moves until `bookPayout`.
 */
import { sql } from 'drizzle-orm';
import { formatUsd, type Usd } from '../money/index.ts';
import { queryRows, type SqlDatabase } from '../query.ts';

export interface PayoutRow {
  id: string;
  developer_id: string;
  wallet_id: string;
  amount: string;
  status: 'pending' | 'processing' | 'paid' | 'cancelled' | 'rejected';
  operator_note: string | null;
  ledger_transaction_id: string | null;
  created_at: Date | string;
  approved_at: Date | string | null;
  paid_at: Date | string | null;
  closed_at: Date | string | null;
}

/** The payouts created by this run (wallets already holding an open payout are skipped). */
export function reservePayouts(db: SqlDatabase, input: { threshold: Usd; requestId: string }): Promise<PayoutRow[]> {
  return queryRows<PayoutRow>(
    db,
    sql`select id, developer_id, wallet_id, amount::numeric(20, 8)::text as amount, status, operator_note,
               ledger_transaction_id, created_at, approved_at, paid_at, closed_at
        from faucet_create_payouts(${formatUsd(input.threshold)}::numeric, ${input.requestId})`,
  );
}
